"""CPU rooflines: fresh JAX profiles against XLA's own cost analysis, the shared JAX-CPU
profiles, peaks from a file or calibration."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from jax_programs import PROGRAMS, record

from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.roofline.model import build_database

# docs/hlo-cost.md §7: XLA's cost per jit_train_step call (= per step) of the shared profiles.
SHARED_XLA = {
    "jax_matmul": (23_651_680_256, 289_407_008),
    "jax_mlp": (276_851_232, 17_546_368),
    "jax_transformer": (5_896_245_248, 325_650_624),
}


def _program_sums(step_db, module_name: str, modules_by_name: dict) -> tuple[float, float]:
    program = modules_by_name[module_name]
    mine = step_db.program_id == program
    return float(step_db.flops[mine].sum()), float(step_db.bytes_accessed[mine].sum())


def _modules_by_name(path) -> dict:
    from tb_roofline_plugin.hlo.modules import program_modules
    from tb_roofline_plugin.xspace.profile_reader import read_profile

    modules, _ = program_modules(read_profile(path))
    return {m.name: pid for pid, m in modules.items()}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    pytest.importorskip("jax")
    return {name: record(tmp_path_factory.mktemp(name), name, steps=3) for name in PROGRAMS}


@pytest.mark.parametrize("name", PROGRAMS)
def test_per_step_flops_and_bytes_equal_xlas_cost_analysis(recorded, name):
    path, cost, module_name = recorded[name]
    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == [0, 1, 2]
    by_name = _modules_by_name(path)
    for step in stats.steps:
        flops, num_bytes = _program_sums(step.db, module_name, by_name)
        assert flops == pytest.approx(cost["flops"], rel=0.02), (name, step.step_num)
        assert num_bytes == pytest.approx(cost["bytes accessed"], rel=0.10), (name, step.step_num)


def test_cpu_roofline_without_peaks_has_rates_and_unknown_bound(recorded):
    path, _, _ = recorded["matmul_chain"]
    table, diagnostics = json.loads(run_cli("export", path, check=True).stdout)
    assert len(table["cols"]) == 37 and table["p"]["device_type"] == "CPU"
    ids = [c["id"] for c in table["cols"]]
    rows = [dict(zip(ids, [c["v"] for c in r["c"]])) for r in table["rows"]]
    program = rows[0]
    assert program["operation"] == "Program" and program["measured_flop_rate"] > 0
    assert all(r["bound_by"] == "Unknown" for r in rows)
    assert {r["step"] for r in rows} >= {"Total", "Average", "0", "1", "2"}
    messages = [(r["c"][0]["v"], r["c"][1]["v"]) for r in diagnostics["rows"]]
    assert any(
        s == "INFO" and "CPU roofline computed by tb_roofline_plugin" in m for s, m in messages
    )
    assert any(s == "WARNING" and "--peaks" in m for s, m in messages)


def test_calibrate_writes_plausible_peaks_that_export_uses(recorded, tmp_path):
    out = tmp_path / "peaks.json"
    run_cli("calibrate", "--quick", "--output", out, check=True)
    peaks = json.loads(out.read_text())
    assert 1 <= peaks["hbm_gbps"] <= 1000
    assert 0 < peaks["dtype_tflops"]["fp64"] <= peaks["dtype_tflops"]["fp32"] * 4
    path, _, _ = recorded["matmul_chain"]
    doc = json.loads(run_cli("export", path, "--format", "json", "--peaks", out, check=True).stdout)
    assert doc["device"]["peaks_source"] == f"calibration ({out})"
    assert doc["device"]["memories"][0]["name"] == "DRAM"
    assert doc["device"]["memories"][0]["peak_gbps"] == pytest.approx(peaks["hbm_gbps"])
    records = doc["database"]["roofline_model_record"]
    assert {r["bound_by"] for r in records} <= {"Compute", "HBM", "Unknown"}
    assert records[0]["bound_by"] in ("Compute", "HBM")


def test_builtin_device_as_a_what_if(recorded):
    path, _, _ = recorded["matmul_chain"]
    doc = json.loads(
        run_cli("export", path, "--format", "json", "--peaks", "h100-sxm", check=True).stdout
    )
    assert doc["device"]["peaks_source"] == "built-in table (NVIDIA H100 SXM5 80 GB)"
    assert doc["database"]["peak_flop_rate"] == pytest.approx(989_400)


def test_unknown_peaks_name_is_one_line_exit_2(recorded):
    path, _, _ = recorded["matmul_chain"]
    proc = run_cli("export", path, "--peaks", "no-such-gpu")
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "tb-roofline: error: --peaks: 'no-such-gpu' is neither a built-in device nor a file"
    )


@pytest.mark.parametrize("name", sorted(SHARED_XLA))
def test_shared_jax_cpu_profiles_per_step_costs(shared_data, name):
    (path,) = (shared_data / "jax-cpu" / name).glob("plugins/profile/*/vm.xplane.pb")
    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == list(range(10))
    assert all(s.complete for s in stats.steps)
    flops, num_bytes = SHARED_XLA[name]
    by_name = _modules_by_name(path)
    for step in stats.steps:
        ours_flops, ours_bytes = _program_sums(step.db, "jit_train_step", by_name)
        assert ours_flops == pytest.approx(flops, rel=0.02)
        assert ours_bytes == pytest.approx(num_bytes, rel=0.10)
    database = build_database(stats)
    average = next(
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.AVERAGE_STEP
    )
    per_step = [
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.PER_STEP and r.include_infeed_outfeed
    ]
    assert len(per_step) == 10
    assert average.total_time_in_us == pytest.approx(sum(r.total_time_in_us for r in per_step) / 10)
