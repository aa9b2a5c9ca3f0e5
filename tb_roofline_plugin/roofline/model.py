"""Roofline records from op metrics, exactly as XProf's ``roofline_model`` tool defines them.

Every formula is in ``docs/roofline-semantics.md`` (sections 3-10); the per-op math runs
on numpy arrays over all ops at once. ``safe_divide`` is XProf's SafeDivide, so no NaN or
infinity can come out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ops.op_metrics import (
    CMEM,
    HBM,
    IDLE_NAME,
    READ,
    VMEM,
    WRITE,
    OpMetricsDb,
    empty_columns,
    empty_db,
)
from ..ops.op_stats import Diagnostics, OpStats, StepInfo, shared_table, sum_steps
from ..peaks.perf_env import CMEM_RD, CMEM_WR, HBM_RW, SRAM_WR, VMEM_RD, VMEM_WR, PerfEnv
from ..protos import roofline_model_pb2
from ..protos.source_info_pb2 import SourceInfo
from ..units import GIB_PER_GB
from ..wording import numbered

MAX_OP_RECORDS = 1000
INNER_OP_CATEGORIES = frozenset({"call", "conditional", "while", "megacore fusion"})

NO_STEP_MARKER = (
    "No step marker observed and hence the step time is unknown. This may happen if (1) "
    "training steps are not instrumented (e.g., if you are not using Keras) or (2) the "
    "profiling duration is shorter than the step time. For (1), you need to add step "
    "instrumentation; for (2), you may try to profile longer."
)
INCOMPLETE_STEP = (
    "Incomplete step observed and hence the step time is unknown. Instead, we use the trace "
    "duration as the step time. This may happen if your profiling duration is shorter than "
    "the step time. In this case, you may try to profile longer."
)


def safe_divide(a, b):
    """XProf's SafeDivide: 0 where |b| < 1e-10, else a / b (element-wise)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    small = np.abs(b) < 1e-10
    return np.where(small, 0.0, a / np.where(small, 1.0, b))


def giga_to_gibi(x):
    return np.asarray(x, np.float64) / GIB_PER_GB


def gibibytes_per_second(num_bytes, ns):
    return giga_to_gibi(safe_divide(num_bytes, ns))


def ridge_point(peak_gflops: float, peak_gibps: float) -> float:
    """FLOP per byte where a memory roof meets the compute roof (0 without bandwidth)."""
    return float(safe_divide(peak_gflops, peak_gibps * GIB_PER_GB))


def is_infeed_or_outfeed(category: str) -> bool:
    return "infeed" in category or "outfeed" in category


@dataclass
class DatabasePeaks:
    """The database-level peaks (GFLOP/s, GiB/s) and flags the records are judged by."""

    peak_flop_rate: float
    peak_hbm_bw: float
    peak_cmem_read_bw: float
    peak_cmem_write_bw: float
    peak_vmem_read_bw: float
    peak_vmem_write_bw: float
    megacore: bool
    has_cmem: bool
    has_merged_vmem: bool
    is_gpu: bool
    perf_env: PerfEnv

    @classmethod
    def from_env(cls, env: PerfEnv, hardware_type: str) -> DatabasePeaks:
        bws = env.peak_bws_gbps
        gib = [float(giga_to_gibi(b)) for b in bws]
        is_gpu = hardware_type == "GPU"
        if is_gpu:
            cmem_r = cmem_w = 0.0
            vmem_r, vmem_w = gib[1], gib[2]
            has_cmem, merged = False, True
        else:
            has_cmem, merged = env.has_cmem, env.has_merged_vmem
            cmem_r, cmem_w = (gib[CMEM_RD], gib[CMEM_WR]) if has_cmem else (0.0, 0.0)
            if not has_cmem and merged:
                vmem_r, vmem_w = gib[VMEM_RD], gib[VMEM_WR]
            else:
                vmem_r = vmem_w = 0.0
        return cls(
            peak_flop_rate=1000.0 * env.peak_tera_flops_per_second,
            peak_hbm_bw=gib[HBM_RW],
            peak_cmem_read_bw=cmem_r,
            peak_cmem_write_bw=cmem_w,
            peak_vmem_read_bw=vmem_r,
            peak_vmem_write_bw=vmem_w,
            megacore=env.has_megacore and not is_gpu,
            has_cmem=has_cmem,
            has_merged_vmem=merged,
            is_gpu=is_gpu,
            perf_env=env,
        )


