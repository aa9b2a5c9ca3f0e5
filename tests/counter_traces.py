"""PyTorch profiler traces with CUPTI range-profiler counters, generated for the tests.

Kineto writes one ``cuda_profiler_range`` event per kernel (pid 0, named by the kernel, the
capture's span split evenly among them), whose args are the counters; the kernels' launch
calls (``cudaLaunchKernel``) sit inside the CPU ops. ``with_kernels`` adds the kernels'
activity (``kernel`` events with the calls' correlation ids and real durations), which
Kineto does not record alongside the ranges but a trace may hold.
"""

from __future__ import annotations

import json
from pathlib import Path

M, K, N = 64, 128, 32  # aten::mm [M, K] x [K, N]
ADD = 1024  # aten::add of two [ADD] tensors
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"
HFMA = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
TENSOR = "sm__ops_path_tensor_src_fp16_dst_fp32.sum"
SPAN_US = 90_000

# (op, its recorded shapes, kernel name, counters, kernel duration us); the last launch is
# outside every op, inside a record_function annotation.
KERNELS = [
    ("aten::mm", [[M, K], [K, N]], "sgemm_64x32", {FFMA: M * N * K, FADD: 0, FMUL: 64}, 40.0),
    ("aten::add", [[ADD], [ADD]], "vectorized_add", {FFMA: 0, FADD: ADD, FMUL: 0}, 5.0),
    ("aten::mm", [[M, K], [K, N]], "sgemm_64x32", {FFMA: M * N * K, FADD: 0, FMUL: 64}, 38.0),
    (None, None, "my_kernel", {FFMA: 10, FADD: 1, FMUL: 2}, 2.0),
]
DRAM = [(M * K * 4 + K * N * 4, M * N * 4), (2 * ADD * 4, ADD * 4), (40_000, 8_192), (64, 32)]
HALF_FMAS = [0, 512, 0, 0]
TENSOR_OPS = [1_000_000, 0, 2_000_000, 0]


def counter_events(
    *,
    dram: bool = True,
    tensor: bool = False,
    with_kernels: bool = False,
    drop_range: bool = False,
) -> list[dict]:
    """The trace's events (see the module docstring)."""
    pid = tid = 4242
    events: list[dict] = [
        {"ph": "X", "cat": "user_annotation", "name": "my_region", "pid": pid, "tid": tid,
         "ts": 650, "dur": 200, "args": {}},
    ]  # fmt: skip
    ranges = []
    for i, (op, dims, kernel, counters, duration) in enumerate(KERNELS):
        start = 100 + 200 * i
        correlation = 10 + i
        if op is not None:
            events.append(
                {"ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": tid, "ts": start,
                 "dur": 100, "args": {"Input Dims": dims, "Input type": ["float", "float"],
                                      "External id": correlation}}
            )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid,
             "tid": tid, "ts": start + 10, "dur": 5,
             "args": {"correlation": correlation, "External id": correlation}}
        )  # fmt: skip
        if with_kernels:
            events.append(
                {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                 "ts": start + 20, "dur": duration,
                 "args": {"correlation": correlation, "device": 0, "stream": 7}}
            )  # fmt: skip
        args = dict(counters)
        args[HFMA] = HALF_FMAS[i]
        if dram:
            args[DRAM_READ], args[DRAM_WRITE] = DRAM[i]
        if tensor:
            args[TENSOR] = TENSOR_OPS[i]
        ranges.append((kernel, args))
    if drop_range:
        ranges = ranges[:-1]
    step = SPAN_US // max(len(ranges), 1)
    for i, (kernel, args) in enumerate(ranges):
        events.append(
            {"ph": "X", "cat": "cuda_profiler_range", "name": kernel, "pid": 0, "tid": 0,
             "ts": 10_000 + step * i, "dur": step, "args": args}
        )  # fmt: skip
    return events


def write_counter_trace(path: Path, **options) -> Path:
    """A trace file of ``counter_events(**options)`` on an A100 (its deviceProperties)."""
    document = {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": 0, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8, "computeMinor": 0,
             "numSms": 108, "totalGlobalMem": 42505273344}
        ],
        "traceEvents": counter_events(**options),
    }  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def range_flops(i: int, tensor: bool = False) -> float:
    """Measured FLOPs of kernel ``i``, by hand: fadd + fmul + 2 * ffma (+ 2 * hfma, and the
    tensor-pipe ops when recorded)."""
    counters = KERNELS[i][3]
    flops = counters[FADD] + counters[FMUL] + 2 * counters[FFMA] + 2 * HALF_FMAS[i]
    return float(flops + (TENSOR_OPS[i] if tensor else 0))
