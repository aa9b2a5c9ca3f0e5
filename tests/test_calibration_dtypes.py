"""Peaks as the machine runs them (issue 20): calibrate measures bf16/int8 with the library it
names; an op whose dtype has no measured ceiling is not judged by another dtype's peak; one
vocabulary for main memory (DRAM on a CPU) and for op dtypes (fp32, bf16 from XSpace too)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import run_cli

from tb_roofline_plugin.hlo.cost.shapes import roofline_dtype
from tb_roofline_plugin.peaks.calibration import calibrate

GIB_PER_GB = 2**30 / 1e9
HAS_JAX = importlib.util.find_spec("jax") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
MLP = "jax-cpu/jax_mlp/plugins/profile/2026_11_30_09_47_20/vm.xplane.pb"
MATMUL = "jax-cpu/jax_matmul/plugins/profile/2026_11_30_09_47_35/vm.xplane.pb"
GEMM_BF16 = "tracelens/jax08_gemm/tw003.xplane.pb"  # MI300X, bf16 GEMMs (MANIFEST)


def _peak_file(tmp_path, name, dtype_tflops, gbps=20.0):
    path = tmp_path / f"{name}.json"
    doc = {"name": name, "vendor": "CPU", "dtype_tflops": dtype_tflops, "hbm_gbps": gbps}
    path.write_text(json.dumps(doc))
    return path


def _export(path, peaks):
    proc = run_cli("export", path, "--format", "json", "--peaks", peaks, check=True)
    return json.loads(proc.stdout)


# --- calibrate -----------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_JAX, reason="jax is not installed")
def test_calibrate_quick_measures_bf16_and_names_the_library(tmp_path):
    out = tmp_path / "peaks.json"
    run_cli("calibrate", "--quick", "--output", out, check=True)
    doc = json.loads(out.read_text())
    details = doc["details"]
    assert details["libraries"]["fp32"].startswith("numpy ")
    assert details["libraries"]["bf16"].split()[0] in ("jax", "torch")
    bf16 = details["matmul_bf16"]
    assert bf16["flops"] == 2 * 512**3
    assert doc["dtype_tflops"]["bf16"] == pytest.approx(bf16["flops"] / bf16["best_s"] / 1e12)
    library = details["libraries"]["bf16"].split()[0]
    assert f"{library} matmul bf16" in doc["source"]
    assert "numpy matmul fp32/fp64" in doc["source"]


def test_calibrate_without_a_library_leaves_bf16_out():
    result = calibrate(seconds_budget=0.5, matrix_n=128, stream_mib=16, libraries=())
    assert set(result["dtype_tflops"]) == {"fp32", "fp64"}
    assert set(result["details"]["libraries"]) == {"fp32", "fp64"}


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed")
def test_calibrate_skips_a_library_that_is_not_installed():
    result = calibrate(seconds_budget=0.5, matrix_n=128, stream_mib=16, libraries=("torch",))
    assert "bf16" not in result["dtype_tflops"] and "matmul_bf16" not in result["details"]


# --- an op's ceiling is its own dtype's ------------------------------------------------------


def test_op_of_a_dtype_without_a_ceiling_gets_no_compute_judgement(shared_data, tmp_path):
    peaks = _peak_file(tmp_path, "fp32-only", {"fp32": 100.0}, gbps=5000.0)
    doc = _export(shared_data / GEMM_BF16, peaks)
    records = {
        (r["hlo_module_id"], r["hlo_name"]): r
        for r in doc["database"]["roofline_model_record"]
        if r.get("rank", 0) and r["record_type"] == "ALL" and r["include_infeed_outfeed"]
    }
    gemms = [o for o in doc["ops"] if o["dtype"] == "bf16" and "custom-call" in o["hlo_name"]]
    assert gemms
    for op in gemms:
        record = records[(op["hlo_module_id"], op["hlo_name"])]
        memory = record["hbm_bw"] / (5000.0 / GIB_PER_GB)  # GiB/s over the file's GB/s
        assert op["dtype_peak_gflops"] == 0 and op["dtype_compute_efficiency"] == 0
        assert op["dtype_roofline_efficiency"] == pytest.approx(memory, rel=1e-9)
        assert op["dtype_note"] == "no bf16 ceiling measured: judged on memory only"
        assert not op["above_roof"] and op["wasted_time_us"] == 0
    info = " ".join(doc["database"]["diagnostics"]["info"])
    assert "No bf16 ceiling in these peaks" in info
    summary = run_cli("summary", shared_data / GEMM_BF16, "--peaks", peaks, check=True).stdout
    assert "no bf16 roof" in summary and "not physical" not in summary


def test_fp32_op_is_judged_by_the_fp32_ceiling(shared_data, tmp_path):
    peaks = _peak_file(tmp_path, "fp32-bf16", {"fp32": 0.2, "bf16": 0.8})
    doc = _export(shared_data / MATMUL, peaks)
    assert doc["database"]["peak_flop_rate"] == pytest.approx(800.0)  # one peak: the best
    fp32 = [o for o in doc["ops"] if o["dtype"] == "fp32"]
    assert fp32
    rate = {
        (r["hlo_module_id"], r["hlo_name"]): r.get("measured_flop_rate", 0.0)
        for r in doc["database"]["roofline_model_record"]
        if r.get("rank", 0) and r["record_type"] == "ALL" and r["include_infeed_outfeed"]
    }
    for op in fp32:
        assert op["dtype_peak_gflops"] == pytest.approx(200.0) and op["dtype_note"] == ""
        expected = rate[(op["hlo_module_id"], op["hlo_name"])] / 200.0
        assert op["dtype_compute_efficiency"] == pytest.approx(expected, rel=1e-9)


def test_builtin_table_keeps_the_single_peak_for_a_dtype_it_lacks(shared_data):
    # The A100 entry has every float dtype: s32 ops have no ceiling key at all and keep the
    # single peak, as XProf judges every op by it.
    doc = _export(shared_data / MLP, "a100")
    assert all(o["dtype_note"] == "" for o in doc["ops"])
    peak = doc["database"]["peak_flop_rate"]
    assert {o["dtype_peak_gflops"] for o in doc["ops"] if o["dtype"] == "s32"} <= {peak}


# --- one vocabulary ------------------------------------------------------------------------


def test_xla_dtypes_read_as_the_peaks_tables_name_them():
    expected = {"f32": "fp32", "bf16": "bf16", "f16": "fp16", "f64": "fp64", "s8": "int8"}
    expected |= {"f8e4m3fn": "fp8", "f8e5m2": "fp8", "s32": "s32", "pred": "pred"}
    assert {k: roofline_dtype(k) for k in expected} == expected


def test_xspace_json_op_dtypes_are_fp32_and_bf16(shared_data):
    cpu = json.loads(run_cli("export", shared_data / MLP, "--format", "json", check=True).stdout)
    gpu = json.loads(
        run_cli("export", shared_data / GEMM_BF16, "--format", "json", check=True).stdout
    )
    assert "fp32" in {o["dtype"] for o in cpu["ops"]}  # JAX 0.10.2 float32 (MANIFEST)
    assert "bf16" in {o["dtype"] for o in gpu["ops"]}
    assert not {"f32", "f16", "f64", "s8"} & {o["dtype"] for o in cpu["ops"] + gpu["ops"]}


def test_cpu_memory_is_dram_in_summary_compare_and_json(shared_data, tmp_path):
    peaks = _peak_file(tmp_path, "cpu", {"fp32": 0.2})
    a, b = shared_data / MLP, shared_data / MATMUL
    summary = run_cli("summary", a, "--peaks", peaks, check=True).stdout
    assert "DRAM GiB/s" in summary and "HBM" not in summary
    table = run_cli("compare", a, b, "--peaks", peaks, check=True).stdout
    assert "DRAM: " in table and "HBM" not in table
    result = json.loads(run_cli("compare", a, b, "--peaks", peaks, "--format", "json").stdout)
    assert result["memory"] == {"a": "DRAM", "b": "DRAM"}
    bounds = {result["program"]["bound_by_a"], result["program"]["bound_by_b"]}
    bounds |= {op[k] for op in result["ops"] for k in ("bound_by_a", "bound_by_b") if op[k]}
    assert "DRAM" in bounds and "HBM" not in bounds
    doc = _export(a, peaks)
    assert doc["device"]["main_memory"] == "DRAM"
    assert [m["name"] for m in doc["device"]["memories"]] == ["DRAM"]
