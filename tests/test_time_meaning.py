"""One meaning of time: device time summed over the cores, said beside the figures, and the
figures of steps, Average, Total and Compare agreeing with each other.

Oracles are the database's own records and the profiles' step sums, computed here; the
shared multi-core profile is ``new-producers/jax_sharded4_jit`` (4 XLA:CPU devices) and the
multi-host one ``field/tf_v100_bert`` (2 workers of 8 V100s).
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import run_cli

from tb_roofline_plugin.demo.logdir import write_demo_logdir
from tb_roofline_plugin.ops.op_stats import combine_hosts
from tb_roofline_plugin.ops.selection import per_step_selection, select
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.roofline.compare import Side, compare, compare_table
from tb_roofline_plugin.serve.service import RooflineService


@pytest.fixture(scope="module")
def sharded(shared_data):
    (path,) = (shared_data / "new-producers/jax_sharded4_jit").glob("plugins/profile/*/*.xplane.pb")
    return path


def _program(doc: dict, kind: str, step: int | None = None) -> dict:
    return next(
        r
        for r in doc["database"]["roofline_model_record"]
        if r.get("rank", "0") == "0"
        and r.get("include_infeed_outfeed")
        and r.get("record_type", "ALL") == kind
        and (step is None or int(r.get("step_num", 0)) == step)
    )


def test_compare_per_step_is_the_average_step_on_a_shared_multi_core_profile(sharded):
    stats = analyze_file(sharded)
    assert stats.run_env.device_core_count == 4
    doc = json.loads(render(stats, "json", [str(sharded)]))
    average_us = _program(doc, "AVERAGE_STEP")["total_time_in_us"]
    complete = [s for s in doc["steps"] if s["complete"]]
    # The oracle: the mean of the complete steps' device times.
    assert average_us == pytest.approx(
        sum(s["device_time_us"] for s in complete) / len(complete), rel=1e-6
    )
    total = Side("total", stats, per_step_selection(stats, "total"))
    average = Side("average", stats, select(stats, "average"))
    result = compare(total, average)
    program = result["program"]
    assert program["time_us_a"] == pytest.approx(average_us, rel=1e-9)
    assert program["time_us_b"] == pytest.approx(average_us, rel=1e-9)
    # The Total's own time is longer: the profile's time outside complete steps is not "per step".
    assert _program(doc, "ALL")["total_time_in_us"] / len(complete) > average_us
    words = f"device time summed over 4 devices, per step (mean of {len(complete)} complete steps)"
    assert result["time"] == {"a": words, "b": words} and result["warnings"] == []
    text = compare_table(result)
    assert "Program time per step (device time summed over 4 devices): " in text
    assert f"{average_us:,.1f} -> {average_us:,.1f} µs" in text


def test_steps_device_time_is_each_steps_program_time(sharded):
    """The steps' ``device_time_us`` (what Slowest/Fastest show) is the Program record of
    that step, and ``duration_us`` its wall time, shorter on 4 devices."""
    stats = analyze_file(sharded)
    doc = json.loads(render(stats, "json", [str(sharded)]))
    assert doc["steps"]
    for step in doc["steps"]:
        program = _program(doc, "PER_STEP", step["step_num"])
        assert step["device_time_us"] == pytest.approx(program["total_time_in_us"], rel=1e-9)
        assert step["duration_us"] <= step["device_time_us"]


def test_the_notes_and_the_summary_say_times_are_summed_over_the_cores(sharded):
    doc = json.loads(render(analyze_file(sharded), "json", [str(sharded)]))
    assert doc["device"]["time_meaning"] == "device time summed over 4 devices"
    assert doc["device"]["core_unit"] == "device"
    (note,) = [n for n in doc["notes"] if n.startswith("Times are ")]
    assert note.startswith("Times are device time summed over 4 devices: Total, Average, each")
    text = run_cli("summary", sharded, check=True).stdout
    assert "time (µs): device time summed over 4 devices, not wall time" in text
    assert "4 devices;" in text.splitlines()[1]


def test_a_one_core_profile_says_device_time_without_a_sum(shared_data):
    (path,) = (shared_data / "jax-cpu/jax_mlp").glob("plugins/profile/*/vm.xplane.pb")
    doc = json.loads(render(analyze_file(path), "json", [str(path)]))
    assert doc["device"]["device_core_count"] == 1
    assert doc["device"]["time_meaning"] == "device time"
    assert not any(n.startswith("Times are ") for n in doc["notes"])


def test_multi_host_steps_sum_both_workers_gpus(shared_data):
    run = shared_data / "field/tf_v100_bert"
    service = RooflineService(str(run))
    (name,) = service.runs()
    hosts = service.hosts(name)
    assert hosts[0] == "ALL_HOSTS" and len(hosts) == 3
    both = json.loads(service.data(name, "ALL_HOSTS", None, "json"))
    each = [json.loads(service.data(name, h, None, "json")) for h in hosts[1:]]
    assert both["device"]["time_meaning"] == "device time summed over 16 GPUs"
    for i, step in enumerate(both["steps"]):
        assert step["device_time_us"] == pytest.approx(
            sum(d["steps"][i]["device_time_us"] for d in each), rel=1e-9
        )
        assert step["duration_us"] == max(d["steps"][i]["duration_us"] for d in each)


def test_every_demo_total_holds_its_steps(tmp_path):
    """The tab's Total is never shorter than its steps (the issue saw torch_gpu's 35.89 ms
    Total against 44.2 ms of steps): Total's Program time >= the sum of the complete steps',
    for every run and host of the demo logdir, in the json the tab reads."""
    write_demo_logdir(tmp_path)
    service = RooflineService(str(tmp_path))
    checked = 0
    for run in service.runs():
        for host in service.hosts(run):
            doc = json.loads(service.data(run, host, None, "json"))
            steps = [s for s in doc["steps"] if s["complete"]]
            total = _program(doc, "ALL")["total_time_in_us"]
            assert total >= sum(s["device_time_us"] for s in steps) - 1e-6, (run, host)
            checked += bool(steps)
    assert checked >= 8


def test_all_hosts_notes_name_the_host_they_come_from(tmp_path):
    """Notes that differ between hosts are said once each, named by their host; notes every
    host has are said once as they are."""
    write_demo_logdir(tmp_path, runs=("torch_gpu",))
    service = RooflineService(str(tmp_path))
    own = {h: service.result("torch_gpu", h).stats.notes for h in ("worker0", "worker1")}
    copies = {h: next(n for n in notes if "memcpy/memset" in n) for h, notes in own.items()}
    assert copies["worker0"] != copies["worker1"]  # 144.1 us against 143.8 us
    combined = json.loads(service.data("torch_gpu", "ALL_HOSTS", None, "json"))["notes"]
    for host, note in copies.items():
        assert f"{host}: {note}" in combined
    shared = set(own["worker0"]) & set(own["worker1"])
    assert shared and all(n in combined for n in shared if not n.startswith("Program time"))
    assert not any(n in combined for n in copies.values())  # never unnamed


def test_hosts_diagnostics_that_differ_are_named(shared_data):
    """Two hosts of one run whose warnings differ (TensorFlow with and without XLA: only
    the XLA one has ops to judge, and no peaks): each such warning names its host."""
    paths = [
        next((shared_data / f"tf-cpu/{name}").glob("plugins/profile/*/vm.xplane.pb"))
        for name in ("mlp_xla", "mlp_noxla")
    ]
    parts = []
    for i, path in enumerate(paths):
        stats = analyze_file(path)
        stats.hosts = [f"host{i}"]
        parts.append(stats)
    combined = combine_hosts(parts).diagnostics
    named = 0
    for part in parts:
        (host,) = part.hosts
        for kind in ("warnings", "info"):
            for message in getattr(part.diagnostics, kind):
                everywhere = all(message in getattr(p.diagnostics, kind) for p in parts)
                assert (message if everywhere else f"{host}: {message}") in getattr(combined, kind)
                named += not everywhere
    assert named >= 1
    assert any(w.startswith("host0: No peaks known for this device") for w in combined.warnings)


def test_compare_warns_when_a_and_b_share_no_program(shared_data):
    gemm = shared_data / "tracelens/jax08_gemm/tw003.xplane.pb"
    elementwise = shared_data / "tracelens/jax08_elementwise/tw003.xplane.pb"
    a, b = analyze_file(gemm), analyze_file(elementwise)
    modules_a = {a.program_names[int(p)] for p in set(a.all_db.program_id.tolist()) if p}
    modules_b = {b.program_names[int(p)] for p in set(b.all_db.program_id.tolist()) if p}
    assert modules_a and modules_b and not modules_a & modules_b  # the oracle: disjoint
    result = compare(Side("gemm", a, select(a, "total")), Side("elt", b, select(b, "total")))
    (warning,) = result["warnings"]
    assert warning.startswith("A and B share no program (A: jit_")
    assert "no op can be matched" in warning
    assert all(op["only_in"] for op in result["ops"])
    assert f"WARNING: {warning}" in compare_table(result)
    same = compare(Side("gemm", a, select(a, "total")), Side("gemm", a, select(a, "total")))
    assert same["warnings"] == []


def test_compare_warns_of_another_device_and_of_a_whole_profile_against_a_step(shared_data):
    tpu = shared_data / "xprof/tpu_inference_2.xplane.pb"
    (cpu,) = (shared_data / "jax-cpu/jax_mlp").glob("plugins/profile/*/vm.xplane.pb")
    a, b = analyze_file(cpu), analyze_file(tpu)
    result = compare(
        Side("cpu", a, per_step_selection(a, "total")), Side("tpu", b, select(b, "total"))
    )
    warnings = result["warnings"]
    assert any(w.startswith("A ran on CPU and B on TPU v6 Lite") for w in warnings)
    assert any(
        w.startswith("A's times are per step and B's of the whole profile") for w in warnings
    )
    assert result["per_step"] == {"a": True, "b": False}
    assert result["time"]["b"] == (
        "device time summed over 4 TensorCores, of the whole profile (no complete steps)"
    )
    text = compare_table(result)
    assert "Program time (" in text and "  B: " in text


def test_the_compare_route_compares_total_as_the_average_step(tmp_path, shared_data):
    (path,) = (shared_data / "new-producers/jax_sharded4_jit").glob("plugins/profile/*/*.xplane.pb")
    run = tmp_path / "plugins/profile/r1"
    run.mkdir(parents=True)
    shutil.copyfile(path, run / "vm.xplane.pb")
    service = RooflineService(str(tmp_path))
    result = service.compare(("r1", "vm", "total"), ("r1", "vm", "average"))
    doc = json.loads(service.data("r1", "vm", None, "json", "average"))
    average_us = _program(doc, "AVERAGE_STEP")["total_time_in_us"]
    assert result["program"]["time_us_a"] == pytest.approx(average_us, rel=1e-9)
    assert result["a"] == "r1 vm step total"
