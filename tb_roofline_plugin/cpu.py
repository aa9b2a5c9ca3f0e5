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

from .event_table import StringCodes, first_seen_codes, line_tables, may_have_stats
from .hlo_cost import ModuleCosts
from .host_steps import number_steps, step_roots
from .op_metrics import HBM, READ, WRITE, OpMetricsDb, empty_columns, self_times, with_idle
from .op_stats import OpStats, StepInfo, table_steps
from .perf_env import PerfEnv, RunEnvironment
from .profile_reader import HOST_PLANE, Profile, stat_ids, stat_names
from .protos import xplane_pb2
from .step_ops import StepOps, cells, step_ops

CPU_DEVICE_TYPE = "CPU"
_OP_STATS = ("hlo_op", "program_id", "_r", "step_num")


@dataclass
class HostEvents:
    """XLA op events and step roots of the host plane (absolute ps)."""

    op_begin: np.ndarray
    op_end: np.ndarray
    op_self: np.ndarray
    op: np.ndarray  # int64 per event: its op, numbered in order of first appearance
    op_keys: list[tuple[int, str]]  # (program id, instruction name) of each op
    steps: list[tuple[int, int, int]]  # (step number, begin, end)


def read_host_events(plane: xplane_pb2.XPlane) -> HostEvents:
    begins, ends, selfs, programs, roots = [], [], [], [], []
    hlo_ops = StringCodes()
    ids = stat_ids(plane, _OP_STATS)
    stat_name = stat_names(plane)
    wanted = [ids.get("_r"), ids.get("hlo_op")]
    for line in plane.lines:
        if not may_have_stats(line, wanted):
            continue  # threads without XLA ops or step roots
        # The whole line at once (ops nest), with only the stats read here.
        (table,) = line_tables(line, [ids.get(name) for name in _OP_STATS], chunk_events=-1)
        roots.extend(step_roots(table, ids))
        local, values = table.string_codes(ids.get("hlo_op"), stat_name)
        named = np.array([bool(v) for v in values] + [False], bool)[local]
        has_program, program = table.integers(ids.get("program_id"))
        ops = np.flatnonzero(has_program & named)
        b, e = table.begin_ps[ops], table.end_ps[ops]
        begins.append(b)
        ends.append(e)
        selfs.append(self_times(b, e))
        programs.append(program[ops].astype(np.uint64))
        hlo_ops.add_distinct(values, local[ops])
    steps = number_steps(roots)
    empty = np.zeros(0, np.int64)
    if not begins:
        return HostEvents(empty, empty, empty, empty, [], steps)
    # An op is (program, instruction): the last "::" part of hlo_op names the instruction.
    text_code, texts = hlo_ops.factorized()
    name_ids: dict[str, int] = {}
    text_name = [name_ids.setdefault(str(t).rsplit("::", 1)[-1], len(name_ids)) for t in texts]
    name_code = np.asarray(text_name, np.int64)[text_code]
    names, width = list(name_ids), max(len(name_ids), 1)
    program_values, program_code = np.unique(np.concatenate(programs), return_inverse=True)
    op, keys = first_seen_codes(program_code.ravel().astype(np.int64) * width + name_code)
    op_keys = [(int(program_values[k // width]), names[k % width]) for k in keys.tolist()]
    return HostEvents(
        op_begin=np.concatenate(begins),
        op_end=np.concatenate(ends),
        op_self=np.concatenate(selfs),
        op=op.astype(np.int64),
        op_keys=op_keys,
        steps=steps,
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
    binned = cells(group[use], op[use], n, count)
    occurrences = binned.sum()
    time_ps = binned.sum((events.op_end - events.op_begin)[use])
    static = empty_columns(n)
    per_exec = np.zeros((n, 3))  # flops, bytes accessed, bytes written per execution
    known = np.zeros(n, bool)
    for row, (program, name) in enumerate(keys):
        module = modules.get(program)
        cost = module.cost(name) if module is not None else None
        static["program_id"][row] = program
        static["name"][row] = name
        if cost is None:
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
    events = read_host_events(plane) if plane is not None else None
    profile.done_reading()
    count = len(events.op) if events is not None else 0
    if count:
        span = int(events.op_end.max() - events.op_begin.min())
        whole, missing = cpu_ops(events, modules, np.zeros(count, np.int64), [span])
        all_db = whole.db(0)
    else:
        all_db, missing = with_idle(OpMetricsDb(**empty_columns(0))), None
    stats = OpStats(
        hosts=[host],
        run_env=RunEnvironment(
            hardware_type="CPU",
            device_type=CPU_DEVICE_TYPE,
            device_core_count=1,
            active_core_count=1 if count else 0,
        ),
        perf_env=peaks or PerfEnv(source="none"),
        all_db=all_db,
        unattributed=missing,
    )
    if events is not None and events.steps:
        stats.has_step_markers = True
        stats.steps = cpu_steps(events, modules)
    return stats


def cpu_steps(events: HostEvents, modules: dict[int, ModuleCosts]) -> list[StepInfo]:
    """One StepInfo per step root: the ops starting inside it, over its wall time."""
    starts = np.array([b for _, b, _ in events.steps], np.int64)
    ends = np.array([e for _, _, e in events.steps], np.int64)
    step = np.searchsorted(starts, events.op_begin, side="right") - 1
    inside = step >= 0
    inside[inside] &= events.op_begin[inside] < ends[step[inside]]
    step = np.where(inside, step, -1)
    ops, _ = cpu_ops(events, modules, step, (ends - starts).tolist())
    numbers = [num for num, _, _ in events.steps]
    return table_steps(ops, numbers, ends > starts, (ends - starts).tolist())
