"""Per-op metrics (XProf's OpMetricsDb) as numpy columns, and the pieces that build them.

One row per op, keyed by ``(program_id, name)``; times in ps, costs summed over
occurrences and cores. Platform readers (TPU, GPU, CPU) produce these; the roofline
layer only ever sees an ``OpMetricsDb``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

# Memory spaces of MemoryAccessBreakdown (1 HBM, 2 CMEM, 3 VMEM) -> breakdown row.
MEMORY_SPACES = {1: 0, 2: 1, 3: 2}
HBM, CMEM, VMEM = 0, 1, 2
READ, WRITE = 0, 1
IDLE_NAME = "IDLE"
# Ops whose work is that of the ops in their body (timed apart): a Program, or a layer, sums
# their time but not their FLOPs or bytes.
INNER_OP_CATEGORIES = frozenset({"call", "conditional", "while", "megacore fusion"})


@dataclass
class OpMetricsDb:
    """Columns of per-op metrics; every array has one entry per op."""

    program_id: np.ndarray  # uint64
    name: np.ndarray  # object (str)
    category: np.ndarray  # object (str)
    occurrences: np.ndarray  # int64
    time_ps: np.ndarray  # int64, including nested children
    self_time_ps: np.ndarray  # int64
    flops: np.ndarray  # float64
    model_flops: np.ndarray  # float64 (0 = fall back to flops)
    bytes_accessed: np.ndarray  # float64
    breakdown: np.ndarray  # float64 (n, 3 spaces HBM/CMEM/VMEM, 2 READ/WRITE) bytes
    has_breakdown: np.ndarray  # bool: the op carried a memory_access_breakdown
    dma_stall_ps: np.ndarray  # float64
    normalized_time_ps: np.ndarray  # float64 (time x DVFS multiplier)
    source_file: np.ndarray  # object (str)
    source_line: np.ndarray  # int64, -1 = none
    source_stack: np.ndarray  # object (str)
    dtype: np.ndarray  # object (str): dominant input dtype, "" when unknown
    # How the op reads to its author (json and UI only, ``hlo.text``): "" when unknown.
    shapes: np.ndarray  # object (str): operand shapes → result shape
    hlo_text: np.ndarray  # object (str): its HLO instruction's line, shortened
    framework_op: np.ndarray  # object (str): framework op or layer (op_name, tf_op, module)
    # object (str): "file:line" of the code that made the op where its own source fields have
    # none: a fusion's fused instructions' metadata, a PyTorch op's Python stack
    code_line: np.ndarray
    # object (str): the op's name stack as its producer wrote it, the op itself last (JAX's
    # and TensorFlow's HLO op_name, PyTorch's module path); "" when none (ops/layers.py)
    op_path: np.ndarray
    total_time_ps: int = 0  # device time of the db (per core: last end - first start)
    extra: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.name)

    @property
    def total_op_time_ps(self) -> int:
        return int(self.self_time_ps[self.occurrences > 0].sum())

    def take(self, index: np.ndarray) -> OpMetricsDb:
        """The rows at ``index`` (a sub-db with the same total time)."""
        cols: dict[str, Any] = {
            f.name: getattr(self, f.name)[index] for f in fields(self) if _is_column(f.name)
        }
        return replace(self, **cols)


_SCALAR_FIELDS = {"total_time_ps", "extra"}


def _is_column(name: str) -> bool:
    return name not in _SCALAR_FIELDS


def empty_db(total_time_ps: int = 0) -> OpMetricsDb:
    return OpMetricsDb(**empty_columns(0), total_time_ps=total_time_ps)


def empty_columns(n: int) -> dict[str, Any]:
    return {
        "program_id": np.zeros(n, np.uint64),
        "name": np.full(n, "", object),
        "category": np.full(n, "", object),
        "occurrences": np.zeros(n, np.int64),
        "time_ps": np.zeros(n, np.int64),
        "self_time_ps": np.zeros(n, np.int64),
        "flops": np.zeros(n),
        "model_flops": np.zeros(n),
        "bytes_accessed": np.zeros(n),
        "breakdown": np.zeros((n, 3, 2)),
        "has_breakdown": np.zeros(n, bool),
        "dma_stall_ps": np.zeros(n),
        "normalized_time_ps": np.zeros(n),
        "source_file": np.full(n, "", object),
        "source_line": np.full(n, -1, np.int64),
        "source_stack": np.full(n, "", object),
        "dtype": np.full(n, "", object),
        "shapes": np.full(n, "", object),
        "hlo_text": np.full(n, "", object),
        "framework_op": np.full(n, "", object),
        "code_line": np.full(n, "", object),
        "op_path": np.full(n, "", object),
    }


# The columns of strings (numpy object arrays), in the db's order.
STRING_COLUMNS = tuple(k for k, v in empty_columns(0).items() if v.dtype == object)


# The columns of an HLO op's ``hlo.text.OpText``, in its order.
TEXT_COLUMNS = ("shapes", "hlo_text", "framework_op", "code_line")


# Columns that add up when the same op is merged; the rest are identity/descriptive.
SUMMED_COLUMNS = (
    "occurrences",
    "time_ps",
    "self_time_ps",
    "flops",
    "model_flops",
    "bytes_accessed",
    "breakdown",
    "dma_stall_ps",
    "normalized_time_ps",
)


def combine(dbs: list[OpMetricsDb]) -> OpMetricsDb:
    """Sums dbs (cores, hosts or steps): ops merge by (program_id, name, op_path), times
    add up (an XLA op has one op_path; a PyTorch op row is split by its module path only in
    ``OpStats.layer_split``).

    The IDLE rows merge too, so the combined IDLE is the sum of the parts' idle time.
    """
    dbs = [db for db in dbs if db is not None]
    total = int(sum(db.total_time_ps for db in dbs))
    if not dbs:
        return empty_db()
    keys: dict[tuple[int, str, str], int] = {}
    owner_db, owner_row, target = [], [], []
    for d, db in enumerate(dbs):
        rows = np.empty(len(db), np.int64)
        pairs = zip(db.program_id.tolist(), db.name.tolist(), db.op_path.tolist())
        for i, key in enumerate(pairs):
            slot = keys.get(key)
            if slot is None:
                slot = keys[key] = len(keys)
                owner_db.append(d)
                owner_row.append(i)
            rows[i] = slot
        target.append(rows)
    out = empty_columns(len(keys))
    # Descriptive columns come from the first db that has the op.
    for d, db in enumerate(dbs):
        mine = np.nonzero(np.asarray(owner_db) == d)[0]
        if len(mine) == 0:
            continue
        src = np.asarray(owner_row)[mine]
        for col in out:
            if col not in SUMMED_COLUMNS:
                out[col][mine] = getattr(db, col)[src]
    for d, db in enumerate(dbs):
        for col in SUMMED_COLUMNS:
            np.add.at(out[col], target[d], getattr(db, col))
        np.logical_or.at(out["has_breakdown"], target[d], db.has_breakdown)
    return OpMetricsDb(**out, total_time_ps=total)


def with_idle(db: OpMetricsDb) -> OpMetricsDb:
    """Appends XProf's IDLE op: occurrences 0, time = self time = total - Σ self times."""
    idle = max(int(db.total_time_ps) - db.total_op_time_ps, 0)
    row = empty_columns(1)
    row["name"][0] = row["category"][0] = IDLE_NAME
    row["time_ps"][0] = row["self_time_ps"][0] = idle
    row["normalized_time_ps"][0] = idle
    cols: dict[str, Any] = {k: np.concatenate([getattr(db, k), v]) for k, v in row.items()}
    return replace(db, **cols)


