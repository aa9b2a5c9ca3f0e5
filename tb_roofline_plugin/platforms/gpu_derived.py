"""The derived lines of a GPU device plane: read for what they are, never as kernels.

TensorFlow (and XProf's own analysis) writes lines next to the CUDA/HIP stream lines of
``/device:GPU:N``: ``Steps``, ``TensorFlow Ops``, ``TensorFlow Name Scope``, ``XLA
Modules``, ``XLA Ops``, ``Source code``, ... Their ids are ``0xdeadbeef`` + k (XProf's
``kThreadIdDerivedMin``; TensorFlow 2.x wrote them as int32, hence negative ids such as
-559038737). Their events repeat the kernels' spans, so reading them as kernels counts
each kernel again. Two are read:

- ``Steps``: one event per step on each device (TensorFlow GPU without host step
  markers). A kernel belongs to the step whose span on its own device holds its start.
- ``TensorFlow Ops``: one event per TF op on the device (name: the op's full name,
  display name: its type). A kernel's TF op is the op whose span on the same device
  holds the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..xspace.event_table import line_tables
from ..xspace.profile_reader import Plane, stat_ids, stat_names
from .host_steps import valid_step_numbers

DERIVED_ID_MIN = 0xDEADBEEF
DERIVED_ID_COUNT = 64  # XProf's derived line ids: kThreadIdDerivedMin to kThreadIdDerivedMax
DERIVED_LINE_NAMES = frozenset(
    {
        "Steps",
        "Launch Stats",
        "TensorFlow Ops",
        "TensorFlow Name Scope",
        "Framework Ops",
        "Framework Name Scope",
        "XLA Modules",
        "XLA Ops",
        "Async XLA Ops",
        "XLA TraceMe",
        "Source code",
        "SparseCore Steps",
    }
)
STEPS_LINE = "Steps"
TF_OPS_LINE = "TensorFlow Ops"
_STEP_STATS = ("step_num", "group_id", "step_name")
_NO_I64 = np.zeros(0, np.int64)


def is_derived_line(line) -> bool:
    """A derived line by its name or its id (as int64, or as TensorFlow's int32)."""
    if line.name in DERIVED_LINE_NAMES:
        return True
    return any(
        0 <= (line.id & mask) - DERIVED_ID_MIN < DERIVED_ID_COUNT
        for mask in (0xFFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF)
    )


@dataclass
class DerivedLines:
    """The ``Steps`` and ``TensorFlow Ops`` events of the GPU planes (absolute ps)."""

    step_plane: np.ndarray = field(default_factory=lambda: _NO_I64)
    step_begin: np.ndarray = field(default_factory=lambda: _NO_I64)
    step_end: np.ndarray = field(default_factory=lambda: _NO_I64)
    step_number: np.ndarray = field(default_factory=lambda: _NO_I64)
    op_plane: np.ndarray = field(default_factory=lambda: _NO_I64)
    op_begin: np.ndarray = field(default_factory=lambda: _NO_I64)
    op_end: np.ndarray = field(default_factory=lambda: _NO_I64)
    op: np.ndarray = field(default_factory=lambda: _NO_I64)  # code into op_names
    op_names: list[str] = field(default_factory=list)  # "full name:type", as TF's tf_op


def _step_numbers(table, plane: Plane) -> np.ndarray:
    """A device step's number: its ``step_num``, ``group_id`` (XProf's step id) or
    ``step_name`` stat, else its name when that is a number; NaN when none is."""
    ids = stat_ids(plane, _STEP_STATS)
    number = table.numbers(ids.get("step_num"))
    group = table.numbers(ids.get("group_id"))
    number = np.where(np.isnan(number), group, number)
    texts = table.strings(ids.get("step_name"), stat_names(plane))
    metadata = plane.event_metadata
    for i in np.flatnonzero(np.isnan(number)).tolist():
        key = int(table.metadata_id[i])
        text = texts[i] or (metadata[key].name if key in metadata else "")
        if str(text).isdigit():
            number[i] = int(text)
    return number


def read_derived(planes: list[Plane]) -> DerivedLines:
    steps: list[tuple[np.ndarray, ...]] = []
    ops: list[tuple[np.ndarray, ...]] = []
    names: dict[str, int] = {}
    for p, plane in enumerate(planes):
        for line in plane.lines:
            if line.name not in (STEPS_LINE, TF_OPS_LINE) or not is_derived_line(line):
                continue
            for table in line_tables(line, None):
                where = np.full(len(table), p, np.int64)
                if line.name == STEPS_LINE:
                    numbers = _step_numbers(table, plane)
                    steps.append((where, table.begin_ps, table.end_ps, numbers))
                    continue
                meta_ids, inverse = np.unique(table.metadata_id, return_inverse=True)
                codes = []
                for m in meta_ids.tolist():
                    meta = plane.event_metadata[m] if m in plane.event_metadata else None
                    name = meta.name if meta is not None else ""
                    kind = meta.display_name if meta is not None else ""
                    # TensorFlow writes "full name:type" already; else it is joined here.
                    typed = not kind or not name or name.endswith(f":{kind}")
                    text = (name or kind) if typed else f"{name}:{kind}"
                    codes.append(names.setdefault(text, len(names)))
                op = np.asarray(codes, np.int64)[inverse.ravel()]
                ops.append((where, table.begin_ps, table.end_ps, op))
    out = DerivedLines(op_names=list(names))
    if steps:
        plane_, begin, end, number = (np.concatenate(c) for c in zip(*steps))
        order = np.lexsort((plane_, begin))
        out.step_plane, out.step_begin, out.step_end = plane_[order], begin[order], end[order]
        out.step_number = _numbered(number[order], plane_[order])
    if ops:
        out.op_plane, out.op_begin, out.op_end, out.op = (np.concatenate(c) for c in zip(*ops))
    return out


def _numbered(number: np.ndarray, plane: np.ndarray) -> np.ndarray:
    """Valid step numbers as they are; the others by their position on their device."""
    position = np.zeros(len(number), np.int64)
    for p in np.unique(plane).tolist():  # a loop over GPUs
        on = np.flatnonzero(plane == p)
        position[on] = np.arange(len(on))
    return np.where(valid_step_numbers(number), number, position).astype(np.int64)


def held_by(
    plane: np.ndarray,
    begin: np.ndarray,
    end: np.ndarray,
    span_plane: np.ndarray,
    span_begin: np.ndarray,
    span_end: np.ndarray,
) -> np.ndarray:
    """Per event, the index of the span on its plane that holds it from ``begin`` to
    ``end`` (give ``begin`` as ``end`` for its start only), -1 for none. The spans of one
    plane do not overlap."""
    found = np.full(len(plane), -1, np.int64)
    for p in np.unique(span_plane).tolist():  # a loop over GPUs
        spans = np.flatnonzero(span_plane == p)
        spans = spans[np.argsort(span_begin[spans], kind="stable")]
        events = np.flatnonzero(plane == p)
        slot = np.searchsorted(span_begin[spans], begin[events], side="right") - 1
        inside = slot >= 0
        slot = np.maximum(slot, 0)
        inside &= end[events] <= span_end[spans][slot]
        found[events[inside]] = spans[slot[inside]]
    return found
