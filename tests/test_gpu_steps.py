"""GPU steps from host step roots → launches → correlation ids → kernels (synthetic profiles)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from tb_roofline_plugin.demo import GpuSpec, gpu_xspace, write_profile
from tb_roofline_plugin.ops.selection import average_db
from tb_roofline_plugin.platforms.analysis import analyze_file, analyze_files
from tb_roofline_plugin.platforms.gpu import GPU_STEPS_INFO
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.roofline.model import build_database


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpu") / "plugins" / "profile" / "r1"
    write_profile(folder / "h0.xplane.pb", gpu_xspace(GpuSpec(host="h0", truncated_last_step=True)))
    write_profile(
        folder / "h1.xplane.pb", gpu_xspace(GpuSpec(host="h1", seed=1, truncated_last_step=True))
    )
    return folder


def test_steps_claim_their_kernels_and_report_the_rest(run_dir):
    stats = analyze_file(run_dir / "h0.xplane.pb")
    assert stats.has_step_markers and [s.step_num for s in stats.steps] == [0, 1, 2, 3]
    assert [s.complete for s in stats.steps] == [True, True, True, False]
    # 2 GPUs x 2 unclaimed kernels launched before the first step.
    assert any(n.startswith("4 kernels (") and "outside every step" in n for n in stats.notes)
    assert GPU_STEPS_INFO in stats.diagnostics.info


def test_per_step_ops_add_up_to_the_total_of_claimed_kernels(run_dir):
    stats = analyze_file(run_dir / "h0.xplane.pb")
    steps_occurrences = sum(int(s.db.occurrences.sum()) for s in stats.steps)
    total = stats.all_db
    outside = 4  # the unclaimed kernels, all with HLO ops
    assert steps_occurrences == int(total.occurrences.sum()) - outside
    per_op_time = {}
    for s in stats.steps:
        for name, t in zip(s.db.name, s.db.time_ps):
            if name != "IDLE":
                per_op_time[name] = per_op_time.get(name, 0) + int(t)
    whole = {n: int(t) for n, t in zip(total.name, total.time_ps) if n in per_op_time}
    # The unclaimed kernels are an eval tail before the first step: all-reduce.20 and
    # loop_multiply_fusion.2; every other op's time is all inside steps.
    differing = {n for n in whole if whole[n] != per_op_time[n]}
    assert differing == {"all-reduce.20", "loop_multiply_fusion.2"}
    assert all(whole[n] > per_op_time[n] for n in differing)
    for s in stats.steps:
        assert s.db.total_time_ps >= s.duration_ps  # each GPU spends at least the step


def test_average_leaves_out_the_incomplete_step(run_dir):
    stats = analyze_file(run_dir / "h0.xplane.pb")
    complete = stats.complete_steps
    assert len(complete) == 3
    average = average_db(stats)
    assert float(average.flops.sum()) == pytest.approx(
        np.mean([float(s.db.flops.sum()) for s in complete])
    )
    database = build_database(stats)
    kinds = [
        (r.record_type, r.step_num)
        for r in database.roofline_model_record
        if r.include_infeed_outfeed
    ]
    # Single-host GPU: XProf's shape (no AVERAGE row), PER_STEP rows of complete steps, real values.
    assert (roofline_model_pb2.AVERAGE_STEP, 0) not in kinds
    assert [n for t, n in kinds if t == roofline_model_pb2.PER_STEP] == [0, 1, 2]
    per_step = [
        r for r in database.roofline_model_record if r.record_type == roofline_model_pb2.PER_STEP
    ]
    assert all(r.measured_flop_rate > 0 and r.total_time_in_us > 0 for r in per_step)
    assert any("incomplete step" in w for w in database.diagnostics.warnings)


def test_datatable_says_who_computed_the_gpu_steps(run_dir):
    table, diagnostics = json.loads(run_cli("export", run_dir / "h0.xplane.pb", check=True).stdout)
    assert len(table["cols"]) == 30
    messages = [(r["c"][0]["v"], r["c"][1]["v"]) for r in diagnostics["rows"]]
    assert ("INFO", GPU_STEPS_INFO) in messages
    steps = {r["c"][0]["v"] for r in table["rows"]}
    assert steps == {"Total", "0", "1", "2"}


def test_two_hosts_combine_steps_and_get_a_real_average(run_dir):
    both = analyze_files(sorted(run_dir.glob("*.xplane.pb")))
    one = analyze_file(run_dir / "h0.xplane.pb")
    assert both.run_env.device_core_count == 4 and both.hosts == ["h0", "h1"]
    assert [s.step_num for s in both.steps] == [0, 1, 2, 3]
    assert [s.complete for s in both.steps] == [True, True, True, False]
    assert both.all_db.total_time_ps > one.all_db.total_time_ps
    database = build_database(both)
    (average,) = [
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.AVERAGE_STEP and r.include_infeed_outfeed
    ]
    assert average.measured_flop_rate > 0  # XProf's multi-host GPU average is all zeros


def test_profile_without_step_markers_still_has_total(tmp_path):
    path = write_profile(tmp_path / "h.xplane.pb", gpu_xspace(GpuSpec(steps=0)))
    stats = analyze_file(path)
    assert stats.steps == [] and not stats.has_step_markers
    database = build_database(stats)
    assert database.roofline_model_record[0].hlo_name == "Program"
    assert database.diagnostics.warnings[0].startswith("No step marker observed")


def test_compare_two_gpu_steps(run_dir):
    proc = run_cli(
        "compare",
        run_dir / "h0.xplane.pb",
        run_dir / "h0.xplane.pb",
        "--a-step",
        "0",
        "--b-step",
        "2",
        "--format",
        "json",
        check=True,
    )
    result = json.loads(proc.stdout)
    assert result["a"].endswith("step 0") and result["b"].endswith("step 2")
    names = {op["operation"] for op in result["ops"]}
    assert "custom-call.5" in names and not any(op["only_in"] for op in result["ops"])
