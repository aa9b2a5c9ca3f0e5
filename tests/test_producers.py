"""Every producer's XLA:CPU profile timed and stepped right (JAX, TensorFlow, PyTorch/XLA).

The oracles are written here from the raw XSpace, independently of the plugin's reader:
an op's time is its event's start to the end of its flow-linked ``end: <op>`` event (the
op event's ``_p`` is the end event's ``_c``), and a step's FLOPs are XLA's own cost
analysis (jaxlib's HloCostAnalysis) of the HLO module stored in the profile.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import hlo_pb2, roofline_model_pb2, xplane_pb2
from tb_roofline_plugin.roofline.model import build_database

RECORDINGS = {
    "jax_mlp": ("jax-cpu/jax_mlp", 10),
    "jax_matmul": ("jax-cpu/jax_matmul", 10),
    "jax_transformer": ("jax-cpu/jax_transformer", 10),
    "tf_mlp_xla": ("tf-cpu/mlp_xla", 5),
    "ptxla_mlp_direct": ("ptxla-cpu/mlp_direct", 5),
    "ptxla_mlp_server": ("ptxla-cpu/mlp_server", 5),
}


def _profile(shared_data: Path, name: str) -> Path:
    (path,) = (shared_data / RECORDINGS[name][0]).glob("plugins/profile/*/*.xplane.pb")
    return path


def _stats(event, stat_names: dict) -> dict:
    out = {}
    for stat in event.stats:
        kind = stat.WhichOneof("value")
        value = getattr(stat, kind) if kind else None
        out[stat_names.get(stat.metadata_id)] = (
            stat_names.get(value, value) if (kind == "ref_value") else value
        )
    return out


def raw_host(path: Path):
    """(op events as (begin, end of flight, program, instruction), step roots) in ps."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    ops, ends, roots = [], {}, []
    for line in plane.lines:
        base = line.timestamp_ns * 1000
        for event in line.events:
            stats = _stats(event, names)
            begin, end = base + event.offset_ps, base + event.offset_ps + event.duration_ps
            name = plane.event_metadata[event.metadata_id].name
            if name.startswith("end: ") and "_c" in stats:
                ends[stats["_c"]] = max(ends.get(stats["_c"], end), end)
            if "hlo_op" in stats and "program_id" in stats:
                ops.append((begin, end, stats.get("_p"), stats["program_id"], stats["hlo_op"]))
            if stats.get("_r") is not None and "step_num" in stats:
                roots.append((begin, end, stats["step_num"]))
    flights = [
        (b, max(e, ends.get(flow, e)), program, op.rsplit("::", 1)[-1])
        for b, e, flow, program, op in ops
    ]
    return flights, sorted(roots)


def xla_module_flops(path: Path) -> dict[str, float]:
    """XLA's own cost analysis of each HLO module in ``/host:metadata``, by module name."""
    pytest.importorskip("jax")
    import jax
    from jax._src.lib import _jax
    from jaxlib import _hlo

    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:metadata"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    client = jax.devices("cpu")[0].client
    out = {}
    for meta in plane.event_metadata.values():
        stats = {names[s.metadata_id]: s for s in meta.stats}
        proto = hlo_pb2.HloProto.FromString(stats["Hlo Proto"].bytes_value)
        module = _hlo.HloModule.from_serialized_hlo_module_proto(
            proto.hlo_module.SerializeToString()
        )
        instructions = {i.name for c in proto.hlo_module.computations for i in c.instructions}
        flops = _jax.hlo_module_cost_analysis(client, module).get("flops", 0.0)
        out[proto.hlo_module.name] = (flops, instructions)
    return out


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_each_op_time_is_its_start_to_end_span(shared_data, name):
    path = _profile(shared_data, name)
    flights, _ = raw_host(path)
    expected = defaultdict(float)
    for begin, end, program, op in flights:
        expected[(program, op)] += (end - begin) / 1e6
    database = build_database(analyze_file(path))
    records = [
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.ALL and r.rank > 0 and r.include_infeed_outfeed
    ]
    ours = {(int(r.hlo_module_id), r.hlo_name): r.total_time_in_us for r in records}
    assert sorted(ours) == sorted(expected)
    # A container (call, while) ends with its nested ops: tests/test_loops_and_devices.py.
    containers = {
        (int(r.hlo_module_id), r.hlo_name) for r in records if r.hlo_category in ("call", "while")
    }
    for key in set(expected) - containers:
        assert ours[key] == pytest.approx(expected[key], rel=0.01), key


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_every_step_holds_one_execution_of_its_program(shared_data, name):
    path = _profile(shared_data, name)
    flights, roots = raw_host(path)
    modules = xla_module_flops(path)
    ran = {op for _, _, _, op in flights}
    # The step program: the module holding every instruction that ran most often.
    counts = defaultdict(int)
    for _, _, _, op in flights:
        counts[op] += 1
    top = max(counts.values())
    step_ops = {op for op, n in counts.items() if n == top}
    (flops,) = [f for f, instructions in modules.values() if step_ops <= instructions]
    assert ran  # the recording ran XLA ops
    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == [num for _, _, num in roots]
    assert len(stats.steps) == RECORDINGS[name][1]
    assert all(s.complete for s in stats.steps)
    database = build_database(stats)
    per_step = [
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.PER_STEP and r.include_infeed_outfeed and r.rank == 0
    ]
    assert len(per_step) == RECORDINGS[name][1]
    for record in per_step:
        assert record.flops == pytest.approx(flops, rel=1e-6), record.step_num


