"""CPU op metrics (JAX, TensorFlow and PyTorch/XLA on XLA:CPU) from ``/host:CPU`` op events
and the HLO cost model.

XLA:CPU op events run on host threads with ``hlo_op``/``program_id`` stats. An op lasts
until its flow-linked ``end: <op>`` event when that comes later (asynchronous thunks: the
op event is only the dispatch). Ops of one step can run concurrently on several threads,
so the Program time is wall time (the span of the ops, or of a step), never a sum of op
times. Steps are host step roots (``_r`` stat, e.g. ``jax.profiler.StepTraceAnnotation``)
and claim whole program executions (``cpu_executions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arrays import unique
from ..hlo.cost.engine import ModuleCosts
from ..ops.op_metrics import (
    HBM,
    READ,
    WRITE,
    OpMetricsDb,
    empty_columns,
    nested_in_earlier,
    self_times,
    with_idle,
)
from ..ops.op_stats import OpStats, StepInfo, table_steps
from ..ops.step_ops import StepOps, cells, step_ops
from ..peaks.perf_env import PerfEnv, RunEnvironment
from ..wording import numbered
from ..xspace.event_table import StringCodes, first_seen_codes, line_tables, may_have_stats
from ..xspace.profile_reader import HOST_PLANE, Plane, Profile, stat_ids, stat_names
from .cpu_executions import (
    EXECUTE_EVENTS,
    SCHEDULE_EVENT,
    HostMarks,
    claim_executions,
    group_executions,
    step_times,
)
from .host_steps import number_steps, step_roots

CPU_DEVICE_TYPE = "CPU"
_OP_STATS = ("hlo_op", "program_id", "_r", "step_num", "run_id", "_p", "_c", "device_ordinal")
END_PREFIX = "end: "  # an XLA:CPU op's end event, linked to the op by its flow id
_NO_I64 = np.zeros(0, np.int64)


@dataclass
class HostEvents:
    """XLA op events, step roots and execution marks of the host plane (absolute ps).

    An op event's end is when the op finished: the end of its flow-linked ``end: <op>``
    event when that is later (XLA:CPU's asynchronous thunks), else the event's own end.
    """

    op_begin: np.ndarray
    op_end: np.ndarray
    op_self: np.ndarray
    op: np.ndarray  # int64 per event: its op, numbered in order of first appearance
    op_keys: list[tuple[int, str]]  # (program id, instruction name) of each op
    steps: list[tuple[int, int, int]]  # (step number, begin, end)
    op_program: np.ndarray = field(default_factory=lambda: _NO_I64)  # program id code
    op_run: np.ndarray = field(default_factory=lambda: _NO_I64)  # run_id stat (0: absent)
    op_has_run: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    marks: HostMarks = field(default_factory=lambda: HostMarks(_NO_I64, _NO_I64, _NO_I64))
    # Each op event's device (0..k-1 in order of ``device_ordinal``; 0 without the stat):
    # JAX runs one host's several CPU devices (``--xla_force_host_platform_device_count``)
    # on shared threads, so the device is per event, not per line.
    op_device: np.ndarray = field(default_factory=lambda: _NO_I64)
    device_ordinals: list[int] = field(default_factory=lambda: [0])
    op_event_end: np.ndarray = field(default_factory=lambda: _NO_I64)  # without its end event

    def device_spans(self, window: tuple[int, int] | None = None) -> np.ndarray:
        """Last end - first start of each device's op events (ps); ``window`` (the steps'
        first start and last end) widens each device's span that ran, as a step on it is
        widened to its host span, so the Total holds the steps."""
        count = len(self.device_ordinals)
        device = self.op_device if len(self.op_device) else np.zeros(len(self.op), np.int64)
        first = np.full(count, np.iinfo(np.int64).max)
        last = np.full(count, np.iinfo(np.int64).min)
        np.minimum.at(first, device, self.op_begin)
        np.maximum.at(last, device, self.op_end)
        ran = last >= first
        if window is not None:
            first, last = np.minimum(first, window[0]), np.maximum(last, window[1])
        return np.where(ran, last - first, 0)


def _metadata_ids(plane, wanted) -> np.ndarray:
    """Event metadata ids whose name satisfies ``wanted(name)``."""
    ids = [key for key, meta in plane.event_metadata.items() if wanted(meta.name)]
    return np.asarray(ids, np.int64)


def _unique_flow_ends(
    op_begin: np.ndarray, op_flow: np.ndarray, flow_ids: np.ndarray, flow_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """``flight_ends``' answer when no two end events share a flow id (what a trace of one
    run has), by one sort of the ends: (has an end event at or after its start, that end
    event's end) per op; None when ids repeat."""
    order = np.argsort(flow_ids, kind="stable")
    ids = flow_ids[order]
    if len(ids) > 1 and (ids[1:] == ids[:-1]).any():
        return None
    if len(ids) == 0:
        return np.zeros(len(op_flow), bool), np.zeros(len(op_flow), np.int64)
    slot = np.minimum(np.searchsorted(ids, op_flow), len(ids) - 1)
    times = flow_end[order][slot]
    return (ids[slot] == op_flow) & (times >= op_begin), times


def flight_ends(
    begin: np.ndarray,
    end: np.ndarray,
    flow: np.ndarray,
    has_flow: np.ndarray,
    flow_ids: np.ndarray,
    flow_end: np.ndarray,
) -> np.ndarray:
    """Each op's end: the later of its own and that of its ``end:`` event, the first end
    event of the op's flow id at or after the op's start (ids may repeat in a long trace)."""
    ops = np.flatnonzero(has_flow)
    unique_ends = _unique_flow_ends(begin[ops], flow[ops], flow_ids, flow_end)
    if unique_ends is not None:
        linked, times = unique_ends
        out = end.copy()
        out[ops[linked]] = np.maximum(end[ops[linked]], times[linked])
        return out
    ids = np.concatenate([flow[ops], flow_ids])
    times = np.concatenate([begin[ops], flow_end])
    is_end = np.arange(len(ids)) >= len(ops)
    order = np.lexsort((is_end, times, ids))
    positions = np.where(is_end[order], np.arange(len(order)), len(order))
    next_end = np.minimum.accumulate(positions[::-1])[::-1]  # first end at or after
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    found = next_end[rank[: len(ops)]]
    linked = found < len(order)
    found = np.minimum(found, len(order) - 1)
    linked &= ids[order][found] == flow[ops]
    out = end.copy()
    linked_ops = ops[linked]
    out[linked_ops] = np.maximum(end[linked_ops], times[order][found[linked]])
    return out


HOST_CHUNK_EVENTS = 1 << 18  # events of a host line read at a time (memory: one piece)


@dataclass
class _HostParts:
    """What ``read_host_events`` reads from the lines, piece by piece, before the file's bytes
    may go: the op events' columns per piece and each line's count of op events."""

    hlo_ops: StringCodes
    columns: dict[str, list] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)  # op events per line
    roots: list = field(default_factory=list)

    def add(self, **parts: np.ndarray) -> None:
        for name, part in parts.items():
            self.columns.setdefault(name, []).append(part)

    def joined(self, name: str, empty: np.ndarray = _NO_I64) -> np.ndarray:
        """A column's pieces as one array; the pieces go (memory: the column once)."""
        parts = self.columns.pop(name, [])
        return np.concatenate(parts, axis=-1) if parts else empty


