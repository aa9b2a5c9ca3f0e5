"""From Kineto trace columns to OpStats: kernels attributed to ops, ops costed, steps.

A GPU kernel belongs to the innermost CPU op (category ``cpu_op``: an aten op, an autograd
node, ``record_param_comms``...) that launched it: the runtime call with the kernel's
``correlation``, then the innermost ``cpu_op`` on that call's thread whose span holds the
call. This works for every Kineto version (older ones give a runtime call its own
correlation id as ``External id``, so External ids cannot be used to find the op). User
annotations (``record_function``, ``ProfilerStep#N``) group ops; they are not ops.

A kernel no CPU op launched (a graph replay's, whose launch call is outside every op; one
of torch.compile's inside a ``## Call CompiledFxGraph ##`` annotation; one with no launch
call at all) is named by the innermost annotation holding its launch on the call's thread
(``user_annotation``), else the innermost ``gpu_user_annotation`` holding it on its
stream, else by itself: an op row with time and no FLOPs, so every kernel is in the op
table. An op row is named by its op; its time is the sum of its kernels' durations and its
FLOPs and bytes are the sum over its executions (each execution once, however many kernels
it launched). Memcpy/memset count in device time and are listed apart
(``OpStats.unattributed``). In a CPU-only trace the same rule holds for time: each op's
self time (span minus the ops inside it) is the innermost op's, a composite's dispatch
(``aten::linear`` around its ``aten::addmm``) its longest inner op's (``working_ops``).

A trace of CUPTI range-profiler counters (``counters``) has a range per kernel and no kernel
activity: the ranges stand for the kernels, joined to their launch calls by order
(``counter_op_stats``: op rows without times); where a trace has kernels too, each range
goes to the op row of the kernel its call launched. Either way the counts are the op rows'
Total (HW) (``OpStats.hardware``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from ..arrays import unique
from ..ops.op_metrics import OpMetricsDb, empty_columns, empty_db, nesting_parents, span_order
from ..ops.op_stats import (
    ANNOTATION_CATEGORY,
    NO_OP_CATEGORY,
    LayerSplit,
    OpStats,
    StepInfo,
    device_time_note,
    kernel_share_note,
    table_steps,
)
from ..ops.step_ops import StepOps, part_cells, step_ops, unnested_columns
from ..peaks.perf_env import PerfEnv, RunEnvironment
from ..wording import named
from . import op_text
from .aten_cost import (
    MEMORY_COPY,
    NO_MODEL,
    OTHER,
    ConvShapes,
    OpArgs,
    conv_shapes,
    family,
    op_cost,
    takes_over,
)
from .counters import (
    NOT_JOINED,
    RangeCounters,
    hardware_counts,
    join_launches,
    read_counters,
)
from .devices import device_peaks
from .scopes import op_scopes
from .spans import STEP_NAME, Nesting, annotation_rows, innermost_rows, nesting
from .trace_reader import MAX_MAGNITUDE, TraceEvents

RUNTIME_CATEGORIES = (
    "cuda_runtime",
    "cuda_driver",
    "hip_runtime",
    "privateuse1_runtime",
    "mtia_runtime",
)
KERNEL_CATEGORIES = ("kernel", "mtia_ccp_events")  # MTIA's on-device events are its kernels
COPY_CATEGORIES = ("gpu_memcpy", "gpu_memset")
LAUNCH_NAME = re.compile(r"LaunchKernel|GraphLaunch|LaunchCooperative|ModuleLaunch")
GRAPH_LAUNCH = re.compile(r"GraphLaunch")
TF32_KERNEL = re.compile(r"tf32|_s1688|_s16816|tensorop_s\d", re.IGNORECASE)
PS_PER_NS = 1000

GPU_COMPUTED = (
    "Roofline computed by tb_roofline_plugin from a PyTorch profiler (Kineto) trace: each "
    "kernel is attributed to the innermost CPU op that launched it; FLOPs and bytes come from "
    "the ops' recorded shapes."
)
CPU_COMPUTED = (
    "CPU roofline computed by tb_roofline_plugin from a PyTorch profiler (Kineto) trace: each "
    "op's self time (its span minus the ops inside it) belongs to the innermost op doing the "
    "work (aten::linear's dispatch to its aten::addmm), each execution's FLOPs counted once; "
    "FLOPs and bytes from the ops' recorded shapes."
)
NO_MODEL_SHARE = (
    "{count:,} ops without a cost model ({share:.1f} % of op time): {names}; times only."
)
ANNOTATION_SHARE = (
    "{count:,} annotations hold time no op covers ({share:.1f} % of op time), a row each "
    "(compiled graphs' code, Python): {names}; times only."
)
NAMED_OPS = 6
NO_OPS = (
    "This PyTorch profiler trace has no GPU kernels and no CPU ops (only {what}); there is "
    "nothing to put on a roofline."
)
NO_LAUNCHING_OPS = (
    "No GPU kernel of this trace could be tied to a CPU op (no runtime call with the "
    "kernel's correlation id inside a cpu_op span): the kernels are op rows named by the "
    "annotation around their launch, or by the kernel, with times but no FLOPs."
)
ANNOTATED_KERNELS = (
    "{count:,} kernels ({us:,.1f} us) without a launching CPU op{graphs} are op rows named "
    'by the annotation around their launch (category "annotation"): times, no FLOPs.'
)
GRAPH_KERNELS = ", {count:,} of them replayed by {graphs:,} graph launches,"
LONE_KERNELS = (
    "{count:,} kernels ({us:,.1f} us) without a launching CPU op or annotation{graphs} are "
    'op rows named by the kernel (category "kernel without op"): times, no FLOPs.'
)
COPIES_APART = (
    "{count:,} memcpy/memset ({us:,.1f} us){graphs} count in device time and are listed "
    "apart, not as op rows."
)
NO_DEVICE_ACTIVITY = (
    "This PyTorch profiler trace is of an accelerator ({device}; the trace has {found}) but "
    "recorded no activity on it (no kernel, memcpy or memset events): its device time is "
    "unknown, so no op is put on the roofline (CPU op spans time the launches, not the "
    "work). Record device activity with torch.profiler.profile(activities="
    "[ProfilerActivity.CPU, ProfilerActivity.{activity}])."
)
COUNTERS_ONLY = (
    "Recorded with CUPTI's range profiler ({ranges:,} cuda_profiler_range events: hardware "
    "counters per kernel), which Kineto runs without kernel activity: no device times (a "
    "range's time is the capture split evenly), so ops have measured (Total (HW)) and "
    "modelled FLOPs but no rate, bound or efficiency. Times need a capture with "
    "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]."
)
COUNTERS_STEPS = (
    "{count:,} ProfilerStep spans not used as steps: without device times a step has no "
    "duration to judge."
)
NO_SHAPES = (
    "The trace has no recorded shapes: ops get times but no FLOPs or bytes. Profile with "
    "torch.profiler.profile(record_shapes=True)."
)
NO_SHAPES_TO_COMPARE = (
    "The trace has no recorded shapes: ops get no modelled FLOPs or bytes to compare the "
    "measured ones with. Profile with torch.profiler.profile(record_shapes=True)."
)
NO_PEAKS = (
    "No peaks known for this device: rates and intensities are shown but bound_by is "
    "Unknown. Give peaks with `--peaks NAME|FILE` (see `tb-roofline calibrate`)."
)


@dataclass
class Steps:
    numbers: list[int]
    begin_ns: np.ndarray
    end_ns: np.ndarray

    def of(self, time_ns: np.ndarray) -> np.ndarray:
        """The step whose span holds each time (-1: none)."""
        step = np.searchsorted(self.begin_ns, time_ns, side="right") - 1
        held = step >= 0
        held[held] = time_ns[held] < self.end_ns[step[held]]
        return np.where(held, step, -1)


def profiler_steps(events: TraceEvents) -> Steps:
    """``ProfilerStep#N`` spans, in time order (a repeated number: its first span). Kineto
    of PyTorch 1.8-1.10 records them as ops (``Operator``, read as ``cpu_op``)."""
    number = np.full(len(events.names) + 1, -1, np.int64)
    for code, text in enumerate(events.names):
        match = STEP_NAME.match(text)
        if match:
            number[code] = int(match.group(1))
    rows = np.flatnonzero((number[events.name] >= 0) & events.of("user_annotation", "cpu_op"))
    rows = rows[np.argsort(events.begin_ns[rows], kind="stable")]
    _, first = unique(number[events.name[rows]], return_index=True)
    rows = rows[np.sort(first)]
    return Steps(number[events.name[rows]].tolist(), events.begin_ns[rows], events.end_ns[rows])


@dataclass
class Executions:
    """The op executions that count (cpu op indices) with their row, cost and step."""

    instance: np.ndarray  # cpu op index
    op: np.ndarray  # op row
    flops: np.ndarray
    bytes_accessed: np.ndarray
    bytes_written: np.ndarray
    names: list[str]  # per op row
    categories: list[str]
    dtypes: list[str]
    unknown: dict[str, list[str]]  # reason -> op names whose cost is unknown
    # Each execution's recorded inputs: an index into ``signature_args`` (dims, types, concrete).
    signature: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    signature_args: list[tuple] = field(default_factory=list)
    # Per op row (``op_text``; rows added later have none): shapes, module path, source line.
    shapes: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    op_paths: list[str] | None = None  # per op row: its module path and name (layer split)


def cost_executions(events: TraceEvents, instance: np.ndarray) -> Executions:
    """Op rows (one per op name) and per-execution costs; Python sees distinct
    (name, shapes, types) signatures only."""
    rows = events.op_rows[instance]
    name_codes = events.name[rows]
    codes, op = unique(name_codes, return_inverse=True)
    op = op.ravel()
    names = [events.names[c] for c in codes.tolist()]
    dtypes = [""] * len(names)
    unknown: dict[str, list[str]] = {}
    with_model = {c for c in codes.tolist() if family(events.names[c])[1] is not None}
    # One signature per distinct (name, recorded arguments, flops arg), in order of first use
    # (``which``: each execution's); its cost is that of (name, arguments if the op has a cost
    # model, flops arg), computed once.
    distinct: dict[tuple, int] = {}
    signature_args: list[tuple] = []
    cost_of: list[int] = []  # per signature: its entry in ``found``
    costed: dict[tuple, int] = {}
    found: list[tuple[float, float, float]] = []
    which = []
    recorded = zip(
        events.op_dims[instance].tolist(),
        events.op_types[instance].tolist(),
        events.op_concrete[instance].tolist(),
    )
    flops_arg = events.flops[rows].tolist()
    conv = _conv_shapes(events)
    for i, (code, (dims, types, concrete), flops) in enumerate(
        zip(name_codes.tolist(), recorded, flops_arg)
    ):
        none = dims is None and types is None and concrete is None
        arguments = "" if none else repr((dims, types, concrete))
        key = (code, arguments, flops)
        at = distinct.get(key)
        if at is None:
            at = distinct[key] = len(signature_args)
            signature_args.append((dims, types, concrete))
            cost_key = (code, arguments if code in with_model else "", flops)
            entry = costed.get(cost_key)
            if entry is None:
                args = OpArgs(_listed(dims), _listed(types), _listed(concrete), conv)
                cost = op_cost(events.names[code], args, flops)
                entry = costed[cost_key] = len(found)
                found.append((cost.flops, cost.bytes_accessed, cost.bytes_written))
                row = op[i]
                if cost.dtype and not dtypes[row]:
                    dtypes[row] = cost.dtype
                if not cost.known:
                    listed = unknown.setdefault(cost.note, [])
                    if events.names[code] not in listed:
                        listed.append(events.names[code])
            cost_of.append(entry)
        which.append(at)
    signature = np.asarray(which, np.int64)
    costs = np.asarray(found, np.float64).reshape(-1, 3)[np.asarray(cost_of, np.int64)[signature]]
    # Shapes beyond any real tensor (2**70 elements) give costs no sum may overflow.
    np.clip(np.nan_to_num(costs, posinf=MAX_MAGNITUDE), 0.0, MAX_MAGNITUDE, out=costs)
    ex = Executions(
        instance,
        op,
        costs[:, 0],
        costs[:, 1],
        costs[:, 2],
        names,
        [family(n)[0] for n in names],
        dtypes,
        unknown,
        signature,
        signature_args,
    )
    _describe(events, ex)
    return ex


def _describe(events: TraceEvents, ex: Executions) -> None:
    """Each op row's shapes, ``nn.Module`` path and source line (``op_text``): those most of
    its executions have. Frames and modules are the innermost ``python_function`` spans
    holding an execution's start on its thread; without one, its ``Call stack`` arg."""
    rows = len(ex.names)
    texts = [op_text.inputs_text(*args) for args in ex.signature_args]
    ex.shapes = op_text.per_row(rows, ex.op, ex.signature, texts)
    at = events.op_rows[ex.instance]
    thread, begin = events.thread[at], events.begin_ns[at]
    python = np.flatnonzero(events.category == events.code("python_function"))
    codes, code_of = unique(events.name[python], return_inverse=True)
    frames = [events.names[c] for c in codes.tolist()]
    user = np.array([op_text.is_user_frame(f) for f in frames], bool)
    module = np.array([f.startswith(op_text.MODULE_PREFIX) for f in frames], bool)
    code_of = code_of.ravel()
    # Source: the innermost user frame, else the Call stack's.
    frame = innermost_rows(events, python[user[code_of]], thread, begin)
    sources = [op_text.frame_source(f) for f in frames] + [
        op_text.stack_source(s) for s in events.stacks
    ]
    value = len(frames) + events.op_stack[ex.instance].astype(np.int64)
    has = frame >= 0
    value[has] = np.searchsorted(codes, events.name[frame[has]])
    ex.sources = op_text.per_row(rows, ex.op, value, sources)
    # Module: the path of nn.Module spans around the innermost one.
    spans = python[module[code_of]]
    if not len(spans):
        ex.modules = [""] * rows
        return
    marks = nesting(events, spans)
    names = [events.names[c] for c in events.name[spans[marks.order]].tolist()]
    paths = np.empty(len(spans), object)
    paths[marks.order] = op_text.module_paths(names, marks.parent)
    inner = marks.innermost(marks.shift(thread, begin))
    ex.modules = op_text.per_row(rows, ex.op, inner, paths.tolist())


