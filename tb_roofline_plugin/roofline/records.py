"""The records of a roofline (``docs/roofline-semantics.md`` sections 4-6): the Program
record and the op records of a set of op metrics, as columns (``RecordSet``) that become
``RooflineModelRecord`` messages only when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..ops.op_metrics import (
    INNER_OP_CATEGORIES,
    OpMetricsDb,
    empty_columns,
    empty_db,
)
from ..ops.op_stats import StepInfo, shared_table
from ..protos import roofline_model_pb2
from ..protos.source_info_pb2 import SourceInfo
from .formulas import DatabasePeaks, is_infeed_or_outfeed, record_metrics, safe_divide

MAX_OP_RECORDS = 1000


# --- the Program record and the op records ----------------------------------------------------


def _category_mask(categories: np.ndarray, test) -> np.ndarray:
    """``test(category)`` for every row, evaluated once per distinct category."""
    values = categories.tolist()
    verdict = {category: bool(test(category)) for category in set(values)}
    return np.fromiter(map(verdict.__getitem__, values), bool, len(values))


@dataclass
class Segments:
    """Rows of several dbs (steps) stacked without merging, for per-db sums."""

    rows: dict[str, np.ndarray]  # the columns of ROW_KEYS but category
    segment: np.ndarray  # int64: the db of each row
    totals: np.ndarray  # int64 per db: its device time
    kind: np.ndarray  # int64 per row: its index in ``categories``
    categories: np.ndarray  # object: the categories rows point to (one per op of a table)

    def __len__(self) -> int:
        return len(self.totals)

    def category_mask(self, test) -> np.ndarray:
        """``test(category)`` of every row, tested once per entry of ``categories``."""
        return _category_mask(self.categories, test)[self.kind]


ROW_VALUES = ("time_ps", "flops", "bytes_accessed", "model_flops", "breakdown", "has_breakdown")
ROW_KEYS = ("category", *ROW_VALUES)


def db_segments(dbs: list[OpMetricsDb]) -> Segments:
    """The rows of ``dbs``, one segment per db."""
    segment = np.repeat(np.arange(len(dbs)), [len(db) for db in dbs])
    totals = np.array([db.total_time_ps for db in dbs], np.int64)
    rows = combine_rows(dbs)
    categories = rows.pop("category")
    return Segments(rows, segment, totals, np.arange(len(categories)), categories)


def step_segments(steps: list[StepInfo]) -> Segments:
    """One segment per step; straight from the steps' shared table when they have one.

    A table's rows lack the steps' IDLE rows, which add nothing to a Program's sums.
    """
    table, index = shared_table(steps)
    if table is None:
        return db_segments([s.db for s in steps])
    position = np.full(len(table), -1, np.int64)
    position[index] = np.arange(len(index))
    segment = position[table.segment]
    chosen = np.flatnonzero(segment >= 0)
    every = len(chosen) == len(segment) and bool(np.all(np.diff(segment) >= 0))
    columns = {**table.values, "kind": table.op}
    rows = {k: columns[k] if every else columns[k][chosen] for k in (*ROW_VALUES, "kind")}
    segment = segment if every else segment[chosen]
    if not np.all(np.diff(segment) >= 0):  # steps not in table order: sort rows by segment
        order = np.argsort(segment, kind="stable")
        rows = {k: v[order] for k, v in rows.items()}
        segment = segment[order]
    kind = rows.pop("kind")
    return Segments(rows, segment, table.total_time_ps[index], kind, table.static["category"])


def program_db(dbs: list[OpMetricsDb] | Segments, include_infeed_outfeed: bool) -> OpMetricsDb:
    """XProf's synthetic Program op of each db, one row per db.

    Sums all ops but inner-op containers (call, while, ...), over the db's device time;
    without infeed/outfeed their ops and time are taken out. All dbs at once: their rows
    are concatenated and summed per db.
    """
    parts = dbs if isinstance(dbs, Segments) else db_segments(dbs)
    n = len(parts)
    cols = empty_columns(n)
    cols["name"][:] = "Program"
    cols["category"][:] = "Program"
    cols["occurrences"][:] = 1
    segment, rows, totals = parts.segment, parts.rows, parts.totals
    skip = parts.category_mask(lambda c: c in INNER_OP_CATEGORIES)
    io = parts.category_mask(is_infeed_or_outfeed)
    if include_infeed_outfeed:
        io_time = np.zeros(n, np.int64)
    else:
        io_time = np.bincount(segment, weights=rows["time_ps"] * (io & ~skip), minlength=n)
        io_time = io_time.astype(np.int64)
        skip = skip | io
    keep = ~skip
    every = bool(keep.all())

    def summed(values: np.ndarray) -> np.ndarray:
        """Per db, the sum of the kept rows' values (the others count as value x 0)."""
        if not values.any():  # an unused memory space, say: zeros, as the sum would be
            return np.zeros(n)
        return np.bincount(segment, weights=values if every else values * keep, minlength=n)

    cols["time_ps"] = totals - io_time
    cols["flops"] = summed(rows["flops"])
    cols["bytes_accessed"] = summed(rows["bytes_accessed"])
    model = rows["model_flops"]
    cols["model_flops"] = summed(np.where(model > 0, model, rows["flops"]))
    for space in range(3):
        for kind in range(2):
            cols["breakdown"][:, space, kind] = summed(rows["breakdown"][:, space, kind])
    cols["has_breakdown"] = (
        np.bincount(segment, weights=rows["has_breakdown"] & keep, minlength=n) > 0
    )
    cols["normalized_time_ps"] = cols["time_ps"].astype(np.float64)
    return OpMetricsDb(**cols)


