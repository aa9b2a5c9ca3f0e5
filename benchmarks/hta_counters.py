"""Total (HW) against HolisticTraceAnalysis: how CUPTI range-profiler ranges map to kernel
launches and ops, and the FLOPs per op, ours and HTA's, on a trace with counters.

    python benchmarks/hta_counters.py [TRACE ...]   (default: the shared hta_cupti_profiler)

HTA's ``get_cupti_counter_data_with_operators`` (its CUPTI counter analysis) runs in
``benchmarks/.hta-venv`` (made as ``kineto_vs_hta.py`` makes it, never in this project's
environment) on a folder holding the trace alone; it gives each range (by time) its launch's
op stack. Ours: ``kineto.ops.range_ops`` (the op row of each range) and the Total (HW) of
``analyze_trace``. The table lists each op's kernels and FLOPs both ways (HTA's FLOPs: its
own weights of the SASS counters, fma 2, add and mul 1); the exit status is 1 when a range's
op or an op's FLOPs differ.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kineto_vs_hta import hta_python  # noqa: E402
from run import REPO  # noqa: E402

SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared")) / "data"
DEFAULT = SHARED / "field/hta_cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"
# Runs in HTA's venv: one JSON line per range (time order) with its ops and HTA's FLOPs.
HTA_RANGES = """
import json, logging, sys
logging.disable(logging.WARNING)
import warnings; warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis
from hta.analyzers.cupti_counter_analysis import CUDA_SASS_INSTRUCTION_COUNTER_FLOPS as W
analysis = TraceAnalysis(trace_dir=sys.argv[1])
(frame,) = analysis.get_cupti_counter_data_with_operators(ranks=[0])
for _, row in frame.iterrows():
    flops = sum(float(row[k]) * w for k, w in W.items() if k in frame.columns)
    print(json.dumps({"kernel": row["name"], "bottom_level_op": row["bottom_level_op"],
                      "top_level_op": row["top_level_op"], "flops": flops}))
"""


def hta_ranges(python: str, trace: Path, timeout: float = 600) -> list[dict]:
    """HTA's view of each range of ``trace`` (time order): kernel, bottom and top op, FLOPs."""
    with tempfile.TemporaryDirectory(prefix="hta-counters-") as folder:
        shutil.copy(trace, Path(folder) / trace.name)
        done = subprocess.run(
            [python, "-c", HTA_RANGES, folder],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def ours(trace: Path) -> tuple[list[str], dict[str, tuple[int, float]]]:
    """Our op of each range (time order) and {op: (kernels, measured FLOPs)}."""
    from tb_roofline_plugin.kineto import analyze_trace
    from tb_roofline_plugin.kineto.ops import range_ops
    from tb_roofline_plugin.kineto.trace_reader import read_trace

    names = range_ops(read_trace(trace)) or []
    hardware = analyze_trace(trace).hardware
    per_op = {}
    if hardware is not None:
        for name, kernels, flops in zip(
            hardware.db.name.tolist(), hardware.kernels.tolist(), hardware.db.flops.tolist()
        ):
            per_op[name] = (kernels, flops)
    return names, per_op


def compare(trace: Path, python: str) -> bool:
    theirs = hta_ranges(python, trace)
    names, per_op = ours(trace)
    same_ops = [r["bottom_level_op"] for r in theirs] == names
    hta_per_op: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in theirs:
        hta_per_op[r["bottom_level_op"]][0] += 1
        hta_per_op[r["bottom_level_op"]][1] += r["flops"]
    print(
        f"{trace.name}: {len(theirs)} ranges (HTA), {len(names)} (ours); range -> op "
        f"{'the same for every range' if same_ops else 'DIFFERS'}"
    )
    header = f"{'op':34} {'kernels HTA':>11} {'ours':>5} {'GFLOP HTA':>12} {'ours':>12}"
    print(header)
    print("-" * len(header))
    agree = same_ops
    for op in sorted(set(hta_per_op) | set(per_op), key=lambda o: -hta_per_op[o][1]):
        kernels, flops = hta_per_op[op]
        mine = per_op.get(op, (0, 0.0))
        agree = agree and (kernels, flops) == mine
        print(
            f"{op[:34]:34} {kernels:>11} {mine[0]:>5} {flops / 1e9:>12.6f} {mine[1] / 1e9:>12.6f}"
        )
    return agree


def main(argv: list[str] | None = None) -> int:
    traces = [Path(a) for a in (argv if argv is not None else sys.argv[1:])] or [DEFAULT]
    python = hta_python()
    if python is None:
        print("HolisticTraceAnalysis could not be installed")
        return 2
    return 0 if all([compare(t, python) for t in traces]) else 1


if __name__ == "__main__":
    sys.exit(main())