def record_metrics(
    db: OpMetricsDb, total_time_ps, peaks: DatabasePeaks, core_count: int
) -> dict[str, np.ndarray]:
    """The per-record formulas of section 7 and the bound_by rule of section 8, for every row."""
    t = db.time_ps.astype(np.float64)
    ns = t / 1000.0
    flops = db.flops
    occ = db.occurrences.astype(np.float64)
    has_bd = db.has_breakdown
    bd = db.breakdown
    hbm_bytes = np.where(has_bd, bd[:, HBM, READ] + bd[:, HBM, WRITE], db.bytes_accessed)
    memory = {
        "hbm": hbm_bytes,
        "cmem_read": bd[:, CMEM, READ],
        "cmem_write": bd[:, CMEM, WRITE],
        "vmem_read": bd[:, VMEM, READ],
        "vmem_write": bd[:, VMEM, WRITE],
    }
    out: dict[str, np.ndarray] = {
        "total_time_in_us": t / 1e6,
        "avg_time_in_us": safe_divide(t / 1e6, occ),
        "total_self_time_in_us": db.self_time_ps / 1e6,
        "avg_self_time_in_us": safe_divide(db.self_time_ps / 1e6, occ),
        "total_time_in_percentage": safe_divide(t, total_time_ps),
        "dma_stall_fraction": safe_divide(db.dma_stall_ps, t),
        "measured_flop_rate": safe_divide(flops, ns),
        "model_flop_rate": safe_divide(np.where(db.model_flops > 0, db.model_flops, flops), ns),
        "measured_memory_bw": gibibytes_per_second(db.bytes_accessed, ns),
        "operational_intensity": safe_divide(flops, db.bytes_accessed),
        "hbm_bw": gibibytes_per_second(hbm_bytes, ns),
    }
    for kind in ("cmem_read", "cmem_write", "vmem_read", "vmem_write"):
        out[f"{kind}_bw"] = gibibytes_per_second(memory[kind], ns)
    for kind, num_bytes in memory.items():
        out[f"{kind}_operational_intensity"] = safe_divide(flops, num_bytes)
    out["total_time_per_core_in_us"] = safe_divide(out["total_time_in_us"], core_count)

    bound_by, bottleneck_oi = _bound_by(out, memory, peaks)
    out["bound_by"] = bound_by
    out["bottleneck_operational_intensity"] = bottleneck_oi

    u_flops = safe_divide(out["measured_flop_rate"], peaks.peak_flop_rate)
    zero = np.zeros(len(t))
    u_hbm = safe_divide(out["hbm_bw"], peaks.peak_hbm_bw)
    u_cr = safe_divide(out["cmem_read_bw"], peaks.peak_cmem_read_bw) if peaks.has_cmem else zero
    u_cw = safe_divide(out["cmem_write_bw"], peaks.peak_cmem_write_bw) if peaks.has_cmem else zero
    merged = peaks.has_merged_vmem
    u_vr = safe_divide(out["vmem_read_bw"], peaks.peak_vmem_read_bw) if merged else zero
    u_vw = safe_divide(out["vmem_write_bw"], peaks.peak_vmem_write_bw) if merged else zero
    max_mem = np.maximum.reduce([u_cw, u_cr, u_hbm, u_vw, u_vr])
    efficiency = np.maximum(max_mem, u_flops)
    out["flop_rate_relative_to_hw_limit"] = u_flops
    out["memory_bw_relative_to_hw_limit"] = max_mem
    out["roofline_efficiency"] = efficiency
    out["optimal_flop_rate"] = safe_divide(out["measured_flop_rate"], efficiency)
    return out


def _bound_by(
    out: dict[str, np.ndarray], memory: dict[str, np.ndarray], peaks: DatabasePeaks
) -> tuple[np.ndarray, np.ndarray]:
    """Visits Compute, HBM, then the on-chip memories; a later one wins only if strictly greater."""
    env = peaks.perf_env
    n = len(out["hbm_bw"])
    candidates = [
        (
            "Compute",
            safe_divide(out["measured_flop_rate"], 1000.0 * env.peak_tera_flops_per_second),
            out["operational_intensity"],
            np.ones(n, bool),
        ),
        (
            "HBM",
            safe_divide(out["hbm_bw"], giga_to_gibi(env.peak_bws_gbps[HBM_RW])),
            out["hbm_operational_intensity"],
            np.ones(n, bool),
        ),
    ]
    if peaks.is_gpu:
        shm_peak = env.peak_bws_gbps[SRAM_WR]
        if shm_peak > 0:
            candidates.append(
                (
                    "Shm/L1",
                    safe_divide(out["hbm_bw"], giga_to_gibi(shm_peak)),
                    out["hbm_operational_intensity"],
                    np.ones(n, bool),
                )
            )
    else:
        for label, kind, index in (
            ("CMEM Read", "cmem_read", CMEM_RD),
            ("CMEM Write", "cmem_write", CMEM_WR),
            ("VMEM Read", "vmem_read", VMEM_RD),
            ("VMEM Write", "vmem_write", VMEM_WR),
        ):
            peak = env.peak_bws_gbps[index]
            if peak > 0:
                candidates.append(
                    (
                        label,
                        safe_divide(out[f"{kind}_bw"], giga_to_gibi(peak)),
                        out[f"{kind}_operational_intensity"],
                        memory[kind] > 0,
                    )
                )
    best = np.zeros(n)
    label = np.full(n, "Unknown", object)
    oi = np.zeros(n)
    for name, util, intensity, enabled in candidates:
        wins = enabled & (util > best)
        best = np.where(wins, util, best)
        label[wins] = name
        oi = np.where(wins, intensity, oi)
    return label, oi


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


