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
from ..ops.op_metrics import MEMORY_SPACES, TEXT_COLUMNS, empty_columns
from ..ops.op_stats import Diagnostics, OpStats, StepInfo, table_steps
from ..ops.selection import check_device
from ..ops.span_sums import SpanSums, Windows, array_span_sums, span_sums
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
from .host_steps import StepSpans, no_steps, valid_step_number, valid_step_numbers
from .in_threads import THREADS_MIN_BYTES, thread_map

OP_LINES = ("XLA Ops",)
STEPS_LINE = "Steps"
_EVENT_STATS = ("dma_stall_duration_ps", "Time Scale Multiplier")


@dataclass
class CoreOps:
    """One TensorCore's op events, summed per op (and per step window where it has steps);
    ``op_row`` maps each of ``sums.ids`` to a row of ``ops`` (-1: not an op)."""

    sums: SpanSums
    op_row: np.ndarray
    ops: dict[str, np.ndarray]  # per-occurrence costs and identity of each distinct op
    ops_source: object  # cores with the same (not None) have equal ``ops``
    steps: StepSpans
    windows: Windows | None  # of the steps the sums are of

    @property
    def events(self) -> int:
        return self.sums.events

    @property
    def span_ps(self) -> int:
        return self.sums.span_ps


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
_OP_TABLES: dict[tuple[bytes, bytes, tuple], tuple[dict, np.ndarray, bool]] = {}
_OP_TABLES_KEPT = 8  # entries of each cache (_OP_TABLES, _KEYED)
_CACHES_LOCK = threading.Lock()


def _cached(cache: dict, key):
    with _CACHES_LOCK:
        return cache.get(key)


def _keep(cache: dict, key, value) -> None:
    """``value`` kept in ``cache``, its oldest entries out past _OP_TABLES_KEPT."""
    with _CACHES_LOCK:
        cache[key] = value
        while len(cache) > _OP_TABLES_KEPT:
            del cache[next(iter(cache))]


def _shared_op_table(
    plane: Plane, metadata_ids: np.ndarray, modules: dict[int, ModuleCosts]
) -> tuple[dict, np.ndarray, object, bool]:
    """``_op_table``, its result kept for planes with the same metadata and shared by their
    cores, read-only (``keyed_ops`` writes the table a host keeps); what the columns are
    (cores with the same one have equal op tables; None: a table of its own); and whether
    each (program, name) of the table is one op (then so are those of every core's ops)."""
    distinct = unique(metadata_ids)
    digest = getattr(plane, "metadata_digest", None)
    key = None if digest is None else (digest, distinct.tobytes(), tuple(sorted(modules)))
    found = _cached(_OP_TABLES, key) if key is not None else None
    if found is None:
        cols, rows = _op_table(plane, distinct, modules)
        found = cols, rows, key is not None and _distinct_keys(cols, rows) is None
        if key is not None:
            for column in (*cols.values(), rows):
                column.setflags(write=False)  # shared by every core of the program
            _keep(_OP_TABLES, key, found)
    cols, rows, one_op_each = found
    source = cols if key is not None else None
    return cols, rows[np.searchsorted(distinct, metadata_ids)], source, one_op_each


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


def _steps(plane: Plane) -> StepSpans:
    line = next((ln for ln in plane.lines if ln.name == STEPS_LINE), None)
    if line is None:
        return no_steps()
    events = line_events(plane, line, numeric_stats=("step_num",))
    order = np.argsort(events.begin_ps, kind="stable")
    nums = events.stats["step_num"][order]
    valid = valid_step_numbers(nums)
    numbers = np.where(valid, nums, 0).astype(np.int64)
    for k in np.flatnonzero(~valid).tolist():  # rare: numbered by the event's name or position
        meta = plane.event_metadata.get(int(events.metadata_id[order[k]]))
        text = meta.name.strip() if meta is not None else ""
        digits = text.isascii() and text.isdigit()
        numbers[k] = int(text) if digits and valid_step_number(int(text)) else k
    begin = events.begin_ps[order]
    return StepSpans(numbers, begin, begin + events.duration_ps[order])