def read_host_events(plane: Plane) -> HostEvents:
    return host_events(read_host_parts(plane))


def read_host_parts(plane: Plane) -> _HostParts:
    """The host plane's op events, step roots, flow ends and execution marks, each line read
    in pieces of HOST_CHUNK_EVENTS (the ops' nesting is found later, from their columns)."""
    ids = stat_ids(plane, _OP_STATS)
    stat_name = stat_names(plane)
    end_meta = _metadata_ids(plane, lambda name: name.startswith(END_PREFIX))
    execute_meta = _metadata_ids(plane, lambda name: name in EXECUTE_EVENTS)
    schedule_meta = _metadata_ids(plane, lambda name: name == SCHEDULE_EVENT)
    wanted = [ids.get("_r"), ids.get("step_num"), ids.get("hlo_op"), ids.get("_c")]
    wanted += np.concatenate([execute_meta, schedule_meta]).tolist()
    stats = [ids.get(name) for name in _OP_STATS]  # only the stats read here

    def read_line(line) -> list[tuple[list, dict, list, np.ndarray]]:
        """Each piece of the line: (step roots, op columns, hlo_op values, their codes)."""
        pieces = []
        for table in line_tables(line, stats, chunk_events=HOST_CHUNK_EVENTS):
            has_end, end_flow = table.integers(ids.get("_c"))
            is_end = has_end & np.isin(table.metadata_id, end_meta)
            marks = np.isin(table.metadata_id, execute_meta)
            local, values = table.string_codes(ids.get("hlo_op"), stat_name)
            named = np.array([bool(v) for v in values] + [False], bool)[local]
            has_program, program = table.integers(ids.get("program_id"))
            ops = np.flatnonzero(has_program & named)
            has_flow, flow = table.integers(ids.get("_p"))
            has_run, run = table.integers(ids.get("run_id"))
            end_ps = table.end_ps
            columns = {
                "flow_ids": end_flow[is_end],
                "flow_end": end_ps[is_end],
                "execute": np.stack([table.begin_ps[marks], end_ps[marks]]),
                "schedule": table.begin_ps[np.isin(table.metadata_id, schedule_meta)],
                "begin": table.begin_ps[ops],
                "end": end_ps[ops],
                "flow": flow[ops],
                "has_flow": has_flow[ops],
                "program": program[ops].astype(np.uint64),
                "run": run[ops],
                "has_run": has_run[ops],
                "device": table.integers(ids.get("device_ordinal"))[1][ops],
            }
            pieces.append((step_roots(table, ids), columns, values, local[ops]))
        return pieces

    # Threads without XLA ops, their ends, step roots or executions are skipped. One line at
    # a time: in threads, two lines' pieces in flight cost more memory than they save time.
    lines = [line for line in plane.lines if may_have_stats(line, wanted)]
    parts = _HostParts(StringCodes())
    for pieces in map(read_line, lines):
        in_line = 0
        for roots, columns, values, codes in pieces:
            parts.roots.extend(roots)
            parts.add(**columns)
            parts.hlo_ops.add_distinct(values, codes)
            in_line += len(codes)
        parts.lengths.append(in_line)
    return parts