def infeed_outfeed_counts(parts: Segments) -> bool:
    """Whether leaving infeed/outfeed out changes a Program row of ``parts``: some row
    summed into one (not an inner-op container) is infeed or outfeed."""
    skip = parts.category_mask(lambda c: c in INNER_OP_CATEGORIES)
    return bool((parts.category_mask(is_infeed_or_outfeed) & ~skip).any())


def combine_rows(dbs: list[OpMetricsDb]) -> dict[str, np.ndarray]:
    """The rows of several dbs stacked (no merging), for per-db sums."""
    if not dbs:
        return {k: v for k, v in empty_columns(0).items() if k in ROW_KEYS}
    return {k: np.concatenate([getattr(db, k) for db in dbs]) for k in ROW_KEYS}


def sorted_op_rows(db: OpMetricsDb, limit: int = MAX_OP_RECORDS) -> np.ndarray:
    """Rows by self time descending, ties by name ascending; the first ``limit`` (IDLE too)."""
    names = db.name.astype(str)
    order = np.lexsort((names, -db.self_time_ps))
    return order[:limit]


UINT64_MAX = 2**64 - 1


def uint64_costs(values: np.ndarray) -> np.ndarray:
    """Costs as the schema's uint64 fields: 0 for NaN, infinities and <= 0, else truncated,
    saturated at 2**64 - 1."""
    values = np.asarray(values, np.float64)
    usable = np.isfinite(values) & (values > 0)
    saturated = usable & (values >= 2.0**64)
    out = np.where(usable & ~saturated, values, 0.0).astype(np.uint64)
    out[saturated] = UINT64_MAX
    return out


# SourceInfo's fields as record columns; ``has_source_info`` says the record carries one.
SOURCE_COLUMNS = ("source_file", "source_line", "source_stack")


