"""Regenerate the committed ``*_pb2.py`` modules and their ``*_pb2.pyi`` type stubs from
``proto/`` (development only; the stubs let the type checker see the messages).

Runs grpcio-tools' protoc, then makes two mechanical edits so the modules live
inside this package: sibling imports become relative, and descriptors go to the
package's private pool (see ``_pool.py``). ``python -m
tb_roofline_plugin.protos.generate`` rewrites the files; ``render()`` returns the
text without writing, which the drift test compares.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

PROTO_FILES = (
    "xplane.proto",
    "xplane_lite.proto",
    "op_metrics.proto",
    "diagnostics.proto",
    "source_info.proto",
    "roofline_model.proto",
    "hlo.proto",
)
PACKAGE_DIR = Path(__file__).resolve().parent
PROTO_DIR = PACKAGE_DIR.parent.parent / "proto"
_HEADER = (
    "# Post-processed by tb_roofline_plugin.protos.generate (relative imports, private pool).\n"
)


def _postprocess(text: str) -> str:
    text = re.sub(r"^import (\w+_pb2) as ", r"from . import \1 as ", text, flags=re.M)
    text = text.replace(
        "from google.protobuf.internal import builder as _builder\n",
        "from google.protobuf.internal import builder as _builder\n"
        "from ._pool import POOL as _POOL\n",
    )
    text = text.replace("_descriptor_pool.Default()", "_POOL")
    return _HEADER + text


def render(proto_dir: Path = PROTO_DIR) -> dict[str, str]:
    """Returns {module file name: generated text} for every proto in ``PROTO_FILES``."""
    from grpc_tools import protoc

    names = [n for n in PROTO_FILES if (proto_dir / n).exists()]
    with tempfile.TemporaryDirectory() as out:
        args = [f"-I{proto_dir}", f"--python_out={out}", f"--pyi_out={out}", *names]
        code = protoc.main(["protoc", *args])
        if code != 0:
            raise RuntimeError(f"protoc failed with status {code} on {proto_dir}")
        return {
            p.name: _postprocess(p.read_text(encoding="utf-8"))
            for p in sorted(Path(out).glob("*_pb2.py*"))
        }


def main() -> int:
    for name, text in render().items():
        (PACKAGE_DIR / name).write_text(text, encoding="utf-8")
        print(f"wrote {PACKAGE_DIR / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
