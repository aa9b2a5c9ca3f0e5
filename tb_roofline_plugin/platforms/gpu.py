"""GPU op metrics (NVIDIA and AMD) from ``/device:GPU:N`` kernel events and the HLO cost model.

Kernels on a plane's stream lines carry ``hlo_op`` and ``program_id``; the last ``::``
part of ``hlo_op`` names the instruction in that program's HLO module, whose cost comes
from ``hlo_cost``. As in XProf, every kernel is one occurrence, all kernels count in
the device time, and kernels without an HLO op are not op rows. Unlike XProf, an op's
cost is counted once per execution, not once per kernel: on one stream, consecutive
kernels of the same op are one execution until the execution's first kernel comes
again (kernels A B A B are two executions, A A two). Kernels without an HLO op are
reported. Everything per kernel is one C pass over the stream lines' bytes
(``ops.kernel_sums``) or array arithmetic; Python touches only distinct ops.

Graph launches (XLA command buffers: ``cuGraphLaunch``, ``hipGraphLaunch``) run many
kernels under the launch's one correlation id, on one or more streams. Their kernels carry
either their own instruction or, as XLA's CUPTI collector records today, the annotation
active at the launch: the command buffer's ``call``, whose cost is its whole computation.
Either way an op's kernels in one graph launch are one execution of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arrays import unique
from ..hlo.cost.engine import InstructionCost, ModuleCosts
from ..hlo.text import OpText, op_text
from ..ops.busy_shares import union_pieces
from ..ops.kernel_sums import (
    KERNEL_SUM_STATS,
    KernelSums,
    array_kernel_sums,
    compiled_kernel_sums,
    renumbered,
)
from ..ops.op_metrics import TEXT_COLUMNS, OpMetricsDb, empty_columns
from ..ops.op_stats import OpStats, StepInfo, table_steps
from ..ops.selection import check_device
from ..ops.step_ops import Cells, StepOps, cells, step_ops, unnested_columns
from ..peaks.device_rules import gpu_dtype_tflops, gpu_perf_env
from ..peaks.perf_env import RunEnvironment
from ..wording import numbered
from ..xspace.event_table import EventTable, StringCodes, first_seen_codes, line_tables
from ..xspace.profile_reader import (
    GPU_PLANE,
    HOST_PLANE,
    Plane,
    Profile,
    stat_ids,
    stat_names,
    stats_dict,
)
from .gpu_derived import DerivedLines, held_by, is_derived_line, read_derived
from .host_steps import HostMarkers, host_markers

KERNEL_STATS = ("hlo_op", "program_id", "tf_op", "correlation_id", "flops", "bytes_accessed")
NO_HLO_CATEGORY = "kernel without HLO op"
GPU_STEPS_INFO = (
    "Per-step rows computed by tb_roofline_plugin from host step markers and kernel "
    "launches (XProf reports zeros for GPU steps)."
)
DEVICE_STEPS_INFO = (
    "Per-step rows computed by tb_roofline_plugin from the GPUs' Steps lines: a kernel "
    "belongs to the step whose span on its GPU holds its start (XProf reports zeros for "
    "GPU steps)."
)


@dataclass
class Kernels:
    """Every event of the GPU planes (kernels, memcpys) as columns, absolute times in ps."""

    begin_ps: np.ndarray
    end_ps: np.ndarray
    plane: np.ndarray  # int32 index of the GPU plane
    line: np.ndarray  # int32 global line number (unique across planes)
    kernel: np.ndarray  # code of the kernel name in `kernel_names`
    kernel_names: list[str]
    hlo_op: np.ndarray  # code of the hlo_op stat in `hlo_ops`
    hlo_ops: list  # str or None (absent)
    tf_op: np.ndarray  # code of the tf_op stat in `tf_ops`
    tf_ops: list
    program_id: np.ndarray  # uint64 (0 when absent)
    correlation_id: np.ndarray  # uint64
    has_correlation: np.ndarray  # bool
    event_flops: np.ndarray  # float64, 0 when absent (a read-only zero view when never present)
    event_bytes: np.ndarray
    _graph_kernel: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.begin_ps)

    def graph_kernel(self) -> np.ndarray:
        """Per kernel (bool): does another kernel carry its correlation id, as the kernels
        of one graph launch do? Computed once."""
        if self._graph_kernel is None:
            shared = np.zeros(len(self), bool)
            ids = self.correlation_id[self.has_correlation]
            if len(ids):
                shared[self.has_correlation] = _id_counts(ids, ids) > 1
            self._graph_kernel = shared
        return self._graph_kernel


def _id_counts(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """How often each of ``wanted`` (uint64 ids, all in ``ids``) occurs in ``ids``."""
    low = ids.min()
    if int(ids.max() - low) < 4 * len(ids) + 4096:
        # Correlation ids number the API calls: dense, so one counting pass does (no sort).
        counts = np.bincount((ids - low).view(np.int64))
        return counts[(wanted - low).view(np.int64)]
    values, counts = unique(ids, return_counts=True)
    return counts[np.searchsorted(values, wanted)]


def _stat_or_count(table: EventTable, stat_id: int | None) -> np.ndarray | int:
    """A numeric stat per event (0 where absent), or the event count when no event has it."""
    if stat_id is None or not (table.stat_id == stat_id).any():
        return len(table)
    return np.nan_to_num(table.numbers(stat_id))


def _concatenate(parts: list) -> np.ndarray:
    """Concatenated columns; counts stand for all-zero parts, kept as one read-only view."""
    if all(isinstance(p, int) for p in parts):
        return np.broadcast_to(np.float64(0.0), (sum(parts),))
    return np.concatenate([np.zeros(p) if isinstance(p, int) else p for p in parts])


def _add_kernels(parts, strings, table, plane, ids, names, where: tuple[int, int]) -> None:
    """Appends the kernels of one piece of a line to the columns in ``parts``."""
    n = len(table)
    if n == 0:
        return
    metadata = plane.event_metadata
    meta_ids, inverse = unique(table.metadata_id, return_inverse=True)
    meta_names = [metadata[m].name if m in metadata else "" for m in meta_ids.tolist()]
    strings["kernel"].add_distinct(meta_names, inverse.ravel())
    strings["hlo_op"].add(table, ids.get("hlo_op"), names)
    strings["tf_op"].add(table, ids.get("tf_op"), names)
    has_program, program = table.integers(ids.get("program_id"))
    has_corr, corr = table.integers(ids.get("correlation_id"))
    columns = {
        "begin_ps": table.begin_ps,
        "end_ps": table.end_ps,
        "plane": np.full(n, where[0], np.int32),
        "line": np.full(n, where[1], np.int32),
        "program_id": np.where(has_program, program, 0).astype(np.uint64),
        "correlation_id": corr.astype(np.uint64),
        "has_correlation": has_corr,
        "event_flops": _stat_or_count(table, ids.get("flops")),
        "event_bytes": _stat_or_count(table, ids.get("bytes_accessed")),
    }
    for key, value in columns.items():
        parts.setdefault(key, []).append(value)


KERNEL_CHUNK_EVENTS = 1 << 18  # kernels of a stream line read at a time (memory: one piece)


def read_kernels(planes: list[Plane]) -> Kernels:
    return join_kernels(*read_kernel_parts(planes))


def read_kernel_parts(planes: list[Plane]) -> tuple[dict[str, list], dict[str, StringCodes]]:
    """The kernels' columns, piece by piece (joined by ``join_kernels`` once the file's bytes
    may go)."""
    parts: dict[str, list] = {}
    strings = {"kernel": StringCodes(), "hlo_op": StringCodes(), "tf_op": StringCodes()}
    line_number = 0
    for p, plane in enumerate(planes):
        ids = stat_ids(plane, KERNEL_STATS)
        names = stat_names(plane)
        for line in plane.lines:
            line_number += 1
            if is_derived_line(line):
                continue  # Steps, TensorFlow Ops, XLA Ops...: spans of kernels, not kernels
            stats = [ids.get(name) for name in KERNEL_STATS]
            for table in line_tables(line, stats, chunk_events=KERNEL_CHUNK_EVENTS):
                _add_kernels(parts, strings, table, plane, ids, names, (p, line_number))
    return parts, strings


def join_kernels(parts: dict[str, list], strings: dict[str, StringCodes]) -> Kernels:
    """The Kernels of ``read_kernel_parts``' pieces, each column joined in turn (its pieces
    let go)."""
    if not parts:
        empty = np.zeros(0, np.int64)
        return Kernels(empty, empty, empty, empty, empty, [], empty, [], empty, [],
                       empty.astype(np.uint64), empty.astype(np.uint64), empty.astype(bool),
                       empty.astype(float), empty.astype(float))  # fmt: skip
    cat = {k: _concatenate(parts.pop(k)) for k in list(parts)}
    kernel, kernel_names = strings["kernel"].factorized()
    hlo_op, hlo_ops = strings["hlo_op"].factorized()
    tf_op, tf_ops = strings["tf_op"].factorized()
    return Kernels(
        kernel=kernel,
        kernel_names=kernel_names,
        hlo_op=hlo_op,
        hlo_ops=hlo_ops,
        tf_op=tf_op,
        tf_ops=tf_ops,
        **cat,
    )


@dataclass
class OpTable:
    """The distinct ops the kernels map to, with their cost per execution."""

    program_id: list[int]
    name: list[str]
    category: list[str]
    cost: list[InstructionCost | None]
    source: list[tuple[str, int, str]]
    text: list[OpText]
    op_path: list[str]  # the HLO instruction's op_name (framework ops: their tf_op)

    def __len__(self) -> int:
        return len(self.name)


_OP_FIELDS = ("program_id", "name", "category", "cost", "source", "text", "op_path")


def _op_row(modules: dict[int, ModuleCosts], program: int, name: str, tf_op: str) -> tuple | None:
    """An op's OpTable entry: an HLO instruction's (None if its module lacks it), or, given
    its ``tf_op``, a framework op's (TensorFlow without XLA: no cost)."""
    if tf_op:
        return (0, name, "framework op", None, ("", -1, ""), OpText(framework_op=tf_op), tf_op)
    module = modules.get(program)
    cost = module.cost(name) if module is not None else None
    if module is None or cost is None:
        return None
    text = op_text(module, name) or OpText()
    source = module.source(name)
    return (program, name, module.category(name), cost, source, text, module.op_name(name))


