"""Several devices on one host, and control flow (while, call) counted once.

Oracles come from the raw XSpace (device ordinals, op flights), from jaxlib's own
HloCostAnalysis of the HLO in the profile with the loops' ``known_trip_count``, from the
recording's MANIFEST figure, or by hand for a freshly recorded JAX program.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import hlo_pb2, roofline_model_pb2, xplane_pb2
from tb_roofline_plugin.roofline.model import build_database

ALL, PER_STEP = roofline_model_pb2.ALL, roofline_model_pb2.PER_STEP
LSTM_STEP_FLOPS = 2_453_793_014  # MANIFEST: XLA's cost of one step with trip counts 24, 24, 3


def _path(shared_data: Path, folder: str) -> Path:
    (path,) = (shared_data / folder).glob("plugins/profile/*/*.xplane.pb")
    return path


def _records(path: Path):
    database = build_database(analyze_file(path))
    records = [r for r in database.roofline_model_record if r.include_infeed_outfeed]
    ops = [r for r in records if r.record_type == ALL and r.rank > 0 and r.hlo_name != "IDLE"]
    (program,) = [r for r in records if r.record_type == ALL and r.rank == 0]
    steps = [r for r in records if r.record_type == PER_STEP and r.rank == 0]
    return program, ops, steps


def _raw_step_window(path: Path) -> tuple[int, int]:
    """First start and last end (ps) of the host's step markers (events with step_num)."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    spans = []
    for line in plane.lines:
        base = line.timestamp_ns * 1000
        for event in line.events:
            if any(names.get(s.metadata_id) == "step_num" for s in event.stats):
                begin = base + event.offset_ps
                spans.append((begin, begin + event.duration_ps))
    return min(b for b, _ in spans), max(e for _, e in spans)


def _raw_host_ops(path: Path):
    """The host plane of the raw XSpace and (stats by name, begin, end of flight) of each of
    its op events: an op's flight ends at the last ``end: `` event its flow (``_p``) reaches."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    ops, ends = [], {}
    for line in plane.lines:
        base = line.timestamp_ns * 1000
        for event in line.events:
            stats = {names.get(s.metadata_id): s for s in event.stats}
            begin = base + event.offset_ps
            end = begin + event.duration_ps
            if plane.event_metadata[event.metadata_id].name.startswith("end: ") and "_c" in stats:
                flow = stats["_c"].uint64_value or stats["_c"].int64_value
                ends[flow] = max(ends.get(flow, end), end)
            if "hlo_op" in stats and "program_id" in stats:
                flow = (
                    stats["_p"].uint64_value or stats["_p"].int64_value if "_p" in stats else None
                )
                ops.append((stats, begin, end, flow))
    return plane, [(s, b, max(e, ends.get(f, e))) for s, b, e, f in ops]


def _raw_ops(path: Path):
    """(device ordinal, begin, end of flight) of every op event, from the raw XSpace."""
    _, ops = _raw_host_ops(path)
    return [
        (s["device_ordinal"].int64_value if "device_ordinal" in s else 0, begin, end)
        for s, begin, end in ops
    ]


# --- several devices on one host ------------------------------------------------------------


def test_sharded_host_counts_four_devices_and_shares_of_their_summed_time(shared_data):
    path = _path(shared_data, "new-producers/jax_sharded4_jit")
    raw = _raw_ops(path)
    first, last = defaultdict(lambda: 2**63), defaultdict(lambda: -(2**63))
    for device, begin, end in raw:
        first[device] = min(first[device], begin)
        last[device] = max(last[device], end)
    assert sorted(first) == [0, 1, 2, 3]
    # Each device's span, widened to the steps' window (steps are widened to their host span).
    begin, end = _raw_step_window(path)
    summed_us = sum(max(last[d], end) - min(first[d], begin) for d in first) / 1e6
    stats = analyze_file(path)
    assert stats.run_env.device_core_count == 4
    assert stats.run_env.active_core_count == 4
    program, ops, steps = _records(path)
    assert program.total_time_in_us == pytest.approx(summed_us, rel=1e-9)
    assert max(r.total_time_in_percentage for r in ops) <= 1.0
    assert max(r.total_self_time_as_fraction for r in ops) <= 1.0
    # Every step ran once on each device: four device spans, each at least a fifth of
    # the whole profile's per-device time.
    assert len(steps) == 5
    for step in steps:
        assert step.total_time_in_us >= summed_us / 4 / 5 * 0.9


def test_summary_says_four_devices(shared_data):
    from tb_roofline_plugin.render.summary import summary_text

    path = _path(shared_data, "new-producers/jax_sharded4_jit")
    text = summary_text(analyze_file(path), [str(path)])
    assert "4 devices" in text.splitlines()[1]


# --- control flow: loops -------------------------------------------------------------------


def _module(path: Path, name: str) -> hlo_pb2.HloModuleProto:
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:metadata"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    for meta in plane.event_metadata.values():
        for stat in meta.stats:
            if names[stat.metadata_id] == "Hlo Proto":
                module = hlo_pb2.HloProto.FromString(stat.bytes_value).hlo_module
                if module.name == name:
                    return module
    raise AssertionError(name)


def _trip_counts(module: hlo_pb2.HloModuleProto) -> dict[str, int]:
    return {
        i.name: int(json.loads(i.backend_config)["known_trip_count"]["n"])
        for c in module.computations
        for i in c.instructions
        if i.opcode == "while"
    }


def _jaxlib_flops():
    """jaxlib's HloCostAnalysis FLOPs of an HloModuleProto (skips where it is not importable)."""
    jax = pytest.importorskip("jax")
    try:
        from jax._src.lib import _jax
        from jaxlib import _hlo
    except ImportError as exc:
        pytest.skip(f"jaxlib's module cost analysis is not importable here: {exc}")
    client = jax.devices("cpu")[0].client

    def flops(module: hlo_pb2.HloModuleProto) -> float:
        hlo = _hlo.HloModule.from_serialized_hlo_module_proto(module.SerializeToString())
        return float(_jax.hlo_module_cost_analysis(client, hlo).get("flops", 0.0))

    return flops


