"""Measuring this machine (``tb-roofline calibrate``): numpy matrix products and a
STREAM-style copy/triad, written as a JSON peak file that ``devices.load_peaks`` reads
(for CPU profiles, which carry no peaks)."""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from .devices import DevicePeaks

# --- calibration ----------------------------------------------------------------------------


def _best_seconds(
    run: Callable[[], object], budget_s: float, min_reps: int = 3, max_reps: int = 50
) -> tuple[float, int]:
    """Best wall time of ``run`` after one warm-up: repeats until the budget or ``max_reps``."""
    run()
    best = math.inf
    reps = 0
    start = time.perf_counter()
    while reps < max_reps and (reps < min_reps or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
        reps += 1
    return best, reps


class _Deadline:
    """Splits what is left of the budget evenly over the timings still to run.

    Setup (random matrices, page-faulting the stream arrays) and warm-ups come out of the
    budget too, so the whole run stays close to ``seconds_budget``.
    """

    def __init__(self, seconds: float, timings: int) -> None:
        self.end = time.perf_counter() + seconds
        self.left = timings

    def share(self) -> float:
        share = max(0.0, self.end - time.perf_counter()) / max(1, self.left)
        self.left -= 1
        return share


def _matmul(dtype: type[np.floating], n: int, deadline: _Deadline) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    seconds, reps = _best_seconds(lambda: np.matmul(a, b, out=out), deadline.share())
    flops = 2.0 * n**3
    return {
        "n": n,
        "flops": flops,
        "best_s": seconds,
        "reps": reps,
        "tflops": flops / seconds / 1e12,
    }


def _stream(array_mib: int, deadline: _Deadline) -> dict[str, dict[str, float]]:
    """Copy (b = a) and triad (a = b + s*c), counting the bytes numpy actually moves.

    numpy's triad is two passes (a = s*c, then a += b): 5 array-sizes of traffic, not 3.
    """
    count = max(1, array_mib * 2**20 // 8)
    a = np.full(count, 1.0)
    b = np.full(count, 2.0)
    c = np.full(count, 3.0)
    size = float(a.nbytes)

    def triad() -> None:
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    results = {}
    for name, run, traffic in (("copy", lambda: np.copyto(b, a), 2), ("triad", triad, 5)):
        seconds, reps = _best_seconds(run, deadline.share())
        moved = traffic * size
        results[name] = {
            "bytes": moved,
            "best_s": seconds,
            "reps": reps,
            "gbps": moved / seconds / 1e9,
        }
    return results


def calibrate(
    *, seconds_budget: float = 10.0, matrix_n: int = 2048, stream_mib: int = 512
) -> dict[str, Any]:
    """Measures this machine's peaks with numpy; returns a ``load_peaks``-compatible dict.

    FLOP/s: best of repeated ``a @ b`` (2n³ FLOPs) for float32 and float64, on all BLAS
    threads. Bandwidth: best STREAM-style copy/triad over float64 arrays of ``stream_mib`` MiB
    each (3 arrays), which must be far larger than the last-level cache. ``seconds_budget``
    covers setup and the four timings; each timing still runs a warm-up and 3 repetitions,
    so a budget too small for the sizes is overrun rather than giving no figure.
    """
    if seconds_budget <= 0 or matrix_n < 1 or stream_mib < 1:
        raise ValueError("calibrate: seconds_budget, matrix_n and stream_mib must be positive")
    started = time.perf_counter()
    deadline = _Deadline(seconds_budget, timings=4)
    fp32 = _matmul(np.float32, matrix_n, deadline)
    fp64 = _matmul(np.float64, matrix_n, deadline)
    stream = _stream(stream_mib, deadline)
    hostname = socket.gethostname() or "localhost"
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    return {
        "name": f"calibrated {hostname}",
        "vendor": "CPU",
        "dtype_tflops": {"fp32": fp32["tflops"], "fp64": fp64["tflops"]},
        "hbm_gbps": max(stream["copy"]["gbps"], stream["triad"]["gbps"]),
        "source": f"calibration (numpy matmul, stream copy/triad) on {today}",
        "notes": (
            "measured, not a datasheet peak: BLAS matmul and numpy memory passes reach a "
            "fraction of the hardware's limits"
        ),
        "details": {
            "hostname": hostname,
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "numpy": np.__version__,
            "matmul_fp32": fp32,
            "matmul_fp64": fp64,
            "stream_array_mib": stream_mib,
            "stream_copy": stream["copy"],
            "stream_triad": stream["triad"],
            "seconds_budget": seconds_budget,
            "elapsed_s": time.perf_counter() - started,
        },
    }


def write_calibration(path: str, result: Mapping[str, object]) -> None:
    """Writes a ``calibrate()`` result as a JSON peak file (checked first, so it will load)."""
    DevicePeaks.from_json(result)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2, sort_keys=False)
        handle.write("\n")