def concat_segments(parts: list[Segments]) -> Segments:
    base = np.cumsum([0] + [len(p) for p in parts])
    kinds = np.cumsum([0] + [len(p.categories) for p in parts])
    return Segments(
        {k: np.concatenate([p.rows[k] for p in parts]) for k in ROW_VALUES},
        np.concatenate([p.segment + b for p, b in zip(parts, base)]),
        np.concatenate([p.totals for p in parts]),
        np.concatenate([p.kind + k for p, k in zip(parts, kinds)]),
        np.concatenate([p.categories for p in parts]),
    )


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

    def summed(values: np.ndarray) -> np.ndarray:
        return np.bincount(segment, weights=values * keep, minlength=n)

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

    def take(self, index: np.ndarray) -> RecordSet:
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
    record_types: list[int],
    step_nums: list[int],
    steps_divisors: list[int],
) -> RecordSet:
    """The Program record of each db; AVERAGE_STEP divides its times by its ``steps_divisor``."""
    prog = program_db(dbs, include)
    metrics = record_metrics(prog, prog.time_ps, peaks, core_count)
    divisor = np.asarray(steps_divisors, np.float64)
    for key in ("total_time_in_us", "total_self_time_in_us"):
        metrics[key] = metrics[key] / divisor
    metrics["total_time_per_core_in_us"] = safe_divide(metrics["total_time_in_us"], core_count)
    metrics["total_self_time_as_fraction"] = np.zeros(len(prog))
    metrics["cumulative_total_self_time_as_fraction"] = np.zeros(len(prog))
    rank = np.zeros(len(prog), np.int64)
    return _record_set(
        prog, metrics, np.asarray(record_types), include, np.asarray(step_nums), rank
    )


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


# --- the database ---------------------------------------------------------------------------


def time_scale_multiplier(db: OpMetricsDb, hardware_type: str) -> float:
    if hardware_type == "GPU":
        return 0.0
    ops = (db.occurrences > 0) & (db.name != IDLE_NAME)
    total = db.self_time_ps[ops].astype(np.float64)
    normalized = safe_divide(total * db.normalized_time_ps[ops], db.time_ps[ops])
    if total.sum() == 0:
        return 1.0
    return float(safe_divide(normalized.sum(), total.sum()))


def step_diagnostics(stats: OpStats) -> Diagnostics:
    """XProf's step warnings: no step marker, or only incomplete steps used."""
    diag = Diagnostics()
    if stats.steps and not stats.complete_steps:
        diag.warnings.append(INCOMPLETE_STEP)
    elif not stats.steps:
        diag.warnings.append(NO_STEP_MARKER)
    dropped = [s.step_num for s in stats.steps if not s.complete]
    if dropped and stats.complete_steps:
        diag.warnings.append(
            f"{len(dropped):,} incomplete step(s) left out of the average (cut by the profile "
            f"window, or missing the work launched in them): {numbered(dropped, 'step')}."
        )
    return diag


def _database_header(
    stats: OpStats,
) -> tuple[roofline_model_pb2.RooflineModelDatabase, DatabasePeaks | None]:
    """The database-level fields (device, peaks, flags); no peaks for an empty result."""
    run_env = stats.run_env
    database = roofline_model_pb2.RooflineModelDatabase(device_type=run_env.device_type)
    if run_env.hardware_type not in ("TPU", "GPU", "CPU"):
        return database, None
    peaks = DatabasePeaks.from_env(stats.perf_env, run_env.hardware_type)
    database.megacore = peaks.megacore
    database.has_cmem = peaks.has_cmem
    database.has_merged_vmem = peaks.has_merged_vmem
    database.peak_flop_rate = peaks.peak_flop_rate
    database.peak_hbm_bw = peaks.peak_hbm_bw
    database.peak_cmem_read_bw = peaks.peak_cmem_read_bw
    database.peak_cmem_write_bw = peaks.peak_cmem_write_bw
    database.peak_vmem_read_bw = peaks.peak_vmem_read_bw
    database.peak_vmem_write_bw = peaks.peak_vmem_write_bw
    database.time_scale_multiplier = time_scale_multiplier(stats.all_db, run_env.hardware_type)
    return database, peaks


