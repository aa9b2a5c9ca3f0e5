"""The part of the packaging only setup.py can say: the optional C extensions.

Everything else (metadata, dependencies, packages, entry points) is in pyproject.toml.
"""

import sys

from setuptools import Extension, setup

# No fused multiply-add: the C sums and products round as numpy's do (the array path's).
STRICT_FLOATS = [] if sys.platform == "win32" else ["-ffp-contract=off"]

setup(
    # Without a compiler the install still works, with the same results, slower on big
    # profiles: xspace/event_table.py decodes events with numpy and protobuf instead of
    # _wire, and the renderers write their text in Python instead of with _text.
    ext_modules=[
        Extension(
            "tb_roofline_plugin.xspace._wire",
            ["tb_roofline_plugin/xspace/_wire.c"],
            optional=True,
            extra_compile_args=STRICT_FLOATS,
        ),
        Extension(
            "tb_roofline_plugin.render._text", ["tb_roofline_plugin/render/_text.c"], optional=True
        ),
    ],
)
