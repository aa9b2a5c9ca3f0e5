"""tb-roofline: roofline models of ML profiles (XSpace, PyTorch traces) for TensorBoard.

``tb_roofline_plugin.analyze(path)`` gives a profile's roofline as tables (``api``). It is
imported on first use: TensorBoard imports this package for its plugin loader, which must
stay light (``serve.loader``), so nothing here imports numpy or any reader.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Analysis", "__version__", "analyze"]
_API = ("Analysis", "analyze")


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
