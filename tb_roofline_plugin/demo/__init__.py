"""Realistic, deterministic generated profiles for the demo, the tests and the benchmarks.

TPU, GPU and CPU generators (``tpu``, ``gpu``, ``cpu``; their specs ``TpuSpec``, ``GpuSpec``,
``CpuSpec``), PyTorch profiler (Kineto) traces of GPU training (``pytorch``: ``write_trace``,
``steps_for_mb``; built from ``pytorch_spec``'s ``KinetoSpec``, ``pytorch_events``' event
writer and the passes in ``pytorch_forward`` and ``pytorch_backward``), the TPU op table
(``tpu_ops``), the GPU devices and programs (``gpu_model``), what they share (``common``), the
demo logdir (``logdir``) and the XSpace building blocks (``xspace_builder``). Everything the
tests and benchmarks use is re-exported here. A top layer, next to ``serve``: imports ``hlo``
(to price the HLO it writes), ``protos`` and the leaf modules; nothing in the package but
``cli`` imports it. The wire-level tiler of the benchmarks' 1 GB profiles is
``benchmarks/tiling.py``.
"""

from .cpu import CpuSpec, cpu_xspace
from .gpu import GpuSpec, gpu_xspace
from .logdir import DEMO_RUNS, write_demo_logdir, write_profile
from .pytorch import steps_for_mb, write_trace
from .pytorch_spec import KinetoSpec
from .tpu import TpuSpec, tpu_xspace

__all__ = [
    "DEMO_RUNS",
    "CpuSpec",
    "GpuSpec",
    "KinetoSpec",
    "TpuSpec",
    "cpu_xspace",
    "gpu_xspace",
    "tpu_xspace",
    "write_demo_logdir",
    "steps_for_mb",
    "write_profile",
    "write_trace",
]
