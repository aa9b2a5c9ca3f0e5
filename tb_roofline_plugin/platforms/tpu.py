"""TPU op metrics and steps from ``/device:TPU:N`` planes (costs written by libtpu).

Each TensorCore plane has an ``XLA Ops`` line whose events nest by time; the event
metadata carries per-occurrence flops, bytes and a memory breakdown. Steps come from
the plane's ``Steps`` line.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..arrays import unique
from ..hlo.cost.engine import ModuleCosts
from ..hlo.text import (
    OpText,
    line_dtype,
    op_text,
    parsed_line,
    shapes_text,
    shortened,
    without_layouts,
)
from ..ops.op_metrics import MEMORY_SPACES, TEXT_COLUMNS, empty_columns, self_times
from ..ops.op_stats import Diagnostics, OpStats, StepInfo, table_steps
from ..ops.selection import check_device
from ..ops.step_ops import StepOps, part_cells, step_ops
from ..peaks.device_rules import tpu_dtype_tflops
from ..peaks.perf_env import RunEnvironment, tpu_perf_env
from ..protos import op_metrics_pb2
from ..xspace.profile_reader import (
    TPU_CORE_PLANE,
    Plane,
    Profile,
    as_float,
    as_str,
    as_uint64,
    line_events,
    stat_names,
    stats_dict,
)
from .host_steps import valid_step_number, valid_step_numbers

OP_LINES = ("XLA Ops",)
STEPS_LINE = "Steps"
_EVENT_STATS = ("dma_stall_duration_ps", "Time Scale Multiplier")


@dataclass
class CoreOps:
    """One TensorCore's op events, each mapped to a row of ``ops`` (-1: not an op)."""

    begin_ps: np.ndarray
    end_ps: np.ndarray
    self_ps: np.ndarray
    occurrences: np.ndarray
    op_row: np.ndarray
    dma_stall_ps: np.ndarray
    time_scale: np.ndarray
    ops: dict[str, np.ndarray]  # per-occurrence costs and identity of each distinct op
    steps: list[tuple[int, int, int]]  # (step number, begin ps, end ps)

    @property
    def span_ps(self) -> int:
        if len(self.begin_ps) == 0:
            return 0
        return int(self.end_ps.max() - self.begin_ps.min())


def _split_source(source: str) -> tuple[str, int]:
    file_name, sep, line = source.rpartition(":")
    if sep and line.strip().isdigit():
        return file_name, int(line)
    return source, -1


def _op_table(
    plane: Plane, metadata_ids: np.ndarray, modules: dict[int, ModuleCosts]
) -> tuple[dict, np.ndarray]:
    """Per-occurrence cost columns for the distinct ops, and each metadata id's row."""
    names = stat_names(plane)
    distinct = unique(metadata_ids)
    cols = empty_columns(len(distinct))
    keep = np.ones(len(distinct), bool)
    for row, mid in enumerate(distinct.tolist()):
        meta = plane.event_metadata.get(mid)
        if meta is None:
            keep[row] = False
            continue
        stats = stats_dict(meta.stats, names)
        if "symbol_id" in stats and as_uint64(stats["symbol_id"]) == 0:
            keep[row] = False
            continue
        cols["program_id"][row] = as_uint64(stats.get("program_id"))
        cols["name"][row] = meta.display_name or _instruction_name(meta.name)
        cols["category"][row] = as_str(stats.get("hlo_category"))
        flops = as_float(stats.get("flops"))
        cols["flops"][row] = flops
        cols["model_flops"][row] = as_float(stats.get("model_flops")) or flops
        cols["bytes_accessed"][row] = as_float(stats.get("bytes_accessed"))
        raw = stats.get("memory_access_breakdown")
        if isinstance(raw, bytes) and raw:
            breakdown = op_metrics_pb2.MemoryAccessBreakdown.FromString(raw)
            for access in breakdown.memory_accessed:
                space = MEMORY_SPACES.get(access.memory_space)
                if space is not None and access.operation_type in (1, 2):
                    cols["breakdown"][row, space, access.operation_type - 1] += (
                        access.bytes_accessed
                    )
            cols["has_breakdown"][row] = len(breakdown.memory_accessed) > 0
        file_name, line = _split_source(as_str(stats.get("source")))
        cols["source_file"][row] = file_name
        cols["source_line"][row] = line
        cols["source_stack"][row] = as_str(stats.get("source_stack"))
        text, cols["dtype"][row] = _op_text(meta.name, modules.get(cols["program_id"][row]), stats)
        for column, value in zip(TEXT_COLUMNS, text):
            cols[column][row] = value
        cols["op_path"][row] = as_str(stats.get("tf_op"))
    rows = np.where(keep, np.arange(len(distinct)), -1)
    return cols, rows[np.searchsorted(distinct, metadata_ids)]


