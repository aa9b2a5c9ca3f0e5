"""Oracles for PyTorch profiler traces, from the raw JSON in plain Python (no tb_roofline code).

Old Kineto (PyTorch 1.8-1.10) names its categories ``Operator``, ``Kernel``, ``Runtime``,
``Memcpy``, ``Memset``; the oracle maps them to today's names by this table of its own.
A kernel belongs to the innermost CPU op holding its launch (the runtime or driver call with the
kernel's correlation, on the call's thread), else to the innermost annotation holding the launch
(``user_annotation`` other than ``ProfilerStep#N``), else to nothing.
"""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict
from pathlib import Path

OLD_NAMES = {
    "Operator": "cpu_op",
    "Kernel": "kernel",
    "Runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}
RUNTIME = ("cuda_runtime", "cuda_driver", "hip_runtime")


def load(path: Path) -> tuple[dict, list[dict]]:
    """(top-level keys but traceEvents, complete events with modern category names)."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    document = json.loads(data)
    events = []
    for e in document.pop("traceEvents"):
        if e.get("ph") == "X":
            e["cat"] = OLD_NAMES.get(e.get("cat"), e.get("cat"))
            events.append(e)
    return document, events


class Holder:
    """The innermost span of a kind holding a moment on a thread."""

    def __init__(self, spans: list[dict]) -> None:
        self.by_thread: dict[tuple, list[dict]] = defaultdict(list)
        for e in spans:
            self.by_thread[(e["pid"], e["tid"])].append(e)
        self.starts = {}
        for key, items in self.by_thread.items():
            items.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
            self.starts[key] = [e["ts"] for e in items]

    def innermost(self, thread: tuple, t: float) -> dict | None:
        items = self.by_thread.get(thread)
        if not items:
            return None
        for j in range(bisect.bisect_right(self.starts[thread], t) - 1, -1, -1):
            if items[j]["ts"] + items[j].get("dur", 0) >= t:
                return items[j]
        return None


def kernel_owners(events: list[dict]) -> list[tuple[dict, str, dict | None]]:
    """(kernel, "op" | "annotation" | "none", owner event) for every kernel."""
    ops = Holder([e for e in events if e.get("cat") == "cpu_op"])
    annotations = Holder(
        [
            e
            for e in events
            if e.get("cat") == "user_annotation" and not e["name"].startswith("ProfilerStep#")
        ]
    )
    calls = {}
    for e in events:
        if e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            calls[e["args"]["correlation"]] = e
    found = []
    for e in events:
        if e.get("cat") != "kernel":
            continue
        call = calls.get(e.get("args", {}).get("correlation"))
        if call is None:
            found.append((e, "none", None))
            continue
        thread = (call["pid"], call["tid"])
        op = ops.innermost(thread, call["ts"])
        if op is not None:
            found.append((e, "op", op))
            continue
        note = annotations.innermost(thread, call["ts"])
        found.append((e, "annotation", note) if note is not None else (e, "none", None))
    return found


def shares(events: list[dict]) -> dict[str, float]:
    """Share of kernel time (0-1) per owner kind."""
    total = defaultdict(float)
    for kernel, kind, _ in kernel_owners(events):
        total[kind] += kernel.get("dur", 0)
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()} if whole else {}


def complete_steps_us(events: list[dict]) -> dict[int, float]:
    """ProfilerStep#N -> its span (us): a user annotation, or an op in old Kineto."""
    steps = {}
    for e in events:
        if e.get("cat") in ("user_annotation", "cpu_op") and e["name"].startswith("ProfilerStep#"):
            steps.setdefault(int(e["name"].split("#")[1]), e["dur"])
    return steps


def gemm_flops(op: dict) -> float | None:
    """2·M·N·K (times the batch) of an ``aten::mm``/``addmm``/``bmm`` from its Input Dims."""
    dims = op.get("args", {}).get("Input Dims")
    if not dims:
        return None
    a, b = (dims[1], dims[2]) if op["name"] == "aten::addmm" else (dims[0], dims[1])
    if len(a) < 2 or len(b) < 2:
        return None
    batch = a[0] if len(a) == 3 else 1
    return 2.0 * batch * a[-2] * a[-1] * b[-1]
