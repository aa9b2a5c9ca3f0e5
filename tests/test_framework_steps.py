"""Steps where the frameworks put them: Keras' ``Profiled batch``, ``Trace(step_num=)``
with or without ``_r``, TensorFlow's ``FunctionRun`` roots part of a step, not steps.

The oracles come from the raw XSpace, read here with ``xplane_pb2`` in plain Python.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from tb_roofline_plugin.demo.cpu import CpuSpec, cpu_xspace
from tb_roofline_plugin.demo.gpu import GpuSpec, gpu_xspace
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import xplane_pb2

KERAS = "new-producers/tf_keras_fit/train"
TF_EXECUTE = "CpuExecutable::ExecuteAsyncOnStream"


def _host(space: xplane_pb2.XSpace) -> xplane_pb2.XPlane:
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    return plane


def _stat_values(plane: xplane_pb2.XPlane, event) -> dict:
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    out = {}
    for stat in event.stats:
        kind = stat.WhichOneof("value")
        out[names[stat.metadata_id]] = getattr(stat, kind) if kind else None
    return out


def _events(plane: xplane_pb2.XPlane):
    """(line, event, name, stats, begin ps, end ps) of every event of a plane."""
    for line in plane.lines:
        for event in line.events:
            begin = line.timestamp_ns * 1000 + event.offset_ps
            name = plane.event_metadata[event.metadata_id].name
            yield line, event, name, _stat_values(plane, event), begin, begin + event.duration_ps


def test_keras_fit_steps_are_the_profiled_batches_each_holding_one_xla_execution(shared_data):
    (path,) = (shared_data / KERAS).glob("plugins/profile/*/vm.xplane.pb")
    plane = _host(xplane_pb2.XSpace.FromString(path.read_bytes()))
    events = list(_events(plane))
    batches = sorted(
        (stats["step_num"], begin, end)
        for _, _, name, stats, begin, end in events
        if name == "Profiled batch"
    )
    executions = sorted((b, e) for _, _, name, _, b, e in events if name == TF_EXECUTE)
    # An op lasts until its flow-linked `end: <op>` event ends (the op's _p is its _c).
    flight_end = {}
    for _, _, name, stats, _, end in events:
        if name.startswith("end: ") and "_c" in stats:
            flight_end[stats["_c"]] = max(flight_end.get(stats["_c"], end), end)
    ops = [
        (b, max(e, flight_end.get(stats.get("_p"), e)))
        for _, _, _, stats, b, e in events
        if "hlo_op" in stats and "program_id" in stats
    ]
    held = [[x for x in executions if b <= x[0] < e] for _, b, e in batches]
    assert [num for num, _, _ in batches] == [1, 2, 3, 4]
    assert [len(h) for h in held] == [1, 1, 1, 1]
    assert any(name == "FunctionRun" and stats.get("_r") == 1 for _, _, name, stats, _, _ in events)
    # An execution's ops: those starting from its execute event to the next one.
    limits = [b for b, _ in executions[1:]] + [float("inf")]
    of_execution = [
        [op for op in ops if b <= op[0] < limit] for (b, _), limit in zip(executions, limits)
    ]
    assert [len(x) for x in of_execution] == [2242] * 4

    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == [1, 2, 3, 4]
    assert all(s.complete for s in stats.steps)
    assert not [w for w in stats.diagnostics.warnings if "outside every step" in w]
    # One execution each: the same program, so the same FLOPs, a quarter of the total.
    flops = [float(s.db.flops.sum()) for s in stats.steps]
    assert flops == pytest.approx([float(stats.all_db.flops.sum()) / 4] * 4, rel=1e-9)
    # A step lasts from the earlier of its start and its first op to the later of its end
    # and its last op's end; where the step before ran into it, from that step's end.
    previous_last = None
    for step, (_, begin, end), mine in zip(stats.steps, batches, of_execution):
        first, last = min(b for b, _ in mine), max(e for _, e in mine)
        start = (
            min(begin, first) if previous_last is None else max(min(begin, first), previous_last)
        )
        assert step.duration_ps == max(end, last) - start
        previous_last = max(end, last)


def _without_root_stat(space: xplane_pb2.XSpace, step_name: str) -> list[tuple[int, int, int]]:
    """Drops ``_r`` from the ``step_name`` events (``Trace(name, step_num=s)`` without it),
    adds a ``FunctionRun`` root (``_r=1``) on a tf.data thread inside each, and returns the
    steps as (step_num, begin, end) from the raw events."""
    plane = _host(space)
    root_id = next(k for k, m in plane.stat_metadata.items() if m.name == "_r")
    function_run = max(plane.event_metadata) + 1
    plane.event_metadata[function_run].id = function_run
    plane.event_metadata[function_run].name = "FunctionRun"
    steps = []
    for _, event, name, stats, begin, end in list(_events(plane)):
        if name == step_name and "step_num" in stats:
            kept = [s for s in event.stats if s.metadata_id != root_id]
            del event.stats[:]
            event.stats.extend(kept)
            steps.append((stats["step_num"], begin, end))
    tf_data = plane.lines.add(id=77, name="tf_data_iterator_resource/77", timestamp_ns=0)
    for _, begin, end in steps:
        run = tf_data.events.add(
            metadata_id=function_run, offset_ps=begin + 1, duration_ps=(end - begin) // 4
        )
        run.stats.add(metadata_id=root_id, int64_value=1)
    return sorted(steps)


@pytest.mark.parametrize(
    "build", [lambda: cpu_xspace(CpuSpec(steps=5)), lambda: gpu_xspace(GpuSpec())]
)
def test_trace_step_num_without_root_stat_gives_those_steps(tmp_path: Path, build):
    space = build()
    steps = _without_root_stat(space, "train")
    assert len(steps) >= 3
    assert not [
        1 for _, _, name, stats, _, _ in _events(_host(space)) if name == "train" and "_r" in stats
    ]
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    stats = analyze_file(path)
    assert stats.has_step_markers
    assert [s.step_num for s in stats.steps] == [num for num, _, _ in steps]
    assert all(s.complete for s in stats.steps)
    assert all(s.duration_ps >= end - begin for s, (_, begin, end) in zip(stats.steps, steps))


def _program_records(text: str, record_type: str) -> list[dict]:
    records = json.loads(text)["database"]["roofline_model_record"]
    return [
        r
        for r in records
        if r.get("record_type") == record_type
        and r.get("hlo_name") == "Program"
        and r.get("include_infeed_outfeed")
    ]


@pytest.mark.parametrize("name", ["jax_scan_lstm", "jax_sharded4_jit"])
def test_average_row_flops_and_bytes_are_per_step_in_every_export(shared_data, name):
    (path,) = (shared_data / "new-producers" / name).glob("plugins/profile/*/vm.xplane.pb")
    whole = run_cli("export", "--format", "json", path, check=True).stdout
    (average,) = _program_records(whole, "AVERAGE_STEP")
    per_step = _program_records(whole, "PER_STEP")
    (selected,) = _program_records(
        run_cli("export", "--format", "json", "--step", "average", path, check=True).stdout,
        "AVERAGE_STEP",
    )
    for key in ("flops", "bytes_accessed"):
        mean = sum(int(r[key]) for r in per_step) / len(per_step)
        assert int(average[key]) == int(selected[key]) == pytest.approx(mean, abs=1), key
    assert average["total_time_in_us"] == pytest.approx(selected["total_time_in_us"], rel=1e-12)
    assert average["measured_flop_rate"] == pytest.approx(selected["measured_flop_rate"])
    # The rate is the per-step FLOPs over the per-step time.
    rate = int(average["flops"]) / (average["total_time_in_us"] * 1e3)
    assert average["measured_flop_rate"] == pytest.approx(rate, rel=1e-6)


def test_torch_lstm_steps_are_its_profiler_steps(shared_data):
    """torch.profiler's ``ProfilerStep#N`` spans (the raw trace JSON) are the steps, each
    complete with its span as its time; Total runs from the first step's start to the last's
    end (a CPU-only trace: the ops run inside them)."""
    (path,) = (shared_data / "new-producers/torch_lstm").glob("*.pt.trace.json")
    events = json.loads(path.read_text())["traceEvents"]
    spans = sorted(
        (int(e["name"].split("#")[1]), e["ts"], e["dur"])
        for e in events
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    )
    assert [num for num, _, _ in spans] == [3, 4, 5]
    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == [3, 4, 5]
    assert all(s.complete for s in stats.steps)
    for step, (_, _, dur_us) in zip(stats.steps, spans):
        assert step.duration_ps / 1e6 == pytest.approx(dur_us, abs=1e-3)
        assert step.db.total_time_ps / 1e6 == pytest.approx(dur_us, abs=1e-3)
    window_us = spans[-1][1] + spans[-1][2] - spans[0][1]
    assert stats.all_db.total_time_ps / 1e6 == pytest.approx(window_us, abs=1e-2)
