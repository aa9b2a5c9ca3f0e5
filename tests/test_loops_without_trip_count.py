"""A ``while`` whose trip count XLA does not know (no ``known_trip_count`` in its backend
config) carries the iterations that ran: its row's FLOPs are the iterations observed in
each of its executions times XLA's cost of one iteration, so they equal its nested work.

Oracles: the iterations counted in the raw XSpace (``xplane_pb2``): the most executions of
one body instruction among the op events starting in each while event's flight (the event
until its flow-linked ``end:`` event); jaxlib's own HloCostAnalysis of the loop's body and
condition; and, for a freshly recorded JAX ``lax.while_loop``, the trip counts the test
passes to it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from test_loops_and_devices import _jaxlib_flops, _module, _path, _raw_host_ops, _rooted

from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import hlo_pb2, roofline_model_pb2
from tb_roofline_plugin.roofline.model import build_database

ALL, PER_STEP = roofline_model_pb2.ALL, roofline_model_pb2.PER_STEP
KERAS_FIT = "new-producers/tf_keras_fit/train"
KERAS_STEP = "a_inference_one_step_on_data_2781__.25"  # the jitted train step of `fit`
PRED = 1  # xla PrimitiveType PRED: a loop condition's result


def _loop_parts(module: hlo_pb2.HloModuleProto, name: str):
    """(while instruction, body computation, condition computation), in XLA's order (body
    first), checked: the condition's root is a PRED scalar, the body's is not."""
    computations = {c.id: c for c in module.computations}
    (loop,) = [i for c in module.computations for i in c.instructions if i.name == name]
    body, condition = (computations[c] for c in loop.called_computation_ids)

    def is_condition(c: hlo_pb2.HloComputationProto) -> bool:
        (root,) = [i for i in c.instructions if i.id == c.root_id]
        return root.shape.element_type == PRED and not root.shape.dimensions

    assert is_condition(condition) and not is_condition(body)
    return loop, body, condition


def _raw_trips(path: Path, program_id: int, name: str, body_names: set[str]) -> list[int]:
    """Iterations of each event of loop ``name`` (in time order) from the raw XSpace: the
    most events of one body instruction starting in the loop event's flight."""
    plane, raw = _raw_host_ops(path)
    ops = []
    for stats, begin, end in raw:
        if (stats["program_id"].int64_value or stats["program_id"].uint64_value) == program_id:
            op = stats["hlo_op"]
            text = op.str_value or plane.stat_metadata[op.ref_value].name
            ops.append((begin, end, text.rsplit("::", 1)[-1]))
    loops = sorted((b, e) for b, e, n in ops if n == name)
    trips = []
    for begin, end in loops:
        counts = Counter(n for b, _, n in ops if begin <= b < end and n in body_names)
        trips.append(max(counts.values(), default=0))
    return trips


def _rows(path: Path):
    database = build_database(analyze_file(path))
    records = [r for r in database.roofline_model_record if r.include_infeed_outfeed]
    ops = [r for r in records if r.record_type == ALL and r.rank > 0 and r.hlo_name != "IDLE"]
    steps = [r for r in records if r.record_type == PER_STEP]
    return {r.hlo_name: r for r in ops}, steps


def _nested_names(module: hlo_pb2.HloModuleProto, computation_ids) -> set[str]:
    computations = {c.id: c for c in module.computations}
    found, todo = set(), list(computation_ids)
    while todo:
        for instruction in computations[todo.pop()].instructions:
            found.add(instruction.name)
            todo.extend(instruction.called_computation_ids)
    return found


def test_keras_gradient_loop_carries_the_40_iterations_each_run_ran(shared_data):
    flops = _jaxlib_flops()
    path = _path(shared_data, KERAS_FIT)
    module = _module(path, KERAS_STEP)
    loop, body, condition = _loop_parts(module, "while.10")
    assert "known_trip_count" not in json.loads(loop.backend_config or "{}")
    trips = _raw_trips(path, module.id, "while.10", {i.name for i in body.instructions})
    assert trips == [40, 40, 40, 40]  # the forward loop's known trip count: 40 time steps
    iteration = flops(_rooted(module, body.id)) + flops(_rooted(module, condition.id))
    rows, _ = _rows(path)
    row = rows["while.10"]
    assert row.occurrences == 4
    assert row.flops == pytest.approx(sum(trips) * iteration, rel=1e-9)
    # Its FLOPs are its nested ops' (the condition's compare runs 41 times a run: 4 FLOPs).
    nested = _nested_names(module, loop.called_computation_ids)
    leaves = [r for n, r in rows.items() if n in nested]
    assert row.flops == pytest.approx(sum(r.flops for r in leaves), abs=4)
    # So its rate is its body's work over the loop's span, near the body ops' own rate.
    assert row.measured_flop_rate == pytest.approx(row.flops / row.total_time_in_us / 1e3)
    body_rate = sum(r.flops for r in leaves) / sum(r.total_self_time_in_us for r in leaves) / 1e3
    assert 0.8 * body_rate < row.measured_flop_rate <= body_rate