def _conv_shapes(events: TraceEvents) -> ConvShapes:
    """The shapes of the trace's convolution backward ops (each distinct signature once)."""
    codes = [c for c, n in enumerate(events.names) if n.endswith("convolution_backward")]
    at = np.flatnonzero(np.isin(events.name[events.op_rows], codes))
    signatures: dict[tuple[int, str], tuple[str, OpArgs]] = {}
    for i in at.tolist():
        dims, types = events.op_dims[i], events.op_types[i]
        key = (int(events.name[events.op_rows[i]]), repr((dims, types)))
        if key not in signatures:
            signatures[key] = (events.names[key[0]], OpArgs(_listed(dims), _listed(types), []))
    return conv_shapes(list(signatures.values()))


def _listed(value) -> list:
    """A recorded argument list as the trace has it; anything else (a dict, a string, a
    number, null) as no arguments."""
    return value if isinstance(value, list) else []


def aggregate(
    ex: Executions,
    execution_group: np.ndarray,
    event_op: np.ndarray,
    event_group: np.ndarray,
    event_time_ps: np.ndarray,
    totals: np.ndarray,
) -> StepOps:
    """The op rows of each group (steps, or one group for the whole trace).

    Times and occurrences come from the timed events (kernels, or the CPU ops themselves);
    FLOPs and bytes from the executions, each once. Group -1: in no group.
    """
    n = len(ex.names)
    keep_ev = (event_op >= 0) & (event_group >= 0)
    keep_ex = execution_group >= 0
    binned = part_cells(
        [event_group[keep_ev], execution_group[keep_ex]],
        [event_op[keep_ev], ex.op[keep_ex]],
        n,
        len(totals),
    )
    zeros_ev, zeros_ex = np.zeros(int(keep_ev.sum())), np.zeros(int(keep_ex.sum()))
    time_ps = binned.sum([event_time_ps[keep_ev].astype(np.float64), zeros_ex])
    occurrences = binned.sum([np.ones(int(keep_ev.sum())), zeros_ex])
    flops = binned.sum([zeros_ev, ex.flops[keep_ex]])
    total_bytes = binned.sum([zeros_ev, ex.bytes_accessed[keep_ex]])
    written = binned.sum([zeros_ev, ex.bytes_written[keep_ex]])
    static = empty_columns(n)
    static["name"][:] = ex.names
    static["category"][:] = ex.categories
    static["dtype"][:] = ex.dtypes
    for column, texts in (
        ("shapes", ex.shapes),
        ("framework_op", ex.modules),
        ("code_line", ex.sources),
    ):
        static[column][: len(texts)] = texts[:n]
    if ex.op_paths is not None:
        static["op_path"][:] = ex.op_paths
    columns = unnested_columns(occurrences, time_ps, flops, total_bytes, written)
    return step_ops(static, binned, columns, totals)


