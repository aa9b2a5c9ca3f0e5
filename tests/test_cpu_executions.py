"""XLA:CPU executions and their steps: grouping rules, scheduling chain, and the warnings
about executions no step claims and steps without an execution (generated profiles)."""

from __future__ import annotations

import numpy as np
import pytest

from tb_roofline_plugin.demo import CpuSpec, cpu_xspace
from tb_roofline_plugin.platforms.analysis import analyze_bytes
from tb_roofline_plugin.platforms.cpu_executions import (
    HostMarks,
    claim_executions,
    fifo_schedule,
    group_executions,
    step_times,
)
from tb_roofline_plugin.protos import xplane_pb2
from tb_roofline_plugin.wording import named, numbered


def _marks(execute=(), schedule=()) -> HostMarks:
    begin = np.array([b for b, _ in execute], np.int64)
    end = np.array([e for _, e in execute], np.int64)
    return HostMarks(begin, end, np.array(schedule, np.int64))


def test_run_ids_make_executions_per_program():
    begin = np.array([0, 5, 10, 15, 20])
    program = np.array([1, 1, 2, 1, 1])
    run = np.array([7, 7, 7, 8, 8])
    groups = group_executions(begin, program, run, np.ones(5, bool), _marks())
    assert groups.tolist() == [0, 0, 2, 1, 1]  # numbered by (program, run id)


def test_interleaved_runs_of_executions_number_by_key_whatever_their_order():
    # Two threads' ops interleaved: each execution comes in several runs, one program is
    # constant on a device, and run ids are JAX's (anywhere in int32).
    rng = np.random.default_rng(7)
    run = rng.choice(np.array([-2_000_000_000, 5, 1_900_000_000, 77]), 400)
    run = np.repeat(run, rng.integers(1, 4, 400))  # runs of equal keys, as a line has
    program = np.where(run == 77, 3, 1)
    begin = np.arange(len(run))
    groups = group_executions(begin, program, run, np.ones(len(run), bool), _marks())
    # Oracle: the rank of each (program, run id) among the sorted distinct keys.
    keys = sorted(set(zip(program.tolist(), run.tolist())))
    expected = [keys.index(k) for k in zip(program.tolist(), run.tolist())]
    assert groups.tolist() == expected
    assert sorted(set(groups.tolist())) == [0, 1, 2, 3]


def test_without_run_ids_executions_start_at_execute_events():
    begin = np.array([3, 4, 12, 13, 30])
    run = np.full(5, -1)  # TensorFlow: run_id -1 on every op
    marks = _marks(execute=[(2, 5), (11, 12), (25, 26)])
    groups = group_executions(begin, np.zeros(5, np.int64), run, np.ones(5, bool), marks)
    assert groups.tolist() == [0, 0, 1, 1, 2]


def test_without_run_ids_or_execute_events_each_op_stands_alone():
    begin = np.array([3, 4, 12])
    none = np.zeros(3, np.int64)
    groups = group_executions(begin, none, none, np.zeros(3, bool), _marks())
    assert groups.tolist() == [0, 1, 2]


def test_schedules_run_first_in_first_out():
    # A graph in flight at the window's start (execute 0 has no schedule), then two steps.
    schedule = np.array([100, 300])
    execute = np.array([50, 150, 400])
    assert fifo_schedule(schedule, execute).tolist() == [-1, 0, 1]
    # The last schedule's graph ran after the window closed.
    assert fifo_schedule(np.array([100, 300, 500]), np.array([150, 400])).tolist() == [0, 1]


def test_deferred_executions_belong_to_the_step_that_scheduled_them():
    # Steps [0, 100) and [100, 200) trace and schedule; graphs run later.
    marks = _marks(execute=[(120, 121), (250, 251)], schedule=[80, 190])
    op_begin = np.array([130, 140, 260, 270])
    op_end = np.array([139, 180, 269, 300])
    of_op = group_executions(op_begin, np.zeros(4, np.int64), np.zeros(4, np.int64),
                             np.zeros(4, bool), marks)  # fmt: skip
    starts, ends = np.array([0, 100]), np.array([100, 200])
    executions = claim_executions(of_op, op_begin, op_end, starts, ends, marks)
    assert executions.deferred
    assert executions.step.tolist() == [0, 1]
    durations, held = step_times(executions, starts, ends)
    assert durations.tolist() == [180 - 130, 300 - 260]  # when each graph ran
    assert held.tolist() == [1, 1]