def core_ops(
    plane: Plane,
    steps: StepSpans,
    windows: Windows | None,
    modules: dict[int, ModuleCosts] | None = None,
) -> CoreOps:
    """The core's op events summed per op and per window (of its ``steps``; None: none);
    ``modules`` (by program id) give its ops' texts and dtypes."""
    modules = modules or {}
    lines = [line for line in plane.lines if line.name in OP_LINES]
    sums = span_sums(plane, lines, _EVENT_STATS, windows)
    ops, op_row, source, one_op_each = _shared_op_table(plane, sums.ids, modules)
    key = None if one_op_each else _distinct_keys(ops, op_row)
    if key is not None:  # two metadata ids of one op: their events are summed together
        parts = [line_events(plane, line, numeric_stats=_EVENT_STATS) for line in lines]
        ids = np.concatenate([p.metadata_id for p in parts]) if parts else np.zeros(0, np.int64)
        first: dict[int, int] = {}
        for mid, k in zip(sums.ids.tolist(), key.tolist()):
            first.setdefault(k, mid)
        merged = np.array([first[k] for k in key.tolist()], np.int64)
        sums = array_span_sums(parts, _EVENT_STATS, windows, merged[_positions(sums.ids, ids)])
        ops, op_row, source, _ = _shared_op_table(plane, sums.ids, modules)
    return CoreOps(sums, op_row, ops, source, steps, windows)


