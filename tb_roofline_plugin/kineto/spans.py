"""Spans of a Kineto trace that hold others on their thread: CPU ops, annotations, module
ranges; which one holds a moment, for many moments at once."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..arrays import unique
from ..ops.op_metrics import nesting_parents, span_order
from .trace_reader import TraceEvents

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass
class Nesting:
    """CPU ops of all threads sorted by (thread, begin, longest first), with their parents.

    Threads are laid end to end on one time axis (``thread * stride + time``), so one sorted
    array answers "which op holds this moment on this thread" for every thread at once.
    """

    order: np.ndarray  # sorted position -> cpu op index
    begin: np.ndarray  # shifted begin per sorted position
    end: np.ndarray
    parent: np.ndarray  # sorted position of the parent, -1 for a root
    stride: int
    thread_index: np.ndarray  # per trace thread code: its place on the axis, -1 if no ops

    def shift(self, thread: np.ndarray, time_ns: np.ndarray) -> np.ndarray:
        """Times on the shifted axis; -1 for threads without CPU ops."""
        index = self.thread_index[thread]
        return np.where(index >= 0, index * self.stride + time_ns, -1)

    def innermost(self, shifted: np.ndarray) -> np.ndarray:
        """The cpu op index of the innermost op holding each time (-1: none).

        The last op starting at or before the time holds it, or one of its ancestors does
        (ops nest): walk up the parents, all queries at once, one level per pass.
        """
        if not len(self.order):
            return np.full(len(shifted), -1, np.int64)
        at = np.searchsorted(self.begin, shifted, side="right") - 1
        at[shifted < 0] = -1
        todo = np.flatnonzero(at >= 0)
        todo = todo[self.end[at[todo]] < shifted[todo]]
        while len(todo):
            at[todo] = self.parent[at[todo]]
            todo = todo[at[todo] >= 0]
            todo = todo[self.end[at[todo]] < shifted[todo]]
        return np.where(at >= 0, self.order[np.maximum(at, 0)], -1)


def nesting(events: TraceEvents, rows: np.ndarray | None = None) -> Nesting:
    """The nesting of the CPU ops (or of the spans of ``rows``, whose indices it gives)."""
    rows = events.op_rows if rows is None else rows
    used = unique(events.thread[rows])
    thread_index = np.full(len(events.threads), -1, np.int64)
    thread_index[used] = np.arange(len(used))
    thread = thread_index[events.thread[rows]]
    begin, end = events.begin_ns[rows], events.end_ns[rows]
    stride = int(events.end_ns.max()) + 1 if len(events) else 1
    b, e = thread * stride + begin, thread * stride + end
    order = span_order(b, e)
    b, e = b[order], e[order]
    return Nesting(order, b, e, nesting_parents(b, e), stride, thread_index)


def annotation_rows(events: TraceEvents, category: str) -> np.ndarray:
    """Rows of ``category`` (``user_annotation``, ``gpu_user_annotation``) but the
    ``ProfilerStep#N`` spans: steps group ops, they do not name them."""
    rows = np.flatnonzero(events.category == events.code(category))
    steps = [c for c, n in enumerate(events.names) if STEP_NAME.match(n)]
    return rows[~np.isin(events.name[rows], steps)]


def innermost_rows(
    events: TraceEvents, rows: np.ndarray, thread: np.ndarray, time_ns: np.ndarray
) -> np.ndarray:
    """The row (of ``rows``) of the innermost span holding each time on its thread, -1: none."""
    if not len(rows) or not len(time_ns):
        return np.full(len(time_ns), -1, np.int64)
    marks = nesting(events, rows)
    at = marks.innermost(marks.shift(thread, time_ns))
    return np.where(at >= 0, rows[np.maximum(at, 0)], -1)