def test_async_dot_is_timed_to_its_end_event_not_its_dispatch(shared_data):
    """tf-cpu/mlp_xla's MatMul_1.6: 5 dispatch events of ~0.75 ms, in flight 21.9 ms."""
    path = _profile(shared_data, "tf_mlp_xla")
    database = build_database(analyze_file(path))
    (record,) = [
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.ALL
        and r.hlo_name == "MatMul_1.6"
        and r.include_infeed_outfeed
    ]
    assert record.occurrences == 5
    assert record.total_time_in_us == pytest.approx(21_942.1, abs=0.1)


def test_pytorch_xla_steps_claim_the_execution_they_scheduled(shared_data):
    """mlp_direct: step 1's graph runs inside step 2's span, step 2's after it."""
    path = _profile(shared_data, "ptxla_mlp_direct")
    _, roots = raw_host(path)
    stats = analyze_file(path)
    spans = {num: (b, e) for b, e, num in roots}
    # Step 1's host span is 1.0 ms of tracing; its execution ran 7.5 ms afterwards.
    assert (spans[1][1] - spans[1][0]) / 1e6 == pytest.approx(1_008.5, abs=0.1)
    step = {s.step_num: s for s in stats.steps}
    assert step[1].duration_ps / 1e6 == pytest.approx(7_536.2, abs=0.1)
    assert [int(step[n].db.occurrences.max()) for n in range(5)] == [1] * 5


def test_tensorflow_without_xla_has_five_steps_and_says_why_nothing_is_costed(shared_data):
    (path,) = (shared_data / "tf-cpu/mlp_noxla").glob("plugins/profile/*/vm.xplane.pb")
    _, roots = raw_host(path)
    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == [0, 1, 2, 3, 4]
    assert [s.duration_ps for s in stats.steps] == [e - b for b, e, _ in roots]
    (info,) = [m for m in stats.diagnostics.info if "no XLA programs" in m]
    assert "jit_compile=True" in info
    database = build_database(stats)
    per_step = [
        r for r in database.roofline_model_record if r.record_type == roofline_model_pb2.PER_STEP
    ]
    assert len(per_step) == 10 and all(r.flops == 0 for r in per_step)
    # Total: the wall time from the first step's start to the last step's end.
    (total,) = [
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.ALL and r.rank == 0 and r.include_infeed_outfeed
    ]
    assert total.total_time_in_us == pytest.approx((roots[-1][1] - roots[0][0]) / 1e6)


def test_nested_step_roots_are_not_steps_of_their_own():
    from tb_roofline_plugin.platforms.host_steps import number_steps

    # TensorFlow's FunctionRun roots (_r=1) inside its train roots.
    roots = [(0.0, 0, 100), (-1.0, 10, 20), (1.0, 120, 200), (-1.0, 130, 140)]
    steps = number_steps(*zip(*roots))
    assert steps.numbers.tolist() == [0, 1]
    assert steps.begin_ps.tolist() == [0, 120] and steps.end_ps.tolist() == [100, 200]