def test_steps_claimed_by_span_cover_their_late_ends():
    marks = _marks()
    op_begin, op_end = np.array([10, 50]), np.array([40, 130])
    of_op = group_executions(op_begin, np.zeros(2, np.int64), np.array([3, 3]),
                             np.ones(2, bool), marks)  # fmt: skip
    starts, ends = np.array([5, 200]), np.array([120, 300])
    executions = claim_executions(of_op, op_begin, op_end, starts, ends, marks)
    durations, held = step_times(executions, starts, ends)
    assert executions.step.tolist() == [0]
    assert durations.tolist() == [130 - 5, 300 - 200]
    assert held.tolist() == [1, 0]


def test_lists_in_messages_are_summarised():
    assert numbered([3], "step") == "step 3"
    assert numbered([7, 0, 4], "step") == "steps 0, 4 and 7"
    assert numbered(range(1498), "step") == "1,498 steps, 0–1,497"
    assert named(["a", "b"], "op") == "ops a and b"
    assert named([f"op{i}" for i in range(8)], "op") == "8 ops (op0, op1, op2, op3, op4 and 3 more)"


# --- generated profiles ---------------------------------------------------------------------


def _host(space):
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    return plane


def _raw_runs(space) -> dict[int, tuple[int, int]]:
    """(first begin, last end) of each run id's op events, from the raw events."""
    plane = _host(space)
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    runs: dict[int, list[int]] = {}
    for line in plane.lines:
        for event in line.events:
            stats = {names[s.metadata_id]: s.int64_value for s in event.stats}
            if "run_id" in stats:
                begin = line.timestamp_ns * 1000 + event.offset_ps
                span = runs.setdefault(stats["run_id"], [begin, begin + event.duration_ps])
                span[0] = min(span[0], begin)
                span[1] = max(span[1], begin + event.duration_ps)
    return {run: (b, e) for run, (b, e) in runs.items()}


def test_an_execution_no_step_claims_counts_in_total_only_with_a_warning():
    space = cpu_xspace(CpuSpec())  # one eval run before the first step root
    runs = sorted(_raw_runs(space).values())
    first_root = min(
        line.timestamp_ns * 1000 + e.offset_ps
        for line in _host(space).lines
        if line.name == "python"
        for e in line.events
        if _host(space).event_metadata[e.metadata_id].name == "train"
    )
    early = [(b, e) for b, e in runs if b < first_root]
    assert len(early) == 1
    stats = analyze_bytes(space.SerializeToString(), "cpu-host.xplane.pb")
    us = (early[0][1] - early[0][0]) / 1e6
    assert (
        f"1 XLA program execution ({us:,.1f} us) ran outside every step; it counts in Total only."
    ) in stats.diagnostics.warnings
    assert [s.complete for s in stats.steps] == [True] * 4
    in_steps = sum(float(s.db.flops.sum()) for s in stats.steps)
    assert float(stats.all_db.flops.sum()) > in_steps  # the early run counts in Total


def test_a_step_without_its_execution_is_incomplete_with_a_warning():
    space = cpu_xspace(CpuSpec())
    plane = _host(space)
    (python,) = [line for line in plane.lines if line.name == "python"]
    root = next(e for e in python.events if plane.event_metadata[e.metadata_id].name == "train")
    extra = xplane_pb2.XEvent()
    extra.CopyFrom(root)
    extra.offset_ps = python.duration_ps + 1_000_000  # after every execution
    step_num = next(k for k, m in plane.stat_metadata.items() if m.name == "step_num")
    (stat,) = [s for s in extra.stats if s.metadata_id == step_num]
    stat.int64_value = 4
    python.events.append(extra)
    stats = analyze_bytes(space.SerializeToString(), "cpu-host.xplane.pb")
    assert [(s.step_num, s.complete) for s in stats.steps] == [
        (0, True),
        (1, True),
        (2, True),
        (3, True),
        (4, False),
    ]
    assert any(
        w.startswith("step 4 ran no XLA program execution in this profile")
        for w in stats.diagnostics.warnings
    )
    assert stats.steps[4].db.flops.sum() == pytest.approx(0)