def split_by_scope(
    ex: Executions, scope: np.ndarray, events_op: np.ndarray, events_scope: np.ndarray
) -> tuple[Executions, np.ndarray] | None:
    """The op rows split by scope path (``kineto/scopes.py``): executions whose op row is
    their (op, scope) row, with each row's ``op_paths``, and that row of each timed event
    (``events_op`` -1: none). None when no op ran in a scope: the op rows are the layers'."""
    counted = events_op >= 0
    scopes = np.concatenate([scope, events_scope[counted]])
    if not (scopes != "").any():
        return None
    codes: dict[str, int] = {}
    scope_code = np.fromiter((codes.setdefault(s, len(codes)) for s in scopes), np.int64)
    ops = np.concatenate([ex.op, events_op[counted]])
    pairs, row = unique(ops * len(codes) + scope_code, return_inverse=True)
    row = row.ravel()
    op_of, code_of = np.divmod(pairs, len(codes))
    names = list(codes)
    split_names = [ex.names[o] for o in op_of.tolist()]
    paths = [f"{names[c]}/{n}" if names[c] else n for c, n in zip(code_of.tolist(), split_names)]
    event_row = np.full(len(events_op), -1, np.int64)
    event_row[counted] = row[len(ex.op) :]
    split = replace(
        ex,
        op=row[: len(ex.op)],
        names=split_names,
        categories=[ex.categories[o] for o in op_of.tolist()],
        dtypes=[ex.dtypes[o] for o in op_of.tolist()],
        op_paths=paths,
    )
    return split, event_row


def _unattributed(events: TraceEvents, rows: np.ndarray, total_ps: int) -> OpMetricsDb | None:
    """Memcpy/memset events (no op row: no op is costed by its copies), by event name."""
    if not len(rows):
        return None
    codes, slot = unique(events.name[rows], return_inverse=True)
    slot = slot.ravel()
    cols = empty_columns(len(codes))
    cols["name"][:] = [events.names[c] or "(unnamed copy)" for c in codes.tolist()]
    cols["category"][:] = MEMORY_COPY
    cols["occurrences"] = np.bincount(slot, minlength=len(codes)).astype(np.int64)
    time_ps = np.bincount(slot, events.dur_ns[rows] * PS_PER_NS, minlength=len(codes))
    cols["time_ps"] = cols["self_time_ps"] = time_ps.astype(np.int64)
    cols["bytes_accessed"] = np.bincount(slot, events.bytes[rows], minlength=len(codes))
    return OpMetricsDb(**cols, total_time_ps=total_ps)


@dataclass
class Launches:
    """Every GPU event (kernel, memcpy, memset) with its runtime call and what names it."""

    gpu: np.ndarray  # rows of the GPU events
    is_kernel: np.ndarray  # bool per GPU event
    call: np.ndarray  # row of its runtime call, -1: none found
    instance: np.ndarray  # cpu op index of the op that launched it, -1: none (or a copy)
    annotation: np.ndarray  # row of the annotation naming a kernel without op, -1: none