class RecordSet:
    """Roofline records as columns: one entry per record, in database order.

    A protobuf message per record costs more than the roofline math itself (a Program
    record per step: tens of thousands), so the renderers read these columns and the
    schema's messages are built only when asked for (``to_messages``). Keys are the
    RooflineModelRecord field names (``step_num`` is in the schema of PER_STEP records
    only, as XProf sets it), plus ``has_source_info`` and the SourceInfo fields
    ``source_file``, ``source_line``, ``source_stack``.
    """

    def __init__(self, columns: dict[str, np.ndarray]):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns["record_type"])

    def __getitem__(self, key: str) -> np.ndarray:
        return self.columns[key]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordSet) or self.columns.keys() != other.columns.keys():
            return False
        return all(np.array_equal(v, other.columns[k]) for k, v in self.columns.items())

    @classmethod
    def concat(cls, parts: list[RecordSet]) -> RecordSet:
        parts = [p for p in parts if len(p)] or parts[:1]
        if not parts:
            return cls.empty()
        return cls({k: np.concatenate([p[k] for p in parts]) for k in parts[0].columns})

    @classmethod
    def empty(cls) -> RecordSet:
        db = empty_db()
        metrics = {k: np.zeros(0) for k in _METRIC_FIELDS}
        metrics["bound_by"] = np.zeros(0, object)
        return _record_set(
            db, metrics, roofline_model_pb2.INVALID_RECORD_TYPE, False, 0, np.zeros(0, np.int64)
        )

    def take(self, index: np.ndarray | slice) -> RecordSet:
        return RecordSet({k: v[index] for k, v in self.columns.items()})

    def is_per_step(self) -> np.ndarray:
        """Where ``step_num`` is set in the schema."""
        return self.columns["record_type"] == roofline_model_pb2.PER_STEP

    def approx_bytes(self) -> int:
        """About the memory the records hold (numbers and the characters of strings)."""
        total = 0
        for values in self.columns.values():
            if values.dtype == object:
                total += 8 * len(values) + sum(map(len, values.tolist()))
            else:
                total += values.nbytes
        return total

    def to_messages(self) -> list[roofline_model_pb2.RooflineModelRecord]:
        """The schema's records, one message per record (the costly form, for the API)."""
        names = [k for k in _MESSAGE_FIELDS if k != "step_num"]
        lists = [self.columns[k].tolist() for k in names]
        per_step = self.is_per_step().tolist()
        steps = self.columns["step_num"].tolist()
        has_source = self.columns["has_source_info"].tolist()
        sources = [self.columns[k].tolist() for k in SOURCE_COLUMNS]
        messages = []
        for i, values in enumerate(zip(*lists)):
            fields = dict(zip(names, values))
            if per_step[i]:
                fields["step_num"] = steps[i]
            if has_source[i]:
                file_name, line, stack = (s[i] for s in sources)
                fields["source_info"] = SourceInfo(
                    file_name=file_name, line_number=line, stack_frame=stack
                )
            messages.append(roofline_model_pb2.RooflineModelRecord(**fields))
        return messages

    @classmethod
    def from_messages(cls, records) -> RecordSet:
        """Columns of protobuf records (for callers that hold a database message)."""
        records = list(records)
        columns = {}
        for name in _MESSAGE_FIELDS:
            dtype = _COLUMN_TYPES.get(name, np.float64)
            values = [getattr(r, name) for r in records]
            columns[name] = np.array(values, dtype) if values else np.zeros(0, dtype)
        has_source = np.array([r.HasField("source_info") for r in records], bool)
        columns["has_source_info"] = has_source
        sources = [r.source_info for r in records]
        columns["source_file"] = _objects(
            [s.file_name if h else "" for s, h in zip(sources, has_source)]
        )
        lines = [s.line_number if h else -1 for s, h in zip(sources, has_source)]
        columns["source_line"] = np.array(lines, np.int64)
        columns["source_stack"] = _objects(
            [s.stack_frame if h else "" for s, h in zip(sources, has_source)]
        )
        columns["step_num"] = np.where(
            columns["record_type"] == roofline_model_pb2.PER_STEP, columns["step_num"], 0
        )
        return cls(columns)


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = values
    return out


_METRIC_FIELDS = (
    "total_time_in_us",
    "avg_time_in_us",
    "total_self_time_in_us",
    "avg_self_time_in_us",
    "total_time_in_percentage",
    "dma_stall_fraction",
    "measured_flop_rate",
    "model_flop_rate",
    "measured_memory_bw",
    "operational_intensity",
    "hbm_bw",
    "cmem_read_bw",
    "cmem_write_bw",
    "vmem_read_bw",
    "vmem_write_bw",
    "hbm_operational_intensity",
    "cmem_read_operational_intensity",
    "cmem_write_operational_intensity",
    "vmem_read_operational_intensity",
    "vmem_write_operational_intensity",
    "total_time_per_core_in_us",
    "bottleneck_operational_intensity",
    "flop_rate_relative_to_hw_limit",
    "memory_bw_relative_to_hw_limit",
    "roofline_efficiency",
    "optimal_flop_rate",
    "total_self_time_as_fraction",
    "cumulative_total_self_time_as_fraction",
)
# Record fields that are not float64 columns.
_COLUMN_TYPES = {
    "record_type": np.int32,
    "step_num": np.int64,
    "rank": np.int64,
    "hlo_module_id": np.uint64,
    "hlo_category": object,
    "hlo_name": object,
    "occurrences": np.int64,
    "bound_by": object,
    "include_infeed_outfeed": bool,
    "apply_time_scale_multiplier": bool,
    "flops": np.uint64,
    "bytes_accessed": np.uint64,
}
# Every scalar field of RooflineModelRecord, by field number (the order of its JSON).
_MESSAGE_FIELDS = tuple(
    f.name
    for f in sorted(
        roofline_model_pb2.RooflineModelRecord.DESCRIPTOR.fields, key=lambda f: f.number
    )
    if f.name != "source_info"
)


