"""PyTorch profiler (Kineto) traces as a roofline: ``*.pt.trace.json[.gz]`` to OpStats.

``trace_reader`` turns a trace file into numpy columns; ``ops`` attributes every GPU kernel to
the innermost CPU op that launched it (runtime call by correlation id, then the op whose span
holds the call on its thread), else to the annotation around its launch, else to a row of its
own, groups ops into ``ProfilerStep#N`` steps and builds the same OpStats the XSpace readers
build, so ``roofline.build_database``, ``export`` and ``summary`` work unchanged (a trace of
a GPU without its activity names the device and places no op); ``aten_cost`` gives FLOPs and
bytes per aten op family from recorded shapes; ``devices`` finds peaks from
``deviceProperties`` in the built-in device table; ``counters`` reads the hardware counters
of CUPTI range-profiler traces (Total (HW)).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from ..errors import ProfileError
from ..files import DEFAULT_MAX_BYTES
from ..ops.op_metrics import empty_db
from ..ops.op_stats import Diagnostics, OpStats
from ..peaks.perf_env import PerfEnv, RunEnvironment, finite_env
from ..xspace.discovery import host_name

if TYPE_CHECKING:
    from .trace_reader import TraceEvents

# The readers (``ops``, ``trace_reader``) are imported by the functions that use them: the
# XSpace path imports this package for ``aten_cost``'s tables only, and should not pay for them.
__all__ = ["analyze_trace", "analyze_events"]


def analyze_events(events: TraceEvents, host: str, peaks: PerfEnv | None = None) -> OpStats:
    """OpStats of a read trace. ``peaks`` (user/table/calibration) replace the device's."""
    from .ops import (
        COPY_CATEGORIES,
        KERNEL_CATEGORIES,
        NO_OPS,
        NO_PEAKS,
        NO_SHAPES,
        NO_SHAPES_TO_COMPARE,
        counter_op_stats,
        cpu_op_stats,
        gpu_op_stats,
        has_device,
        no_activity_stats,
    )

    counted = None
    if events.of(*KERNEL_CATEGORIES, *COPY_CATEGORIES).any():
        stats = gpu_op_stats(events, host)
    elif len(events.range_rows) and (counted := counter_op_stats(events, host)) is not None:
        stats = counted
    elif has_device(events):
        stats = no_activity_stats(events, host)
    elif len(events.op_rows):
        stats = cpu_op_stats(events, host, peaks)
    else:
        what = ", ".join(c for c in events.categories if c) or "no complete events"
        return OpStats(
            hosts=[host],
            run_env=RunEnvironment(hardware_type="CPU_ONLY"),
            perf_env=PerfEnv(),
            all_db=empty_db(),
            diagnostics=Diagnostics(info=[NO_OPS.format(what=what)]),
        )
    if len(stats.all_db) and len(events.op_rows) and not any(events.op_dims.tolist()):
        stats.notes.append(NO_SHAPES if counted is None else NO_SHAPES_TO_COMPARE)
    stats.perf_env = finite_env(stats.perf_env)
    if peaks is not None:
        stats = replace(stats, perf_env=peaks)
    if not stats.perf_env.known:
        stats.diagnostics.warnings.append(NO_PEAKS)
    return stats


def analyze_trace(
    path: str | os.PathLike,
    peaks: PerfEnv | None = None,
    data: bytes | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    parsed: Callable[[], None] | None = None,
) -> OpStats:
    """OpStats of one Kineto trace file (``data``: its bytes, when read by the caller; the
    file and its unpacked text at most ``max_bytes``); anything malformed is a one-line
    ProfileError naming the file. ``parsed`` is called once the JSON is parsed (progress)."""
    from .trace_reader import read_trace

    events = read_trace(path, data, max_bytes)
    if parsed is not None:
        parsed()
    try:
        return analyze_events(events, host_name(path), peaks)
    except (ValueError, OverflowError, ArithmeticError, TypeError, IndexError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ProfileError(path, f"malformed trace content ({detail})") from None
