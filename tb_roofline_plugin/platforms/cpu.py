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

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..arrays import unique
from ..heap import release_freed_memory
from ..hlo.cost.engine import ModuleCosts
from ..hlo.text import op_text
from ..ops.busy_shares import busy_shares
from ..ops.op_metrics import (
    HBM,
    READ,
    TEXT_COLUMNS,
    WRITE,
    OpMetricsDb,
    empty_columns,
    nested_in_earlier,
    with_idle,
)
from ..ops.op_stats import OpStats, StepInfo, table_steps
from ..ops.selection import check_device
from ..ops.step_ops import Cells, StepOps, cells, step_ops
from ..peaks.perf_env import PerfEnv, RunEnvironment
from ..wording import counted, numbered
from ..xspace.event_table import StringCodes, first_seen_codes, line_tables, may_have_stats
from ..xspace.profile_reader import HOST_PLANE, Plane, Profile, stat_ids, stat_names
from .cpu_control_flow import control_flow
from .cpu_executions import (
    EXECUTE_EVENTS,
    SCHEDULE_EVENT,
    Executions,
    HostMarks,
    claim_executions,
    group_executions,
    step_times,
)
from .host_steps import StepSpans, no_steps, number_steps, root_columns, step_roots
from .host_sums import HostOpPiece, compiled_host_ops, host_op_tables, integer_stats
from .in_threads import THREADS_MIN_BYTES, thread_map

CPU_DEVICE_TYPE = "CPU"
_OP_STATS = ("hlo_op", "program_id", "_r", "step_num", "run_id", "_p", "_c", "device_ordinal")
_INTEGER_STATS = ("_c", "program_id", "_p", "run_id", "device_ordinal")  # read in one pass
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
    op_self: np.ndarray  # share of its device's busy time (``busy_shares``), set by cpu_op_stats
    op: np.ndarray  # int64 per event: its op, numbered in order of first appearance
    op_keys: list[tuple[int, str]]  # (program id, instruction name) of each op
    steps: StepSpans
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
    # Work of control-flow events beyond one static execution (``cpu_control_flow``):
    # event index, (flops, bytes accessed, bytes written); set by cpu_op_stats.
    extra_event: np.ndarray = field(default_factory=lambda: _NO_I64)
    extra_work: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def device_codes(self) -> np.ndarray:
        """Each op event's device (0..k-1), zeros when the profile names none."""
        return self.op_device if len(self.op_device) else np.zeros(len(self.op), np.int64)

    def on_device(self, chosen: int | None) -> np.ndarray:
        """Per op event: does it run on device ``chosen`` (0..k-1; None: any)?"""
        if chosen is None:
            return np.ones(len(self.op), bool)
        return self.device_codes == chosen

    def device_spans(self, window: tuple[int, int] | None = None) -> np.ndarray:
        """Last end - first start of each device's op events (ps); ``window`` (the steps'
        first start and last end) widens each device's span that ran, as a step on it is
        widened to its host span, so the Total holds the steps."""
        count = len(self.device_ordinals)
        device = self.device_codes
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
    return _matched_flow_ends(begin, end, flow, ops, flow_ids, flow_end)


def _matched_flow_ends(
    begin: np.ndarray,
    end: np.ndarray,
    flow: np.ndarray,
    ops: np.ndarray,
    flow_ids: np.ndarray,
    flow_end: np.ndarray,
) -> np.ndarray:
    """``flight_ends`` where end ids repeat: the ops' (id, start) and the ends' (id, end) in
    one order, each op before the ends of its id and time; an op's end is the next end in
    it. Only the order and one column at a time are held (the 1 GB profile's peak was here):
    a place past ``len(ops)`` in the order is an end, whose id and time are read back."""
    count, total = len(ops), len(ops) + len(flow_ids)
    ids = np.concatenate([flow[ops], flow_ids])
    times = np.concatenate([begin[ops], flow_end])
    order = np.lexsort((np.arange(total) >= count, times, ids))  # ends after ops at a time
    del ids, times
    is_op = order < count
    # At each place, the place of the first end at or after it (total: none).
    next_end = np.arange(total, dtype=np.int64)
    next_end[is_op] = total
    np.minimum.accumulate(next_end[::-1], out=next_end[::-1])
    op_places = np.flatnonzero(is_op)
    del is_op
    found = np.empty(count, np.int64)
    found[order[op_places]] = next_end[op_places]
    del op_places, next_end
    linked = found < total
    np.minimum(found, total - 1, out=found)
    end_of = order[found] - count  # the end event found (negative: an op, where none is)
    del order, found
    linked &= end_of >= 0
    end_of[~linked] = 0
    linked &= flow_ids[end_of] == flow[ops]
    out = end.copy()
    linked_ops = ops[linked]
    out[linked_ops] = np.maximum(end[linked_ops], flow_end[end_of[linked]])
    return out