def _rooted(module: hlo_pb2.HloModuleProto, computation_id: int) -> hlo_pb2.HloModuleProto:
    """The module with one of its computations (and what that calls) as its entry."""
    computations = {c.id: c for c in module.computations}
    keep, todo = set(), [computation_id]
    while todo:
        c = todo.pop()
        if c not in keep:
            keep.add(c)
            for instruction in computations[c].instructions:
                todo.extend(instruction.called_computation_ids)
    out = hlo_pb2.HloModuleProto(
        name=module.name,
        id=module.id,
        entry_computation_id=computation_id,
        entry_computation_name=computations[computation_id].name,
    )
    out.computations.extend(c for c in module.computations if c.id in keep)
    out.host_program_shape.CopyFrom(computations[computation_id].program_shape)
    out.stack_frame_index.CopyFrom(module.stack_frame_index)
    return out


def xla_trip_weighted_flops(module: hlo_pb2.HloModuleProto, flops) -> float:
    """XLA's cost of one execution with each loop run its ``known_trip_count`` times (once
    when unknown): jaxlib's cost of the module, plus (trips - 1) x the cost of each while
    body and condition (nested loops by their own trips, inside their outer loop's)."""
    computations = {c.id: c for c in module.computations}

    def cost(computation_id: int) -> float:
        total = flops(_rooted(module, computation_id))
        seen, todo = set(), [computation_id]
        while todo:  # the loops this computation runs, not through another loop
            c = todo.pop()
            if c in seen:
                continue
            seen.add(c)
            for instruction in computations[c].instructions:
                if instruction.opcode != "while":
                    todo.extend(instruction.called_computation_ids)
                    continue
                known = json.loads(instruction.backend_config or "{}").get("known_trip_count")
                trips = int(known["n"]) if known else 1
                condition, body = instruction.called_computation_ids
                once = flops(_rooted(module, body)) + flops(_rooted(module, condition))
                total += trips * (cost(body) + cost(condition)) - once
        return total

    return cost(module.entry_computation_id)