def assign_ops(kernels: Kernels, modules: dict[int, ModuleCosts]) -> tuple[np.ndarray, OpTable]:
    """The op index of every kernel (-1: no HLO op found, not an XLA/framework op)."""
    # Distinct (program, hlo_op, tf_op, kernel) combinations first; Python sees only those.
    hlo_codes, hlo_values = kernels.hlo_op, kernels.hlo_ops
    tf_codes, tf_values = kernels.tf_op, kernels.tf_ops
    prog_values, prog_codes = unique(kernels.program_id, return_inverse=True)
    columns = [prog_codes.ravel(), hlo_codes, tf_codes, kernels.kernel]
    dims = [int(c.max()) + 1 if len(c) else 1 for c in columns]
    if np.prod([float(d) for d in dims]) < 2**62:  # one int64 key per combination
        flat, inverse = unique(np.ravel_multi_index(columns, dims), return_inverse=True)
        combos = np.stack(np.unravel_index(flat, dims), axis=1)
    else:
        combos, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    table = OpTable([], [], [], [], [], [], [])
    keys: dict[tuple[int, str], int] = {}
    combo_op = np.full(len(combos), -1, np.int64)
    for c, (pc, hc, tc, kc) in enumerate(combos.tolist()):
        program, hlo_op, tf_op = int(prog_values[pc]), hlo_values[hc], tf_values[tc]
        if hlo_op:
            name = hlo_op.rsplit("::", 1)[-1]
        elif tf_op and not tf_op.startswith("XlaModule:"):
            program, name = 0, f"{tf_op}/{kernels.kernel_names[kc]}"
        else:
            continue
        index = keys.get((program, name))
        if index is None:  # an op's first kernel: its cost and texts, once per instruction
            row = _op_row(modules, program, name, tf_op if not hlo_op else "")
            if row is None:
                continue  # XProf drops kernels whose instruction is not found
            index = keys[(program, name)] = len(table)
            for field, value in zip(_OP_FIELDS, row):
                getattr(table, field).append(value)
        combo_op[c] = index
    return combo_op[inverse.ravel()], table


