"""``tb_roofline_plugin.analyze``: the CLI's json as tables, from Python.

Each table is checked against ``tb-roofline export --format json`` run in a fresh
interpreter (the oracle: its records and details picked and converted here), on a TPU, a
GPU and a CPU XSpace profile, PyTorch GPU and CPU traces and the A100 trace with hardware
counters. Tables are lists of dicts without pandas (``dataframes=False``), DataFrames with
it: both are tested, the DataFrames where pandas is installed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO, run_cli

import tb_roofline_plugin
from tb_roofline_plugin.errors import RooflineError

PROFILES = {
    "tpu": "xprof/tpu_inference_2.xplane.pb",
    "gpu": "tracelens/jax08_gemm/tw003.xplane.pb",
    "cpu": "jax-cpu/jax_mlp/plugins/profile/2026_11_30_09_47_20/vm.xplane.pb",
    "pytorch_gpu": "pytorch/a100_recsys/control.pt.trace.json.gz",
    "pytorch_cpu": "pytorch/cpu_cnn/worker0.1796108550851685382.pt.trace.json",
    "counters": "field/hta_cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
}
INTEGERS = ("rank", "hlo_module_id", "occurrences", "flops", "bytes_accessed")
KINDS = {"total": "ALL", "average": "AVERAGE_STEP"}


def _cli_json(path, *args) -> dict:
    proc = run_cli("export", path, "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _row(record: dict) -> dict:
    """A record as the table's row should be: 64-bit integers as ints, source as columns."""
    row = {}
    for key, value in record.items():
        if key == "source_info":
            row["source_file"] = value.get("file_name", "")
            row["source_line"] = value.get("line_number", 0)
            row["source_stack"] = value.get("stack_frame", "")
        else:
            row[key] = int(value) if key in INTEGERS else value
    return row


def _expected_ops(document: dict) -> list[dict]:
    kind = KINDS.get(document["step"], "PER_STEP")
    details = {(int(d["hlo_module_id"]), d["hlo_name"]): d for d in document["ops"]}
    rows = []
    for record in document["database"].get("roofline_model_record", []):
        if record["include_infeed_outfeed"] and record["record_type"] == kind:
            if int(record["rank"]) > 0:
                row = _row(record)
                detail = details[(row["hlo_module_id"], row["hlo_name"])]
                rows.append({**row, **{k: v for k, v in detail.items() if k not in row}})
    return rows


def _expected_programs(document: dict) -> list[dict]:
    rows = []
    for record in document["database"].get("roofline_model_record", []):
        if record["include_infeed_outfeed"] and record["record_type"] != "ALL_HW":
            if int(record["rank"]) == 0:
                step = {"ALL": "Total", "AVERAGE_STEP": "Average"}.get(record["record_type"])
                rows.append({"step": step or str(record["step_num"]), **_row(record)})
    return rows


@pytest.fixture(scope="module", params=sorted(PROFILES))
def both(request, shared_data):
    """(CLI json, Analysis with lists of dicts) of one profile."""
    path = shared_data / PROFILES[request.param]
    return _cli_json(path), tb_roofline_plugin.analyze(path, dataframes=False)


def test_the_analysis_is_the_clis_json(both):
    cli, result = both
    assert result.json == cli
    assert result.device == cli["device"] and result.hosts == cli["hosts"]
    assert result.peaks["peak_flop_rate_gflops"] == cli["device"]["peak_flop_rate_gflops"]
    assert result.peaks["memories"] == cli["device"]["memories"]
    assert result.peaks["peaks_source"] == cli["device"]["peaks_source"]


def test_the_op_table_holds_the_json_records_with_their_details(both):
    cli, result = both
    expected = _expected_ops(cli)
    assert result.op_table == expected
    assert len(expected) == len(cli["ops"]) > 0
    assert [r["rank"] for r in expected] == list(range(1, len(expected) + 1))


def test_the_step_table_and_steps_are_the_jsons(both):
    cli, result = both
    assert result.step_table == _expected_programs(cli)
    assert result.step_table[0]["step"] == "Total"
    assert result.steps == cli["steps"]
    numbers = [s["step_num"] for s in cli["steps"]]
    assert [r["step"] for r in result.step_table if r["step"] not in ("Total", "Average")] == [
        str(n) for n in numbers
    ] or not numbers


def test_the_hardware_table_is_the_jsons_counters(both):
    cli, result = both
    if "hardware_counters" not in cli:
        assert result.hw_table is None and result.hardware is None
        return
    rows = result.hw_table
    assert result.hardware == cli["hardware_counters"]
    assert [r["hlo_name"] for r in rows] == [r["hlo_name"] for r in cli["hardware_counters"]["ops"]]
    for row, op in zip(rows, cli["hardware_counters"]["ops"]):
        assert row["flops"] == op["flops"] and row["kernels"] == op["kernels"]
        assert row["fp32_flops"] == op["values"]["fp32"]
        assert row["bytes_accessed"] is None  # no DRAM counters in this trace
    assert rows[0]["hlo_name"] == "aten::cudnn_convolution"
    assert rows[0]["flops"] == pytest.approx(49.128e9, rel=1e-4)