def _raw_executions(path: Path) -> list[tuple[int, int, int]]:
    """(program id, device ordinal, first op start) of each JAX execution (program, device,
    run_id) of the raw op events."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    first: dict[tuple[int, int, int], int] = {}
    for line in plane.lines:
        for event in line.events:
            stats = {names[s.metadata_id]: s.int64_value or s.uint64_value for s in event.stats}
            if "hlo_op" in stats and "program_id" in stats:
                key = (stats["program_id"], stats.get("device_ordinal", 0), stats["run_id"])
                begin = line.timestamp_ns * 1000 + event.offset_ps
                first[key] = min(first.get(key, begin), begin)
    return [(p, d, t) for (p, d, _), t in first.items()]


def _step_spans(path: Path) -> dict[int, tuple[int, int]]:
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    spans = {}
    for line in plane.lines:
        for event in line.events:
            stats = {names[s.metadata_id]: s.int64_value for s in event.stats}
            if "step_num" in stats:
                begin = line.timestamp_ns * 1000 + event.offset_ps
                spans[stats["step_num"]] = (begin, begin + event.duration_ps)
    return spans


@pytest.mark.parametrize(
    "folder", ["new-producers/jax_sharded4_jit", "new-producers/jax_scan_lstm"]
)
def test_step_flops_are_jaxlibs_trip_weighted_cost_of_their_executions(shared_data, folder):
    """Per step, and per device of the step: the executions whose first op starts in the
    step's span, each costed by jaxlib's HloCostAnalysis with the loops' trip counts."""
    flops = _jaxlib_flops()
    path = _path(shared_data, folder)
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (meta,) = [p for p in space.planes if p.name == "/host:metadata"]
    names = {k: m.name for k, m in meta.stat_metadata.items()}
    modules = {}
    for event in meta.event_metadata.values():
        for stat in event.stats:
            if names[stat.metadata_id] == "Hlo Proto":
                module = hlo_pb2.HloProto.FromString(stat.bytes_value).hlo_module
                modules[module.id] = module
    cost = {pid: xla_trip_weighted_flops(m, flops) for pid, m in modules.items()}
    executions, spans = _raw_executions(path), _step_spans(path)
    whole = analyze_file(path)
    for device in [None, *whole.devices] if len(whole.devices) > 1 else [None]:
        stats = whole if device is None else analyze_file(path, device=device)
        database = build_database(stats)
        steps = [
            r for r in database.roofline_model_record
            if r.include_infeed_outfeed and r.record_type == PER_STEP and r.rank == 0
        ]  # fmt: skip
        assert [r.step_num for r in steps] == sorted(spans)
        for step in steps:
            begin, end = spans[step.step_num]
            held = [p for p, d, t in executions if begin <= t < end and device in (None, d)]
            assert held, step.step_num
            oracle = sum(cost[p] for p in held)
            # jax_sharded4_jit: 1 FLOP an execution above jaxlib's (of 339,017,728).
            assert step.flops == pytest.approx(oracle, rel=1e-8), (device, step.step_num)
    if folder.endswith("lstm"):
        assert oracle == pytest.approx(LSTM_STEP_FLOPS, rel=1e-12)  # MANIFEST's figure


def test_lstm_step_flops_are_xlas_cost_with_trip_counts(shared_data):
    path = _path(shared_data, "new-producers/jax_scan_lstm")
    program, ops, steps = _records(path)
    assert len(steps) == 4
    for step in steps:
        assert step.flops == pytest.approx(LSTM_STEP_FLOPS, rel=1e-6), step.step_num
    # Each piece once: the Program is the rows but the loops, never loops and bodies.
    rows = sum(r.flops for r in ops if r.hlo_category != "while")
    assert program.flops == pytest.approx(rows, rel=1e-9)


def test_lstm_while_rows_carry_every_iteration(shared_data):
    """The three top-level loops (trip counts 24, 24, 3): a row's FLOPs is trips x one
    iteration, so Σ (trips - 1) x one iteration = XLA's trip-weighted step cost minus its
    one-iteration module cost (jaxlib's own HloCostAnalysis of the module)."""
    jax = pytest.importorskip("jax")
    try:
        from jax._src.lib import _jax
        from jaxlib import _hlo
    except ImportError as exc:
        pytest.skip(f"jaxlib's module cost analysis is not importable here: {exc}")
    path = _path(shared_data, "new-producers/jax_scan_lstm")
    module = _module(path, "jit_lstm_train_step")
    trips = _trip_counts(module)
    assert sorted(trips.values()) == [3, 24, 24]
    hlo = _hlo.HloModule.from_serialized_hlo_module_proto(module.SerializeToString())
    once = _jax.hlo_module_cost_analysis(jax.devices("cpu")[0].client, hlo)["flops"]
    _, ops, steps = _records(path)
    loops = {r.hlo_name: r for r in ops if r.hlo_category == "while"}
    assert sorted(loops) == sorted(trips)
    extra = sum(r.flops / r.occurrences * (trips[n] - 1) / trips[n] for n, r in loops.items())
    assert extra == pytest.approx(LSTM_STEP_FLOPS - once, rel=1e-6)
    # The loop's rate is its body's: no loop runs at a small fraction of its ops' rate.
    body_rate = sum(r.flops for r in ops if r.hlo_category != "while") / sum(
        r.total_self_time_in_us for r in ops if r.hlo_category != "while"
    )
    for row in loops.values():
        assert row.measured_flop_rate > body_rate / 1000 / 10  # GFLOP/s vs FLOP/us
        assert row.total_self_time_in_us < 0.2 * row.total_time_in_us
    top = sorted(ops, key=lambda r: r.rank)[:3]
    assert all(r.hlo_category != "while" for r in top)


