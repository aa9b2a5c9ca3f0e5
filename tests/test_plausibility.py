"""Ops above their roof are named in a WARNING of our json (the datatable stays XProf's)."""

from __future__ import annotations

import json

from conftest import run_cli

from tb_roofline_plugin.peaks.perf_env import PerfEnv
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.render.export import render


def _above_roof_by_hand(records: list[dict], peak_gflops: float, peak_gibps: float) -> set:
    """Ops whose FLOP rate or HBM bandwidth is over 105 % of its peak (record fields)."""
    above = set()
    for r in records:
        if r["record_type"] != "ALL" or r["rank"] == "0" or not r["include_infeed_outfeed"]:
            continue
        utilization = max(r.get("measured_flop_rate", 0) / peak_gflops, r["hbm_bw"] / peak_gibps)
        if utilization > 1.05:
            above.add(r["hlo_name"])
    return above


def _warning(doc: dict) -> str:
    (warning,) = [w for w in doc["database"]["diagnostics"]["warnings"] if "above" in w.lower()]
    return warning


def test_amd_ops_above_the_hbm_roof_are_named_in_the_json(shared_data):
    path = shared_data / "tracelens/jax08_gemm/tw003.xplane.pb"
    doc = json.loads(render(analyze_file(path), "json", [str(path)]))
    database = doc["database"]
    above = _above_roof_by_hand(
        database["roofline_model_record"], database["peak_flop_rate"], database["peak_hbm_bw"]
    )
    assert above == {"wrapped_broadcast"}
    warning = _warning(doc)
    assert "ops wrapped_broadcast at 110% and wrapped_broadcast at 109% of the roof" in warning
    assert "cache hits counted as memory traffic" in warning
    # XProf's datatable keeps XProf's diagnostics: the warning is ours.
    table, diagnostics = json.loads(render(analyze_file(path), "datatable", [str(path)]))
    messages = [row["c"][1]["v"] for row in diagnostics["rows"]]
    assert len(messages) == 1 and messages[0].startswith("No step marker observed")


def test_cpu_ops_above_tiny_peaks_are_named_and_real_peaks_name_none(shared_data, tmp_path):
    (path,) = (shared_data / "jax-cpu/jax_mlp").glob("plugins/profile/*/vm.xplane.pb")
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"name": "slow", "dtype_tflops": {"fp32": 0.001}, "hbm_gbps": 0.1}))
    doc = json.loads(run_cli("export", str(path), "--format", "json", "--peaks", str(slow),
                             check=True).stdout)  # fmt: skip
    records = doc["database"]["roofline_model_record"]
    above = _above_roof_by_hand(records, 1.0, 0.1 / 1.073741824)
    assert len(above) > 5
    assert f"{len(above)} ops (" in _warning(doc)
    fast = analyze_file(path, PerfEnv(peak_tera_flops_per_second=1e6, peak_bws_gbps=[1e6] * 7,
                                      source="test"))  # fmt: skip
    fast_doc = json.loads(render(fast, "json", [str(path)]))
    warnings = fast_doc["database"].get("diagnostics", {}).get("warnings", [])
    assert not any("above their roof" in w.lower() for w in warnings)


def test_summary_prints_the_above_roof_warning(shared_data):
    path = shared_data / "tracelens/jax08_gemm/tw003.xplane.pb"
    text = run_cli("summary", str(path), check=True).stdout
    (line,) = [x for x in text.splitlines() if "Above their roof" in x]
    assert line.startswith(
        "WARNING: Above their roof by more than 5% (not physical): ops wrapped_broadcast at 110% "
        "and wrapped_broadcast at 109% of the roof."
    )


def test_the_above_roof_warning_skips_ops_the_roofline_cannot_judge(shared_data):
    """tpu_inference_2's copy-start ops (async copies: their time is the dispatch) reach
    192,447,055 % of the HBM roof; the roofline does not judge them, so no warning names
    them, and no op detail is flagged above the roof for them."""
    path = shared_data / "xprof/tpu_inference_2.xplane.pb"
    doc = json.loads(render(analyze_file(path), "json", [str(path)]))
    records = doc["database"]["roofline_model_record"]
    database = doc["database"]
    above = _above_roof_by_hand(records, database["peak_flop_rate"], database["peak_hbm_bw"])
    assert above and all(name.startswith(("copy-start", "copy-done")) for name in above)
    warnings = doc["database"]["diagnostics"]["warnings"]
    assert not any("above their roof" in w.lower() for w in warnings)
    flagged = [op["hlo_name"] for op in doc["ops"] if op["above_roof"]]
    assert flagged == []
    copies = [op for op in doc["ops"] if op["hlo_name"] in above]
    assert copies and {op["roofline_class"] for op in copies} == {"async copy"}
    text = run_cli("summary", str(path), check=True).stdout
    assert "Above their roof" not in text and "192,447,055" not in text


def test_above_roof_percentages_have_no_absurd_digits():
    from tb_roofline_plugin.render.advice import percent_text

    assert percent_text(1.18) == "118%"
    assert percent_text(1_924_470.55) == "> 1,000%"
    assert percent_text(0.05) == "5%"