def test_keras_loop_with_a_known_trip_count_keeps_it(shared_data):
    flops = _jaxlib_flops()
    path = _path(shared_data, KERAS_FIT)
    module = _module(path, KERAS_STEP)
    loop, body, condition = _loop_parts(module, "while.9")
    assert json.loads(loop.backend_config)["known_trip_count"]["n"] == "40"
    iteration = flops(_rooted(module, body.id)) + flops(_rooted(module, condition.id))
    rows, _ = _rows(path)
    assert rows["while.9"].flops == pytest.approx(4 * 40 * iteration, rel=1e-9)


TRIPS = [3, 7, 5]  # the generated loop's trip count in each step
N = 128


def test_jax_while_loop_on_data_carries_each_steps_iterations(tmp_path):
    flops = _jaxlib_flops()
    from jax_programs import record_while_loop

    path, module_name = record_while_loop(tmp_path, TRIPS, size=N)
    module = _module(path, module_name)
    (name,) = [i.name for c in module.computations for i in c.instructions if i.opcode == "while"]
    loop, body, condition = _loop_parts(module, name)
    assert "known_trip_count" not in json.loads(loop.backend_config or "{}")
    assert _raw_trips(path, module.id, name, {i.name for i in body.instructions}) == TRIPS
    iteration = flops(_rooted(module, body.id)) + flops(_rooted(module, condition.id))
    assert iteration == pytest.approx(2 * N**3, rel=1e-3)  # one matmul (and tanh, counter)
    rows, steps = _rows(path)
    assert rows[name].flops == pytest.approx(sum(TRIPS) * iteration, rel=1e-9)
    nested = _nested_names(module, loop.called_computation_ids)
    leaves = sum(r.flops for n, r in rows.items() if n in nested)
    assert rows[name].flops == pytest.approx(leaves, rel=1e-6)
    # Each step's row holds that step's iterations; the step's Program its body's work.
    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == list(range(len(TRIPS)))
    for info, trips in zip(stats.steps, TRIPS):
        db = info.db
        (row,) = [k for k, n in enumerate(db.name.tolist()) if n == name]
        assert db.flops[row] == pytest.approx(trips * iteration, rel=1e-9)
        (program,) = [r for r in steps if r.step_num == info.step_num and r.rank == 0]
        assert program.flops == pytest.approx(trips * 2 * N**3, rel=1e-3)


# --- the rule, by hand -----------------------------------------------------------------------


def _nested_loops_module():
    """``outer`` (known_trip_count 2) runs ``inner`` (no trip count) once an iteration;
    ``inner``'s body is ``mul`` (f32[16] x f32[16]: 16 FLOPs), its condition ``lt_i`` (1 FLOP);
    ``outer``'s condition ``lt_o`` (1 FLOP). ``call`` runs ``loose``, a loop like ``inner``."""
    from test_hlo_cost import ModuleBuilder, shape

    b = ModuleBuilder("nested_loops")
    x = shape("f32", 16)

    def loop_parts(tag: str):
        cond = b.computation(f"cond_{tag}")
        p = cond.param(f"c{tag}", x)
        n = cond.op(f"n{tag}", "constant", shape("f32"))
        s = cond.op(f"s{tag}", "slice", shape("f32"), p)
        cond.op(f"lt_{tag}", "compare", shape("pred"), s, n, comparison_direction="LT")
        return cond

    body_i = b.computation("body_i")
    y = body_i.param("yi", x)
    body_i.op("mul", "multiply", x, y, y)
    cond_i = loop_parts("i")
    body_o = b.computation("body_o")
    body_o.op("inner", "while", x, body_o.param("yo", x), calls=[body_i, cond_i])
    cond_o = loop_parts("o")
    body_l = b.computation("body_l")
    z = body_l.param("yl", x)
    body_l.op("mul_l", "multiply", x, z, z)
    callee = b.computation("callee")
    callee.op("loose", "while", x, callee.param("yc", x), calls=[body_l, loop_parts("l")])
    e = b.computation("main", entry=True)
    p0 = e.param("p0", x)
    known = b'{"known_trip_count":{"n":"2"}}'
    e.op("outer", "while", x, p0, calls=[body_o, cond_o], backend_config=known)
    e.op("call", "call", x, p0, calls=[callee])
    return b.costs()