def test_ptxla_call_and_its_only_child_rank_once(shared_data):
    path = _path(shared_data, "ptxla-cpu/mlp_server")
    _, ops, _ = _records(path)
    by_name = {r.hlo_name: r for r in ops}
    call, child = by_name["call.2"], by_name["multiply_add_fusion.3.clone"]
    assert call.total_time_in_us >= child.total_time_in_us
    assert call.total_self_time_in_us < 0.01 * call.total_time_in_us
    assert child.rank < call.rank
    calls = [r for r in ops if r.hlo_category == "call"]
    assert all(r.rank > 10 for r in calls)


def test_wasted_time_is_of_self_time(shared_data):
    from tb_roofline_plugin.ops.selection import select
    from tb_roofline_plugin.render.export import op_details
    from tb_roofline_plugin.roofline.classes import JUDGED

    path = _path(shared_data, "new-producers/jax_scan_lstm")
    stats = analyze_file(path)
    database = build_database(stats)
    details = op_details(database, stats, select(stats, "total"))
    wasted = {d["hlo_name"]: d["wasted_time_us"] for d in details}
    judged = {d["hlo_name"]: d["roofline_class"] == JUDGED for d in details}
    _, ops, _ = _records(path)
    assert any(judged.values()) and not all(judged.values())  # the loops are not judged
    for row in ops:
        if row.hlo_name in wasted:  # no peaks: efficiency 0, wasted = self time
            expected = row.total_self_time_in_us if judged[row.hlo_name] else 0.0
            assert wasted[row.hlo_name] == pytest.approx(expected, rel=1e-9)


# --- a freshly recorded nested loop --------------------------------------------------------


N = 128
OUTER, INNER = 3, 4