def _record_set(
    db: OpMetricsDb,
    metrics: dict[str, np.ndarray],
    record_type: int | np.ndarray,
    include: bool,
    step_num: int | np.ndarray,
    rank: np.ndarray,
) -> RecordSet:
    """The records of ``db``'s rows (one each) with their metrics, as columns."""
    n = len(db)
    record_types = np.broadcast_to(np.asarray(record_type, np.int32), (n,)).copy()
    steps = np.broadcast_to(np.asarray(step_num, np.int64), (n,))
    columns = {
        "record_type": record_types,
        "step_num": np.where(record_types == roofline_model_pb2.PER_STEP, steps, 0),
        "rank": np.asarray(rank, np.int64),
        "hlo_module_id": db.program_id.astype(np.uint64),
        "hlo_category": db.category,
        "hlo_name": db.name,
        "occurrences": db.occurrences.astype(np.int64),
        "include_infeed_outfeed": np.full(n, include),
        "apply_time_scale_multiplier": np.zeros(n, bool),
        "flops": uint64_costs(db.flops),
        "flops_v2": db.flops.astype(np.float64),
        "bytes_accessed": uint64_costs(db.bytes_accessed),
        **{k: np.asarray(v, np.float64) for k, v in metrics.items() if k != "bound_by"},
        "bound_by": metrics["bound_by"],
        "has_source_info": (db.source_file != "") | (db.source_line >= 0),
        "source_file": db.source_file,
        "source_line": db.source_line.astype(np.int64),
        "source_stack": db.source_stack,
    }
    return RecordSet(columns)


def program_records(
    dbs: list[OpMetricsDb] | Segments,
    peaks: DatabasePeaks,
    core_count: int,
    include: bool,
    record_types: Sequence[int],
    step_nums: list[int],
    steps_divisors: list[int],
) -> RecordSet:
    """The Program record of each db; AVERAGE_STEP divides its times by its ``steps_divisor``."""
    prog = program_db(dbs, include)
    metrics = record_metrics(prog, prog.time_ps, peaks, core_count)
    divisor = np.asarray(steps_divisors, np.float64)
    for key in ("total_time_in_us", "total_self_time_in_us"):
        metrics[key] = metrics[key] / divisor
    # The average step's FLOPs and bytes are per step too (its rates are unchanged).
    prog = replace(
        prog,
        flops=prog.flops / divisor,
        model_flops=prog.model_flops / divisor,
        bytes_accessed=prog.bytes_accessed / divisor,
    )
    metrics["total_time_per_core_in_us"] = safe_divide(metrics["total_time_in_us"], core_count)
    metrics["total_self_time_as_fraction"] = np.zeros(len(prog))
    metrics["cumulative_total_self_time_as_fraction"] = np.zeros(len(prog))
    rank = np.zeros(len(prog), np.int64)
    return _record_set(
        prog, metrics, np.asarray(record_types), include, np.asarray(step_nums), rank
    )


def program_record_pair(
    dbs: list[OpMetricsDb] | Segments,
    peaks: DatabasePeaks,
    core_count: int,
    record_types: Sequence[int],
    step_nums: list[int],
    steps_divisors: list[int],
) -> tuple[RecordSet, RecordSet]:
    """``program_records`` with include_infeed_outfeed true and false. Where no summed row
    is infeed or outfeed the two differ in that flag alone: summed once (a Program row per
    step is most of a profile's records)."""
    parts = dbs if isinstance(dbs, Segments) else db_segments(dbs)

    def records(include: bool) -> RecordSet:
        return program_records(
            parts, peaks, core_count, include, record_types, step_nums, steps_divisors
        )

    with_io = records(True)
    if infeed_outfeed_counts(parts):
        return with_io, records(False)
    flag = np.zeros(len(with_io), bool)
    return with_io, RecordSet({**with_io.columns, "include_infeed_outfeed": flag})


def op_records(
    db: OpMetricsDb,
    peaks: DatabasePeaks,
    core_count: int,
    include: bool,
    record_type: int = roofline_model_pb2.ALL,
    step_num: int = 0,
) -> RecordSet:
    """The top ops by self time (IDLE and, without infeed/outfeed, I/O ops left out)."""
    io = _category_mask(db.category, is_infeed_or_outfeed)
    io_time = 0 if include else int(db.time_ps[io].sum())
    total_ps = int(db.total_time_ps) - io_time
    rows = sorted_op_rows(db)
    rows = rows[db.occurrences[rows] > 0]
    if not include:
        rows = rows[~io[rows]]
    sub = db.take(rows)
    metrics = record_metrics(sub, total_ps, peaks, core_count)
    fraction = safe_divide(metrics["total_self_time_in_us"], total_ps / 1e6)
    metrics["total_self_time_as_fraction"] = fraction
    metrics["cumulative_total_self_time_as_fraction"] = np.cumsum(fraction)
    rank = np.arange(1, len(sub) + 1, dtype=np.int64)
    return _record_set(sub, metrics, record_type, include, step_num, rank)