def test_the_layer_table_is_the_jsons_layer_tree_one_row_per_node(both):
    cli, result = both
    nodes = cli["layers"]["nodes"]
    rows = result.layer_table
    assert [r["path"] for r in rows] == [n["path"] for n in nodes]
    assert rows[0]["depth"] == 0 and rows[0]["parent"] == -1
    program = next(r for r in _expected_programs(cli) if r["step"] == "Total")
    assert rows[0]["self_time_us"] == pytest.approx(program["total_time_in_us"], rel=1e-9)
    for row, node in zip(rows, nodes):
        assert "ops" not in row and "children" not in row
        assert row["flops"] == node["flops"] and row["self_time_us"] == node["self_time_us"]
        if "forward" in node:
            assert row["forward_self_time_us"] == node["forward"]["self_time_us"]
            assert row["backward_flops"] == node["backward"]["flops"]
    leaf = next(i for i, n in enumerate(nodes) if n.get("ops"))
    assert [o["name"] for o in result.layer_ops(leaf)] == [o["name"] for o in nodes[leaf]["ops"]]
    with pytest.raises(ValueError, match="no layer"):
        result.layer_ops(len(nodes))


def test_a_step_selection_is_the_clis_step(shared_data):
    path = shared_data / PROFILES["cpu"]
    cli = _cli_json(path, "--step", "3")
    result = tb_roofline_plugin.analyze(path, step=3, dataframes=False)
    assert result.json == cli and result.selection == "3"
    assert result.op_table == _expected_ops(cli)
    assert {r["record_type"] for r in result.op_table} == {"PER_STEP"}


def test_peaks_by_name_judge_a_cpu_profile(shared_data):
    path = shared_data / PROFILES["pytorch_cpu"]
    cli = _cli_json(path, "--peaks", "h100-sxm")
    result = tb_roofline_plugin.analyze(path, peaks="h100-sxm", dataframes=False)
    assert result.json == cli and result.peaks["peaks_known"]


def test_bad_input_is_a_one_line_error(tmp_path):
    with pytest.raises(RooflineError) as missing:
        tb_roofline_plugin.analyze(tmp_path / "nothing.xplane.pb")
    assert str(missing.value) == f"{tmp_path / 'nothing.xplane.pb'}: no such file or directory"
    profile = tmp_path / "bad.xplane.pb"
    profile.write_bytes(b"\x0a\xff\xff\xff not a profile")
    with pytest.raises(RooflineError) as broken:
        tb_roofline_plugin.analyze(profile)
    assert str(broken.value).startswith(f"{profile}: ") and "\n" not in str(broken.value)


def test_unknown_peaks_are_a_one_line_error(shared_data):
    with pytest.raises(RooflineError) as error:
        tb_roofline_plugin.analyze(shared_data / PROFILES["cpu"], peaks="no-such-device")
    assert str(error.value).startswith("peaks: ") and "\n" not in str(error.value)


def test_the_tables_are_dataframes_with_pandas(both):
    pd = pytest.importorskip("pandas")
    cli, listed = both
    result = tb_roofline_plugin.analyze(cli["sources"][0])
    assert result.pandas
    for name in ("op_table", "step_table", "steps", "hw_table"):
        rows, frame = getattr(listed, name), getattr(result, name)
        if rows is None:
            assert frame is None
            continue
        assert isinstance(frame, pd.DataFrame) and len(frame) == len(rows)
        pd.testing.assert_frame_equal(frame, pd.DataFrame(rows, columns=list(frame.columns)))


def test_importing_the_package_stays_light():
    """TensorBoard imports the package for its plugin loader: no numpy, no reader, no api."""
    code = (
        "import sys, tb_roofline_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('tb_roofline_plugin', 'numpy', "
        "'google', 'pandas'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert proc.stdout.strip() == "['tb_roofline_plugin']"
    assert "analyze" in dir(tb_roofline_plugin) and callable(tb_roofline_plugin.analyze)
    with pytest.raises(AttributeError):
        tb_roofline_plugin.no_such_name  # noqa: B018


def test_a_run_folder_gives_all_hosts_or_the_one_asked_for(tmp_path):
    from counter_traces import write_counter_trace

    for worker in ("worker0", "worker1"):
        write_counter_trace(tmp_path / f"{worker}.1.pt.trace.json", with_kernels=True)
    both = tb_roofline_plugin.analyze(tmp_path, dataframes=False)
    one = tb_roofline_plugin.analyze(tmp_path, host="worker1", dataframes=False)
    assert both.hosts == ["worker0", "worker1"] and one.hosts == ["worker1"]
    assert one.json == _cli_json(tmp_path, "--host", "worker1")
    assert both.json == _cli_json(tmp_path)
    (mm_both,) = [r for r in both.hw_table if r["hlo_name"] == "aten::mm"]
    (mm_one,) = [r for r in one.hw_table if r["hlo_name"] == "aten::mm"]
    assert mm_both["kernels"] == 2 * mm_one["kernels"] == 4
    assert mm_both["flops"] == 2 * mm_one["flops"]
