"""Measuring this machine (``tb-roofline calibrate``): matrix products in each dtype the
machine runs and a STREAM-style copy/triad, written as a JSON peak file that
``devices.load_peaks`` reads (for CPU profiles, which carry no peaks).

fp32 and fp64 are numpy's (its BLAS); bf16, and int8 where the CPU has int8 dot-product
instructions, are measured with torch or jax when one is installed (imported here only,
never a dependency): numpy has no bf16, and a bf16 op on a CPU with AMX runs several times
faster than fp32, so judging it by the fp32 peak would put it far above its roof."""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import time
from collections.abc import Mapping, Sequence
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


def _matmul(dtype: type[np.floating], n: int, deadline: _Deadline) -> dict[str, Any]:
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
        "library": f"numpy {np.__version__}",
    }


# Libraries that can time bf16/int8 products, fastest first where both are installed.
MATMUL_LIBRARIES = ("torch", "jax")
# CPU flags (Linux /proc/cpuinfo) of int8 dot-product instructions: without them an int8
# product is emulated, and no int8 model would be run there.
_INT8_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni", "asimddp", "i8mm")


def _cpu_has_int8() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            words = set(handle.read().split())
    except OSError:  # not Linux: Apple and other arm64 CPUs have dot-product instructions
        return platform.machine().lower() in ("arm64", "aarch64")
    return any(flag in words for flag in _INT8_FLAGS)


def _torch_matmul(dtype: str, n: int) -> tuple[Callable[[], object], str]:
    """A CPU ``a @ b`` in bf16 (fp32 accumulation inside) or int8 (int32 accumulation)."""
    import torch  # type: ignore[import-not-found]

    generator = torch.Generator().manual_seed(0)
    if dtype == "bf16":
        a = torch.randn(n, n, generator=generator).to(torch.bfloat16)
        b = torch.randn(n, n, generator=generator).to(torch.bfloat16)
        return (lambda: torch.matmul(a, b)), f"torch {torch.__version__}"
    a = torch.randint(-8, 8, (n, n), generator=generator, dtype=torch.int8)
    b = torch.randint(-8, 8, (n, n), generator=generator, dtype=torch.int8)
    return (lambda: torch._int_mm(a, b)), f"torch {torch.__version__}"


def _jax_matmul(dtype: str, n: int) -> tuple[Callable[[], object], str]:
    """The same with jax on its CPU device (never a GPU's), accumulating in fp32/int32."""
    import jax  # type: ignore[import-not-found]
    import jax.numpy as jnp  # type: ignore[import-not-found]

    cpu = jax.devices("cpu")[0]
    rng = np.random.default_rng(0)
    host: np.ndarray
    if dtype == "bf16":
        kind, accumulate = jnp.bfloat16, jnp.float32
        host = rng.standard_normal((2, n, n), dtype=np.float32)
    else:
        kind, accumulate = jnp.int8, jnp.int32
        host = rng.integers(-8, 8, (2, n, n), dtype=np.int8)
    a, b = (jax.device_put(jnp.asarray(x, kind), cpu) for x in host)
    product = jax.jit(lambda x, y: jnp.matmul(x, y, preferred_element_type=accumulate))
    return (lambda: product(a, b).block_until_ready()), f"jax {jax.__version__}"


_MATMULS = {"torch": _torch_matmul, "jax": _jax_matmul}


def _library_matmul(
    dtype: str, n: int, libraries: Sequence[str], deadline: _Deadline
) -> dict[str, Any] | None:
    """The best ``dtype`` product rate over the installed ``libraries``, naming the one that
    measured it; None when none is installed or none runs ``dtype`` here."""
    share = deadline.share()
    best: dict[str, Any] | None = None
    tried = [lib for lib in libraries if lib in _MATMULS]
    for index, library in enumerate(tried):
        budget = share / (len(tried) - index)
        started = time.perf_counter()
        try:
            run, name = _MATMULS[library](dtype, n)
            seconds, reps = _best_seconds(run, budget)
        except Exception:  # not installed, or no such product on this build: skip it
            continue
        finally:
            share -= time.perf_counter() - started
        flops = 2.0 * n**3
        result: dict[str, Any] = {"n": n, "flops": flops, "best_s": seconds, "reps": reps}
        result |= {"tflops": flops / seconds / 1e12, "library": name}
        if best is None or result["tflops"] > best["tflops"]:
            best = result
    return best


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
    *,
    seconds_budget: float = 10.0,
    matrix_n: int = 2048,
    stream_mib: int = 512,
    libraries: Sequence[str] = MATMUL_LIBRARIES,
) -> dict[str, Any]:
    """Measures this machine's peaks; returns a ``load_peaks``-compatible dict.

    FLOP/s: best of repeated ``a @ b`` (2n³ FLOPs) for float32 and float64 with numpy, on
    all BLAS threads; bf16 (and int8 where the CPU has it) with the fastest of ``libraries``
    installed, left out when none is (``details["libraries"]`` names the library of each
    dtype). Bandwidth: best STREAM-style copy/triad over float64 arrays of ``stream_mib`` MiB
    each (3 arrays), which must be far larger than the last-level cache. ``seconds_budget``
    covers setup (a library's import included) and the timings; each timing still runs a
    warm-up and 3 repetitions, so a budget too small for the sizes is overrun rather than
    giving no figure.
    """
    if seconds_budget <= 0 or matrix_n < 1 or stream_mib < 1:
        raise ValueError("calibrate: seconds_budget, matrix_n and stream_mib must be positive")
    started = time.perf_counter()
    low = ["bf16", *(["int8"] if _cpu_has_int8() else [])] if libraries else []
    deadline = _Deadline(seconds_budget, timings=4 + len(low))
    fp32 = _matmul(np.float32, matrix_n, deadline)
    fp64 = _matmul(np.float64, matrix_n, deadline)
    measured = {"fp32": fp32, "fp64": fp64}
    for dtype in low:
        result = _library_matmul(dtype, matrix_n, libraries, deadline)
        if result is not None:
            measured[dtype] = result
    stream = _stream(stream_mib, deadline)
    hostname = socket.gethostname() or "localhost"
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    by_library: dict[str, list[str]] = {}
    for dtype, result in measured.items():
        by_library.setdefault(result["library"].split()[0], []).append(dtype)
    matmuls = ", ".join(f"{lib} matmul {'/'.join(d)}" for lib, d in by_library.items())
    return {
        "name": f"calibrated {hostname}",
        "vendor": "CPU",
        "dtype_tflops": {dtype: result["tflops"] for dtype, result in measured.items()},
        "hbm_gbps": max(stream["copy"]["gbps"], stream["triad"]["gbps"]),
        "source": f"calibration ({matmuls}, stream copy/triad) on {today}",
        "notes": (
            "measured, not a datasheet peak: library matmuls and numpy memory passes reach a "
            "fraction of the hardware's limits; a dtype not measured has no ceiling"
        ),
        "details": {
            "hostname": hostname,
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "numpy": np.__version__,
            "libraries": {dtype: result["library"] for dtype, result in measured.items()},
            **{f"matmul_{dtype}": result for dtype, result in measured.items()},
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