def execution_starts(kernels: Kernels, op: np.ndarray) -> np.ndarray:
    """Does each kernel start an execution of its op (on its line, in time order)?

    The kernels of one graph launch that carry the same op are one execution, started by
    the earliest, whatever their streams and kernel names: with the launch's annotation
    on every kernel (the command-buffer call) a graph may run one library kernel several
    times, and spread over streams. (A loop unrolled inside one graph counts once.)
    """
    graph = np.flatnonzero(kernels.graph_kernel())  # before the sort: peak memory
    order = np.lexsort((kernels.begin_ps, kernels.line))
    o, line, kernel = op[order], kernels.line[order], kernels.kernel[order]
    change = np.ones(len(o), bool)
    change[1:] = (o[1:] != o[:-1]) | (line[1:] != line[:-1])
    run_first = np.maximum.accumulate(np.where(change, np.arange(len(o)), 0))
    starts = np.zeros(len(op), bool)
    starts[order] = change | (kernel == kernel[run_first])
    if len(graph):
        launch, graph_op = kernels.correlation_id[graph], op[graph]
        order = np.lexsort((kernels.begin_ps[graph], graph_op, launch))
        launch, graph_op = launch[order], graph_op[order]
        first = np.ones(len(order), bool)
        first[1:] = (launch[1:] != launch[:-1]) | (graph_op[1:] != graph_op[:-1])
        starts[graph[order]] = first
    return starts


def aggregate(
    kernels: Kernels,
    op: np.ndarray,
    table: OpTable,
    group: np.ndarray,
    totals: np.ndarray,
    starts: np.ndarray | None = None,
) -> StepOps:
    """The ops of each group (step, or a single group for the whole profile) of the kernels.

    ``group`` is each kernel's group (-1: in none); ``totals`` the device time per group;
    ``starts`` the kernels that start an execution (``execution_starts``).
    """
    n = len(table)
    starts = execution_starts(kernels, op) if starts is None else starts
    use = (op >= 0) & (group >= 0)
    binned = cells(group[use], op[use], n, len(totals))
    return cell_step_ops(
        table,
        binned,
        binned.sum(),
        binned.sum(starts[use].astype(np.float64)),
        binned.sum((kernels.end_ps - kernels.begin_ps)[use]),
        _cell_sums(binned, kernels.event_flops, use),
        _cell_sums(binned, kernels.event_bytes, use),
        totals,
    )


def cell_step_ops(
    table: OpTable,
    binned: Cells,
    count: np.ndarray,
    executions: np.ndarray,
    time_ps: np.ndarray,
    event_flops: np.ndarray,
    event_bytes: np.ndarray,
    totals: np.ndarray,
) -> StepOps:
    """The StepOps of the (group, op) cells of ``binned`` from their kernels' sums: the
    cost model's per-execution cost times the executions, else the events' stats."""
    n = len(table)
    per_exec = np.array(
        [
            (c.flops, c.bytes_accessed, c.bytes_written) if c is not None else (0.0, 0.0, 0.0)
            for c in table.cost
        ],
        np.float64,
    ).reshape(n, 3)[binned.op]
    static = empty_columns(n)
    static["program_id"][:] = np.asarray(table.program_id, np.uint64)
    static["name"][:] = table.name
    static["category"][:] = table.category
    for i, (file_name, line, stack) in enumerate(table.source):
        static["source_file"][i], static["source_line"][i], static["source_stack"][i] = (
            file_name,
            line,
            stack,
        )
    static["dtype"][:] = [c.dtype if c is not None else "" for c in table.cost]
    for k, column in enumerate(TEXT_COLUMNS):
        static[column][:] = [text[k] for text in table.text]
    static["op_path"][:] = table.op_path
    flops = per_exec[:, 0] * executions
    total_bytes = per_exec[:, 1] * executions
    written = per_exec[:, 2] * executions
    # XProf's fallback when the cost model has nothing: stats on the kernel events.
    flops = np.where(flops <= 0, event_flops, flops)
    from_events = (total_bytes <= 0) & (event_bytes > 0)
    total_bytes = np.where(from_events, event_bytes, total_bytes)
    written = np.where(from_events, 0.0, np.maximum(written, 0.0))
    columns = unnested_columns(count, time_ps, flops, total_bytes, written)
    return step_ops(static, binned, columns, totals)


