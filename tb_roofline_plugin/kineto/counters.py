"""Hardware counters of a PyTorch trace recorded with CUPTI's range profiler: measured FLOPs
and DRAM bytes per kernel, joined to the kernels' launch calls and so to their ops.

``torch.profiler.profile(experimental_config=_ExperimentalConfig(profiler_metrics=[...],
profiler_measure_per_kernel=True))`` makes Kineto write one ``cuda_profiler_range`` event per
kernel, named by the kernel, whose args are the counters. The ranges carry no correlation id
and their times are not the kernels': Kineto splits the capture's span evenly among them
(``CuptiRangeProfiler.cpp``: "the actual times do not really matter here"), and it runs the
range profiler alone, without kernel activity. So the i-th range (by time) is the i-th kernel
launch call (by time), as HolisticTraceAnalysis's CUPTI counter analysis joins them; the
counts must agree. Range times are never used.

FLOPs of a kernel: add + mul + 2 * fma thread instructions per precision (half, single,
double: ``smsp__sass_thread_inst_executed_op_{h,f,d}{add,mul,fma}_pred_on.sum``), plus the
tensor-pipe math ops where recorded (``sm__ops_path_tensor_src_<dtype>[_dst_<dtype>]``,
already counted in operations). Bytes: ``dram__bytes_read.sum`` + ``dram__bytes_write.sum``
(or ``dram__bytes.sum``). What was not recorded is unknown, and said so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..ops.hardware import DRAM_BYTES, FLOPS, TENSOR_FLOPS, HardwareCounts
from ..ops.op_metrics import OpMetricsDb
from ..wording import named
from .trace_reader import TraceEvents

COUNTERS_LISTED = 100  # counter names listed in the json, at most
SOURCE = "CUPTI range profiler (cuda_profiler_range events of a PyTorch profiler trace)"
SASS = re.compile(r"^(?:smsp|sm)__sass_thread_inst_executed_op_([hfd])(add|mul|fma)_pred_on\.sum$")
PRECISIONS = {"h": "fp16", "f": "fp32", "d": "fp64"}
FLOPS_PER_INSTRUCTION = {"add": 1, "mul": 1, "fma": 2}
# Tensor-pipe math ops by source dtype (the sparsity splits of a total are not matched);
# integer sources count integer operations, not FLOPs.
TENSOR_OPS = re.compile(r"^sm__ops_path_tensor_src_([a-z0-9]+?)(?:_dst_[a-z0-9]+)?(?:\.sum)?$")
INTEGER_SOURCE = re.compile(r"^u?int\d+$")
TENSOR_INSTRUCTIONS = re.compile(
    r"^(?:smsp|sm)__inst_executed_pipe_tensor(?:_op_[a-z0-9_]+)?\.sum$"
)
DRAM_READ, DRAM_WRITE, DRAM_TOTAL = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__bytes.sum",
)

NOT_JOINED = (
    "It holds {ranges:,} CUPTI range-profiler ranges (cuda_profiler_range: hardware counters) "
    "against {launches:,} kernel launch calls: without one range per kernel they cannot be "
    "joined to their kernels (record with profiler_measure_per_kernel=True), so their "
    "counters are not used."
)
JOINED = (
    "Total (HW): {joined:,} of {ranges:,} CUPTI range-profiler ranges (hardware counters, "
    "one per kernel) joined to their kernels' ops: the i-th range to the i-th kernel launch "
    "call (ranges carry no correlation id), as HolisticTraceAnalysis joins them; FLOPs = add "
    "+ mul + 2 x fma thread instructions per precision{tensor}."
)
NO_DRAM = (
    "Total (HW): no DRAM counters recorded (dram__bytes_read.sum, dram__bytes_write.sum), so "
    "measured bytes, intensity and bound are unknown (bytes 0 in the ALL_HW records), not "
    "taken from the model."
)
PARTIAL_DRAM = (
    "Total (HW): only {found} recorded: DRAM bytes accessed need reads and writes, so "
    "measured bytes, intensity and bound are unknown."
)
NO_TENSOR = (
    "Total (HW): no tensor-pipe counter recorded (sm__ops_path_tensor_src_*): work on tensor "
    "cores (TF32/FP16/BF16 GEMMs and convolutions) is not in the SASS FLOP counters, so the "
    "measured FLOPs of such kernels are below their work."
)
TENSOR_INSTRUCTIONS_ONLY = (
    "Total (HW): tensor-pipe instructions recorded ({name}) but not math ops: FLOPs per "
    "instruction depend on the MMA shape, so tensor-core work is not in the measured FLOPs."
)
MISSING_PRECISIONS = (
    "Total (HW): no {names} SASS instruction counters recorded: that precision's FLOPs are "
    "not in the measured FLOPs."
)
NO_FLOP_COUNTERS = (
    "Total (HW): no FLOP counters recorded (smsp__sass_thread_inst_executed_op_*): measured "
    "FLOPs are unknown (0 in the ALL_HW records), not taken from the model."
)
SOME_RANGES = "Total (HW): {names} recorded in only some ranges; the others count 0 for them."


@dataclass
class RangeCounters:
    """The ranges in time order with what their counters measure, one entry per range."""

    rows: np.ndarray  # event rows
    flops: np.ndarray  # SASS (and tensor-pipe) FLOPs; 0 where nothing measured them
    values: dict[str, np.ndarray]  # fp16/fp32/fp64/tensor_<dtype>, dram_*_bytes, ...
    dram_bytes: np.ndarray  # read + write (0 where not measured)
    measured: dict[str, bool]
    counters: list[str]
    notes: list[str] = field(default_factory=list)


def range_flops(names: list[str], values: np.ndarray) -> dict[str, np.ndarray]:
    """FLOPs per precision of each range (row of ``values``, a column per counter of
    ``names``): add + mul + 2 x fma SASS thread instructions (``fp16``, ``fp32``,
    ``fp64``), and the tensor-pipe math ops per source dtype (``tensor_<dtype>``).
    A counter recorded under both prefixes (sm__, smsp__) counts once."""
    out: dict[str, np.ndarray] = {}
    seen: set[tuple[str, str]] = set()
    for column, name in enumerate(names):
        match = SASS.match(name)
        if match:
            precision, op = match.groups()
            if (precision, op) in seen:
                continue
            seen.add((precision, op))
            key = PRECISIONS[precision]
            count = np.nan_to_num(values[:, column]) * FLOPS_PER_INSTRUCTION[op]
            out[key] = out.get(key, 0.0) + count
            continue
        match = TENSOR_OPS.match(name)
        if match and not INTEGER_SOURCE.match(match.group(1)):
            key = f"tensor_{match.group(1)}"
            out[key] = out.get(key, 0.0) + np.nan_to_num(values[:, column])
    return out


def _used(name: str) -> bool:
    """A counter this module reads."""
    return bool(
        SASS.match(name)
        or TENSOR_OPS.match(name)
        or TENSOR_INSTRUCTIONS.match(name)
        or name in (DRAM_READ, DRAM_WRITE, DRAM_TOTAL)
    )


def counter_matrix(events: TraceEvents, order: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The counters this module reads, a column each, one row per range (ranges in
    ``order``, indices into ``events.range_rows``); NaN where a range lacks one."""
    names = [n for n in events.counter_names if _used(n)]
    code = {n: i for i, n in enumerate(events.counter_names)}
    column = np.full(len(events.counter_names), -1, np.int64)
    column[[code[n] for n in names]] = np.arange(len(names))
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    values = np.full((len(order), len(names)), np.nan)
    kept = column[events.counter_name] >= 0 if len(events.counter_name) else np.zeros(0, bool)
    values[position[events.counter_range[kept]], column[events.counter_name[kept]]] = (
        events.counter_value[kept]
    )
    return names, values