def test_observed_trips_body_then_condition_then_xlas_one():
    import numpy as np

    from tb_roofline_plugin.platforms.cpu_control_flow import observed_trips

    # Loop events 0..3; op rows: 5, 6 body, 7 condition. Event 0: body ops 3 and 2 times;
    # event 1: only its condition, 4 times; event 2: the condition once (no iteration);
    # event 3: nothing observed.
    group = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 2])
    op = np.array([5, 5, 5, 6, 6, 7, 7, 7, 7, 7])
    trips = observed_trips(group, op, np.array([5, 6]), np.array([7]), 4)
    assert trips.tolist() == [3, 3, 0, 1]


def test_a_loop_without_trip_count_and_its_containers_carry_its_iterations():
    import numpy as np

    from tb_roofline_plugin.platforms.cpu_control_flow import control_flow

    module = _nested_loops_module()
    assert module.unknown_trip_loop("inner") == (["yi", "mul"], ["ci", "ni", "si", "lt_i"])
    assert module.unknown_trip_loop("outer") is None  # known: counted by its trip count
    assert (module.work("inner").flops, module.work("outer").flops) == (17, 36)
    keys = [(1, n) for n in ("outer", "inner", "mul", "lt_i", "lt_o", "call", "loose", "mul_l")]
    row = {n: k for k, (_, n) in enumerate(keys)}
    # (op, begin, end) in us: outer [0, 100) runs inner twice: [10, 40) with 3 iterations
    # (mul 3x, lt_i 4x), [50, 90) with 5; call [200, 300) runs loose with 4 (mul_l 4x).
    events = [
        ("outer", 0, 100),
        ("inner", 10, 40),
        ("inner", 50, 90),
        ("lt_o", 45, 46),
        ("lt_o", 95, 96),
        ("lt_o", 97, 98),
        ("call", 200, 300),
        ("loose", 210, 290),
    ]
    events += [("mul", 11 + 5 * k, 14 + 5 * k) for k in range(3)]
    events += [("lt_i", 10 + 5 * k, 11 + 5 * k) for k in range(4)]
    events += [("mul", 51 + 5 * k, 54 + 5 * k) for k in range(5)]
    events += [("lt_i", 50 + 5 * k, 51 + 5 * k) for k in range(6)]
    events += [("mul_l", 211 + 5 * k, 214 + 5 * k) for k in range(4)]
    op = np.array([row[n] for n, _, _ in events])
    begin = np.array([b for _, b, _ in events]) * 1_000_000
    end = np.array([e for _, _, e in events]) * 1_000_000
    flow = control_flow(op, keys, begin, end.copy(), end, np.zeros(len(op), np.int64), {1: module})
    extra = np.zeros(len(op))
    np.add.at(extra, flow.extra_event, flow.extra_work[:, 0])
    flops = {n: 0.0 for n in row}
    for k, (name, _, _) in enumerate(events):
        flops[name] += module.work(name).flops + extra[k]
    # inner: (3 + 5) iterations x 17; outer: 2 x 18 as XLA counts it, plus inner's
    # iterations beyond the one a run it counts: 36 + (2 + 4) x 17 = 138 = 8 x 16 (mul) +
    # 8 x 1 (lt_i) + 2 x 1 (lt_o), its leaves' FLOPs by hand (lt_o's third compare uncounted).
    assert flops["inner"] == 8 * 17 == 136
    assert flops["outer"] == 138 == 8 * 16 + 8 * 1 + 2 * 1
    # call: its one loose loop (one iteration 17) ran 4: 4 x 17 = 68.
    assert flops["loose"] == flops["call"] == 68