@dataclass
class RooflineModel:
    """A roofline database as its header message (every field but the records) and its
    records as columns; ``database()`` is the schema's message, built when asked for."""

    header: roofline_model_pb2.RooflineModelDatabase
    records: RecordSet

    def database(self) -> roofline_model_pb2.RooflineModelDatabase:
        database = roofline_model_pb2.RooflineModelDatabase()
        database.CopyFrom(self.header)
        database.roofline_model_record.extend(self.records.to_messages())
        return database

    @classmethod
    def from_database(cls, database: roofline_model_pb2.RooflineModelDatabase) -> RooflineModel:
        header = roofline_model_pb2.RooflineModelDatabase()
        header.CopyFrom(database)
        header.ClearField("roofline_model_record")
        return cls(header, RecordSet.from_messages(database.roofline_model_record))


def as_model(database: RooflineModel | roofline_model_pb2.RooflineModelDatabase) -> RooflineModel:
    """A RooflineModel of either form (renderers take both)."""
    if isinstance(database, RooflineModel):
        return database
    return RooflineModel.from_database(database)


def roofline_model(stats: OpStats) -> RooflineModel:
    """The full database: both include_infeed_outfeed sets, ALL, AVERAGE_STEP, PER_STEP."""
    database, peaks = _database_header(stats)
    if peaks is None:
        _add_diagnostics(database, stats.diagnostics)
        return RooflineModel(database, RecordSet.empty())
    cores = stats.run_env.device_core_count
    used_steps = stats.complete_steps or stats.steps
    average = _average_db(stats, used_steps)
    parts, kinds, nums = [], [], []
    divisors = []
    if average is not None:
        parts.append(db_segments([average]))
        kinds.append(roofline_model_pb2.AVERAGE_STEP)
        nums.append(0)
        divisors.append(max(len(used_steps), 1))
    if used_steps:
        parts.append(step_segments(used_steps))
        kinds += [roofline_model_pb2.PER_STEP] * len(used_steps)
        nums += [s.step_num for s in used_steps]
        divisors += [1] * len(used_steps)
    segments = concat_segments(parts) if parts else None
    records = []
    for include in (True, False):
        records.append(
            program_records(
                [stats.all_db], peaks, cores, include, [roofline_model_pb2.ALL], [0], [1]
            )
        )
        records.append(op_records(stats.all_db, peaks, cores, include))
        if segments is not None:
            records.append(program_records(segments, peaks, cores, include, kinds, nums, divisors))
    diagnostics = step_diagnostics(stats)
    diagnostics.extend(stats.diagnostics)
    _add_diagnostics(database, diagnostics)
    return RooflineModel(database, RecordSet.concat(records))


def build_database(stats: OpStats) -> roofline_model_pb2.RooflineModelDatabase:
    """``roofline_model`` as the schema's message."""
    return roofline_model(stats).database()


def step_roofline_model(
    stats: OpStats, db: OpMetricsDb, record_type: int, step_num: int = 0
) -> RooflineModel:
    """A database of one step (or the average step): its Program and its op records.

    This is ours: XProf has only a Program row per step. Both include_infeed_outfeed sets.
    """
    database, peaks = _database_header(stats)
    if peaks is None:
        return RooflineModel(database, RecordSet.empty())
    cores = stats.run_env.device_core_count
    records = []
    for include in (True, False):
        records.append(program_records([db], peaks, cores, include, [record_type], [step_num], [1]))
        records.append(op_records(db, peaks, cores, include, record_type, step_num))
    diagnostics = step_diagnostics(stats)
    diagnostics.extend(stats.diagnostics)
    _add_diagnostics(database, diagnostics)
    return RooflineModel(database, RecordSet.concat(records))


def step_database(
    stats: OpStats, db: OpMetricsDb, record_type: int, step_num: int = 0
) -> roofline_model_pb2.RooflineModelDatabase:
    """``step_roofline_model`` as the schema's message."""
    return step_roofline_model(stats, db, record_type, step_num).database()


def _average_db(stats: OpStats, used_steps) -> OpMetricsDb | None:
    """XProf's complete-steps db: the sum of the steps' dbs (zero when there are none).

    Single-host TPU always has one; single-host GPU never does (XProf's datatable shape;
    our json has the average), multi-host GPU gets real values where XProf has zeros.
    """
    single_host_gpu = stats.run_env.hardware_type == "GPU" and len(stats.hosts) == 1
    if used_steps and not single_host_gpu:
        return sum_steps(used_steps)
    if stats.run_env.hardware_type == "TPU" or len(stats.hosts) > 1:
        return empty_db()
    return None


def _add_diagnostics(database: roofline_model_pb2.RooflineModelDatabase, diag: Diagnostics) -> None:
    if diag.info or diag.warnings or diag.errors:
        database.diagnostics.info.extend(diag.info)
        database.diagnostics.warnings.extend(diag.warnings)
        database.diagnostics.errors.extend(diag.errors)
