"""Host step markers and kernel launches on ``/host:CPU`` (steps of GPU and CPU profiles).

A step marker is a host event with stat ``step_num`` or ``_r``:
``jax.profiler.StepTraceAnnotation``, ``tf.profiler.experimental.Trace("train",
step_num=s)`` with or without ``_r``, Keras' ``Profiled batch`` (``step_num``, no ``_r``),
torch_xla step traces. Where any marker carries a ``step_num``, only those are steps:
TensorFlow's ``FunctionRun`` roots (``_r=1``, no ``step_num``, on python and tf.data
threads) run the work of a step, they are not steps. A step is numbered by its
``step_num`` stat or else by order. A launch is a host event with a ``correlation_id``
stat (``cuLaunchKernel``, ``hipModuleLaunchKernel``, ...): the kernel with the same id ran it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arrays import unique
from ..ops.kernel_sums import compiled_host_launches
from ..ops.op_metrics import nested_in_earlier
from ..xspace.event_table import line_tables, may_have_stats
from ..xspace.profile_reader import Plane, stat_ids

MARKER_STATS = ("_r", "step_num", "correlation_id")
MARKER_CHUNK_EVENTS = 1 << 18  # host events read at a time (memory: one piece)


_NO_IDS = np.zeros(0, np.uint64)
_NO_TIMES = np.zeros(0, np.int64)


@dataclass
class StepSpans:
    """Steps in time order: the number, begin and end (ps) of each, as int64 columns."""

    numbers: np.ndarray
    begin_ps: np.ndarray
    end_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.numbers)


def no_steps() -> StepSpans:
    return StepSpans(_NO_TIMES, _NO_TIMES, _NO_TIMES)


@dataclass
class HostMarkers:
    steps: StepSpans = field(default_factory=no_steps)
    # Launches by correlation id, ascending and unique (a repeated id: the last one read).
    launch_ids: np.ndarray = field(default_factory=lambda: _NO_IDS)  # uint64
    launch_ps: np.ndarray = field(default_factory=lambda: _NO_TIMES)  # int64 launch begin


def valid_step_numbers(num: np.ndarray | np.float64) -> np.ndarray:
    """Step numbers the schema can hold (uint32); anything else is numbered by position."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(num) & (num >= 0) & (num < 2**32) & (num == np.floor(num))


def valid_step_number(num: float) -> bool:
    return bool(valid_step_numbers(np.float64(num)))


def number_steps(num: np.ndarray, begin: np.ndarray, end: np.ndarray) -> StepSpans:
    """Step markers in time order, each numbered by its ``step_num`` or else by position.

    The markers' columns (``root_columns``): step_num (float64, NaN where the marker has
    none), begin and end (int64 ps). Where some marker has a ``step_num``, the others are
    not steps. A marker inside another's span is part of that step, not a step of its own
    (e.g. ``FunctionRun`` roots inside ``train`` roots).
    """
    if not len(num):
        return no_steps()
    num = np.asarray(num, np.float64)
    begin, end = np.asarray(begin, np.int64), np.asarray(end, np.int64)
    numbered = ~np.isnan(num)
    if numbered.any():
        num, begin, end = num[numbered], begin[numbered], end[numbered]
    order = np.lexsort((-end, begin))
    num, begin, end = num[order], begin[order], end[order]
    outer = ~nested_in_earlier(begin, end)
    num, begin, end = num[outer], begin[outer], end[outer]
    numbers = np.where(valid_step_numbers(num), num, np.arange(len(num))).astype(np.int64)
    return StepSpans(numbers, begin, end)


Roots = tuple[np.ndarray, np.ndarray, np.ndarray]  # step_num (NaN: none), begin, end (ps)


def root_columns(pieces: list[Roots]) -> Roots:
    """The step markers of several pieces (in order) as one set of columns."""
    if not pieces:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(pieces) == 1:
        return pieces[0]
    num, begin, end = zip(*pieces)
    return np.concatenate(num), np.concatenate(begin), np.concatenate(end)


def step_roots(table, ids: dict[str, int]) -> Roots:
    """The step markers (``_r`` or ``step_num``) of one line's table: step number or NaN,
    begin, end."""
    is_root, _ = table.integers(ids.get("_r"))
    step_num = table.numbers(ids.get("step_num"))
    roots = np.flatnonzero(is_root | ~np.isnan(step_num))
    return step_num[roots], table.begin_ps[roots], table.end_ps[roots]


def _marker_parts(plane: Plane, ids: dict[str, int], wanted: list) -> tuple[list, list, list]:
    """The step roots, launch ids and launch times of the host's lines, line by line."""
    roots: list[Roots] = []
    launch_ids, launch_ps = [], []
    for line in plane.lines:
        if not may_have_stats(line, wanted):
            continue  # e.g. Python or framework threads without roots or launches
        stats = [ids.get(name) for name in MARKER_STATS]
        for table in line_tables(line, stats, chunk_events=MARKER_CHUNK_EVENTS):
            roots.append(step_roots(table, ids))
            has_id, correlation = table.integers(ids.get("correlation_id"))
            launch_ids.append(correlation[has_id].astype(np.uint64))
            launch_ps.append(table.begin_ps[has_id])
    return roots, launch_ids, launch_ps


def host_markers(plane: Plane | None) -> HostMarkers:
    markers = HostMarkers()
    if plane is None:
        return markers
    ids = stat_ids(plane, MARKER_STATS)
    wanted = [ids.get("_r"), ids.get("step_num"), ids.get("correlation_id")]
    compiled = compiled_host_launches(plane.lines, wanted)  # one C pass, where it can
    if compiled is not None:
        step_num, begin, end, correlation, launched_ps = compiled
        roots = [(step_num, begin, end)]
        launch_ids, launch_ps = [correlation], [launched_ps]
    else:
        roots, launch_ids, launch_ps = _marker_parts(plane, ids, wanted)
    markers.steps = number_steps(*root_columns(roots))
    if launch_ids:
        all_ids, all_ps = np.concatenate(launch_ids), np.concatenate(launch_ps)
        if (all_ids[1:] > all_ids[:-1]).all():  # ascending and unique already: as they are
            markers.launch_ids, markers.launch_ps = all_ids, all_ps
            return markers
        # The last launch of a repeated id wins: unique over the reversed arrays.
        markers.launch_ids, first = unique(all_ids[::-1], return_index=True)
        markers.launch_ps = all_ps[::-1][first]
    return markers
