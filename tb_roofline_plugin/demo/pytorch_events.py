"""Kineto's events for one worker (``Trace``): CPU ops with their shapes, kernel launches
timed from FLOPs and bytes, memory copies; written a step at a time, with what an analysis
must find (kernel time, count and FLOPs per op, memcpy time).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from contextlib import contextmanager
from typing import IO, Iterator

from .pytorch_spec import (
    AUTOGRAD,
    COMPUTE,
    DEVICES,
    EFFICIENCY,
    MAIN,
    NCCL,
    PID,
    START_US,
    KinetoSpec,
)


def _fmt(ns: int) -> float | int:
    """Nanoseconds as Kineto's microseconds (three decimals; whole ones as integers)."""
    return ns // 1000 if ns % 1000 == 0 else ns / 1000


class Trace:
    """Emits one worker's events step by step; tracks what an analysis must find."""

    def __init__(self, spec: KinetoSpec, out: IO[str]) -> None:
        self.spec, self.out = spec, out
        self.rng = random.Random(spec.seed * 1_000_003 + spec.rank)
        _, self.peak_flops, self.bandwidth = DEVICES[spec.device]
        self.first = True
        self.ext, self.corr = 1, 1
        self.cursor = {MAIN: START_US * 1000, AUTOGRAD: START_US * 1000}
        self.stream = {COMPUTE: START_US * 1000, NCCL: START_US * 1000}
        self.executions: dict[int, list] = {MAIN: [], AUTOGRAD: []}
        self.time_ns: dict[str, int] = defaultdict(int)
        self.kernels: dict[str, int] = defaultdict(int)
        self.flops: dict[str, float] = defaultdict(float)
        self.memcpy_ns = 0
        self.events: list[dict] = []

    # --- writing ---------------------------------------------------------------------

    def emit(self, event: dict) -> None:
        self.events.append(event)

    def flush(self) -> None:
        for event in self.events:
            self.out.write(("" if self.first else ",\n") + json.dumps(event))
            self.first = False
        self.events.clear()

    def complete(self, cat: str, name: str, pid, tid, begin: int, dur: int, args: dict) -> None:
        """A complete (``"ph": "X"``) event from ``begin`` for ``dur`` ns."""
        self.emit(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": pid,
                "tid": tid,
                "ts": _fmt(begin),
                "dur": _fmt(dur),
                "args": args,
            }
        )

    def advance(self, tid: int, low: int, high: int) -> int:
        self.cursor[tid] += self.rng.randint(low, high)
        return self.cursor[tid]

    # --- ops and kernels -------------------------------------------------------------

    @contextmanager
    def op(
        self,
        tid: int,
        name: str,
        dims=None,
        types=None,
        concrete=None,
        flops: float = 0,
        cat: str = "cpu_op",
        extra: dict | None = None,
    ) -> Iterator[None]:
        """A CPU op on thread ``tid`` spanning what runs inside; ``flops``: one execution's
        (counted when the op launches a kernel, as an analysis counts it)."""
        begin = self.advance(tid, 1500, 4000)
        ext = self.ext
        self.ext += 1
        counted = cat == "cpu_op"  # kernels belong to cpu ops, not to annotations
        if counted:
            self.executions[tid].append([name, flops, False, ext])
        try:
            yield
        finally:
            if counted:
                _, _, launched, _ = self.executions[tid].pop()
                if launched:
                    self.flops[name] += flops
            end = self.advance(tid, 800, 2500)
            args: dict = {"External id": ext, "Record function id": 0, "Ev Idx": ext - 1}
            if dims is not None:
                args["Input Dims"] = dims
                args["Input type"] = types
                args["Input Strides"] = [_strides(d) for d in dims]
                if concrete is not None:
                    args["Concrete Inputs"] = concrete
            args.update(extra or {})
            self.complete(cat, name, PID, tid, begin, end - begin, args)

    def leaf(self, tid: int, name: str, dims=None, types=None) -> None:
        """A CPU op without kernels (views, transposes, ``aten::empty``)."""
        with self.op(tid, name, dims, types):
            pass

    def launch(
        self,
        tid: int,
        kernel: str,
        flops: float,
        nbytes: float,
        family: str,
        stream: int = COMPUTE,
        grid=(1024, 1, 1),
        block=(256, 1, 1),
    ) -> None:
        """``cudaLaunchKernel`` on ``tid`` and the kernel it queues, timed from its FLOPs and
        bytes; the kernel belongs to the innermost op open on ``tid``."""
        eff_flops, eff_bw = EFFICIENCY[family]
        ideal = max(flops / (self.peak_flops * eff_flops), nbytes / (self.bandwidth * eff_bw))
        dur = max(int(ideal * 1e9 * self.rng.uniform(0.96, 1.08)), self.rng.randint(1400, 2600))
        begin = self.advance(tid, 1000, 3000)
        call = self.rng.randint(2500, 5500)
        corr = self.corr
        self.corr += 1
        owner = self.executions[tid][-1]
        ext = owner[3]
        self.complete(
            "cuda_runtime",
            "cudaLaunchKernel",
            PID,
            tid,
            begin,
            call,
            {"External id": ext, "cbid": 211, "correlation": corr},
        )
        self.cursor[tid] = begin + call
        start = max(self.stream[stream], begin + self.rng.randint(4000, 9000))
        self.stream[stream] = start + dur + self.rng.randint(900, 2200)
        self.complete(
            "kernel",
            kernel,
            0,
            stream,
            start,
            dur,
            {
                "External id": ext,
                "queued": 0,
                "device": 0,
                "context": 1,
                "stream": stream,
                "correlation": corr,
                "registers per thread": 128,
                "shared memory": 49152,
                "blocks per SM": 1.2,
                "warps per SM": 9.7,
                "grid": list(grid),
                "block": list(block),
                "est. achieved occupancy %": 25,
            },
        )
        self.time_ns[owner[0]] += dur
        self.kernels[owner[0]] += 1
        owner[2] = True

    def memcpy(self, tid: int, kind: str, nbytes: int, sync: bool) -> None:
        """``cudaMemcpyAsync`` and its copy (listed apart by an analysis)."""
        begin = self.advance(tid, 1000, 3000)
        call = self.rng.randint(3000, 8000)
        corr = self.corr
        self.corr += 1
        self.complete(
            "cuda_runtime",
            "cudaMemcpyAsync",
            PID,
            tid,
            begin,
            call,
            {"External id": self.executions[tid][-1][3], "cbid": 41, "correlation": corr},
        )
        start = max(self.stream[COMPUTE], begin + self.rng.randint(3000, 6000))
        dur = max(int(nbytes / 24e9 * 1e9), 1200) + self.rng.randint(0, 600)  # PCIe
        self.stream[COMPUTE] = start + dur + 1000
        names = {"HtoD": "Memcpy HtoD (Pinned -> Device)", "DtoH": "Memcpy DtoH (Device -> Pinned)"}
        self.complete(
            "gpu_memcpy",
            names[kind],
            0,
            COMPUTE,
            start,
            dur,
            {
                "External id": self.executions[tid][-1][3],
                "device": 0,
                "context": 1,
                "stream": COMPUTE,
                "correlation": corr,
                "bytes": nbytes,
                "memory bandwidth (GB/s)": round(nbytes / dur, 3),
            },
        )
        self.memcpy_ns += dur
        self.cursor[tid] = begin + call
        if sync:  # cudaStreamSynchronize: the host waits for the device
            begin = self.advance(tid, 500, 1500)
            end = max(begin + 2000, self.stream[COMPUTE] + 1500)
            corr = self.corr
            self.corr += 1
            self.complete(
                "cuda_runtime",
                "cudaStreamSynchronize",
                PID,
                tid,
                begin,
                end - begin,
                {"External id": self.executions[tid][-1][3], "cbid": 131, "correlation": corr},
            )
            self.cursor[tid] = end
        else:
            self.cursor[tid] = begin + call


def _strides(dims) -> list:
    if not isinstance(dims, list) or any(not isinstance(d, int) for d in dims):
        return []
    out, acc = [], 1
    for d in reversed(dims):
        out.append(acc)
        acc *= d
    return out[::-1]