OVERLAP_MAX_EVENTS = 1 << 21  # op events up to which busy shares and executions run at once
HOST_CHUNK_EVENTS = 1 << 18  # events of a host line read at a time (memory: one piece)


@dataclass
class _HostParts:
    """What ``read_host_events`` reads from the lines, piece by piece, before the file's bytes
    may go: the op events' columns per piece."""

    hlo_ops: StringCodes
    columns: dict[str, list] = field(default_factory=dict)
    roots: list = field(default_factory=list)  # step markers: host_steps.Roots per piece

    def add(self, **parts: np.ndarray) -> None:
        for name, part in parts.items():
            self.columns.setdefault(name, []).append(part)

    def joined(self, name: str, empty: np.ndarray = _NO_I64) -> np.ndarray:
        """A column's pieces as one array; the pieces go (memory: the column once)."""
        parts = self.columns.pop(name, [])
        if not parts:
            return empty
        joined = np.concatenate(parts, axis=-1)
        del parts
        release_freed_memory()
        return joined


def read_host_events(plane: Plane) -> HostEvents:
    return host_events(read_host_parts(plane))


def read_host_parts(plane: Plane, done_with_line: Callable[..., None] | None = None) -> _HostParts:
    """The host plane's op events, step roots, flow ends and execution marks, each line read
    in pieces of HOST_CHUNK_EVENTS by one compiled pass each (``compiled_host_ops``), lines
    in threads (the ops' nesting is found later, from their columns); ``done_with_line`` is
    told of the bytes read between pieces and of each line once it is read
    (``Profile.done_with_line``)."""
    ids = stat_ids(plane, _OP_STATS)
    stat_name = stat_names(plane)
    end_meta = _metadata_ids(plane, lambda name: name.startswith(END_PREFIX))
    execute_meta = _metadata_ids(plane, lambda name: name in EXECUTE_EVENTS)
    schedule_meta = _metadata_ids(plane, lambda name: name == SCHEDULE_EVENT)
    wanted = [ids.get("_r"), ids.get("step_num"), ids.get("hlo_op"), ids.get("_c")]
    wanted += np.concatenate([execute_meta, schedule_meta]).tolist()
    stats = [ids.get(name) for name in _OP_STATS]  # only the stats read here
    integer_ids = [ids.get(name) for name in _INTEGER_STATS]
    metas = (end_meta, execute_meta, schedule_meta)
    tables = host_op_tables(stat_name, end_meta, execute_meta, schedule_meta)

    def read_line(line) -> list[HostOpPiece]:
        """Each piece of the line: one compiled pass each, where it can; from where it
        cannot on, the pieces' EventTables."""
        pieces, start = [], 0
        while tables is not None:
            read = compiled_host_ops(line, start, HOST_CHUNK_EVENTS, stats, tables)
            if read is None:
                break
            start, piece = read
            pieces.append(piece)
            if start >= len(line.raw):
                return pieces
            if done_with_line is not None:
                done_with_line(line, start)
        for table in line_tables(
            line, stats, HOST_CHUNK_EVENTS, read_up_to=done_with_line, start=start
        ):
            pieces.append(_table_piece(table, ids, stat_name, integer_ids, metas))
        return pieces

    def read_whole_line(line) -> list[HostOpPiece]:
        """A host thread's line; skipped where it has no XLA ops, ends, step roots or
        executions."""
        pieces = read_line(line) if may_have_stats(line, wanted) else []
        if done_with_line is not None:
            done_with_line(line)
        return pieces

    # The compiled pass runs without the GIL: lines at once where they are worth it. Not the
    # array path's: two lines' EventTables in flight cost more memory than they save time.
    lines = list(plane.lines)
    size = sum(len(getattr(line, "raw", None) or b"") for line in lines)
    threads = None if tables is not None and size >= THREADS_MIN_BYTES else 1
    parts = _HostParts(StringCodes())
    for pieces in thread_map(read_whole_line, lines, threads):
        for piece in pieces:
            parts.roots.append(piece.roots)
            parts.add(**piece.columns)
            parts.hlo_ops.add_distinct(piece.texts, piece.text_index)
    return parts


