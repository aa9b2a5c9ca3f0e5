"""CPU op metrics (JAX and TensorFlow XLA:CPU) from ``/host:CPU`` op events and the HLO cost model.

XLA:CPU op events run on host threads with ``hlo_op``/``program_id`` stats; ops of one
step can run concurrently on several threads, so the Program time is wall time (the
span of the ops, or of a step), never a sum of op times. Steps are host step roots
(``_r`` stat, e.g. ``jax.profiler.StepTraceAnnotation``); an op belongs to the step
whose span contains its start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .event_table import line_table, may_have_stats
from .hlo_cost import ModuleCosts
from .host_steps import number_steps
from .op_metrics import HBM, READ, WRITE, OpMetricsDb, empty_columns, self_times, with_idle
from .op_stats import OpStats, StepInfo
from .perf_env import PerfEnv, RunEnvironment
from .profile_reader import HOST_PLANE, Profile, stat_ids, stat_names
from .protos import xplane_pb2

CPU_DEVICE_TYPE = "CPU"
_OP_STATS = ("hlo_op", "program_id", "_r", "step_num")


@dataclass
class HostEvents:
    """XLA op events and step roots of the host plane (absolute ps)."""

    op_begin: np.ndarray
    op_end: np.ndarray
    op_self: np.ndarray
    op_program: list[int]
    op_name: list[str]
    steps: list[tuple[int, int, int]]  # (step number, begin, end)


def read_host_events(plane: xplane_pb2.XPlane) -> HostEvents:
    begins, ends, selfs, programs, names, roots = [], [], [], [], [], []
    ids = stat_ids(plane, _OP_STATS)
    stat_name = stat_names(plane)
    wanted = [ids.get("_r"), ids.get("hlo_op")]
    for line in plane.lines:
        if not may_have_stats(line, wanted):
            continue  # threads without XLA ops or step roots
        table = line_table(line)
        is_root, _ = table.integers(ids.get("_r"))
        step_num = table.numbers(ids.get("step_num"))
        for i in np.flatnonzero(is_root).tolist():
            num = -1.0 if np.isnan(step_num[i]) else float(step_num[i])
            roots.append((num, int(table.begin_ps[i]), int(table.end_ps[i])))
        hlo_op = table.strings(ids.get("hlo_op"), stat_name)
        has_program, program = table.integers(ids.get("program_id"))
        ops = np.flatnonzero(has_program & (hlo_op != None) & (hlo_op != ""))  # noqa: E711
        b, e = table.begin_ps[ops], table.end_ps[ops]
        begins.append(b)
        ends.append(e)
        selfs.append(self_times(b, e))
        programs.extend((program[ops].astype(np.uint64)).tolist())
        names.extend(str(op).rsplit("::", 1)[-1] for op in hlo_op[ops])
    steps = number_steps(roots)
    empty = np.zeros(0, np.int64)
    return HostEvents(
        op_begin=np.concatenate(begins) if begins else empty,
        op_end=np.concatenate(ends) if ends else empty,
        op_self=np.concatenate(selfs) if selfs else empty,
        op_program=programs,
        op_name=names,
        steps=steps,
    )


def cpu_ops_db(
    events: HostEvents, modules: dict[int, ModuleCosts], take: np.ndarray, total_time_ps: int
) -> tuple[OpMetricsDb, OpMetricsDb | None]:
    """(op metrics, ops not found in any HLO module) of the selected op events."""
    keys: dict[tuple[int, str], int] = {}
    rows = np.empty(len(events.op_name), np.int64)
    for i in np.nonzero(take)[0].tolist():
        rows[i] = keys.setdefault((events.op_program[i], events.op_name[i]), len(keys))
    n = len(keys)
    index = rows[take]
    occurrences = np.bincount(index, minlength=n)
    time_ps = np.bincount(index, weights=(events.op_end - events.op_begin)[take], minlength=n)
    self_ps = np.bincount(index, weights=events.op_self[take], minlength=n)
    known, unknown = [], []
    cols = empty_columns(n)
    for (program, name), row in keys.items():
        module = modules.get(program)
        cost = module.cost(name) if module is not None else None
        cols["program_id"][row] = program
        cols["name"][row] = name
        if cost is None:
            cols["category"][row] = "op without HLO module"
            unknown.append(row)
            continue
        known.append(row)
        execs = occurrences[row]
        cols["category"][row] = module.category(name)
        cols["flops"][row] = cols["model_flops"][row] = cost.flops * execs
        cols["bytes_accessed"][row] = cost.bytes_accessed * execs
        written = cost.bytes_written * execs
        read = max(cost.bytes_accessed * execs - written, 0.0)
        cols["breakdown"][row, HBM, READ] = read
        cols["breakdown"][row, HBM, WRITE] = written
        cols["has_breakdown"][row] = read > 0 or written > 0
        cols["source_file"][row], cols["source_line"][row], cols["source_stack"][row] = (
            module.source(name)
        )
        cols["dtype"][row] = cost.dtype
    cols["occurrences"] = occurrences.astype(np.int64)
    cols["time_ps"] = time_ps.astype(np.int64)
    cols["self_time_ps"] = self_ps.astype(np.int64)
    cols["normalized_time_ps"] = time_ps
    db = OpMetricsDb(**cols, total_time_ps=int(total_time_ps))
    missing = db.take(np.asarray(unknown, np.int64)) if unknown else None
    return db.take(np.asarray(known, np.int64)), missing


def cpu_op_stats(
    profile: Profile, host: str, modules: dict[int, ModuleCosts], peaks: PerfEnv | None
) -> OpStats:
    plane = profile.plane(HOST_PLANE)
    events = read_host_events(plane) if plane is not None else None
    count = len(events.op_name) if events is not None else 0
    take = np.ones(count, bool)
    if count:
        span = int(events.op_end.max() - events.op_begin.min())
        all_db, missing = cpu_ops_db(events, modules, take, span)
    else:
        all_db, missing = OpMetricsDb(**empty_columns(0)), None
    stats = OpStats(
        hosts=[host],
        run_env=RunEnvironment(
            hardware_type="CPU",
            device_type=CPU_DEVICE_TYPE,
            device_core_count=1,
            active_core_count=1 if count else 0,
        ),
        perf_env=peaks or PerfEnv(source="none"),
        all_db=with_idle(all_db),
        unattributed=missing,
    )
    if events is not None and events.steps:
        stats.has_step_markers = True
        stats.steps = cpu_steps(events, modules)
    return stats


def cpu_steps(events: HostEvents, modules: dict[int, ModuleCosts]) -> list[StepInfo]:
    """One StepInfo per step root: the ops starting inside it, over its wall time."""
    steps = []
    for num, begin, end in events.steps:
        take = (events.op_begin >= begin) & (events.op_begin < end)
        db, _ = cpu_ops_db(events, modules, take, end - begin)
        steps.append(StepInfo(num, end > begin, with_idle(db), duration_ps=end - begin))
    return steps