def _cell_sums(binned: Cells, values: np.ndarray, use: np.ndarray) -> np.ndarray:
    """Per-cell sums of a kernel column (no pass at all for an all-zero view)."""
    if values.strides == (0,):
        return np.zeros(len(binned))
    return binned.sum(values[use])


def unattributed_db(
    kernels: Kernels,
    op: np.ndarray,
    total_ps: int,
    derived: DerivedLines | None = None,
    keep: np.ndarray | None = None,
) -> OpMetricsDb | None:
    """Kernels without an HLO op (ours: XProf leaves them out), by their TF op where a
    ``TensorFlow Ops`` span on their GPU holds them, else by kernel name; ``keep``: only
    these kernels (one GPU's)."""
    rows = op < 0 if keep is None else (op < 0) & keep
    if not rows.any():
        return None
    kernel_key = kernels.kernel[rows].astype(np.int64)
    labels = [k or "(unnamed kernel)" for k in kernels.kernel_names]
    if derived is not None and len(derived.op):
        begin, end = kernels.begin_ps[rows], kernels.end_ps[rows]
        span = held_by(kernels.plane[rows], begin, end, derived.op_plane, derived.op_begin,
                       derived.op_end)  # fmt: skip
        tf_op = np.where(span >= 0, derived.op[np.maximum(span, 0)], -1)
        kernel_key = np.where(tf_op >= 0, len(labels) + tf_op, kernel_key)
        labels = labels + derived.op_names
    codes, names = first_seen_codes(kernel_key)
    count = np.bincount(codes)
    time_ps = np.bincount(codes, weights=(kernels.end_ps - kernels.begin_ps)[rows])
    return unattributed_rows([labels[k] for k in names.tolist()], count, time_ps, total_ps)


def unattributed_rows(
    names: list[str], count: np.ndarray, time_ps: np.ndarray, total_ps: int
) -> OpMetricsDb:
    """The db of kernels without an HLO op: one row per name, its kernels and their time."""
    cols = empty_columns(len(names))
    cols["name"][:] = names
    cols["category"][:] = NO_HLO_CATEGORY
    cols["occurrences"] = count.astype(np.int64)
    cols["time_ps"] = cols["self_time_ps"] = time_ps.astype(np.int64)
    return OpMetricsDb(**cols, total_time_ps=total_ps)


def _spans(kernels: Kernels, planes: int) -> np.ndarray:
    """Last end - first start per GPU plane (0 for planes without events)."""
    first = np.full(planes, np.iinfo(np.int64).max)
    last = np.full(planes, np.iinfo(np.int64).min)
    np.minimum.at(first, kernels.plane, kernels.begin_ps)
    np.maximum.at(last, kernels.plane, kernels.end_ps)
    return np.where(last >= first, last - first, 0)