def test_nested_while_counts_each_matmul_once(tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def nested(x, w):
        def inner(_, y):
            return jnp.tanh(y @ w)

        return jax.lax.fori_loop(0, OUTER, lambda _, y: jax.lax.fori_loop(0, INNER, inner, y), x)

    args = (jnp.ones((N, N)), jnp.ones((N, N)) / N)
    jitted = jax.jit(nested)
    jax.block_until_ready(jitted(*args))
    with jax.profiler.trace(str(tmp_path)):
        for step in range(2):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                jax.block_until_ready(jitted(*args))
    (path,) = tmp_path.glob("plugins/profile/*/*.xplane.pb")
    program, ops, steps = _records(path)
    matmuls = 2 * N**3 * OUTER * INNER  # per step; the loop counters add a few FLOPs
    for step in steps:
        assert step.flops == pytest.approx(matmuls, rel=1e-3)
    loops = [r for r in ops if r.hlo_category == "while"]
    if not loops:
        pytest.skip("this XLA unrolled the loops")
    for row in loops:  # the outer loop once a step, the inner one 3 times: 12 matmuls a step
        assert row.flops == pytest.approx(matmuls * len(steps), rel=1e-3), row.hlo_name


# --- a generated call with one child ---------------------------------------------------------

US_PS = 1_000_000


def _call_profile(path: Path, steps: int = 2) -> Path:
    """An XLA:CPU profile (as PyTorch/XLA writes one) whose program is ``call.1`` of a
    computation holding one op, ``add.1``: the call's event on one thread, its child's on
    another, inside it ([5, 95] us of the call's [0, 100] us), in ``train`` steps of 150 us."""
    from test_hlo_cost import ModuleBuilder, shape

    from tb_roofline_plugin.demo import write_profile
    from tb_roofline_plugin.demo.xspace_builder import U64, Ref, plane

    builder = ModuleBuilder("call_one_child")
    callee = builder.computation("callee")
    x = callee.param("x", shape("f32", 1024))
    callee.op("add.1", "add", shape("f32", 1024), x, x)
    entry = builder.computation("main", entry=True)
    p0 = entry.param("p0", shape("f32", 1024))
    entry.op("call.1", "call", shape("f32", 1024), p0, calls=[callee])
    module = builder.proto
    module.id = 7
    space = xplane_pb2.XSpace(hostnames=["gen"])
    metadata = plane(space, "/host:metadata")
    meta = metadata.plane.event_metadata[module.id]
    meta.id, meta.name = module.id, f"{module.name}({module.id})"
    proto = hlo_pb2.HloProto(hlo_module=module).SerializeToString()
    metadata.fill_stats(meta.stats, {"Hlo Proto": proto, "program_id": U64(module.id)})
    host = plane(space, "/host:CPU", plane_id=1)
    python, caller, worker = (
        host.line("python"),
        host.line("tf_XLAEigen/1"),
        host.line("tf_XLAEigen/2"),
    )
    for step in range(steps):
        base = step * 200 * US_PS
        host.event(
            python, host.event_metadata("train"), base, 150 * US_PS, {"_r": 1, "step_num": step}
        )
        for line, name, begin, duration in ((caller, "call.1", 0, 100), (worker, "add.1", 5, 90)):
            stats = {"hlo_op": Ref(name), "hlo_module": Ref(module.name), "program_id": 7,
                     "run_id": step + 1, "device_ordinal": 0}  # fmt: skip
            host.event(
                line, host.event_metadata(name), base + begin * US_PS, duration * US_PS, stats
            )
    return write_profile(path, space)


def test_generated_call_with_one_child_counts_and_ranks_once(tmp_path):
    path = _call_profile(tmp_path / "gen.xplane.pb")
    program, ops, steps = _records(path)
    by_name = {r.hlo_name: r for r in ops}
    call, child = by_name["call.1"], by_name["add.1"]
    # The call carries its child's work (1,024 FLOPs an execution), the Program counts it once.
    assert call.flops == child.flops == 2 * 1024
    assert program.flops == 2 * 1024
    assert [s.flops for s in steps] == [1024, 1024]
    # Its time is its span; its own time the 5 + 5 us its child leaves; the child ranks first.
    assert call.total_time_in_us == pytest.approx(200.0)
    assert call.total_self_time_in_us == pytest.approx(20.0)
    assert child.total_self_time_in_us == pytest.approx(180.0)
    assert child.rank < call.rank
    assert call.total_self_time_in_us + child.total_self_time_in_us <= program.total_time_in_us


@pytest.mark.parametrize(
    "where",
    [
        "new-producers/jax_sharded4_jit",
        "new-producers/jax_scan_lstm",
        "new-producers/tf_keras_fit/train",
        "new-producers/torch_lstm",
        "field/tf_v100_bert/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb",
    ],
)
def test_op_shares_are_of_the_devices_time_and_stay_within_it(shared_data, where):
    """Every op's share of the Program time is at most 100 %, and so are the op self times
    together (the kernels without an op too, on TensorFlow GPU)."""
    target = shared_data / where
    if target.is_file():
        path = target
    else:
        found = sorted(target.glob("plugins/profile/*/*.xplane.pb")) or sorted(
            target.glob("*.json")
        )
        path = found[0]
    stats = analyze_file(path)
    database = build_database(stats)
    records = [r for r in database.roofline_model_record if r.include_infeed_outfeed]
    ops = [r for r in records if r.record_type == ALL and r.rank > 0 and r.hlo_name != "IDLE"]
    (program,) = [r for r in records if r.record_type == ALL and r.rank == 0]
    assert program.total_time_in_us > 0
    if ops:
        assert max(r.total_time_in_percentage for r in ops) <= 1.0
        assert sum(r.total_self_time_in_us for r in ops) <= program.total_time_in_us
        assert sum(r.total_self_time_as_fraction for r in ops) <= 1.0 + 1e-12
    if stats.unattributed is not None:
        assert stats.unattributed.time_ps.sum() <= stats.all_db.total_time_ps
    assert stats.run_env.device_core_count >= max(len(stats.devices), 1)