def _positions(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The index in ``keys`` (any order) of each of ``values`` (all among them; a key that
    repeats: its last), by a stable sort: equal keys keep their order, the last rightmost."""
    order = np.argsort(keys, kind="stable")
    return order[np.searchsorted(keys[order], values, side="right") - 1]


def _distinct_keys(ops: dict, op_row: np.ndarray) -> np.ndarray | None:
    """None when every metadata id that is an op is an op of its own (the usual case);
    else a key per metadata id, equal for the ids of one (program, name), unique for the
    others."""
    valid = op_row >= 0
    pairs = list(
        zip(ops["program_id"][op_row[valid]].tolist(), ops["name"][op_row[valid]].tolist())
    )
    if len(set(pairs)) == len(pairs):
        return None
    index: dict = {}
    key = np.arange(len(op_row), dtype=np.int64) + len(op_row)
    key[valid] = [index.setdefault(pair, len(index)) for pair in pairs]
    return key


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


@dataclass
class KeyedOps:
    """The ops of some cores as one table keyed by (program, name): ``table`` (the static
    columns of its ``n`` ops) and each core's row in it of each of its ops."""

    n: int
    mappings: list[np.ndarray]
    table: dict[str, np.ndarray]


# keyed_ops' results by the op tables of the cores, when all are shared (``ops_source``):
# every host of a pod has the same, made once, read-only. A few kept, oldest out first.
_KEYED: dict[tuple[int, ...], tuple[tuple, KeyedOps]] = {}


def keyed_ops(cores: list[CoreOps]) -> KeyedOps:
    """One table of the ops of ``cores``; a core of an op table seen before (the same
    program) takes that core's keys. Cores whose op tables are all shared take the table
    made before for cores of the same tables."""
    sources = tuple(core.ops_source for core in cores)
    if not cores or any(source is None for source in sources):
        return _keyed_ops(cores)
    key = tuple(map(id, sources))
    found = _cached(_KEYED, key)
    if found is not None and all(a is b for a, b in zip(found[0], sources)):
        return found[1]  # (the sources held there: their ids are theirs)
    keyed = _keyed_ops(cores)
    for column in (*keyed.table.values(), *keyed.mappings):
        column.setflags(write=False)
    _keep(_KEYED, key, (sources, keyed))
    return keyed


def _keyed_ops(cores: list[CoreOps]) -> KeyedOps:
    keys: dict[tuple[int, str], int] = {}
    mappings: list[np.ndarray] = []
    first_with: dict[int, int] = {}  # an op table's first core (by its source)
    for c, core in enumerate(cores):
        seen = first_with.get(id(core.ops_source)) if core.ops_source is not None else None
        if seen is not None:  # a core of the same program: the same keys
            mappings.append(mappings[seen])
            continue
        if core.ops_source is not None:
            first_with[id(core.ops_source)] = c
        mapping = np.empty(len(core.ops["name"]), np.int64)
        pairs = zip(core.ops["program_id"].tolist(), core.ops["name"].tolist())
        for row, key in enumerate(pairs):
            mapping[row] = keys.setdefault(key, len(keys))
        mappings.append(mapping)
    n = len(keys)
    table = empty_columns(n)
    # The first core with an op describes it: later cores are written first, each table once.
    firsts = sorted({c if core.ops_source is None else first_with[id(core.ops_source)]
                     for c, core in enumerate(cores)})  # fmt: skip
    for c in reversed(firsts):
        for col in _STATIC:
            table[col][mappings[c]] = cores[c].ops[col]
    return KeyedOps(n, mappings, table)


def windowed_ops(
    cores: list[CoreOps], by_window: bool = False, keyed: KeyedOps | None = None
) -> StepOps:
    """Op metrics summed over cores: of whole cores, or per window (step; the cores' sums
    hold the same windows, ``_core_windows``); ``keyed``: ``keyed_ops(cores)`` made before.

    Ops of all cores share one table keyed by (program, name); each core's sums (per op,
    or per (window, op) cell) are added core by core, so no per-window merging is needed.
    """
    keyed = keyed or keyed_ops(cores)
    n, mappings, table = keyed.n, keyed.mappings, keyed.table
    count = 1
    totals = np.zeros(1, np.int64)
    if by_window:
        first = cores[0].windows if cores else None
        count = len(first[0]) if first is not None else 0
        totals = np.zeros(count, np.int64)
    groups: list[np.ndarray] = []
    op_parts: list[np.ndarray] = []
    sums: list[dict[str, np.ndarray]] = []
    for core, mapping in zip(cores, mappings):
        if by_window:
            rows = core.op_row[core.sums.cell_id]
            taken = rows >= 0
            group = core.sums.cell_window[taken]
            part = core.sums.per_cell
            assert core.windows is not None  # binned by window: every core has them
            begin, end = core.windows
            totals += end - begin
        else:
            rows = core.op_row
            taken = rows >= 0
            group = np.zeros(int(taken.sum()), np.int64)
            part = core.sums.per_id
            totals[0] += core.span_ps
        every = bool(taken.all())
        groups.append(group)
        op_parts.append(mapping[rows if every else rows[taken]])
        sums.append(part if every else {k: v[taken] for k, v in part.items()})
    binned = part_cells(groups, op_parts, n, count)
    del groups, op_parts

    def summed(name: str) -> np.ndarray:
        """Per-cell sums of the cores' sums, core by core."""
        return binned.sum([core_sums[name] for core_sums in sums])

    occ = summed("occurrences")
    per_occurrence = {k: table[k][binned.op] for k in ("flops", "model_flops", "bytes_accessed")}
    columns = {
        "occurrences": occ.astype(np.int64),
        "time_ps": summed("time_ps").astype(np.int64),
        "self_time_ps": summed("self_ps").astype(np.int64),
        "dma_stall_ps": summed("stat"),
        "normalized_time_ps": summed("scaled_ps"),
        **{k: v * occ for k, v in per_occurrence.items()},
        "breakdown": table["breakdown"][binned.op] * occ[:, None, None],
    }
    ops = step_ops(table, binned, columns, totals)
    return ops.keep_rows(occ > 0)


def _is_cut(core: CoreOps, begin: int, end: int, first: bool, last: bool) -> bool:
    """A step is cut by the profile window when it starts with the capture or ends with it.

    libtpu drops such steps itself; profiles that still carry them (and our demo data)
    show the cut as a first step beginning exactly at the earliest op event, or a last
    step ending exactly at the latest one.
    """
    if core.events == 0:
        return False
    return (first and begin == core.sums.min_begin_ps) or (last and end == core.sums.max_end_ps)


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
    steps = [_steps(plane) for plane in planes]
    core_numbers = [_core_number(plane.name) for plane in planes]
    if device in core_numbers:  # one core: its own steps, not those every core has
        at = core_numbers.index(device)
        numbers, own = _core_windows([steps[at]])
        windows = [own[0] if c == at else None for c in range(len(planes))]
    else:
        numbers, windows = _core_windows(steps)
    # The cores' lines are summed in C without the GIL: at once, on a machine with idle cores.
    parallel = sum(len(line.raw) for p in planes for line in p.lines if hasattr(line, "raw"))
    threads = None if parallel >= THREADS_MIN_BYTES else 1
    work = [(p, s, w, modules) for p, s, w in zip(planes, steps, windows)]
    cores = thread_map(lambda c: core_ops(*c), work, threads)
    profile.done_reading()
    devices = [n for n, c in zip(core_numbers, cores) if c.events]
    check_device(device, devices)
    core_count = len(planes)
    if device is not None:
        cores, core_count = [cores[core_numbers.index(device)]], 1
    run_env = RunEnvironment(
        hardware_type="TPU",
        device_type=device_type,
        device_core_count=core_count,
        active_core_count=sum(1 for c in cores if c.events),
    )
    with_events, with_steps = [c for c in cores if c.events], [c for c in cores if c.steps]
    keyed = keyed_ops(with_events)  # of both sums below where they are of the same cores
    all_db = windowed_ops(with_events, keyed=keyed).db(0)
    stats = OpStats(
        hosts=[host],
        run_env=run_env,
        perf_env=perf_env,
        all_db=all_db,
        devices=devices,
        device=device,
    )
    stats.has_step_markers = any(c.steps for c in cores)
    same = len(with_steps) == len(with_events) and all(
        a is b for a, b in zip(with_steps, with_events)
    )
    stats.steps = _intersect_steps(with_steps, numbers, keyed if same else None)
    stats.diagnostics = Diagnostics()
    return stats


def _core_number(plane_name: str) -> int:
    """N of ``/device:TPU:N``."""
    match = TPU_CORE_PLANE.match(plane_name)
    return int(match.group(1)) if match else -1


def _core_windows(steps: list[StepSpans]) -> tuple[np.ndarray, list[Windows | None]]:
    """The step numbers every core with steps has (ascending), and each core's windows of
    them in that order (None for a core without steps)."""
    with_steps = [s for s in steps if len(s)]
    if not with_steps:
        return np.zeros(0, np.int64), [None] * len(steps)
    numbers = unique(with_steps[0].numbers)
    for core_steps in with_steps[1:]:  # those of the core too (both sorted, distinct)
        theirs = unique(core_steps.numbers)
        at = np.searchsorted(theirs, numbers).clip(max=len(theirs) - 1)
        numbers = numbers[theirs[at] == numbers]
    windows: list[Windows | None] = []
    for core_steps in steps:
        if not len(core_steps):
            windows.append(None)
            continue
        at = _positions(core_steps.numbers, numbers)
        windows.append((core_steps.begin_ps[at], core_steps.end_ps[at]))
    return numbers, windows


SAFE_SPAN_PS = 1 << 62  # window bounds within this: end - begin cannot overflow int64


def _intersect_steps(
    cores: list[CoreOps], numbers: np.ndarray, keyed: KeyedOps | None = None
) -> list[StepInfo]:
    """Steps every core has, by number (``numbers``, ascending); each step's ops summed over
    cores (``keyed``: ``keyed_ops(cores)`` made before)."""
    if not cores:
        return []
    durations, complete = np.zeros(len(numbers), np.int64), np.ones(len(numbers), bool)
    for core in cores:
        assert core.windows is not None  # a core with steps has their windows
        begin, end = core.windows
        if len(begin) and max(np.abs(begin).max(), np.abs(end).max()) < SAFE_SPAN_PS:
            durations = np.maximum(durations, end - begin)
        else:  # as Python ints: an overflow is an error, not a wrapped duration
            spans = [e - b for b, e in zip(begin.tolist(), end.tolist())]
            durations = np.maximum(durations, np.array(spans, np.int64))
        # Only a core's first and last step can be cut (``_is_cut``): the chosen steps at
        # those positions (a number the core repeats is chosen at its last position).
        steps, last = core.steps, len(core.steps) - 1
        for position in sorted({0, last}):
            number = steps.numbers[position]
            k = int(np.searchsorted(numbers, number))
            if k == len(numbers) or numbers[k] != number:
                continue
            if (steps.numbers[position + 1 :] == number).any():
                continue
            begin_ps, end_ps = int(steps.begin_ps[position]), int(steps.end_ps[position])
            if _is_cut(core, begin_ps, end_ps, position == 0, position == last):
                complete[k] = False
    ops = windowed_ops(cores, by_window=True, keyed=keyed)
    return table_steps(ops, numbers, complete, durations)