# _op_table's results by the plane's metadata digest and the ops asked for: the cores and
# hosts of one program (a pod) have the same metadata, read once. A few kept, oldest out first.
_OP_TABLES: dict[tuple[bytes, bytes, tuple], tuple[dict, np.ndarray]] = {}
_OP_TABLES_KEPT = 8
_OP_TABLES_LOCK = threading.Lock()


def _shared_op_table(
    plane: Plane, metadata_ids: np.ndarray, modules: dict[int, ModuleCosts]
) -> tuple[dict, np.ndarray]:
    """``_op_table``, its result kept for planes with the same metadata (the columns copied:
    each core owns its own)."""
    distinct = unique(metadata_ids)
    digest = getattr(plane, "metadata_digest", None)
    key = None if digest is None else (digest, distinct.tobytes(), tuple(sorted(modules)))
    with _OP_TABLES_LOCK:
        found = _OP_TABLES.get(key) if key is not None else None
    if found is None:
        found = _op_table(plane, distinct, modules)
        if key is not None:
            with _OP_TABLES_LOCK:
                _OP_TABLES[key] = found
                while len(_OP_TABLES) > _OP_TABLES_KEPT:
                    del _OP_TABLES[next(iter(_OP_TABLES))]
    cols, rows = found
    return {k: v.copy() for k, v in cols.items()}, rows[np.searchsorted(distinct, metadata_ids)]


def _op_text(line: str, module: ModuleCosts | None, stats: dict) -> tuple[OpText, str]:
    """An op's texts and dtype: its HLO line is the event metadata's name (XLA's own print);
    its shapes and dtype come from its module's instruction, else from that line; its
    framework op is the ``tf_op`` stat (``jit(f)/jit(main)/add``), else the metadata's."""
    name = _instruction_name(line)
    found = op_text(module, name) if module is not None else None
    parsed = parsed_line(line)
    if found is not None and module is not None:
        text = found._replace(hlo_text=shortened(without_layouts(line))) if parsed else found
        dtype = module.dtype(name)
    elif parsed is not None:
        text = OpText(shapes_text(parsed.operands, parsed.result), shortened(without_layouts(line)))
        dtype = line_dtype(parsed)
    else:
        shape = without_layouts(as_str(stats.get("shape_with_layout")))
        text, dtype = OpText(shapes=shapes_text([], shape) if shape else ""), ""
    framework_op = as_str(stats.get("tf_op")).removesuffix(":")
    return text._replace(framework_op=framework_op or text.framework_op), dtype


def _instruction_name(hlo_text: str) -> str:
    """``%fusion.3 = f32[...] fusion(...)`` -> ``fusion.3``."""
    head = hlo_text.split(" = ", 1)[0].strip()
    return head.lstrip("%")


def _steps(plane: Plane) -> list[tuple[int, int, int]]:
    line = next((ln for ln in plane.lines if ln.name == STEPS_LINE), None)
    if line is None:
        return []
    events = line_events(plane, line, numeric_stats=("step_num",))
    order = np.argsort(events.begin_ps, kind="stable")
    nums = events.stats["step_num"][order]
    valid = valid_step_numbers(nums)
    numbers = np.where(valid, nums, 0).astype(np.int64).tolist()
    for k in np.flatnonzero(~valid).tolist():  # rare: numbered by the event's name or position
        meta = plane.event_metadata.get(int(events.metadata_id[order[k]]))
        text = meta.name.strip() if meta is not None else ""
        digits = text.isascii() and text.isdigit()
        numbers[k] = int(text) if digits and valid_step_number(int(text)) else k
    begin = events.begin_ps[order]
    end = begin + events.duration_ps[order]
    return list(zip(numbers, begin.tolist(), end.tolist()))