def host_events(parts: _HostParts) -> HostEvents:
    """The HostEvents of what ``read_host_parts`` read (the file's bytes may be gone)."""
    lengths, hlo_ops = parts.lengths, parts.hlo_ops
    steps = number_steps(parts.roots)
    if not parts.columns.get("begin"):
        return HostEvents(_NO_I64, _NO_I64, _NO_I64, _NO_I64, [], steps)
    # Each column is joined where it is first needed, its pieces let go.
    op_begin = parts.joined("begin")
    op_event_end = parts.joined("end")
    op_end = flight_ends(
        op_begin,
        op_event_end,
        parts.joined("flow"),
        parts.joined("has_flow"),
        parts.joined("flow_ids"),
        parts.joined("flow_end"),
    )
    # Nesting and self time follow from the ops' whole spans, line by line; spans of
    # concurrent asynchronous ops can overlap, so a self time never goes below zero.
    lines = np.cumsum(lengths)[:-1]
    op_self = [
        np.maximum(self_times(b, e), 0)
        for b, e in zip(np.split(op_begin, lines), np.split(op_end, lines))
    ]
    executes = parts.joined("execute", np.zeros((2, 0), np.int64))
    executes = executes[:, np.argsort(executes[0], kind="stable")]
    executes = executes[:, ~nested_in_earlier(executes[0], executes[1])]
    # An op is (program, instruction): the last "::" part of hlo_op names the instruction.
    text_code, texts = hlo_ops.factorized()
    name_ids: dict[str, int] = {}
    text_name = [name_ids.setdefault(str(t).rsplit("::", 1)[-1], len(name_ids)) for t in texts]
    name_code = np.asarray(text_name, np.int64)[text_code]
    names, width = list(name_ids), max(len(name_ids), 1)
    program_values, program_code = unique(parts.joined("program"), return_inverse=True)
    program_code = program_code.ravel().astype(np.int64)
    op, keys = first_seen_codes(program_code * width + name_code)
    op_keys = [(int(program_values[k // width]), names[k % width]) for k in keys.tolist()]
    ordinals, device = unique(parts.joined("device"), return_inverse=True)
    return HostEvents(
        op_begin=op_begin,
        op_end=op_end,
        op_self=np.concatenate(op_self),
        op=op.astype(np.int64),
        op_keys=op_keys,
        steps=steps,
        op_program=program_code,
        op_run=parts.joined("run"),
        op_has_run=parts.joined("has_run"),
        marks=HostMarks(executes[0], executes[1], np.sort(parts.joined("schedule"))),
        op_device=device.ravel().astype(np.int64),
        device_ordinals=[int(d) for d in ordinals.tolist()] or [0],
        op_event_end=op_event_end,
    )


def _covered_ps(group: np.ndarray, begin: np.ndarray, end: np.ndarray, count: int) -> np.ndarray:
    """Per group (0..count-1), the time the union of its spans covers; spans sorted by
    (group, begin), ends no later than the group's next spans begin (nested work stays
    inside its container's span; containers of one op on one device do not overlap)."""
    reach = np.maximum.accumulate(end) if len(end) else end
    before = np.concatenate([[np.iinfo(np.int64).min], reach[:-1]])
    first = np.ones(len(group), bool)
    first[1:] = group[1:] != group[:-1]
    before = np.where(first, begin, before)
    covered = np.maximum(end - np.maximum(begin, before), 0)
    return np.bincount(group, covered, minlength=count).astype(np.int64)


def control_flow_spans(events: HostEvents, modules: dict[int, ModuleCosts]) -> None:
    """Spans and self times of control-flow ops (``while``, ``call``, ...) from the ops
    they run, in place.

    XLA:CPU records a container and the ops it runs as separate op events, the nested ones
    often on other threads or ending after it, so nesting on a line misses them: the loop
    and its body would both hold the same time. A nested op belongs to the container
    event of its program and device whose flight holds its start. The container ends
    when its own event or its last nested op ends (its ``end:`` event can come much
    later, while the ops after the loop run); its self time is the part of its span no
    nested op covers (between iterations). One pass per distinct container op.
    """
    if not len(events.op):
        return
    device = events.op_device if len(events.op_device) else np.zeros(len(events.op), np.int64)
    own_end = events.op_event_end if len(events.op_event_end) else events.op_end
    for row, (program, name) in enumerate(events.op_keys):
        module = modules.get(program)
        if module is None or not module.is_container(name):
            continue
        inner = module.nested(name)
        inner_ops = [j for j, (p, n) in enumerate(events.op_keys) if p == program and n in inner]
        if not inner_ops:
            continue
        mine = np.flatnonzero(events.op == row)
        nested = np.flatnonzero(np.isin(events.op, inner_ops))
        # Container events in (device, begin) order; a nested op goes to the last one of
        # its device starting at or before it, if that one is still in flight.
        order = mine[np.lexsort((events.op_begin[mine], device[mine]))]
        slot = np.full(len(nested), -1, np.int64)
        for d in np.unique(device[order]).tolist():
            on_c = np.flatnonzero(device[order] == d)
            on_n = np.flatnonzero(device[nested] == d)
            where = np.searchsorted(
                events.op_begin[order[on_c]], events.op_begin[nested[on_n]], side="right"
            )
            slot[on_n] = np.where(where > 0, on_c[np.maximum(where - 1, 0)], -1)
        held = slot >= 0
        held[held] &= events.op_begin[nested[held]] < events.op_end[order[slot[held]]]
        group, nested = slot[held], nested[held]
        last = np.full(len(order), np.iinfo(np.int64).min)
        np.maximum.at(last, group, events.op_end[nested])
        c_begin = events.op_begin[order]
        c_end = np.where(
            last > np.iinfo(np.int64).min, np.maximum(own_end[order], last), events.op_end[order]
        )
        begin = np.maximum(events.op_begin[nested], c_begin[group])
        end = np.minimum(events.op_end[nested], c_end[group])
        sort = np.lexsort((begin, group))
        covered = _covered_ps(group[sort], begin[sort], end[sort], len(order))
        events.op_end[order] = c_end
        events.op_self[order] = np.maximum(c_end - c_begin - covered, 0)


def cpu_ops(
    events: HostEvents, modules: dict[int, ModuleCosts], group: np.ndarray, totals: list[int]
) -> tuple[StepOps, OpMetricsDb | None]:
    """The ops of each group (the whole profile, or each step) of the op events in one pass.

    ``group`` is each op event's group (-1: none). Also returns the ops not found in any
    HLO module (over all groups).
    """
    op, keys = events.op, events.op_keys
    n, count = len(keys), len(totals)
    use = group >= 0
    binned = cells(group[use], op[use], n, count)
    occurrences = binned.sum()
    time_ps = binned.sum((events.op_end - events.op_begin)[use])
    static = empty_columns(n)
    per_exec = np.zeros((n, 3))  # flops, bytes accessed, bytes written per execution
    known = np.zeros(n, bool)
    for row, (program, name) in enumerate(keys):
        module = modules.get(program)
        cost = module.work(name) if module is not None else None
        static["program_id"][row] = program
        static["name"][row] = name
        if module is None or cost is None:
            static["category"][row] = "op without HLO module"
            continue
        known[row] = True
        static["category"][row] = module.category(name)
        per_exec[row] = (cost.flops, cost.bytes_accessed, cost.bytes_written)
        static["source_file"][row], static["source_line"][row], static["source_stack"][row] = (
            module.source(name)
        )
        static["dtype"][row] = cost.dtype
    cell_exec = per_exec[binned.op]
    flops = cell_exec[:, 0] * occurrences
    total_bytes = cell_exec[:, 1] * occurrences
    written = cell_exec[:, 2] * occurrences
    read = np.maximum(total_bytes - written, 0.0)
    breakdown = np.zeros((len(binned), 3, 2))
    breakdown[:, HBM, READ] = read
    breakdown[:, HBM, WRITE] = written
    columns = {
        "flops": flops,
        "model_flops": flops,
        "bytes_accessed": total_bytes,
        "breakdown": breakdown,
        "has_breakdown": (read > 0) | (written > 0),
        "occurrences": occurrences.astype(np.int64),
        "time_ps": time_ps.astype(np.int64),
        "self_time_ps": binned.sum(events.op_self[use]).astype(np.int64),
        "normalized_time_ps": time_ps,
    }
    ops = step_ops(static, binned, columns, totals).keep_rows(known[binned.op])
    seen = np.bincount(op[use], minlength=n)
    missing_rows = np.flatnonzero(~known & (seen > 0))
    missing = None
    if len(missing_rows) and count:
        op_time = np.bincount(op[use], (events.op_end - events.op_begin)[use], minlength=n)
        whole = OpMetricsDb(**{**static, "occurrences": seen.astype(np.int64),
                               "time_ps": op_time.astype(np.int64)},
                            total_time_ps=int(sum(totals)))  # fmt: skip
        missing = whole.take(missing_rows)
    return ops, missing


def cpu_op_stats(
    profile: Profile, host: str, modules: dict[int, ModuleCosts], peaks: PerfEnv | None
) -> OpStats:
    plane = profile.plane(HOST_PLANE)
    parts = read_host_parts(plane) if plane is not None else None
    profile.done_reading()  # the file's bytes go before the op columns are joined
    events = host_events(parts) if parts is not None else None
    del parts
    if events is not None:
        control_flow_spans(events, modules)
    count = len(events.op) if events is not None else 0
    devices = len(events.device_ordinals) if events is not None else 1
    if events is not None and count:
        # Device time, summed over the devices; steps claimed by span widen it (a PyTorch/XLA
        # step's host span is tracing: its time is its executions').
        marks = events.marks
        deferred = len(marks.schedule_begin) and len(marks.execute_begin)
        window = None
        if events.steps and not deferred:
            window = (min(b for _, b, _ in events.steps), max(e for _, _, e in events.steps))
        span = int(events.device_spans(window).sum())
        whole, missing = cpu_ops(events, modules, np.zeros(count, np.int64), [span])
        all_db = whole.db(0)
    else:  # no XLA ops: the profile's time is that of its steps, if it has any
        steps = events.steps if events is not None else []
        span = max((e for _, _, e in steps), default=0) - min((b for _, b, _ in steps), default=0)
        all_db = with_idle(OpMetricsDb(**empty_columns(0), total_time_ps=span))
        missing = None
    stats = OpStats(
        hosts=[host],
        run_env=RunEnvironment(
            hardware_type="CPU",
            device_type=CPU_DEVICE_TYPE,
            device_core_count=devices,
            active_core_count=devices if count else 0,
        ),
        perf_env=peaks or PerfEnv(source="none"),
        all_db=all_db,
        unattributed=missing,
    )
    if events is not None and events.steps:
        stats.has_step_markers = True
        stats.steps, warnings = cpu_steps(events, modules)
        stats.diagnostics.warnings.extend(warnings)
    return stats


def cpu_steps(
    events: HostEvents, modules: dict[int, ModuleCosts]
) -> tuple[list[StepInfo], list[str]]:
    """One StepInfo per step root, holding the executions it claims (``cpu_executions``);
    and the warnings about executions no step claims and steps without an execution."""
    starts = np.array([b for _, b, _ in events.steps], np.int64)
    ends = np.array([e for _, _, e in events.steps], np.int64)
    numbers = [num for num, _, _ in events.steps]
    if not len(events.op):  # no XLA program ran: the steps hold nothing to cost
        ops, _ = cpu_ops(events, modules, _NO_I64, (ends - starts).tolist())
        return table_steps(ops, numbers, ends > starts, (ends - starts).tolist()), []
    device = events.op_device if len(events.op_device) else None
    of_op = group_executions(
        events.op_begin, events.op_program, events.op_run, events.op_has_run, events.marks, device
    )
    executions = claim_executions(
        of_op, events.op_begin, events.op_end, starts, ends, events.marks, device
    )
    durations, held = step_times(executions, starts, ends)
    ops, _ = cpu_ops(events, modules, executions.step[of_op], durations.tolist())
    warnings = []
    unclaimed = executions.unclaimed
    if unclaimed.any():
        spans = executions.last_ps[unclaimed] - executions.first_ps[unclaimed]
        warnings.append(
            f"{int(unclaimed.sum()):,} XLA program execution(s) ({spans.sum() / 1e6:,.1f} us) "
            "ran outside every step; they count in Total only."
        )
    if (held == 0).any():
        missing = [num for num, n in zip(numbers, held.tolist()) if n == 0]
        warnings.append(
            f"{numbered(missing, 'step')} ran no XLA program execution in this profile (cut by "
            "the profile window, or its execution was not recorded): incomplete, left out of "
            "the average."
        )
    return table_steps(ops, numbers, (held > 0) & (ends > starts), durations.tolist()), warnings