def stream_overlap(kernels: Kernels, planes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU plane (ps): the time of its stream events summed, and how much of it
    overlaps another of its events (the sum less their union): kernels and copies on
    concurrent streams."""
    order = np.lexsort((kernels.begin_ps, kernels.plane))
    plane, begin, end = (kernels.plane[order], kernels.begin_ps[order], kernels.end_ps[order])
    busy_plane, busy_begin, busy_end = union_pieces(plane, begin, end)
    busy = np.bincount(busy_plane, busy_end - busy_begin, minlength=planes)
    summed = np.bincount(kernels.plane, kernels.end_ps - kernels.begin_ps, minlength=planes)
    return summed.astype(np.int64), (summed - busy).astype(np.int64)


def stream_overlap_note(
    host: str, numbers: list[int], summed: np.ndarray, overlap: np.ndarray
) -> str | None:
    """One line when events on a GPU's concurrent streams overlap (None otherwise): op and
    kernel self times are each kernel's own time (XProf's rule), so that time counts once per
    stream and the shares can add up to more than the busy time."""
    gpus = np.flatnonzero(overlap > 0)
    if not len(gpus):
        return None
    over, total = int(overlap[gpus].sum()), int(summed[gpus].sum())
    return (
        f"{host}: events on concurrent streams overlap for {over / 1e6:,.1f} us on "
        f"{numbered([numbers[g] for g in gpus.tolist()], 'GPU')} ({100 * over / total:.2f} % "
        f"of {total / 1e6:,.1f} us of kernels and copies there); self times are each "
        "kernel's own time (XProf's rule), so the overlap counts once per stream."
    )


def gpu_op_stats(
    profile: Profile, host: str, modules: dict[int, ModuleCosts], device: int | None = None
) -> OpStats:
    """OpStats of the host's GPUs; ``device`` (the N of ``/device:GPU:N``, None: all) keeps
    one GPU's kernels, steps and time. Ops, executions and steps are found with every GPU's
    kernels first, so the GPUs' figures add up to all of them.

    Profiles without TensorFlow Ops lines, and with host step markers or no steps at all,
    are summed by ``ops.kernel_sums`` (one C pass over the lines' bytes where it can, else
    the same sums from the kernels as arrays); the others kernel by kernel here.
    """
    planes = profile.planes_matching(GPU_PLANE)
    with_stats = [p for p in planes if p.stats] or planes
    plane_stats = stats_dict(with_stats[0].stats, stat_names(with_stats[0]))
    perf_env, device_type = gpu_perf_env(plane_stats)
    perf_env.dtype_tflops = gpu_dtype_tflops(plane_stats)
    # One reader at a time (in threads, the pieces in flight cost more memory than they save
    # time); the file's bytes go before the kernels' columns are joined.
    markers = host_markers(profile.plane(HOST_PLANE))  # first: its temporaries, then none
    derived = read_derived(planes)
    numbers = [int(m.group(1)) for p in planes if (m := GPU_PLANE.match(p.name))]
    env = RunEnvironment(hardware_type="GPU", device_type=device_type)
    summable = not len(derived.op) and (len(markers.steps) > 0 or not len(derived.step_begin))
    only = numbers.index(device) if device is not None and device in numbers else -1
    summed = compiled_gpu_sums(planes, modules, markers, only) if summable else None
    if summed is not None:
        profile.done_reading()
        return _stats_from_sums(host, env, perf_env, markers, numbers, device, *summed)
    kernel_parts = read_kernel_parts(planes)
    profile.done_reading()
    kernels = join_kernels(*kernel_parts)
    del kernel_parts
    op, table = assign_ops(kernels, modules)
    if summable and not kernels.graph_kernel().any():
        sums = array_gpu_sums(kernels, op, markers, len(planes), only)
        return _stats_from_sums(
            host, env, perf_env, markers, numbers, device, sums, table, kernels.kernel_names
        )
    return _kernel_op_stats(host, env, perf_env, markers, derived, numbers, device, kernels, op,
                            table)  # fmt: skip


class _Attribution:
    """The ops of the kernels' attribution keys as ``_wire.kernel_sums`` meets them (the
    callback, once per new key), numbered at the end as ``assign_ops`` numbers them."""

    def __init__(self, planes: list[Plane], modules: dict[int, ModuleCosts]) -> None:
        self.names = [stat_names(p) for p in planes]
        self.metadata = [p.event_metadata for p in planes]
        self.modules = modules
        self.kernels: dict[str, int] = {}  # kernel name: code, in order of first appearance
        self.hlo_ops: dict[str | None, int] = {}
        self.tf_ops: dict[str | None, int] = {}
        self.combos: dict[tuple, int] = {}  # (program, hlo_op, tf_op, kernel): op (-1: none)
        self.keys: dict[tuple[int, str], int] = {}  # (program, name): op
        self.found: list[tuple[int, str, str]] = []  # per op: (program, name, tf_op arg)
        self.rows: dict[tuple[int, str, str], tuple | None] = {}  # _op_row, once each

    def _row(self, program: int, name: str, tf_op: str) -> tuple | None:
        key = (program, name, tf_op)
        if key not in self.rows:
            self.rows[key] = _op_row(self.modules, program, name, tf_op)
        return self.rows[key]

    def __call__(
        self,
        plane: int,
        program: int,
        hlo_kind: int,
        hlo_ref: int,
        tf_kind: int,
        tf_ref: int,
        metadata_id: int,
    ) -> tuple[int, int]:
        """(op or -1, kernel name code) of a new key: a kind 0 is an absent stat."""
        names, metadata = self.names[plane], self.metadata[plane]
        hlo_op = names.get(hlo_ref, "") if hlo_kind else None
        tf_op = names.get(tf_ref, "") if tf_kind else None
        kernel_name = metadata[metadata_id].name if metadata_id in metadata else ""
        kernel = self.kernels.setdefault(kernel_name, len(self.kernels))
        self.hlo_ops.setdefault(hlo_op, len(self.hlo_ops))
        self.tf_ops.setdefault(tf_op, len(self.tf_ops))
        program &= 0xFFFF_FFFF_FFFF_FFFF
        combo = (program, hlo_op, tf_op, kernel)
        op = self.combos.get(combo)
        if op is None:
            op = self.combos[combo] = self._op(*combo)
        return op, kernel

    def _op(self, program: int, hlo_op, tf_op, kernel: int) -> int:
        """assign_ops' rule for one key: its (program, instruction) or framework op."""
        if hlo_op:
            name = hlo_op.rsplit("::", 1)[-1]
        elif tf_op and not tf_op.startswith("XlaModule:"):
            program, name = 0, f"{tf_op}/{list(self.kernels)[kernel]}"
        else:
            return -1
        index = self.keys.get((program, name))
        if index is None:
            if self._row(program, name, tf_op if not hlo_op else "") is None:
                return -1  # the same (program, name) finds no row whatever the key
            index = self.keys[(program, name)] = len(self.found)
            self.found.append((program, name, tf_op if not hlo_op else ""))
        return index

    def table(self) -> tuple[OpTable, np.ndarray]:
        """The OpTable in assign_ops' order (keys sorted by program, then hlo_op, tf_op and
        kernel name in order of first appearance), and each op's index in it."""
        programs = {p: r for r, p in enumerate(sorted({c[0] for c in self.combos}))}
        order = sorted(
            self.combos,
            key=lambda c: (programs[c[0]], self.hlo_ops[c[1]], self.tf_ops[c[2]], c[3]),
        )
        table = OpTable([], [], [], [], [], [], [])
        final = np.full(len(self.found), -1, np.int64)
        kernel_names = list(self.kernels)
        for program, hlo_op, tf_op, kernel in order:
            op = self.combos[(program, hlo_op, tf_op, kernel)]
            if op < 0 or final[op] >= 0:
                continue
            final[op] = len(table)
            name = hlo_op.rsplit("::", 1)[-1] if hlo_op else f"{tf_op}/{kernel_names[kernel]}"
            row = self._row(0 if not hlo_op else program, name, tf_op if not hlo_op else "")
            for field_name, value in zip(_OP_FIELDS, row or ()):
                getattr(table, field_name).append(value)
        return table, final


