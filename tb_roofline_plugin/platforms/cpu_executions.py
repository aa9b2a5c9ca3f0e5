"""XLA:CPU program executions: which execution each op event belongs to, and its step.

An execution of an XLA program is the unit a step claims, never split between two steps:

- JAX writes a ``run_id`` on every op event: (program, device, run id) is one execution
  (one launch on several devices, ``device_ordinal``, shares its run id).
- TensorFlow and PyTorch/XLA write ``run_id`` -1 or none. An execution then starts at the
  host event that hands the program to the runtime (``EXECUTE_EVENTS``); its ops are those
  of the program that start after it and before the next one. Without such events each op
  event stands alone (what the profile allows).
- JAX and TensorFlow run a step's programs inside its host span: the step whose span holds
  the execution's first op claims it. PyTorch/XLA traces a step inside its span and runs
  the graph later, often inside the next span: the k-th ``ScheduleSyncTensorsGraph`` (in
  step k's span) schedules the k-th execution, matched first in, first out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Host events that start one execution of a compiled program (outermost one counts).
EXECUTE_EVENTS = (
    "PjRtComputationClient::ExecuteComputation",  # PyTorch/XLA
    "CpuExecutable::ExecuteAsyncOnStream",  # TensorFlow (jit_compile)
    "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice",  # JAX
    "PjRtCpuExecutable::ExecuteHelper",
)
SCHEDULE_EVENT = "ScheduleSyncTensorsGraph"  # PyTorch/XLA: a step's graph handed to a device
NO_RUN_ID = -1  # TensorFlow's run_id: the same for every execution


@dataclass
class HostMarks:
    """Host events that delimit executions (begin/end ps, ascending by begin)."""

    execute_begin: np.ndarray
    execute_end: np.ndarray
    schedule_begin: np.ndarray


@dataclass
class Executions:
    """Op events grouped into executions, and the step that claims each execution."""

    of_op: np.ndarray  # int64 per op event: its execution
    first_ps: np.ndarray  # per execution: its first op's begin
    last_ps: np.ndarray  # per execution: its last op's end
    step: np.ndarray  # per execution: the index of the step claiming it, -1 for none
    deferred: bool  # claimed through PyTorch/XLA's scheduling chain, not by step spans
    device: np.ndarray | None = None  # per execution: its device (0..k-1); None: all 0

    @property
    def unclaimed(self) -> np.ndarray:
        return self.step < 0


def _factorize(*columns: np.ndarray) -> np.ndarray:
    """Group number (0..k-1, in key order) of each row of equal-length integer key columns."""
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, np.int64)
    # The columns as digits of one key where their ranges allow (the order is the same); a
    # column of one value adds no digit.
    key, span = None, 1
    for column in columns:
        low, high = int(column.min()), int(column.max())
        width = high - low + 1
        if width == 1:
            continue
        span *= width
        if span >= 1 << 62:
            return _lex_factorize(*columns)
        digit = column - low  # a new array: the key is built in place from it
        if key is None:
            key = digit
        else:
            key *= width
            key += digit
    if key is None:
        return np.zeros(n, np.int64)
    # A line's events of one execution come one after another: each run of equal keys is
    # numbered once, by a sort of the runs' keys (any order of equal keys numbers them alike).
    head = np.empty(n, bool)
    head[0] = True
    np.not_equal(key[1:], key[:-1], out=head[1:])
    starts = np.flatnonzero(head)
    keys = key[starts]
    del key, head
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.empty(len(ordered), bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    group = np.empty(len(ordered), np.int64)
    group[order] = np.cumsum(new) - 1
    return np.repeat(group, np.diff(starts, append=n))


def _lex_factorize(*columns: np.ndarray) -> np.ndarray:
    """``_factorize`` of columns whose ranges make no one int64 key."""
    n = len(columns[0])
    order = np.lexsort(columns[::-1])
    new = np.zeros(n, bool)
    new[0] = True
    for column in columns:
        ordered = column[order]
        new[1:] |= ordered[1:] != ordered[:-1]
    group = np.empty(n, np.int64)
    group[order] = np.cumsum(new) - 1
    return group


def group_executions(
    begin_ps: np.ndarray,
    program: np.ndarray,
    run_id: np.ndarray,
    has_run_id: np.ndarray,
    marks: HostMarks,
    device: np.ndarray | None = None,
) -> np.ndarray:
    """The execution (0..k-1) of each op event; see the module docstring for the rules.
    ``device``: each op event's device (None: one device)."""
    by_run = has_run_id & (run_id != NO_RUN_ID)
    keys = [np.asarray(program, np.int64)]  # then the device, then what tells runs apart
    if device is not None:
        keys.append(np.asarray(device, np.int64))
    if by_run.all():  # JAX: the run ids alone
        return _factorize(*keys, np.asarray(run_id, np.int64))
    # Otherwise the kind of key first: run id, the execute event's slot, or the event alone.
    if len(marks.execute_begin):
        other = np.searchsorted(marks.execute_begin, begin_ps, side="right") - 1
    else:
        other = np.arange(len(begin_ps))
    kind = np.where(by_run, 0, 1 if len(marks.execute_begin) else 2)
    return _factorize(kind, *keys, np.where(by_run, run_id, other))