def test_an_op_ends_at_the_first_end_event_of_its_flow_after_it_starts():
    from tb_roofline_plugin.platforms.cpu import flight_ends

    begin = np.array([0, 100, 200, 300])
    end = np.array([10, 110, 250, 310])
    flow = np.array([7, 7, 8, 9])  # flow 7 repeats (a trace tiled or a long-running process)
    has_flow = np.array([True, True, True, False])
    flow_ids = np.array([7, 7, 8, 9])
    flow_end = np.array([90, 180, 220, 400])  # 8's end event is before the op's own end
    assert flight_ends(begin, end, flow, has_flow, flow_ids, flow_end).tolist() == [
        90,
        180,
        250,
        310,  # no flow stat: its own end
    ]


def test_flight_ends_of_unique_end_ids_equal_the_general_matching():
    from tb_roofline_plugin.platforms import cpu

    rng = np.random.default_rng(3)
    n = 5000
    begin = np.sort(rng.integers(0, 10**9, n))
    end = begin + rng.integers(1, 10**5, n)
    flow = rng.permutation(n * 2)[:n].astype(np.int64)  # ids of the ops, some without an end
    has_flow = rng.random(n) < 0.9
    flow_ids = rng.permutation(flow)[: n - 300]  # unique end ids
    position = {int(f): i for i, f in enumerate(flow)}
    flow_end = np.array([end[position[int(f)]] for f in flow_ids]) + rng.integers(
        -(10**5), 10**6, len(flow_ids)
    )
    fast = cpu.flight_ends(begin, end, flow, has_flow, flow_ids, flow_end)
    assert cpu._unique_flow_ends(begin, flow, flow_ids, flow_end) is not None  # the fast path
    repeated = np.concatenate([flow_ids, [flow_ids[0]]])  # one repeated id: the general path
    general = cpu.flight_ends(begin, end, flow, has_flow, repeated, np.append(flow_end, -(10**12)))
    assert cpu._unique_flow_ends(begin, flow, repeated, np.append(flow_end, -(10**12))) is None
    assert np.array_equal(fast, general)
    assert (fast > end).sum() > 100 and (fast == end).sum() > 100  # both kinds of op


def test_flight_ends_with_repeated_end_ids_equal_a_loop_over_the_ops():
    """The general matching (ids repeat: a tiled or long trace) against the rule itself, op by
    op: the first end event of its id whose end is at or after the op's start."""
    from tb_roofline_plugin.platforms.cpu import flight_ends

    rng = np.random.default_rng(11)
    n = 3000
    begin = rng.integers(0, 10**6, n)  # not sorted, times repeat
    begin[:50] = 1000
    end = begin + rng.integers(0, 10**4, n)
    flow = rng.integers(0, 400, n)  # ~8 ops an id
    has_flow = rng.random(n) < 0.8
    flow_ids = rng.integers(0, 450, 2500)  # ~6 ends an id, some ids without one
    flow_end = rng.integers(0, 10**6 + 10**4, len(flow_ids))
    flow_end[:20] = 1000  # ends at an op's very start count
    expected = end.copy()
    for op in np.flatnonzero(has_flow):
        later = flow_end[(flow_ids == flow[op]) & (flow_end >= begin[op])]
        if len(later):
            expected[op] = max(end[op], later.min())
    got = flight_ends(begin, end, flow, has_flow, flow_ids, flow_end)
    assert np.array_equal(got, expected)
    assert (got > end).sum() > 500 and (got == end).sum() > 500