def _constant_as_view(values: np.ndarray) -> np.ndarray:
    """A column whose values are all equal (a stat no event has) as a read-only view."""
    if len(values) and (values == values[0]).all():
        return np.broadcast_to(values[:1].copy(), values.shape)
    return values


def core_ops(plane: Plane, modules: dict[int, ModuleCosts] | None = None) -> CoreOps:
    parts = [
        line_events(plane, line, numeric_stats=_EVENT_STATS)
        for line in plane.lines
        if line.name in OP_LINES
    ]
    if parts:
        metadata_id = np.concatenate([p.metadata_id for p in parts])
        begin = np.concatenate([p.begin_ps for p in parts])
        end = np.concatenate([p.end_ps for p in parts])
        occurrences = np.concatenate([p.occurrences for p in parts])
        self_ps = np.concatenate([self_times(p.begin_ps, p.end_ps) for p in parts])
        dma = np.concatenate([p.stats["dma_stall_duration_ps"] for p in parts])
        scale = np.concatenate([p.stats["Time Scale Multiplier"] for p in parts])
    else:
        metadata_id = begin = end = occurrences = self_ps = np.zeros(0, np.int64)
        dma = scale = np.zeros(0)
    ops, op_row = _shared_op_table(plane, metadata_id, modules or {})
    return CoreOps(
        begin_ps=begin,
        end_ps=end,
        self_ps=self_ps,
        occurrences=occurrences,
        op_row=op_row,
        dma_stall_ps=_constant_as_view(np.nan_to_num(dma)),
        time_scale=_constant_as_view(np.where(np.isnan(scale), 1.0, scale)),
        ops=ops,
        steps=_steps(plane),
    )


_STATIC = (
    "program_id",
    "name",
    "category",
    "has_breakdown",
    "source_file",
    "source_line",
    "source_stack",
    "dtype",
    *TEXT_COLUMNS,
    "op_path",
    "flops",
    "model_flops",
    "bytes_accessed",
    "breakdown",
)


def windowed_ops(
    cores: list[CoreOps], windows: list[list[tuple[int, int]]] | None = None
) -> StepOps:
    """Op metrics summed over cores: of whole cores, or per window (step).

    ``windows[c][w]`` is window w on core c; an event belongs to the window it starts in.
    One pass over all cores' events bins them by (window, op); ops of all cores share
    one table keyed by (program, name), so no per-window merging is needed.
    """
    keys: dict[tuple[int, str], int] = {}
    mappings = []
    for core in cores:
        mapping = np.empty(len(core.ops["name"]), np.int64)
        pairs = zip(core.ops["program_id"].tolist(), core.ops["name"].tolist())
        for row, key in enumerate(pairs):
            mapping[row] = keys.setdefault(key, len(keys))
        mappings.append(mapping)
    n = len(keys)
    table = empty_columns(n)
    for core, mapping in reversed(list(zip(cores, mappings))):  # the first core wins
        for col in _STATIC:
            table[col][mapping] = core.ops[col]
    count = 1 if windows is None else len(windows[0])
    totals = np.zeros(count, np.int64)
    takes, groups, op_parts = [], [], []
    for c, (core, mapping) in enumerate(zip(cores, mappings)):
        take = core.op_row >= 0
        if windows is None:
            group = np.zeros(len(core.begin_ps), np.int64)
            totals[0] += core.span_ps
        else:
            starts = np.array([w[0] for w in windows[c]], np.int64)
            ends = np.array([w[1] for w in windows[c]], np.int64)
            group = np.searchsorted(starts, core.begin_ps, side="right") - 1
            inside = group >= 0
            inside[inside] &= core.begin_ps[inside] < ends[group[inside]]
            take &= inside
            totals += ends - starts
        takes.append(take)
        groups.append(group[take])
        op_parts.append(mapping[core.op_row[take]])
    binned = part_cells(groups, op_parts, n, count)
    del groups, op_parts

    def summed(column) -> np.ndarray:
        """Per-cell sums of ``column(core)`` over the events each core takes."""
        return binned.sum([column(core)[take] for core, take in zip(cores, takes)])

    occ = summed(lambda core: core.occurrences)
    per_occurrence = {k: table[k][binned.op] for k in ("flops", "model_flops", "bytes_accessed")}
    columns = {
        "occurrences": occ.astype(np.int64),
        "time_ps": summed(lambda core: core.end_ps - core.begin_ps).astype(np.int64),
        "self_time_ps": summed(lambda core: core.self_ps).astype(np.int64),
        "dma_stall_ps": summed(lambda core: core.dma_stall_ps),
        "normalized_time_ps": summed(lambda core: (core.end_ps - core.begin_ps) * core.time_scale),
        **{k: v * occ for k, v in per_occurrence.items()},
        "breakdown": table["breakdown"][binned.op] * occ[:, None, None],
    }
    ops = step_ops(table, binned, columns, totals)
    return ops.keep_rows(occ > 0)