def compiled_gpu_sums(
    planes: list[Plane], modules: dict[int, ModuleCosts], markers: HostMarkers, only: int
) -> tuple[KernelSums, OpTable, list[str]] | None:
    """The kernels' sums from one C pass over the stream lines, their OpTable and kernel
    names; None where the pass cannot (``ops.kernel_sums``)."""
    lines, line_planes, line_ids = [], [], []
    for p, plane in enumerate(planes):
        ids = stat_ids(plane, KERNEL_SUM_STATS)
        for line in plane.lines:
            if not is_derived_line(line):
                lines.append(line)
                line_planes.append(p)
                line_ids.append([ids.get(name) for name in KERNEL_SUM_STATS])
    attribution = _Attribution(planes, modules)
    sums = compiled_kernel_sums(lines, line_planes, line_ids, attribution,
                                (markers.launch_ids, markers.launch_ps), _windows(markers),
                                max(len(planes), 1), only)  # fmt: skip
    if sums is None:
        return None
    table, final = attribution.table()
    return renumbered(sums, final), table, list(attribution.kernels)


def _windows(markers: HostMarkers) -> tuple[np.ndarray, np.ndarray] | None:
    if not len(markers.steps):
        return None
    return markers.steps.begin_ps, markers.steps.end_ps


def array_gpu_sums(
    kernels: Kernels, op: np.ndarray, markers: HostMarkers, planes: int, only: int
) -> KernelSums:
    """``compiled_gpu_sums``' sums from the kernels as arrays (no graph launches)."""
    columns = {
        "begin_ps": kernels.begin_ps,
        "end_ps": kernels.end_ps,
        "plane": kernels.plane,
        "line": kernels.line,
        "op": op,
        "kernel": kernels.kernel,
        "has_correlation": kernels.has_correlation,
        "correlation_id": kernels.correlation_id,
        "event_flops": kernels.event_flops,
        "event_bytes": kernels.event_bytes,
    }
    launches = (markers.launch_ids, markers.launch_ps)
    return array_kernel_sums(columns, launches, _windows(markers), max(planes, 1), only)


def _sums_cells(step: np.ndarray, op: np.ndarray, groups: int) -> Cells:
    """Cells of (step, op) keys already sorted by step, then op."""
    offsets = np.searchsorted(step, np.arange(groups + 1)).astype(np.int64)
    return Cells(step, op, np.zeros(0, np.int64), offsets)


def _stats_from_sums(
    host: str,
    env: RunEnvironment,
    perf_env,
    markers: HostMarkers,
    numbers: list[int],
    device: int | None,
    sums: KernelSums,
    table: OpTable,
    kernel_names: list[str],
) -> OpStats:
    """OpStats from the kernels' sums (``ops.kernel_sums``): what ``_kernel_op_stats``
    makes of the kernels, for profiles without TensorFlow Ops lines or device steps."""
    n_planes = len(numbers)
    first, last = sums.plane_first_ps[:n_planes], sums.plane_last_ps[:n_planes]
    spans = np.where(last >= first, last - first, 0)
    devices = [n for n, span in zip(numbers, spans.tolist()) if span > 0]
    check_device(device, devices)
    only = None if device is None else numbers.index(device)
    total = int(spans.sum()) if only is None else int(spans[only])
    whole_cells = _sums_cells(np.zeros(len(sums.op), np.int64), sums.op, 1)
    per_op = sums.per_op
    whole = cell_step_ops(table, whole_cells, per_op["count"], per_op["executions"],
                          per_op["time_ps"], per_op["event_flops"], per_op["event_bytes"],
                          np.array([total]))  # fmt: skip
    env.device_core_count = n_planes if only is None else 1
    env.active_core_count = int((spans > 0).sum()) if only is None else int(spans[only] > 0)
    unattributed = None
    if len(sums.unattributed_kernel):
        labels = [kernel_names[k] or "(unnamed kernel)" for k in sums.unattributed_kernel]
        unattributed = unattributed_rows(labels, sums.unattributed_count, sums.unattributed_ps,
                                         total)  # fmt: skip
    stats = OpStats(
        hosts=[host],
        run_env=env,
        perf_env=perf_env,
        all_db=whole.db(0),
        unattributed=unattributed,
        devices=devices,
        device=device,
    )
    _cost_notes(stats, table)
    summed = sums.plane_summed_ps[:n_planes]
    overlap = (summed - sums.plane_busy_ps[:n_planes]).astype(np.int64)
    _overlap_note(stats, host, numbers, summed.astype(np.int64), overlap, only)
    if len(markers.steps):
        stats.has_step_markers = True
        steps = len(markers.steps)
        cells_of = _sums_cells(sums.cell_step, sums.cell_op, steps)
        per_cell = sums.per_cell
        ops = cell_step_ops(table, cells_of, per_cell["count"], per_cell["executions"],
                            per_cell["time_ps"], per_cell["event_flops"],
                            per_cell["event_bytes"], sums.step_total_ps)  # fmt: skip
        starts, ends = markers.steps.begin_ps, markers.steps.end_ps
        stats.steps = table_steps(ops, markers.steps.numbers, sums.step_missing == 0,
                                  (ends - starts).tolist())  # fmt: skip
        stats.diagnostics.info.append(GPU_STEPS_INFO)
        _unclaimed_note(stats, (sums.unclaimed, sums.unclaimed_ps))
    return stats


