"""The part of the packaging only setup.py can say: the optional C event decoder.

Everything else (metadata, dependencies, packages, entry points) is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    # Without a compiler the install still works: xspace/event_table.py decodes with numpy and
    # protobuf instead (the same results, slower on big profiles).
    ext_modules=[
        Extension(
            "tb_roofline_plugin.xspace._wire", ["tb_roofline_plugin/xspace/_wire.c"], optional=True
        )
    ],
)