def _table_piece(table, ids, stat_name, integer_ids, metas) -> HostOpPiece:
    """A piece of a host line read from its EventTable (the array path of
    ``compiled_host_ops``): ``metas`` are the ``end:``, execution and schedule events'
    metadata ids."""
    end_meta, execute_meta, schedule_meta = metas
    read = integer_stats(table, integer_ids)
    (has_end, end_flow), (has_program, program), (has_flow, flow) = read[:3]
    (has_run, run), (_, device) = read[3:]
    is_end = has_end & np.isin(table.metadata_id, end_meta)
    marks = np.isin(table.metadata_id, execute_meta)
    local, values = table.string_codes(ids.get("hlo_op"), stat_name)
    named = np.array([bool(v) for v in values] + [False], bool)[local]
    ops = np.flatnonzero(has_program & named)
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
        "device": device[ops],
    }
    return HostOpPiece(step_roots(table, ids), columns, values, local[ops])


def host_events(parts: _HostParts) -> HostEvents:
    """The HostEvents of what ``read_host_parts`` read (the file's bytes may be gone)."""
    hlo_ops = parts.hlo_ops
    steps = number_steps(*root_columns(parts.roots))
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
        op_self=np.zeros(len(op_begin), np.int64),  # busy shares, once spans are final
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
    every = bool(use.all())  # the usual case: the event columns as they are, not copies

    def used(column: np.ndarray) -> np.ndarray:
        return column if every else column[use]

    used_op = used(op)
    binned = cells(used(group), used_op, n, count)
    occurrences = binned.sum()
    time_ps = binned.sum(used(events.op_end - events.op_begin))
    # Summed before the work columns exist: its float sums are a cell column of temporaries.
    self_time_ps = binned.sum(used(events.op_self)).astype(np.int64)
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
        static["op_path"][row] = module.op_name(name)
        static["dtype"][row] = cost.dtype
        text = op_text(module, name)
        if text is not None:
            for column, value in zip(TEXT_COLUMNS, text):
                static[column][row] = value
    extra = _extra_work(events, use, binned)
    # One contiguous column per work kind (a row of three would keep the written bytes too).
    flops, total_bytes, written = (
        per_exec[:, kind][binned.op] * occurrences + extra[kind] for kind in range(3)
    )
    read = np.maximum(total_bytes - written, 0.0)
    # Memory spaces outer: the other spaces' zeros stay untouched pages (XLA:CPU's bytes
    # are all HBM), a third of the (row, space, kind) array's memory.
    breakdown = np.zeros((3, 2, len(binned))).transpose(2, 0, 1)
    breakdown[:, HBM, READ] = read
    breakdown[:, HBM, WRITE] = written
    has_breakdown = (read > 0) | (written > 0)
    del read, written  # in the breakdown now (a cell per event on the 1 GB profile)
    columns = {
        "flops": flops,
        "model_flops": flops,
        "bytes_accessed": total_bytes,
        "breakdown": breakdown,
        "has_breakdown": has_breakdown,
        "occurrences": np.asarray(occurrences, np.int64),  # counts: int64 already
        "time_ps": time_ps.astype(np.int64),
        "self_time_ps": self_time_ps,
        "normalized_time_ps": time_ps,
    }
    ops = step_ops(static, binned, columns, totals).keep_rows(known[binned.op])
    seen = np.bincount(used_op, minlength=n)
    missing_rows = np.flatnonzero(~known & (seen > 0))
    missing = None
    if len(missing_rows) and count:
        op_time = np.bincount(used_op, used(events.op_end - events.op_begin), minlength=n)
        whole = OpMetricsDb(**{**static, "occurrences": seen.astype(np.int64),
                               "time_ps": op_time.astype(np.int64)},
                            total_time_ps=int(sum(totals)))  # fmt: skip
        missing = whole.take(missing_rows)
    return ops, missing