def _cost_notes(stats: OpStats, table: OpTable) -> None:
    unknown = sorted({c.note for c in table.cost if c is not None and c.unknown})
    stats.notes.extend(
        f"{t}: cost unknown, counted as 0 FLOPs with bytes from its shapes" for t in unknown
    )


def _overlap_note(stats, host, numbers, summed, overlap, only: int | None) -> None:
    if only is not None:
        overlap = np.where(np.arange(len(overlap)) == only, overlap, 0)
    overlap_note = stream_overlap_note(host, numbers, summed, overlap)
    if overlap_note:
        stats.notes.append(overlap_note)


def _unclaimed_note(stats: OpStats, unclaimed: tuple[int, int]) -> None:
    if unclaimed[0]:
        stats.notes.append(
            f"{unclaimed[0]:,} kernels ({unclaimed[1] / 1e6:,.1f} us) were launched outside "
            "every step; they count in Total only."
        )


def _kernel_op_stats(
    host: str,
    env: RunEnvironment,
    perf_env,
    markers: HostMarkers,
    derived: DerivedLines,
    numbers: list[int],
    device: int | None,
    kernels: Kernels,
    op: np.ndarray,
    table: OpTable,
) -> OpStats:
    """OpStats from the kernels as arrays, kernel by kernel (graph launches, TensorFlow Ops
    lines, device steps)."""
    planes = len(numbers)
    spans = _spans(kernels, planes)
    devices = [n for n, span in zip(numbers, spans.tolist()) if span > 0]
    check_device(device, devices)
    only = None if device is None else numbers.index(device)
    keep = None if only is None else kernels.plane == only
    total = int(spans.sum()) if only is None else int(spans[only])
    starts = execution_starts(kernels, op)
    group = np.zeros(len(op), np.int64) if keep is None else np.where(keep, 0, -1)
    whole = aggregate(kernels, op, table, group, np.array([total]), starts)
    env.device_core_count = planes if only is None else 1
    env.active_core_count = int((spans > 0).sum()) if only is None else int(spans[only] > 0)
    stats = OpStats(
        hosts=[host],
        run_env=env,
        perf_env=perf_env,
        all_db=whole.db(0),
        unattributed=unattributed_db(kernels, op, total, derived, keep),
        devices=devices,
        device=device,
    )
    _cost_notes(stats, table)
    summed, overlap = stream_overlap(kernels, planes)
    _overlap_note(stats, host, numbers, summed, overlap, only)
    if len(markers.steps):
        stats.has_step_markers = True
        stats.steps, unclaimed = gpu_steps(kernels, op, table, markers, planes, starts, only)
        stats.diagnostics.info.append(GPU_STEPS_INFO)
        _unclaimed_note(stats, unclaimed)
    elif len(derived.step_begin):
        stats.has_step_markers = True
        stats.steps = device_steps(kernels, op, table, derived, planes, starts, only)
        stats.diagnostics.info.append(DEVICE_STEPS_INFO)
    return stats


def cut_graph_launches(kernels: Kernels, op: np.ndarray) -> np.ndarray:
    """Correlation ids of the graph launches the profile stopped in.

    Only a GPU's latest launch that ran (the highest correlation id: ids number the API
    calls) can have been cut; it was when another launch of the same graph, one with a
    kernel like its first (same kernel, same op), ran more kernels. Earlier launches are
    never suspected: a graph with loops or conditions runs more or fewer kernels per launch.
    Python loops over GPUs only.
    """
    if not kernels.graph_kernel().any():
        return np.zeros(0, np.uint64)
    cut = []
    for plane in np.unique(kernels.plane[kernels.has_correlation]).tolist():
        on = np.flatnonzero(kernels.has_correlation & (kernels.plane == plane))
        ids = kernels.correlation_id[on]
        latest = ids.max()
        members = on[ids == latest]
        head = members[np.argmin(kernels.begin_ps[members])]
        alike = (kernels.kernel[on] == kernels.kernel[head]) & (op[on] == op[head])
        if _id_counts(ids, np.unique(ids[alike])).max() > len(members):
            cut.append(latest)
    return np.array(cut, np.uint64)


