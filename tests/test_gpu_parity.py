"""GPU rooflines of the real AMD MI300X samples against XProf 2.24.2's reference output.

Time, occurrences, ranks, categories, properties and diagnostics must be identical;
bytes within 5 % on at least 90 % of the op rows XProf costed; FLOPs within 2 % for every
dot / GEMM / convolution op XProf costed. Where we differ on purpose (cuBLAS GEMM custom
calls, 1 FLOP per elementwise element) the tests check our rule against hand-computed values.
"""

from __future__ import annotations

import json
import math

import pytest
from conftest import run_cli

from tb_roofline_plugin.hlo.modules import program_modules
from tb_roofline_plugin.xspace.profile_reader import read_profile

SAMPLES = ("gemm", "attention", "elementwise")


def _rows(table: dict) -> dict[tuple, dict]:
    ids = [c["id"] for c in table["cols"]]
    rows = {}
    for row in table["rows"]:
        v = dict(zip(ids, [c["v"] for c in row["c"]]))
        rows[(v["step"], v["include_infeed_outfeed"], v["hlo_module_id"], v["operation"])] = v
    return rows


@pytest.fixture(scope="module", params=SAMPLES)
def sample(request, shared_data):
    path = shared_data / "tracelens" / f"jax08_{request.param}" / "tw003.xplane.pb"
    ours = json.loads(run_cli("export", path, check=True).stdout)
    ref_path = (
        shared_data
        / "xprof-reference"
        / f"tracelens_jax08_{request.param}_tw003.roofline_model.json"
    )
    ref = json.loads(ref_path.read_text())
    modules, _ = program_modules(read_profile(path))
    return request.param, ours, ref, modules


def test_layout_properties_and_diagnostics_are_identical(sample):
    _, ours, ref, _ = sample
    assert ours[0]["cols"] == ref[0]["cols"] and len(ours[0]["cols"]) == 30
    assert ours[0]["p"] == ref[0]["p"]
    assert ours[1] == ref[1]


def test_same_rows_times_occurrences_ranks_and_categories(sample):
    _, ours, ref, _ = sample
    mine, theirs = _rows(ours[0]), _rows(ref[0])
    assert mine.keys() == theirs.keys()
    for key, want in theirs.items():
        got = mine[key]
        assert math.isclose(got["total_time"], want["total_time"], rel_tol=1e-6), key
        assert got["occurrences"] == want["occurrences"], key
        assert got["rank"] == want["rank"], key
        assert got["category"] == want["category"], key
        assert got["total_self_time_percent"] == pytest.approx(
            want["total_self_time_percent"], rel=1e-6
        )
        assert got["source_info"] == want["source_info"], key


def _bytes(row: dict) -> float:
    return row["measured_memory_bw"] * row["total_time"]


def test_bytes_within_5_percent_on_90_percent_of_costed_ops(sample):
    name, ours, ref, _ = sample
    mine, theirs = _rows(ours[0]), _rows(ref[0])
    costed = [k for k, v in theirs.items() if v["operation"] != "Program" and _bytes(v) > 0]
    close = [
        k for k in costed if abs(_bytes(mine[k]) - _bytes(theirs[k])) <= 0.05 * _bytes(theirs[k])
    ]
    assert costed, name
    assert len(close) >= 0.9 * len(costed), (name, len(close), len(costed))


def test_flops_within_2_percent_for_every_dot_gemm_and_convolution(sample):
    name, ours, ref, modules = sample
    mine, theirs = _rows(ours[0]), _rows(ref[0])
    checked = 0
    for key, want in theirs.items():
        if want["operation"] == "Program" or want["measured_flop_rate"] <= 0:
            continue
        module = modules[int(key[2])]
        if not module.is_matmul_or_convolution(key[3]):
            continue
        checked += 1
        assert mine[key]["measured_flop_rate"] == pytest.approx(
            want["measured_flop_rate"], rel=0.02
        ), key
    assert checked >= (1 if name != "elementwise" else 0)


def test_cublas_gemm_custom_calls_get_flops_from_backend_config(shared_data):
    # XProf 2.24.2 reports 0 FLOPs for `__cublas$gemm`; we cost it as 2·M·N·K.
    path = shared_data / "tracelens" / "jax08_gemm" / "tw003.xplane.pb"
    ours = _rows(json.loads(run_cli("export", path, check=True).stdout)[0])
    row = ours[("Total", True, "49", "custom-call.1")]
    m, n, k = 8192, 8192, 4096
    assert row["occurrences"] == 3.0
    assert row["measured_flop_rate"] == pytest.approx(
        3 * 2 * m * n * k / (row["total_time"] * 1000), rel=1e-9
    )
    assert row["measured_flop_rate"] == pytest.approx(899_762, rel=1e-5)
    assert row["bound_by"] == "Compute"
    modules, _ = program_modules(read_profile(path))
    cost = modules[49].cost("custom-call.1")
    assert cost.flops == 549_755_813_888
    assert cost.bytes_accessed == 2 * (m * k + k * n + m * n)  # bf16 lhs + rhs + result
    assert cost.dtype == "bf16"


def test_elementwise_flops_follow_xla_not_xprofs_cycle_table(shared_data):
    # loop_convert_fusion of program 17: convert, multiply, convert on N bf16 elements per
    # operand. XProf's cycle table gives 12 FLOP/element (OI 2.0); XLA's rule 4N FLOPs
    # over 6N bytes, OI 0.667.
    path = shared_data / "tracelens" / "jax08_elementwise" / "tw003.xplane.pb"
    ours = _rows(json.loads(run_cli("export", path, check=True).stdout)[0])
    row = ours[("Total", True, "17", "loop_convert_fusion")]
    n = 67_108_864
    assert row["operational_intensity"] == pytest.approx(4 * n / (6 * n))
    assert row["measured_flop_rate"] == pytest.approx(5 * 4 * n / (row["total_time"] * 1000))


def test_json_reports_dtype_and_kernels_without_hlo(shared_data):
    path = shared_data / "tracelens" / "jax08_gemm" / "tw003.xplane.pb"
    doc = json.loads(run_cli("export", path, "--format", "json", check=True).stdout)
    assert doc["device"]["device_core_count"] == 8 and doc["device"]["active_core_count"] == 1
    ops = doc["ops"]
    gemm = next(o for o in ops if o["hlo_module_id"] == "49" and o["hlo_name"] == "custom-call.1")
    assert gemm["dtype"] == "bf16"
    assert gemm["dtype_peak_gflops"] == pytest.approx(1_307_443.2, rel=1e-4)
    assert doc["unattributed_kernels"][0]["name"] == "__amd_rocclr_copyBuffer.kd"
