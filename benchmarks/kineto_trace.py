"""A synthetic PyTorch profiler (Kineto) trace of any size, with its expected roofline numbers.

    python benchmarks/kineto_trace.py OUT.pt.trace.json[.gz] [--mb 200] [--seed 0]

Each ``ProfilerStep#N`` runs, on the main thread, ``aten::linear`` → ``aten::addmm`` and
``aten::mul`` ops and, on an autograd thread, ``aten::mm`` ops; every compute op launches one
kernel (``cudaLaunchKernel`` with the kernel's correlation id, as newer Kineto writes it: the
runtime call's ``External id`` is the op's). A ``cudaMemcpyAsync`` per step copies to the
device. Times are whole microseconds so expected values are exact. ``write_trace`` returns
what an analysis must find: kernel time and FLOPs per op name and the step numbers.
Events are written as they are made: memory stays small whatever the size.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections import defaultdict
from typing import IO

PID, MAIN, BACKWARD, DEVICE, STREAM = 1000, 1000, 1001, 0, 7
OPS_PER_STEP = 60


def write_trace(path: str, steps: int = 4, seed: int = 0) -> dict:
    """Writes the trace and returns ``{"time_us": {op: us}, "flops": {op: n}, "kernels": {op: n},
    "steps": [numbers], "memcpy_us": us}``."""
    rng = random.Random(seed)
    opener = gzip.open if path.endswith(".gz") else open
    expected: dict = {"time_us": defaultdict(int), "flops": defaultdict(int)}
    expected["kernels"] = defaultdict(int)
    expected["memcpy_us"] = 0
    with opener(path, "wt", encoding="utf-8") as out:  # type: ignore[operator]
        out.write(
            '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", '
        )
        out.write(
            '"totalGlobalMem": 85045870592, "computeMajor": 9, "computeMinor": 0, '
            '"numSms": 132}],\n'
        )
        out.write('"traceEvents": [\n')
        state = {"first": True, "corr": 1, "ext": 1}
        t = 1_000_000
        for step in range(steps):
            begin = t
            t = _step(out, state, step + 1, t, rng, expected)
            _event(
                out,
                state,
                "user_annotation",
                f"ProfilerStep#{step + 1}",
                MAIN,
                begin,
                t - begin,
                {},
            )
            t += 10
        out.write("\n]}\n")
    expected["steps"] = list(range(1, steps + 1))
    return {k: dict(v) if isinstance(v, defaultdict) else v for k, v in expected.items()}


def _event(out: IO[str], state: dict, cat: str, name: str, tid, ts: int, dur: int, args: dict,
           pid=PID) -> None:  # fmt: skip
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
             "args": args}  # fmt: skip
    out.write(("" if state["first"] else ",\n") + json.dumps(event))
    state["first"] = False


def _launch(out, state, tid, at: int, gpu_at: int, kernel: str, dur: int, ext: int) -> int:
    corr = state["corr"]
    state["corr"] += 1
    _event(out, state, "cuda_runtime", "cudaLaunchKernel", tid, at, 3,
           {"External id": ext, "correlation": corr})  # fmt: skip
    _event(out, state, "kernel", kernel, STREAM, gpu_at, dur,
           {"External id": ext, "correlation": corr, "device": DEVICE, "stream": STREAM},
           pid=DEVICE)  # fmt: skip
    return gpu_at + dur


def _op(out, state, name, tid, ts, dur, dims, types) -> int:
    ext = state["ext"]
    state["ext"] += 1
    _event(out, state, "cpu_op", name, tid, ts, dur,
           {"External id": ext, "Input Dims": dims, "Input type": types})  # fmt: skip
    return ext


def _step(out, state, number: int, t: int, rng: random.Random, expected: dict) -> int:
    gpu = t + 5
    corr = state["corr"]
    state["corr"] += 1
    _event(out, state, "cuda_runtime", "cudaMemcpyAsync", MAIN, t, 4,
           {"External id": corr, "correlation": corr})  # fmt: skip
    _event(out, state, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", STREAM, gpu, 20,
           {"correlation": corr, "device": DEVICE, "stream": STREAM, "bytes": 1 << 20},
           pid=DEVICE)  # fmt: skip
    expected["memcpy_us"] += 20
    gpu += 20
    t += 10
    for i in range(OPS_PER_STEP):
        m, n, k = rng.choice((64, 128, 256)), rng.choice((128, 512)), rng.choice((256, 1024))
        dur = rng.randint(2, 40)
        if i % 3 == 0:  # linear -> addmm, kernel in addmm
            _op(out, state, "aten::linear", MAIN, t, 30, [[m, k], [n, k], [n]],
                ["c10::BFloat16"] * 3)  # fmt: skip
            ext = _op(out, state, "aten::addmm", MAIN, t + 2, 25, [[n], [m, k], [k, n], [], []],
                      ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"])  # fmt: skip
            gpu = _launch(
                out, state, MAIN, t + 10, max(gpu, t + 12), "sm90_xmma_gemm_bf16", dur, ext
            )
            name, flops = "aten::addmm", 2 * m * n * k
            t += 32
        elif i % 3 == 1:
            ext = _op(out, state, "aten::mul", MAIN, t, 12, [[m, n], [m, n]], ["float", "float"])
            gpu = _launch(out, state, MAIN, t + 4, max(gpu, t + 6), "vectorized_elementwise_kernel",
                          dur, ext)  # fmt: skip
            name, flops = "aten::mul", m * n
            t += 14
        else:  # backward thread
            ext = _op(out, state, "aten::mm", BACKWARD, t, 20, [[m, k], [k, n]],
                      ["c10::BFloat16"] * 2)  # fmt: skip
            gpu = _launch(
                out, state, BACKWARD, t + 5, max(gpu, t + 7), "sm90_xmma_gemm_bf16", dur, ext
            )
            name, flops = "aten::mm", 2 * m * n * k
            t += 22
        expected["time_us"][name] += dur
        expected["flops"][name] += flops
        expected["kernels"][name] += 1
    return max(t, gpu) + 5


def steps_for_mb(mb: float) -> int:
    """Steps for about ``mb`` MB of plain JSON (about 38 kB per step)."""
    return max(int(mb * 1e6 / 38_000), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--mb", type=float, default=200.0, help="size of the plain JSON, about")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    expected = write_trace(args.output, steps_for_mb(args.mb), args.seed)
    print(json.dumps({k: v for k, v in expected.items() if k != "steps"}, indent=1))
    print(f"{len(expected['steps'])} steps")


if __name__ == "__main__":
    main()