def read_counters(events: TraceEvents) -> RangeCounters | None:
    """The trace's ranges (None without any) with FLOPs and bytes per range."""
    if not len(events.range_rows):
        return None
    order = np.argsort(events.begin_ns[events.range_rows], kind="stable")
    rows = events.range_rows[order]
    names, values = counter_matrix(events, order)
    column = {n: i for i, n in enumerate(names)}
    n = len(rows)
    notes = []
    partial = [name for i, name in enumerate(names) if np.isnan(values[:, i]).any()]
    if partial:
        notes.append(SOME_RANGES.format(names=named(partial, "counter", 3)))
    found = range_flops(names, values)
    canonical = [*PRECISIONS.values()]
    per_kind = {
        k: found[k] for k in [*canonical, *sorted(set(found) - set(canonical))] if k in found
    }
    sass = [PRECISIONS[p] for p in "hfd" if PRECISIONS[p] in per_kind]
    tensor = [k for k in per_kind if k.startswith("tensor_")]
    measured = {FLOPS: bool(sass), TENSOR_FLOPS: bool(tensor), DRAM_BYTES: False}
    flops = sum((per_kind[k] for k in per_kind), np.zeros(n))
    if not sass and not tensor:
        notes.append(NO_FLOP_COUNTERS)
    elif sass and len(sass) < len(PRECISIONS):
        missing = [v.upper() for v in PRECISIONS.values() if v not in sass]
        notes.append(MISSING_PRECISIONS.format(names="/".join(missing)))
    if not tensor:
        instructions = [name for name in names if TENSOR_INSTRUCTIONS.match(name)]
        if instructions:
            per_kind["tensor_instructions"] = np.nan_to_num(values[:, column[instructions[0]]])
            notes.append(TENSOR_INSTRUCTIONS_ONLY.format(name=instructions[0]))
        elif sass:
            notes.append(NO_TENSOR)
    dram = np.zeros(n)
    if DRAM_READ in column and DRAM_WRITE in column:
        per_kind["dram_read_bytes"] = np.nan_to_num(values[:, column[DRAM_READ]])
        per_kind["dram_write_bytes"] = np.nan_to_num(values[:, column[DRAM_WRITE]])
        dram = per_kind["dram_read_bytes"] + per_kind["dram_write_bytes"]
        measured[DRAM_BYTES] = True
    elif DRAM_TOTAL in column:
        dram = np.nan_to_num(values[:, column[DRAM_TOTAL]])
        measured[DRAM_BYTES] = True
    elif DRAM_READ in column or DRAM_WRITE in column:
        notes.append(PARTIAL_DRAM.format(found=DRAM_READ if DRAM_READ in column else DRAM_WRITE))
    else:
        notes.append(NO_DRAM)
    recorded = events.counter_names[:COUNTERS_LISTED]
    if len(events.counter_names) > COUNTERS_LISTED:
        recorded = [*recorded, f"... and {len(events.counter_names) - COUNTERS_LISTED:,} more"]
    return RangeCounters(rows, flops, per_kind, dram, measured, recorded, notes)


