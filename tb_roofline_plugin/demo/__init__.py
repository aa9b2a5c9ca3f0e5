"""Realistic, deterministic generated profiles for the demo, the tests and the benchmarks.

TPU, GPU and CPU generators (``tpu``, ``gpu``, ``cpu``; their specs ``TpuSpec``, ``GpuSpec``,
``CpuSpec``), the op table they share (``op_table``), the demo logdir (``logdir``) and the
XSpace building blocks (``xspace_builder``). Everything the tests and benchmarks use is
re-exported here. The top layer with ``serve``: imports ``hlo`` (to price the HLO it writes),
``protos`` and the leaf modules; nothing in the package but ``cli`` imports it.
"""

from .tpu import (
    DEMO_RUNS,
    CpuSpec,
    GpuSpec,
    TpuSpec,
    cpu_xspace,
    gpu_xspace,
    tpu_xspace,
    write_demo_logdir,
    write_large_profile,
    write_profile,
    write_tiled_profile,
)

__all__ = [
    "DEMO_RUNS",
    "CpuSpec",
    "GpuSpec",
    "TpuSpec",
    "cpu_xspace",
    "gpu_xspace",
    "tpu_xspace",
    "write_demo_logdir",
    "write_large_profile",
    "write_profile",
    "write_tiled_profile",
]