def ops_but_steps(events: TraceEvents) -> np.ndarray:
    """The cpu op indices of the ops that are not ``ProfilerStep#N`` spans (old Kineto
    records steps as ops: a step holds every launch, it launches none)."""
    steps = [c for c, n in enumerate(events.names) if STEP_NAME.match(n)]
    return np.flatnonzero(~np.isin(events.name[events.op_rows], steps))


def attribute(events: TraceEvents, nest: Nesting, kept: np.ndarray | None = None) -> Launches:
    """Kernel -> its runtime call (same correlation id; a graph launch's call for every
    kernel it replays) -> the innermost CPU op holding the call on the call's thread; a
    kernel without one -> the innermost annotation holding the call there, else the
    innermost ``gpu_user_annotation`` holding the kernel on its device and stream.
    Memcpy/memset get their call but no op: they are listed apart. ``kept``: the cpu op
    indices ``nest`` was made of (default: every op)."""
    gpu = np.flatnonzero(events.of(*KERNEL_CATEGORIES, *COPY_CATEGORIES))
    is_kernel = events.of(*KERNEL_CATEGORIES)[gpu]
    runtime = np.flatnonzero(events.of(*RUNTIME_CATEGORIES))
    by_corr = runtime[np.argsort(events.correlation[runtime], kind="stable")]
    call = np.full(len(gpu), -1, np.int64)
    if len(by_corr):
        corr_sorted = events.correlation[by_corr]
        wanted = events.correlation[gpu]
        slot = np.minimum(np.searchsorted(corr_sorted, wanted), len(by_corr) - 1)
        found = (wanted >= 0) & (corr_sorted[slot] == wanted)
        call[found] = by_corr[slot[found]]
    return attribute_calls(events, nest, kept, gpu, is_kernel, call)


def attribute_calls(
    events: TraceEvents,
    nest: Nesting,
    kept: np.ndarray | None,
    gpu: np.ndarray,
    is_kernel: np.ndarray,
    call: np.ndarray,
) -> Launches:
    """``attribute`` of GPU events (rows ``gpu``) whose runtime calls are known (``call``,
    -1: none): CUPTI ranges come joined to their calls by order, not by correlation."""
    launched = call >= 0
    shifted = np.full(len(gpu), -1, np.int64)
    shifted[launched] = nest.shift(events.thread[call[launched]], events.begin_ns[call[launched]])
    instance = nest.innermost(shifted)
    if kept is not None and len(kept):
        instance = np.where(instance >= 0, kept[np.maximum(instance, 0)], -1)
    instance[~is_kernel] = -1
    annotation = np.full(len(gpu), -1, np.int64)
    host = np.flatnonzero(is_kernel & (instance < 0) & launched)
    calls = call[host]
    annotation[host] = innermost_rows(
        events,
        annotation_rows(events, "user_annotation"),
        events.thread[calls],
        events.begin_ns[calls],
    )
    device = np.flatnonzero(is_kernel & (instance < 0) & (annotation < 0))
    annotation[device] = innermost_rows(
        events,
        annotation_rows(events, "gpu_user_annotation"),
        events.thread[gpu[device]],
        events.begin_ns[gpu[device]],
    )
    return Launches(gpu, is_kernel, call, instance, annotation)