def _extra_work(events: HostEvents, use: np.ndarray, binned: Cells) -> list:
    """Per work kind (flops, bytes accessed, bytes written), per cell: the extra work
    (``HostEvents.extra_work``) of its events; 0.0 for all cells when there is none."""
    if not len(events.extra_event):
        return [0.0, 0.0, 0.0]
    cell_of = np.full(len(use), -1, np.int64)
    cell_of[np.flatnonzero(use)] = binned.inverse
    cell = cell_of[events.extra_event]
    kept = cell >= 0
    out = []
    for kind in range(3):
        column = np.zeros(len(binned))
        np.add.at(column, cell[kept], events.extra_work[kept, kind])
        out.append(column)
    return out


def cpu_op_stats(
    profile: Profile,
    host: str,
    modules: dict[int, ModuleCosts],
    peaks: PerfEnv | None,
    device: int | None = None,
) -> OpStats:
    """OpStats of the host's XLA:CPU ops; ``device`` (a ``device_ordinal``; None: all
    devices) keeps one device's ops, steps and time. Spans, executions and busy shares are
    found with every device's events first, so the devices' figures add up to all of them."""
    plane = profile.plane(HOST_PLANE)
    parts = read_host_parts(plane, profile.done_with_line) if plane is not None else None
    profile.done_reading()  # the file's bytes go before the op columns are joined
    events = host_events(parts) if parts is not None else None
    del parts
    count = len(events.op) if events is not None else 0
    devices = list(events.device_ordinals) if events is not None and count else []
    check_device(device, devices)
    chosen = None if device is None else devices.index(device)
    claimed = None
    if events is not None:
        own_end = events.op_event_end if len(events.op_event_end) else events.op_end
        flow = control_flow(
            events.op, events.op_keys, events.op_begin, events.op_end, own_end,
            events.device_codes, modules,
        )  # fmt: skip
        del own_end
        events.op_event_end = _NO_I64  # read by the control flow alone
        events.extra_event, events.extra_work = flow.extra_event, flow.extra_work

        def shares() -> None:
            events.op_self = busy_shares(
                events.op_begin, events.op_end, events.device_codes, flow.hidden
            )

        # The steps' executions need no self times: both at once on a machine with a core
        # to spare (numpy's sorts and passes run without the GIL), where the two passes'
        # temporaries together are small (the 1 GB profile's peak rose from 1.33 to 1.68x).
        threads = None if count <= OVERLAP_MAX_EVENTS else 1
        work = [shares, lambda: step_executions(events)]
        claimed = thread_map(lambda run: run(), work, threads)[1]
    if events is not None and count:
        # Device time, summed over the devices; steps claimed by span widen it (a PyTorch/XLA
        # step's host span is tracing: its time is its executions').
        marks = events.marks
        deferred = len(marks.schedule_begin) and len(marks.execute_begin)
        window = None
        if len(events.steps) and not deferred:
            window = (int(events.steps.begin_ps.min()), int(events.steps.end_ps.max()))
        spans = events.device_spans(window)
        span = int(spans.sum()) if chosen is None else int(spans[chosen])
        group = np.where(events.on_device(chosen), 0, -1)
        whole, missing = cpu_ops(events, modules, group, [span])
        all_db = whole.db(0)
    else:  # no XLA ops: the profile's time is that of its steps, if it has any
        steps = events.steps if events is not None else no_steps()
        span = int(steps.end_ps.max()) - int(steps.begin_ps.min()) if len(steps) else 0
        all_db = with_idle(OpMetricsDb(**empty_columns(0), total_time_ps=span))
        missing = None
    cores = max(len(devices), 1) if chosen is None else 1
    stats = OpStats(
        hosts=[host],
        run_env=RunEnvironment(
            hardware_type="CPU",
            device_type=CPU_DEVICE_TYPE,
            device_core_count=cores,
            active_core_count=cores if count else 0,
        ),
        perf_env=peaks or PerfEnv(source="none"),
        all_db=all_db,
        unattributed=missing,
        devices=devices,
        device=device,
    )
    if events is not None and len(events.steps):
        stats.has_step_markers = True
        stats.steps, warnings = cpu_steps(events, modules, claimed, chosen)
        stats.diagnostics.warnings.extend(warnings)
    return stats


