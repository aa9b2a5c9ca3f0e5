"""Our datatable equals XProf 2.24.2's on the real TPU sample, cell for cell."""

from __future__ import annotations

import gzip
import json
import math

from conftest import run_cli

from tb_roofline_plugin.render.datatable import columns


def _assert_tables_equal(ours: list, ref: list) -> None:
    table, ref_table = ours[0], ref[0]
    assert table["cols"] == ref_table["cols"]
    assert table["p"].keys() == ref_table["p"].keys()
    for key, value in ref_table["p"].items():
        try:
            expected = format(float(value), ".6g")
            assert format(float(table["p"][key]), ".6g") == expected, key
        except ValueError:
            assert table["p"][key] == value, key
    assert len(table["rows"]) == len(ref_table["rows"])
    ids = [c["id"] for c in ref_table["cols"]]
    for r, (row, ref_row) in enumerate(zip(table["rows"], ref_table["rows"])):
        for col, cell, ref_cell in zip(ids, row["c"], ref_row["c"]):
            got, want = cell["v"], ref_cell["v"]
            if isinstance(want, float):
                assert isinstance(got, float), (r, col)
                assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-300), (r, col, got, want)
            else:
                assert got == want, (r, col, got, want)
    assert ours[1] == ref[1]


def test_tpu_inference_datatable_equals_xprof_reference(shared_data):
    proc = run_cli("export", shared_data / "xprof" / "tpu_inference_2.xplane.pb", check=True)
    ours = json.loads(proc.stdout)
    ref = json.loads(
        (shared_data / "xprof-reference" / "tpu_inference_2.roofline_model.json").read_text()
    )
    _assert_tables_equal(ours, ref)
    # Spot checks of the worked example in the semantics doc (Program, include = true).
    program = dict(
        zip([c["id"] for c in ours[0]["cols"]], [c["v"] for c in ours[0]["rows"][0]["c"]])
    )
    assert program["step"] == "Total" and program["operation"] == "Program"
    assert math.isclose(program["total_time"], 363729698.76875, rel_tol=1e-12)
    assert math.isclose(program["hbm_bw"], 66.3267258122303, rel_tol=1e-9)
    assert program["bound_by"] == "HBM"
    assert ours[0]["p"]["hbm_ridge_point"] == "560.442"


def test_golden_tpu_training_layout_matches_our_columns(shared_data):
    golden = json.loads(
        gzip.decompress(
            (shared_data / "xprof" / "golden_roofline_model_tpu_training.json.gz").read_bytes()
        )
    )
    expected = [{"id": cid, "label": label, "type": kind} for cid, kind, label, _ in columns(False)]
    assert golden[0]["cols"] == expected
    steps = [row["c"][0]["v"] for row in golden[0]["rows"]]
    assert set(steps) == {"Total", "Average", "0", "1", "2", "3", "4"}
    # Row order per include set: Total Program, ops..., Average, steps in order.
    half = steps[: len(steps) // 2]
    assert half[0] == "Total" and half[-6:] == ["Average", "0", "1", "2", "3", "4"]


def test_golden_average_divides_total_time_but_not_avg_time(shared_data):
    golden = json.loads(
        gzip.decompress(
            (shared_data / "xprof" / "golden_roofline_model_tpu_training.json.gz").read_bytes()
        )
    )
    ids = [c["id"] for c in golden[0]["cols"]]
    rows = [dict(zip(ids, [c["v"] for c in r["c"]])) for r in golden[0]["rows"] if r["c"][34]["v"]]
    average = next(r for r in rows if r["step"] == "Average")
    steps = [r for r in rows if r["step"].isdigit()]
    step_sum = sum(r["total_time"] for r in steps)
    assert math.isclose(average["total_time"], step_sum / len(steps), rel_tol=1e-9)
    assert math.isclose(average["avg_time"], step_sum, rel_tol=1e-9)
