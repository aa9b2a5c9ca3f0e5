"""Op events summed per op and per (step window, op): the sums a platform reader bins.

A TensorCore's ``XLA Ops`` events nest (a fusion inside a while loop inside a call); per
metadata id and per (window, metadata id) cell the reader needs their occurrences, time,
self time (time less the spans nested in it), a per-event stat (DMA stall) and the time
scaled by another (DVFS multiplier). With the compiled decoder that is one C pass over
the lines' bytes (``_wire.span_sums``), no per-event array at all; otherwise, or where
the pass declines (events out of order, partially overlapping spans, sums that could
round), the same sums from the events as arrays. Both give the same bits: each float sum
adds its events in event order, self times are integers summed exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arrays import unique
from ..xspace.event_table import compiled_span_sums, first_seen_codes
from ..xspace.profile_reader import LineEvents, Plane, line_events, stat_ids
from .op_metrics import self_times

SUMS = ("occurrences", "time_ps", "self_ps", "stat", "scaled_ps")
# Stats read per event: device time (as line_events), a summed one and a scaling one.
DEVICE_TIME_STATS = ("device_offset_ps", "device_duration_ps")
# Step windows: (begin ps, end ps) of each window, int64 columns, begins ascending.
Windows = tuple[np.ndarray, np.ndarray]


@dataclass
class SpanSums:
    """Sums of op events: per metadata id (in order of first appearance) and per (window,
    id) cell that holds events (each once, in no set order); float64 each, ``SUMS``."""

    events: int
    min_begin_ps: int  # of all events (0 when there are none)
    max_end_ps: int
    ids: np.ndarray  # int64 metadata ids
    per_id: dict[str, np.ndarray]
    cell_window: np.ndarray  # int64 window of each cell
    cell_id: np.ndarray  # int64 index into ``ids``
    per_cell: dict[str, np.ndarray]

    @property
    def span_ps(self) -> int:
        return self.max_end_ps - self.min_begin_ps if self.events else 0


def span_sums(
    plane: Plane, lines: list, stats: tuple[str, str], windows: Windows | None
) -> SpanSums:
    """The sums of the events of ``lines`` of ``plane``; ``stats`` names the summed and the
    scaling stat; ``windows`` (begin, end) ps: a window holds the events starting in it
    (the last window beginning at or before the event, while the event is before its end)."""
    ids = stat_ids(plane, [*DEVICE_TIME_STATS, *stats])
    wanted = [ids.get(name) for name in (*DEVICE_TIME_STATS, *stats)]
    begin = end = None
    if windows is not None:
        begin, end = (np.ascontiguousarray(w, np.int64) for w in windows)
    compiled = compiled_span_sums(lines, wanted, begin, end)
    if compiled is not None:
        return _from_compiled(*compiled)
    parts = [line_events(plane, line, numeric_stats=stats) for line in lines]
    return array_span_sums(parts, stats, windows)


def _from_compiled(events, min_begin, max_end, per_id, cells) -> SpanSums:
    def sums(columns: list[np.ndarray]) -> dict[str, np.ndarray]:  # self times: exact int64
        return {k: c.astype(np.float64, copy=False) for k, c in zip(SUMS, columns)}

    return SpanSums(
        events=events,
        min_begin_ps=min_begin if events else 0,
        max_end_ps=max_end if events else 0,
        ids=per_id[0],
        per_id=sums(per_id[1:]),
        cell_window=cells[0],
        cell_id=cells[1],
        per_cell=sums(cells[2:]),
    )


def array_span_sums(
    parts: list[LineEvents],
    stats: tuple[str, str],
    windows: Windows | None,
    metadata_id: np.ndarray | None = None,
) -> SpanSums:
    """``span_sums`` of events given as arrays, one part per line (self times line by line);
    ``metadata_id`` (per event of all parts) replaces the events' own ids."""
    summed, scale = stats
    if parts:
        ids_of = np.concatenate([p.metadata_id for p in parts])
        begin = np.concatenate([p.begin_ps for p in parts])
        end = np.concatenate([p.end_ps for p in parts])
        occurrences = np.concatenate([p.occurrences for p in parts])
        self_ps = np.concatenate([self_times(p.begin_ps, p.end_ps) for p in parts])
        stat = np.nan_to_num(np.concatenate([p.stats[summed] for p in parts]))
        factor = np.concatenate([p.stats[scale] for p in parts])
        factor = np.where(np.isnan(factor), 1.0, factor)
    else:
        ids_of = begin = end = occurrences = self_ps = np.zeros(0, np.int64)
        stat = factor = np.zeros(0)
    if metadata_id is not None:
        ids_of = metadata_id
    code, ids = first_seen_codes(ids_of)
    duration = end - begin
    weights = (occurrences, duration, self_ps, stat, duration * factor)
    count = len(ids)
    per_id: dict[str, np.ndarray] = {
        k: np.asarray(np.bincount(code, weights=w, minlength=count), np.float64)
        for k, w in zip(SUMS, weights)
    }
    if windows is None:
        window = cell_id = np.zeros(0, np.int64)
        per_cell = {k: np.zeros(0) for k in SUMS}
    else:
        starts, ends = (np.asarray(w, np.int64) for w in windows)
        group = np.searchsorted(starts, begin, side="right") - 1
        inside = group >= 0
        inside[inside] &= begin[inside] < ends[group[inside]]
        keys = group[inside] * max(count, 1) + code[inside]
        cell_keys, inverse = unique(keys, return_inverse=True)
        window, cell_id = np.divmod(cell_keys, max(count, 1))
        per_cell = {
            k: np.asarray(
                np.bincount(inverse.ravel(), weights=w[inside], minlength=len(cell_keys)),
                np.float64,
            )
            for k, w in zip(SUMS, weights)
        }
    return SpanSums(
        events=len(begin),
        min_begin_ps=int(begin.min()) if len(begin) else 0,
        max_end_ps=int(end.max()) if len(end) else 0,
        ids=ids.astype(np.int64),
        per_id=per_id,
        cell_window=window.astype(np.int64),
        cell_id=cell_id.astype(np.int64),
        per_cell=per_cell,
    )
