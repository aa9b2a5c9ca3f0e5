"""Writing generated profiles: one file (``write_profile``, stable bytes) and the demo
logdir (``write_demo_logdir``) with the run and host layouts TensorBoard users have: XSpace
runs and a PyTorch profiler (Kineto) run.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..protos import xplane_pb2
from .gpu import GpuSpec, gpu_xspace
from .pytorch import trace_file_name, write_trace
from .pytorch_spec import KinetoSpec
from .tpu import TpuSpec, tpu_xspace


def write_profile(path: str | os.PathLike, xspace: xplane_pb2.XSpace) -> Path:
    """Writes `xspace` to `path` (parents created); map entries are sorted so bytes are stable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(xspace.SerializeToString(deterministic=True))
    return path


_DEMO_RUN_DIR = "2026_01_01_00_00_00"  # a date-like profile run name, as the profiler makes
# The demo's runs: TPU training (two hosts, steps), TPU inference, GPU training (steps), and
# PyTorch GPU training (a Kineto trace per data-parallel worker).
DEMO_RUNS = ("train_v5p", "inference_v6e", "train_gpu", "torch_gpu")


def write_demo_logdir(
    logdir: str | os.PathLike,
    *,
    runs: tuple[str, ...] = DEMO_RUNS,
    hosts: tuple[str, ...] = ("host0", "host1"),
) -> list[Path]:
    """Writes a small logdir with the layouts TensorBoard users have; returns the files.

    `<logdir>/<run>/plugins/profile/<date>/<host>.xplane.pb` for each run: runs named
    `inference*` are one host without steps, the others are training runs on every host. The
    device is the `v4`/`v5p`/`v6e` in the run name (default v5p); a run with a `gpu` part in
    its name (`train_gpu`, as in `DEMO_RUNS`; `train_gpu_amd` for AMD) is a GPU training run
    with host step roots on every host, with a `graphs` part one whose programs run as XLA
    command buffers (graph launches, kernels annotated with the launch's `call`). A run with
    a `torch` part (`torch_gpu`; `torch_gpu_a100` for an A100, else an H100) is a PyTorch
    profiler run: `<logdir>/<run>/worker<rank>.<timestamp>.pt.trace.json.gz`, one
    data-parallel worker per host (`demo.pytorch`). A v4 training profile also goes straight
    under `<logdir>/plugins/profile/<date>/` (the logdir itself as a run).
    Every XSpace host gets its own seed (PyTorch runs take none from that count, so adding
    one leaves the other runs' bytes alone).
    """
    logdir = Path(logdir)
    written = []
    seed = 0
    for run in runs:
        parts = run.split("_")
        if "torch" in parts:
            device = "a100" if "a100" in parts else "h100"
            for rank in range(len(hosts)):
                torch = KinetoSpec(device=device, rank=rank, world_size=len(hosts), seed=rank)
                path = logdir / run / trace_file_name(f"worker{rank}")
                write_trace(path, torch)
                written.append(path)
            continue
        device = next((d for d in ("v4", "v5p", "v6e") if d in parts), "v5p")
        inference = run.startswith("inference")
        for host in hosts[:1] if inference else hosts:
            seed += 1
            path = logdir / run / "plugins" / "profile" / _DEMO_RUN_DIR / f"{host}.xplane.pb"
            if "gpu" in parts:
                vendor = "amd" if "amd" in parts else "nvidia"
                graphs = "launch" if "graphs" in parts else ""
                spec = GpuSpec(vendor=vendor, steps=4, host=host, seed=seed, graph_launches=graphs)
                space = gpu_xspace(spec)
            else:
                steps = 0 if inference else 5
                space = tpu_xspace(TpuSpec(device=device, steps=steps, host=host, seed=seed))
            written.append(write_profile(path, space))
    root = TpuSpec(device="v4", cores=2, host=hosts[0] if hosts else "host0", seed=seed + 1)
    path = logdir / "plugins" / "profile" / _DEMO_RUN_DIR / f"{root.host}.xplane.pb"
    written.append(write_profile(path, tpu_xspace(root)))
    return written