def step_executions(events: HostEvents) -> tuple[np.ndarray, Executions] | None:
    """Each op event's execution (``cpu_executions``) and the step that claims each; None
    without steps or ops. The events' program and run columns, read by the grouping alone,
    go once it is done: the step cells made later are the reader's peak of memory."""
    if not len(events.steps) or not len(events.op):
        return None
    device = events.op_device if len(events.op_device) else None
    of_op = group_executions(
        events.op_begin, events.op_program, events.op_run, events.op_has_run, events.marks, device
    )
    events.op_program, events.op_run, events.op_has_run = _NO_I64, _NO_I64, np.zeros(0, bool)
    steps = events.steps
    executions = claim_executions(
        of_op, events.op_begin, events.op_end, steps.begin_ps, steps.end_ps, events.marks, device
    )
    return of_op, executions


def cpu_steps(
    events: HostEvents,
    modules: dict[int, ModuleCosts],
    claimed: tuple[np.ndarray, Executions] | None,
    chosen: int | None = None,
) -> tuple[list[StepInfo], list[str]]:
    """One StepInfo per step root, holding the executions it claims (``claimed``: what
    ``step_executions`` found); and the warnings about executions no step claims and steps
    without an execution. ``chosen``: the index of the one device kept (None: all)."""
    starts, ends, numbers = events.steps.begin_ps, events.steps.end_ps, events.steps.numbers
    if claimed is None:  # no XLA program ran: the steps hold nothing to cost
        ops, _ = cpu_ops(events, modules, _NO_I64, (ends - starts).tolist())
        return table_steps(ops, numbers, ends > starts, (ends - starts).tolist()), []
    of_op, executions = claimed
    durations, held = step_times(executions, starts, ends, chosen)
    group = np.where(events.on_device(chosen), executions.step[of_op], -1)
    del of_op, claimed
    # The executions' temporaries left holes in the heap (~250 MB on the 1 GB profile): handed
    # back before the step cells, this function's peak of memory, are made.
    release_freed_memory()
    ops, _ = cpu_ops(events, modules, group, durations.tolist())
    warnings = []
    unclaimed = executions.unclaimed
    if chosen is not None and executions.device is not None:
        unclaimed = unclaimed & (executions.device == chosen)
    if unclaimed.any():
        spans = executions.last_ps[unclaimed] - executions.first_ps[unclaimed]
        count = int(unclaimed.sum())
        warnings.append(
            f"{counted(count, 'XLA program execution')} ({spans.sum() / 1e6:,.1f} us) ran "
            f"outside every step; {'it counts' if count == 1 else 'they count'} in Total only."
        )
    if (held == 0).any():
        missing = [num for num, n in zip(numbers, held.tolist()) if n == 0]
        warnings.append(
            f"{numbered(missing, 'step')} ran no XLA program execution in this profile (cut by "
            "the profile window, or its execution was not recorded): incomplete, left out of "
            "the average."
        )
    return table_steps(ops, numbers, (held > 0) & (ends > starts), durations.tolist()), warnings