def gpu_steps(
    kernels: Kernels,
    op: np.ndarray,
    table: OpTable,
    markers: HostMarkers,
    planes: int,
    execution_start: np.ndarray | None = None,
    only: int | None = None,
) -> tuple[list[StepInfo], tuple[int, int]]:
    """Steps from host step roots: a kernel belongs to the step its launch is in.

    A step's time on a GPU runs from the earlier of the step's start and its first kernel
    to the later of the step's end and its last kernel, summed over the GPUs that ran
    kernels in it; a step with a launch whose kernel never ran, or a graph launch only part
    of whose kernels ran (the profile stopped: ``cut_graph_launches``), is incomplete.
    ``execution_start``: ``execution_starts`` of the kernels, when known; ``only``: the
    one GPU kept (its plane index; None: all). Returns the steps and the (count, ps) of
    kernels no step claims.
    """
    starts, ends = markers.steps.begin_ps, markers.steps.end_ps
    ids, times = markers.launch_ids, markers.launch_ps
    slot = np.minimum(np.searchsorted(ids, kernels.correlation_id), max(len(ids) - 1, 0))
    launched = kernels.has_correlation & (len(ids) > 0)
    launched &= ids[slot] == kernels.correlation_id if len(ids) else False
    launch = np.where(launched, times[slot] if len(ids) else 0, -1)
    step = np.searchsorted(starts, launch, side="right") - 1
    claimed = launched & (step >= 0)
    claimed[claimed] &= launch[claimed] < ends[step[claimed]]
    step = np.where(claimed, step, -1)
    del slot, launched, launch  # per-kernel temporaries: memory for what follows
    if only is not None:
        step = np.where(kernels.plane == only, step, -1)
    count = len(starts)
    used = np.zeros(count * planes, bool)  # a GPU counts in a step where it ran kernels
    totals = _step_totals(
        kernels, step, np.repeat(starts, planes), np.repeat(ends, planes), used, planes, only
    )
    ops = aggregate(kernels, op, table, step, totals, execution_start)
    # A launch inside a step whose kernel is not in the profile makes the step incomplete,
    # and so does a graph launch the profile stopped in.
    ran = np.isin(ids, kernels.correlation_id[kernels.has_correlation])
    ran &= ~np.isin(ids, cut_graph_launches(kernels, op))
    launch_step = np.searchsorted(starts, times, side="right") - 1
    inside = (launch_step >= 0) & (times < ends[np.maximum(launch_step, 0)])
    missing = np.bincount(launch_step[inside & ~ran], minlength=count)
    steps = table_steps(ops, markers.steps.numbers, missing == 0, (ends - starts).tolist())
    unclaimed = ~claimed if only is None else ~claimed & (kernels.plane == only)
    return steps, (int(unclaimed.sum()), int((kernels.end_ps - kernels.begin_ps)[unclaimed].sum()))


def _step_totals(
    kernels: Kernels,
    step: np.ndarray,
    span_begin: np.ndarray,
    span_end: np.ndarray,
    used: np.ndarray,
    planes: int,
    only: int | None = None,
) -> np.ndarray:
    """Device time per step, summed over GPUs (``only``: of that plane): per (step, GPU)
    cell (``step * planes + plane``), from the earlier of the cell's span start and its
    first kernel to the later of the span end and its last kernel, where the GPU ran
    kernels in the step or ``used``.
    """
    claimed = step >= 0
    count = len(span_begin) // max(planes, 1)
    cell = step[claimed] * planes + kernels.plane[claimed]
    first = np.full(count * planes, np.iinfo(np.int64).max)
    last = np.full(count * planes, np.iinfo(np.int64).min)
    np.minimum.at(first, cell, kernels.begin_ps[claimed])
    np.maximum.at(last, cell, kernels.end_ps[claimed])
    used = used | (last >= first)
    first = np.minimum(first, span_begin)
    last = np.maximum(last, span_end)
    time = np.where(used, last - first, 0).reshape(count, planes)
    return time.sum(axis=1) if only is None else time[:, only]


def device_steps(
    kernels: Kernels,
    op: np.ndarray,
    table: OpTable,
    derived: DerivedLines,
    planes: int,
    execution_start: np.ndarray | None = None,
    only: int | None = None,
) -> list[StepInfo]:
    """Steps from the GPUs' ``Steps`` lines: the events of one number on all GPUs are one
    step; a kernel belongs to the step whose span on its GPU holds its start. ``only``:
    the one GPU kept (its plane index; None: all)."""
    distinct, inverse = np.unique(derived.step_number, return_inverse=True)
    inverse = inverse.ravel()
    earliest = np.full(len(distinct), np.iinfo(np.int64).max)
    np.minimum.at(earliest, inverse, derived.step_begin)
    order = np.argsort(earliest, kind="stable")  # steps in time order of their first span
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    index, numbers = rank[inverse], distinct[order]
    span = held_by(kernels.plane, kernels.begin_ps, kernels.begin_ps, derived.step_plane,
                   derived.step_begin, derived.step_end)  # fmt: skip
    step = np.where(span >= 0, index[np.maximum(span, 0)], -1)
    if only is not None:
        step = np.where(kernels.plane == only, step, -1)
    count = len(numbers)
    cell = index * planes + derived.step_plane
    span_begin = np.full(count * planes, np.iinfo(np.int64).max)
    span_end = np.full(count * planes, np.iinfo(np.int64).min)
    np.minimum.at(span_begin, cell, derived.step_begin)
    np.maximum.at(span_end, cell, derived.step_end)
    used = span_end >= span_begin
    totals = _step_totals(kernels, step, span_begin, span_end, used, planes, only)
    ops = aggregate(kernels, op, table, step, totals, execution_start)
    wall = np.where(used, span_end - span_begin, 0).reshape(count, planes)
    wall = wall.max(axis=1) if only is None else wall[:, only]
    return table_steps(ops, numbers, np.ones(count, bool), wall)