def _rows_without_op(
    events: TraceEvents, launches: Launches, kernel_op: np.ndarray, ex: Executions
) -> None:
    """Kernels no CPU op launched become op rows of their own (appended to ``ex``'s rows,
    ``kernel_op`` set): one per annotation name (category ``annotation``), else one per
    kernel name (category ``kernel without op``). Python sees distinct names only."""
    rows = np.flatnonzero(launches.is_kernel & (kernel_op < 0))
    if not len(rows):
        return
    annotation = launches.annotation[rows]
    named = annotation >= 0
    code = np.where(named, events.name[np.maximum(annotation, 0)], events.name[launches.gpu[rows]])
    pairs, slot = unique(code.astype(np.int64) * 2 + named, return_inverse=True)
    row_of = {n: i for i, n in enumerate(ex.names)}
    found = []
    for pair in pairs.tolist():
        name = events.names[pair // 2] or "(unnamed kernel)"
        at = row_of.get(name)
        if at is None:
            at = row_of[name] = len(ex.names)
            ex.names.append(name)
            ex.categories.append(ANNOTATION_CATEGORY if pair % 2 else NO_OP_CATEGORY)
            ex.dtypes.append("")
        found.append(at)
    kernel_op[rows] = np.asarray(found, np.int64)[slot.ravel()]


def _device(events: TraceEvents, wanted: set[int]) -> tuple[PerfEnv, str]:
    """Peaks and description of the trace's device: its ``deviceProperties`` entry (the
    first used one, else the first), named MTIA when the trace is of one (no peaks known)."""
    props = events.device_properties
    prop = next((p for p in props if p.get("id") in wanted), props[0] if props else {})
    name = str(prop.get("name", ""))
    if "mtia" in name.lower() or any(c.startswith("mtia_") for c in events.categories):
        return PerfEnv(source="none"), name if "mtia" in name.lower() else "MTIA"
    return device_peaks(prop) if prop else (PerfEnv(source="none"), "GPU")


def _gpu_environment(
    events: TraceEvents, wanted: set[int], device_count: int
) -> tuple[RunEnvironment, PerfEnv]:
    """The run and peaks of a GPU trace whose ``device_count`` devices all ran (``wanted``:
    their ids, to pick the ``deviceProperties`` entry)."""
    perf_env, described = _device(events, wanted)
    run_env = RunEnvironment(
        hardware_type="GPU",
        device_type=described,
        device_core_count=device_count,
        active_core_count=device_count,
    )
    return run_env, perf_env


def has_device(events: TraceEvents) -> bool:
    """True for a trace of an accelerator: kernel launch calls, ``deviceProperties`` or
    MTIA events, with or without device activity."""
    return bool(
        _launch_calls(events).size
        or events.device_properties
        or any(c.startswith("mtia_") for c in events.categories)
    )


def kernel_launch_calls(events: TraceEvents) -> np.ndarray:
    """The runtime calls that launch one kernel each (graph launches replay many)."""
    launches = _launch_calls(events)
    graphs = [c for c, n in enumerate(events.names) if GRAPH_LAUNCH.search(n)]
    return launches[~np.isin(events.name[launches], graphs)]


def _launch_calls(events: TraceEvents) -> np.ndarray:
    runtime = np.flatnonzero(events.of(*RUNTIME_CATEGORIES))
    launch_codes = [c for c, n in enumerate(events.names) if LAUNCH_NAME.search(n)]
    return runtime[np.isin(events.name[runtime], launch_codes)]


def no_activity_stats(events: TraceEvents, host: str) -> OpStats:
    """A trace of an accelerator without its activity (kernels, copies): the device is named
    but no op is put on the roofline. CPU op spans time the launches, not the work, so no
    rate may come from them; FLOPs without times place nothing."""
    perf_env, described = _device(events, set())
    mtia = described == "MTIA" or "mtia" in described.lower()
    launches = len(_launch_calls(events))
    found = f"{launches:,} kernel launch calls" if launches else "deviceProperties"
    warning = NO_DEVICE_ACTIVITY.format(
        device=described, found=found, activity="MTIA" if mtia else "CUDA"
    )
    if len(events.range_rows):
        warning += " " + NOT_JOINED.format(
            ranges=len(events.range_rows), launches=len(kernel_launch_calls(events))
        )
    stats = OpStats(
        hosts=[host],
        run_env=RunEnvironment(
            hardware_type="GPU", device_type=described, device_core_count=1, active_core_count=0
        ),
        perf_env=perf_env,
        all_db=empty_db(),
    )
    stats.diagnostics.warnings.append(warning)
    return stats


def gpu_op_stats(events: TraceEvents, host: str) -> OpStats:
    kept = ops_but_steps(events)
    launches = attribute(events, nesting(events, events.op_rows[kept]), kept)
    gpu, is_kernel, instance = launches.gpu, launches.is_kernel, launches.instance
    counted, kernel_exec = unique(instance[instance >= 0], return_inverse=True)
    kernel_exec = kernel_exec.ravel()
    ex = cost_executions(events, counted)
    kernel_op = np.full(len(gpu), -1, np.int64)
    kernel_op[instance >= 0] = ex.op[kernel_exec]
    _tensor_float32(events, gpu, kernel_op, ex)
    _rows_without_op(events, launches, kernel_op, ex)
    layers = _gpu_layer_split(events, launches, ex, kernel_op, kernel_exec)
    # Devices: the GPU events' device arg (else their pid).
    device_key = np.where(events.device[gpu] >= 0, events.device[gpu], events.pid[gpu] + 10**9)
    devices, device = unique(device_key, return_inverse=True)
    device = device.ravel()
    steps = profiler_steps(events)
    total_ps = int(_device_windows(events, gpu, device, len(devices), steps).sum()) * PS_PER_NS
    time_ps = events.dur_ns[gpu] * PS_PER_NS
    one = np.zeros(len(gpu), np.int64)
    whole = aggregate(
        ex, np.zeros(len(counted), np.int64), kernel_op, one, time_ps, np.array([total_ps])
    )
    if layers is not None:
        split_ex, split_op = layers
        split_whole = aggregate(
            split_ex, np.zeros(len(counted), np.int64), split_op, one, time_ps, np.array([total_ps])
        )
    copies = np.flatnonzero(~is_kernel)
    run_env, perf_env = _gpu_environment(
        events, {int(d) for d in devices.tolist() if d < 10**9}, len(devices)
    )
    stats = OpStats(
        hosts=[host],
        run_env=run_env,
        perf_env=perf_env,
        all_db=whole.db(0),
        unattributed=_unattributed(events, gpu[copies], total_ps),
        layer_split=LayerSplit(split_whole.db(0)) if layers is not None else None,
    )
    stats.diagnostics.info.append(GPU_COMPUTED)
    if not len(counted) and is_kernel.any():
        stats.diagnostics.info.append(NO_LAUNCHING_OPS)
    _note_unattributed(stats, events, launches, kernel_op)
    _note_unknown(stats, ex)
    _add_hardware(stats, events, launches, kernel_op, ex)
    share = kernel_share_note(stats.all_db)
    stats.notes.extend(
        [device_time_note(stats.run_env.hardware_type, len(devices)), *([share] if share else [])]
    )
    if not steps.numbers:
        return stats
    # An execution is in the step holding its op's start; a kernel in its op's step, or
    # (without an op) in the step holding its runtime call.
    ex_step = steps.of(events.begin_ns[events.op_rows[counted]])
    kernel_step = np.full(len(gpu), -1, np.int64)
    launched = launches.call >= 0
    kernel_step[launched] = steps.of(events.begin_ns[launches.call[launched]])
    kernel_step[instance >= 0] = ex_step[kernel_exec]
    count, width = len(steps.numbers), len(devices)
    used = kernel_step >= 0
    cell = kernel_step[used] * width + device[used]
    first, last = _first_last(events, gpu[used], cell, count * width)
    totals, wall, ran = _step_times(steps, first, last, width)
    table = aggregate(ex, ex_step, kernel_op, kernel_step, time_ps, totals * PS_PER_NS)
    # A step without device work in the trace was cut by the profile window.
    complete = _complete_gpu_steps(events, steps) & ran
    stats.has_step_markers = True
    stats.steps = _steps(table, steps, complete, wall * PS_PER_NS)
    if stats.layer_split is not None and layers is not None:
        split_ex, split_op = layers
        split = aggregate(split_ex, ex_step, split_op, kernel_step, time_ps, totals * PS_PER_NS)
        stats.layer_split.steps = _steps(split, steps, complete, wall * PS_PER_NS)
    outside = ~used & is_kernel
    if outside.any():
        outside_us = events.dur_ns[gpu[outside]].sum() / 1e3
        stats.notes.append(
            f"{int(outside.sum()):,} kernels ({outside_us:,.1f} us) were launched outside "
            "every ProfilerStep; they count in Total only."
        )
    return stats


def _gpu_layer_split(
    events: TraceEvents,
    launches: Launches,
    ex: Executions,
    kernel_op: np.ndarray,
    kernel_exec: np.ndarray,
) -> tuple[Executions, np.ndarray] | None:
    """``split_by_scope`` of a GPU trace's rows: a kernel's scope is its launching op's, or
    that of the annotation naming it; a kernel without either has none."""
    instance = launches.instance
    exec_scope = op_scopes(events, events.op_rows[ex.instance])
    kernel_scope = np.full(len(launches.gpu), "", object)
    kernel_scope[instance >= 0] = exec_scope[kernel_exec]
    named = launches.is_kernel & (instance < 0) & (launches.annotation >= 0)
    kernel_scope[named] = op_scopes(events, launches.annotation[named])
    return split_by_scope(ex, exec_scope, kernel_op, kernel_scope)


def _step_times(
    steps: Steps, first: np.ndarray, last: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Device time (ns, summed over devices), wall time (ns) and "ran on a device" of each
    step, from the first begin and last end of its GPU events per (step, device) cell.

    On a device that ran something in it, a step runs from its start (or, when the step
    before ran late, that step's end there: steps never overlap on a device, so their sum
    is at most Total) to the later of its end and its last event. Its wall time is the
    longest such span's reach over its devices, else its own span.
    """
    count = len(steps.numbers)
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    ran = (last >= first).reshape(count, width)
    first = np.minimum(first, np.repeat(steps.begin_ns, width)).reshape(count, width)
    last = np.maximum(last, np.repeat(steps.end_ns, width)).reshape(count, width)
    reached = np.maximum.accumulate(np.where(ran, last, low), axis=0)
    before = np.vstack([np.full((1, width), low), reached[:-1]])
    first = np.maximum(first, before)
    last = np.maximum(last, first)
    totals = np.where(ran, last - first, 0).sum(axis=1)
    any_ran = np.asarray(ran.any(axis=1))
    reach = np.where(ran, last, low).max(axis=1)
    start = np.where(any_ran, np.where(ran, first, high).min(axis=1), reach)
    wall = np.where(any_ran, reach - start, steps.end_ns - steps.begin_ns)
    return totals, wall, any_ran


def _first_last(
    events: TraceEvents, rows: np.ndarray, cell: np.ndarray, cells: int
) -> tuple[np.ndarray, np.ndarray]:
    """First begin and last end (ns) of the events in each cell (max/min int64 if empty)."""
    first = np.full(cells, np.iinfo(np.int64).max)
    last = np.full(cells, np.iinfo(np.int64).min)
    np.minimum.at(first, cell, events.begin_ns[rows])
    np.maximum.at(last, cell, events.end_ns[rows])
    return first, last


def _device_windows(
    events: TraceEvents, gpu: np.ndarray, device: np.ndarray, n: int, steps: Steps
) -> np.ndarray:
    """Each device's profile window (ns): from the earlier of the first step's start and its
    first GPU event to the later of the last step's end and its last GPU event."""
    first, last = _first_last(events, gpu, device, n)
    if steps.numbers:
        first = np.minimum(first, steps.begin_ns.min())
        last = np.maximum(last, steps.end_ns.max())
    return np.where(last >= first, last - first, 0)


def _tensor_float32(
    events: TraceEvents, gpu: np.ndarray, kernel_op: np.ndarray, ex: Executions
) -> None:
    """fp32 ops that ran TF32 tensor-core kernels (cuBLAS/CUTLASS names say so) are judged
    against the tf32 ceiling: ``allow_tf32`` is not in the trace, the kernel names are."""
    codes = [c for c, n in enumerate(events.names) if TF32_KERNEL.search(n)]
    if not codes:
        return
    rows = unique(kernel_op[np.isin(events.name[gpu], codes) & (kernel_op >= 0)])
    for row in rows.tolist():
        if ex.dtypes[row] == "fp32":
            ex.dtypes[row] = "tf32"


def _complete_gpu_steps(events: TraceEvents, steps: Steps) -> np.ndarray:
    """A step is complete when every kernel launched in it ran within the trace."""
    launches = _launch_calls(events)
    gpu_corr = events.correlation[events.of(*KERNEL_CATEGORIES, *COPY_CATEGORIES)]
    missing = ~np.isin(events.correlation[launches], gpu_corr)
    step = steps.of(events.begin_ns[launches])
    lost = np.bincount(step[missing & (step >= 0)], minlength=len(steps.numbers))
    return (lost == 0) & (steps.end_ns > steps.begin_ns)


def _steps(
    table: StepOps, steps: Steps, complete: np.ndarray, wall_ps: np.ndarray | None = None
) -> list[StepInfo]:
    """Steps of ``table``; ``wall_ps``: their wall times (default: their device times)."""
    durations = table.total_time_ps if wall_ps is None else wall_ps
    return table_steps(table, steps.numbers, complete.tolist(), durations.tolist())


def cpu_window_ns(events: TraceEvents, rows: np.ndarray) -> int:
    """A CPU trace's Total: from the earlier of its first op and first step to the later of
    its last op and last step (as a GPU trace's device window), so it holds every step."""
    steps = profiler_steps(events)
    begin = np.concatenate([events.begin_ns[rows], steps.begin_ns])
    end = np.concatenate([events.end_ns[rows], steps.end_ns])
    return int(end.max() - begin.min()) if len(begin) else 0


@dataclass
class CpuWork:
    """The forest of a CPU trace's ops and annotations (``ProfilerStep#N`` aside), each node
    with its self time and the node whose row gets it (``working_ops``)."""

    rows: np.ndarray  # event row per node
    op_index: np.ndarray  # cpu op index per node, -1 for an annotation
    self_ns: np.ndarray  # span minus the spans of the nodes directly inside it
    owner: np.ndarray  # node whose row gets this node's self time (itself unless a wrapper)


def cpu_forest(events: TraceEvents) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CPU ops and user annotations (ProfilerStep#N aside) by (thread, begin, longest
    first): their event rows, cpu op index (-1: annotation) and parent position (-1: root)."""
    annotation = events.code("user_annotation")
    notes = np.flatnonzero(events.category == annotation) if annotation >= 0 else np.arange(0)
    steps = [c for c, text in enumerate(events.names) if STEP_NAME.match(text)]
    notes = notes[~np.isin(events.name[notes], steps)]
    rows = np.concatenate([events.op_rows, notes])
    op_index = np.concatenate([np.arange(len(events.op_rows)), np.full(len(notes), -1)])
    used, thread = unique(events.thread[rows], return_inverse=True)
    stride = int(events.end_ns.max()) + 1 if len(events) else 1
    b = thread.ravel() * stride + events.begin_ns[rows]
    e = thread.ravel() * stride + events.end_ns[rows]
    order = span_order(b, e)
    return rows[order], op_index[order], nesting_parents(b[order], e[order])


def working_ops(events: TraceEvents) -> CpuWork:
    """Who gets each nanosecond of CPU op time: the innermost op doing the work.

    Each op (and annotation) holds its self time, its span minus the spans directly inside
    it, as a GPU kernel belongs to its innermost launching op. A *wrapper* holds none: an
    op with a cost model whose work an op inside it does (``aten_cost.takes_over``:
    ``aten::linear`` around ``aten::addmm``, attention's math path around its ``bmm``s), or
    an autograd node or ``autograd::engine`` scope with an op inside; its self time (dispatch
    overhead) goes to the longest non-wrapper inside it, and its FLOPs are its inner ops'.
    Every non-wrapper op is a row with its own cost, so each ns of a root span is in exactly
    one row and each execution's FLOPs are counted once. Each pass climbs one level.
    """
    rows, op_index, parent = cpu_forest(events)
    names = events.names
    families = [family(n) for n in names]
    kinds = list(dict.fromkeys(c for c, _ in families)) + ["annotation"]
    kind_code = {c: i for i, c in enumerate(kinds)}
    is_op = op_index >= 0
    name = events.name[rows]
    costed = np.array([f is not None for _, f in families] + [False], bool)[
        np.where(is_op, name, len(names))
    ]
    code_of = np.array([kind_code[c] for c, _ in families] + [len(kinds) - 1], np.int64)
    kind = code_of[np.where(is_op, name, len(names))]
    takes = np.array([[takes_over(o, i) for i in kinds] for o in kinds], bool)
    duration = events.dur_ns[rows]
    nested = np.flatnonzero(parent >= 0)
    self_ns = duration - np.bincount(parent[nested], duration[nested], len(rows)).astype(np.int64)
    np.maximum(self_ns, 0, out=self_ns)
    # Composites: a costed op with a costed op inside that does its work.
    wrapper = np.zeros(len(rows), bool)
    width = len(kinds)
    inner = np.flatnonzero(costed)
    node, inner_kind = parent[inner], kind[inner]
    while len(node):
        live = node >= 0
        pairs = unique(node[live] * width + inner_kind[live])
        node, inner_kind = pairs // width, pairs % width
        hit = costed[node] & takes[kind[node], inner_kind]
        wrapper[node[hit]] = True
        node = parent[node]
    plumbing = np.array(
        ["::" not in n or n.startswith("autograd::") for n in names] + [False], bool
    )[np.where(is_op, name, len(names))]
    wrapper |= plumbing & is_op & (np.bincount(parent[nested], minlength=len(rows)) > 0)
    # A wrapper's self time: to the longest non-wrapper inside it (one of those just below
    # its run of wrappers; ties: the first).
    owner = np.arange(len(rows))
    climbing = np.flatnonzero(~wrapper & (parent >= 0))
    up = parent[climbing]
    found_anc, found_node = [], []
    while len(climbing):
        keep = up >= 0
        climbing, up = climbing[keep], up[keep]
        keep = wrapper[up]
        climbing, up = climbing[keep], up[keep]
        found_anc.append(up)
        found_node.append(climbing)
        up = parent[up]
    if found_anc:
        anc, held = np.concatenate(found_anc), np.concatenate(found_node)
        order = np.lexsort((held, -duration[held], anc))
        anc, held = anc[order], held[order]
        first = np.ones(len(anc), bool)
        first[1:] = anc[1:] != anc[:-1]
        owner[anc[first]] = held[first]
    return CpuWork(rows, op_index, self_ns, owner)


def cpu_op_stats(events: TraceEvents, host: str, peaks: PerfEnv | None) -> OpStats:
    """CPU-only traces: each op's self time in the row of the innermost op doing the work
    (``working_ops``); annotations' time that no op covers in a row of the annotation."""
    work = working_ops(events)
    time_ns = np.bincount(work.owner, work.self_ns, len(work.rows)).astype(np.int64)
    holds = work.owner == np.arange(len(work.rows))  # the non-wrappers: one row each
    is_op = holds & (work.op_index >= 0)
    counted = work.op_index[is_op]
    ex = cost_executions(events, counted)
    # Annotations' rows come after the op rows, one per annotation name.
    notes = holds & (work.op_index < 0)
    codes, note_row = unique(events.name[work.rows[notes]], return_inverse=True)
    note_names = [events.names[c] for c in codes.tolist()]
    ex.names += note_names
    ex.categories += [ANNOTATION_CATEGORY] * len(note_names)
    ex.dtypes += [""] * len(note_names)
    timed = np.flatnonzero(holds)
    row = np.zeros(len(work.rows), np.int64)
    row[is_op] = ex.op
    row[notes] = len(ex.names) - len(note_names) + note_row.ravel()
    event_op, event_time_ps = row[timed], time_ns[timed] * PS_PER_NS
    begin = events.begin_ns[work.rows]
    span_ns = cpu_window_ns(events, work.rows)
    one_ex, one_ev = np.zeros(len(counted), np.int64), np.zeros(len(timed), np.int64)
    whole = aggregate(ex, one_ex, event_op, one_ev, event_time_ps, np.array([span_ns * PS_PER_NS]))
    node_scope = np.full(len(work.rows), "", object)
    node_scope[holds] = op_scopes(events, work.rows[holds])
    layers = split_by_scope(ex, node_scope[is_op], event_op, node_scope[timed])
    split_whole = None
    if layers is not None:
        split_ex, split_op = layers
        split_whole = aggregate(
            split_ex, one_ex, split_op, one_ev, event_time_ps, np.array([span_ns * PS_PER_NS])
        )
    stats = OpStats(
        hosts=[host],
        run_env=RunEnvironment(
            hardware_type="CPU", device_type="CPU", device_core_count=1, active_core_count=1
        ),
        perf_env=peaks or PerfEnv(source="none"),
        all_db=whole.db(0),
        layer_split=LayerSplit(split_whole.db(0)) if split_whole is not None else None,
    )
    stats.diagnostics.info.append(CPU_COMPUTED)
    _note_unknown(stats, ex, np.bincount(event_op, event_time_ps, len(ex.names)))
    steps = profiler_steps(events)
    if steps.numbers:
        durations = (steps.end_ns - steps.begin_ns) * PS_PER_NS
        table = aggregate(
            ex, steps.of(begin[is_op]), event_op, steps.of(begin[timed]), event_time_ps, durations
        )
        stats.has_step_markers = True
        stats.steps = _steps(table, steps, steps.end_ns > steps.begin_ns)
        if stats.layer_split is not None and layers is not None:
            split_ex, split_op = layers
            split = aggregate(
                split_ex,
                steps.of(begin[is_op]),
                split_op,
                steps.of(begin[timed]),
                event_time_ps,
                durations,
            )
            stats.layer_split.steps = _steps(split, steps, steps.end_ns > steps.begin_ns)
    return stats


def _note_unattributed(
    stats: OpStats, events: TraceEvents, launches: Launches, kernel_op: np.ndarray
) -> None:
    """One line each for the kernels named by an annotation, those named by themselves,
    and the copies listed apart."""
    gpu, is_kernel = launches.gpu, launches.is_kernel
    without_op = is_kernel & (launches.instance < 0)
    named = without_op & (launches.annotation >= 0)
    graph_codes = [c for c, n in enumerate(events.names) if GRAPH_LAUNCH.search(n)]
    call = launches.call
    replayed = (call >= 0) & np.isin(events.name[np.maximum(call, 0)], graph_codes)
    for mask, what in (
        (named, ANNOTATED_KERNELS),
        (without_op & ~named, LONE_KERNELS),
        (~is_kernel, COPIES_APART),
    ):
        rows = gpu[mask]
        if len(rows):
            graphs = len(unique(call[mask & replayed]))
            stats.notes.append(
                what.format(
                    count=len(rows),
                    us=events.dur_ns[rows].sum() / 1e3,
                    graphs=GRAPH_KERNELS.format(count=int((mask & replayed).sum()), graphs=graphs)
                    if graphs
                    else "",
                )
            )


def _note_unknown(
    stats: OpStats,
    ex: Executions,
    row_time_ps: np.ndarray | None = None,
    known: str = "times only",
) -> None:
    """Notes of the ops whose cost is unknown, by reason (``known``: what such an op still
    has). With the rows' times (CPU), the ops without a cost model are counted with their
    share of the time, and so are the annotations' rows."""
    for reason, ops in ex.unknown.items():
        if row_time_ps is not None and reason == NO_MODEL:
            continue
        if any(family(n)[0] != OTHER or n.startswith("aten::") for n in ops):
            stats.notes.append(f"{named(ops, 'op', 4)}: {reason}; {known}.")
    if row_time_ps is None:
        return
    total = float(row_time_ps.sum()) or 1.0
    op_rows = int(ex.op.max()) + 1 if len(ex.op) else 0  # annotations' rows come after
    modelless = [r for r in range(op_rows) if family(ex.names[r])[1] is None and row_time_ps[r] > 0]
    annotations = [r for r in range(op_rows, len(ex.names)) if row_time_ps[r] > 0]
    for rows, text in ((modelless, NO_MODEL_SHARE), (annotations, ANNOTATION_SHARE)):
        if rows:
            rows.sort(key=lambda r: -row_time_ps[r])
            share = 100.0 * float(row_time_ps[rows].sum()) / total
            listed = ", ".join(ex.names[r] for r in rows[:NAMED_OPS])
            more = f" and {len(rows) - NAMED_OPS:,} more" if len(rows) > NAMED_OPS else ""
            stats.notes.append(text.format(count=len(rows), share=share, names=listed + more))


def _range_rows(stats_db: OpMetricsDb, ex: Executions, range_ex: np.ndarray) -> np.ndarray:
    """The row of ``stats_db`` (by op row name) of each range's op row (``range_ex``: a
    row of ``ex``, -1 none)."""
    slot = {name: i for i, name in enumerate(stats_db.name.tolist())}
    of_ex = np.array([slot.get(name, -1) for name in ex.names] + [-1], np.int64)
    return of_ex[np.where(range_ex >= 0, range_ex, len(ex.names))]


def _add_hardware(
    stats: OpStats, events: TraceEvents, launches: Launches, kernel_op: np.ndarray, ex: Executions
) -> None:
    """Total (HW) of a trace with kernel activity and counter ranges: each range joined to
    its launch call, so to the op row of the kernel that call launched."""
    counters = read_counters(events)
    if counters is None:
        return
    calls = kernel_launch_calls(events)
    joined = join_launches(counters, events, calls)
    if not len(joined):
        stats.notes.append(NOT_JOINED.format(ranges=len(counters.rows), launches=len(calls)))
        return
    launched = np.flatnonzero((launches.call >= 0) & launches.is_kernel)
    order = launched[np.argsort(launches.call[launched], kind="stable")]
    by_call = launches.call[order]
    at = np.minimum(np.searchsorted(by_call, joined), max(len(by_call) - 1, 0))
    range_ex = np.full(len(joined), -1, np.int64)
    if len(by_call):
        found = by_call[at] == joined
        range_ex[found] = kernel_op[order[at[found]]]
    rows = _range_rows(stats.all_db, ex, range_ex)
    stats.hardware = hardware_counts(stats.all_db, rows, counters, len(calls))


@dataclass
class CounterAttribution:
    """The ranges of a counters-only trace joined to their op rows."""

    counters: RangeCounters
    launches: int  # kernel launch calls of the trace
    counted: np.ndarray  # cpu op indices of the executions that launched a counted kernel
    ex: Executions
    kernel_op: np.ndarray  # op row of ``ex`` per range


def counter_attribution(events: TraceEvents) -> CounterAttribution | None:
    """Each range joined to its launch call by order, so to the innermost CPU op around the
    call (else the annotation, else a row named by the range's kernel); None when the
    ranges cannot be joined one to one to the kernel launch calls."""
    counters = read_counters(events)
    calls = kernel_launch_calls(events)
    joined = join_launches(counters, events, calls) if counters is not None else calls[:0]
    if counters is None or not len(joined):
        return None
    kept = ops_but_steps(events)
    nest = nesting(events, events.op_rows[kept])
    ranges = counters.rows
    launches = attribute_calls(events, nest, kept, ranges, np.ones(len(ranges), bool), joined)
    instance = launches.instance
    counted, kernel_exec = unique(instance[instance >= 0], return_inverse=True)
    ex = cost_executions(events, counted)
    kernel_op = np.full(len(ranges), -1, np.int64)
    kernel_op[instance >= 0] = ex.op[kernel_exec.ravel()]
    _rows_without_op(events, launches, kernel_op, ex)
    return CounterAttribution(counters, len(calls), counted, ex, kernel_op)


def range_ops(events: TraceEvents) -> list[str] | None:
    """The op row name of each range, in time order (None: not joined)."""
    found = counter_attribution(events)
    if found is None:
        return None
    return [found.ex.names[row] if row >= 0 else "" for row in found.kernel_op.tolist()]


def counter_op_stats(events: TraceEvents, host: str) -> OpStats | None:
    """A trace of CUPTI ranges without kernel activity (how Kineto records counters): op
    rows (``counter_attribution``) with occurrences and modelled FLOPs but no times, and
    their Total (HW); None when the ranges cannot be joined."""
    found = counter_attribution(events)
    if found is None:
        return None
    ranges, ex, kernel_op = found.counters.rows, found.ex, found.kernel_op
    devices = unique(events.pid[ranges])
    no_time = np.zeros(len(ranges), np.int64)
    whole = aggregate(
        ex, np.zeros(len(found.counted), np.int64), kernel_op, no_time, no_time, np.array([0])
    )
    wanted = {p for p in (events.pids[d] for d in devices.tolist()) if isinstance(p, int)}
    run_env, perf_env = _gpu_environment(events, wanted, len(devices))
    stats = OpStats(
        hosts=[host],
        run_env=run_env,
        perf_env=perf_env,
        all_db=whole.db(0),
    )
    stats.diagnostics.warnings.append(COUNTERS_ONLY.format(ranges=len(ranges)))
    _note_unknown(stats, ex, known="measured FLOPs only")
    steps = profiler_steps(events)
    if steps.numbers:
        stats.notes.append(COUNTERS_STEPS.format(count=len(steps.numbers)))
    rows = _range_rows(stats.all_db, ex, kernel_op)
    stats.hardware = hardware_counts(stats.all_db, rows, found.counters, found.launches)
    return stats