def fifo_schedule(schedule_begin: np.ndarray, execute_begin: np.ndarray) -> np.ndarray:
    """Per execute event, the index of the schedule event it runs (-1: none), first in first
    out; an execute takes the oldest schedule not yet run that began before it."""
    matched = np.full(len(execute_begin), -1, np.int64)
    waiting, next_schedule = 0, 0  # schedules [waiting, next_schedule) began and wait
    for j, begin in enumerate(execute_begin.tolist()):
        next_schedule = int(np.searchsorted(schedule_begin, begin, side="left"))
        if waiting < next_schedule:
            matched[j] = waiting
            waiting += 1
    return matched


def _step_holding(step_begin: np.ndarray, step_end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Index of the step whose span holds each time, -1 for none (steps do not overlap)."""
    step = np.searchsorted(step_begin, t, side="right") - 1
    held = step >= 0
    held[held] &= t[held] < step_end[step[held]]
    return np.where(held, step, -1)


def claim_executions(
    of_op: np.ndarray,
    op_begin: np.ndarray,
    op_end: np.ndarray,
    step_begin: np.ndarray,
    step_end: np.ndarray,
    marks: HostMarks,
    op_device: np.ndarray | None = None,
) -> Executions:
    """Each execution's span, device and the step that claims it (``op_device``: each op
    event's device 0..k-1, None: one device; an execution runs on one device)."""
    count = int(of_op.max()) + 1 if len(of_op) else 0
    first = np.full(count, np.iinfo(np.int64).max)
    last = np.full(count, np.iinfo(np.int64).min)
    np.minimum.at(first, of_op, op_begin)
    np.maximum.at(last, of_op, op_end)
    device = None
    if op_device is not None:
        device = np.zeros(count, np.int64)
        device[of_op] = op_device
    deferred = bool(len(marks.schedule_begin) and len(marks.execute_begin) and count)
    if deferred:
        # An execution's execute event: the last one starting at or before its first op.
        execute = np.searchsorted(marks.execute_begin, first, side="right") - 1
        schedule = fifo_schedule(marks.schedule_begin, marks.execute_begin)
        schedule_step = _step_holding(step_begin, step_end, marks.schedule_begin)
        runs = np.where(execute >= 0, schedule[np.maximum(execute, 0)], -1)
        step = np.where(runs >= 0, schedule_step[np.maximum(runs, 0)], -1)
    else:
        step = _step_holding(step_begin, step_end, first)
    return Executions(of_op, first, last, step, deferred, device)


def step_times(
    executions: Executions,
    step_begin: np.ndarray,
    step_end: np.ndarray,
    only: int | None = None,
):
    """Device time (ps) of each step, summed over its devices (``only``: on that device,
    0..k-1), and how many executions it holds (there).

    On each device that ran in it, a step claimed by span runs from the earlier of its
    start and its first op to the later of its end and its last op (as GPU steps do); a
    PyTorch/XLA step's time is the span of its executions, the time its graph was running
    (its host span is tracing). A step without executions counts its span once.
    """
    count = len(step_begin)
    claimed = ~executions.unclaimed
    step = executions.step[claimed]
    device = executions.device
    devices = int(device.max()) + 1 if device is not None and len(device) else 1
    on = device[claimed] if device is not None else np.zeros(len(step), np.int64)
    held = np.bincount(step if only is None else step[on == only], minlength=count)
    cell = step * devices + on
    first = np.full(count * devices, np.iinfo(np.int64).max)
    last = np.full(count * devices, np.iinfo(np.int64).min)
    np.minimum.at(first, cell, executions.first_ps[claimed])
    np.maximum.at(last, cell, executions.last_ps[claimed])
    ran = last >= first
    starts, ends = np.repeat(step_begin, devices), np.repeat(step_end, devices)
    if executions.deferred:
        begin, end = first, last
    else:
        begin, end = np.minimum(first, starts), np.maximum(last, ends)
        # A step whose last op ran into the next step's span hands that time on: on each
        # device the next step starts where it ended, so steps never overlap and the Total
        # (the devices' spans) holds them all.
        order = np.argsort(step_begin, kind="stable")
        ended = np.where(ran, end, np.iinfo(np.int64).min).reshape(count, devices)[order]
        before = np.maximum.accumulate(ended, axis=0)
        previous = np.full_like(before, np.iinfo(np.int64).min)
        previous[1:] = before[:-1]
        later = np.empty_like(previous)
        later[order] = previous
        begin = np.maximum(begin, later.ravel())
        end = np.maximum(end, begin)
    time = np.where(ran, end - begin, 0).reshape(count, devices)
    time = time.sum(axis=1) if only is None else time[:, only]
    return np.where(held > 0, time, step_end - step_begin), held