def nested_in_earlier(begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For events sorted by (begin, -duration): is each one inside an earlier event?

    An earlier-starting event that ends no sooner contains it; a partial overlap does not.
    """
    contained = np.zeros(len(begin), bool)
    if len(begin) > 1:
        prev_max_end = np.maximum.accumulate(end)[:-1]
        contained[1:] = prev_max_end >= end[1:]
    return contained


def nesting_parents(b: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The parent (position) of each span of one line sorted by (begin, -duration): the
    innermost earlier span holding it, -1 for none; a partial overlap is not nesting.

    Solved level by level with array operations: the outermost spans, then those directly
    inside them, and so on (a handful of levels: while loops, their bodies, ...).
    """
    parent = np.full(len(b), -1, np.int64)
    candidates = np.arange(len(b))  # spans whose parent is among the candidates or none
    while len(candidates):
        inside = nested_in_earlier(b[candidates], e[candidates])
        level, nested = candidates[~inside], candidates[inside]
        if len(nested) == 0:
            break
        # The parent of a nested event is the last event of this level starting before it.
        slot = np.searchsorted(b[level], b[nested], side="right") - 1
        ties = True
        while ties:  # an equal-begin, shorter event of this level cannot be the parent
            bad = (slot >= 0) & (e[level[np.maximum(slot, 0)]] < e[nested])
            ties = bool(bad.any())
            slot[bad] -= 1
        parent[nested] = np.where(slot >= 0, level[np.maximum(slot, 0)], -1)
        candidates = nested
    return parent


def span_order(begin_ps: np.ndarray, end_ps: np.ndarray) -> np.ndarray:
    """Positions of spans sorted by (begin, -duration): outer spans before the spans they hold.

    A line's events are usually in that order already; checking it is one pass, where
    ``np.lexsort`` costs a sort (a fifth of a second per half-million events).
    """
    if len(begin_ps) > 1:
        step = np.diff(begin_ps)
        if (step >= 0).all() and not ((step == 0) & (end_ps[1:] > end_ps[:-1])).any():
            return np.arange(len(begin_ps))
    return np.lexsort((begin_ps - end_ps, begin_ps))


def self_times(begin_ps: np.ndarray, end_ps: np.ndarray) -> np.ndarray:
    """Self time of each event: its duration minus that of its directly nested children
    (events nest by time containment on one line, ``nesting_parents``)."""
    n = len(begin_ps)
    duration = end_ps - begin_ps
    if n == 0:
        return duration
    order = span_order(begin_ps, end_ps)
    parent = nesting_parents(begin_ps[order], end_ps[order])  # positions in `order`
    nested = parent >= 0
    child_time = np.zeros(n, np.int64)
    np.add.at(child_time, order[parent[nested]], duration[order[nested]])
    return duration - child_time