def join_launches(counters: RangeCounters, events: TraceEvents, launches: np.ndarray) -> np.ndarray:
    """The launch call row of each range: the i-th range (by time) to the i-th of
    ``launches`` (kernel launch calls, by time); empty when the counts differ."""
    if len(launches) != len(counters.rows):
        return np.zeros(0, np.int64)
    order = np.argsort(events.begin_ns[launches], kind="stable")
    return launches[order]


def hardware_counts(
    whole: OpMetricsDb, range_op: np.ndarray, counters: RangeCounters, launches: int
) -> HardwareCounts:
    """The ALL_HW rows: the rows of ``whole`` (the modelled op rows) that ranges were joined
    to (``range_op``: the row of each range, -1 none), their counts summed per row."""
    joined = range_op >= 0
    rows, slot = np.unique(range_op[joined], return_inverse=True)
    slot = slot.ravel()
    width = len(rows)

    def summed(values: np.ndarray) -> np.ndarray:
        return np.bincount(slot, values[joined], minlength=width)

    db = whole.take(rows)
    db.flops = summed(counters.flops)
    db.model_flops = np.zeros(width)
    db.bytes_accessed = summed(counters.dram_bytes)
    db.breakdown = np.zeros((width, 3, 2))
    db.has_breakdown = np.zeros(width, bool)
    tensor = [k for k in counters.values if k.startswith("tensor_") and k != "tensor_instructions"]
    notes = [
        JOINED.format(
            joined=int(joined.sum()),
            ranges=len(range_op),
            tensor=" and the tensor-pipe math ops" if tensor else "",
        ),
        *counters.notes,
    ]
    return HardwareCounts(
        db=db,
        kernels=np.bincount(slot, minlength=width).astype(np.int64),
        values={k: summed(v) for k, v in counters.values.items()},
        measured=dict(counters.measured),
        ranges=len(range_op),
        launches=launches,
        joined=int(joined.sum()),
        counters=counters.counters,
        source=SOURCE,
        notes=notes,
    )
