"""A synthetic PyTorch profiler (Kineto) trace of any size, with its expected roofline numbers.

    python benchmarks/kineto_trace.py OUT.pt.trace.json[.gz] [--mb 200] [--device h100|a100]
                                      [--seed 0]

A thin command over the demo's generator (``tb_roofline_plugin.demo.pytorch``: a bf16
conv-transformer trained data-parallel, ``ProfilerStep#N`` steps, GEMMs, convolutions,
flash attention, elementwise, NCCL all-reduce, memcpy, ``record_shapes``): as many steps as
make about ``--mb`` MB of plain JSON, written one step at a time. Prints what an analysis must
find (kernel time, kernels and FLOPs per op; memcpy time).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

from tb_roofline_plugin.demo.pytorch import KinetoSpec, steps_for_mb, write_trace  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--mb", type=float, default=200.0, help="size of the plain JSON, about")
    parser.add_argument("--device", default="h100", choices=("h100", "a100"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    base = KinetoSpec(device=args.device, seed=args.seed)
    spec = KinetoSpec(device=args.device, seed=args.seed, steps=steps_for_mb(args.mb, base))
    expected = write_trace(args.output, spec)
    print(json.dumps({k: v for k, v in expected.items() if k != "steps"}, indent=1))
    print(f"{len(expected['steps'])} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