def _is_cut(core: CoreOps, step: tuple[int, int, int], first: bool, last: bool) -> bool:
    """A step is cut by the profile window when it starts with the capture or ends with it.

    libtpu drops such steps itself; profiles that still carry them (and our demo data)
    show the cut as a first step beginning exactly at the earliest op event, or a last
    step ending exactly at the latest one.
    """
    if len(core.begin_ps) == 0:
        return False
    _, begin, end = step
    return (first and begin == int(core.begin_ps.min())) or (last and end == int(core.end_ps.max()))


def tpu_op_stats(
    profile: Profile,
    host: str,
    device: int | None = None,
    modules: dict[int, ModuleCosts] | None = None,
) -> OpStats:
    """OpStats of the host's TensorCores; ``device`` (the N of ``/device:TPU:N``, None: all)
    keeps one core (each core's ops and steps are its own: the cores add up to all);
    ``modules`` (by program id) give the ops' dtypes and shapes where the profile carries its
    HLO."""
    planes = profile.planes_matching(TPU_CORE_PLANE)
    perf_env, device_type = tpu_perf_env(planes[0])
    perf_env.dtype_tflops = tpu_dtype_tflops(device_type, perf_env.peak_tera_flops_per_second)
    cores = [core_ops(plane, modules) for plane in planes]
    profile.done_reading()
    numbers = [_core_number(plane.name) for plane in planes]
    devices = [n for n, c in zip(numbers, cores) if len(c.begin_ps)]
    check_device(device, devices)
    core_count = len(planes)
    if device is not None:
        cores, core_count = [cores[numbers.index(device)]], 1
    run_env = RunEnvironment(
        hardware_type="TPU",
        device_type=device_type,
        device_core_count=core_count,
        active_core_count=sum(1 for c in cores if len(c.begin_ps)),
    )
    all_db = windowed_ops([c for c in cores if len(c.begin_ps)]).db(0)
    stats = OpStats(
        hosts=[host],
        run_env=run_env,
        perf_env=perf_env,
        all_db=all_db,
        devices=devices,
        device=device,
    )
    stats.has_step_markers = any(c.steps for c in cores)
    stats.steps = _intersect_steps([c for c in cores if c.steps])
    stats.diagnostics = Diagnostics()
    return stats


def _core_number(plane_name: str) -> int:
    """N of ``/device:TPU:N``."""
    match = TPU_CORE_PLANE.match(plane_name)
    return int(match.group(1)) if match else -1


def _intersect_steps(cores: list[CoreOps]) -> list[StepInfo]:
    """Steps every core has, by number; each step's ops summed over cores."""
    if not cores:
        return []
    numbers = sorted(set.intersection(*({s[0] for s in c.steps} for c in cores)))
    windows, durations, complete = [], np.zeros(len(numbers), np.int64), [True] * len(numbers)
    for core in cores:
        positions = {s[0]: i for i, s in enumerate(core.steps)}
        chosen = [core.steps[positions[num]] for num in numbers]
        windows.append([(b, e) for _, b, e in chosen])
        durations = np.maximum(durations, [e - b for _, b, e in chosen])
        last = len(core.steps) - 1
        for k, (num, step) in enumerate(zip(numbers, chosen)):
            if _is_cut(core, step, positions[num] == 0, positions[num] == last):
                complete[k] = False
    return table_steps(windowed_ops(cores, windows), numbers, complete, durations)
