"""Total (HW): hardware counters of CUPTI range-profiler traces, joined to their ops.

Oracles: the raw JSON in plain Python (the i-th ``cuda_profiler_range`` by time is the i-th
``cudaLaunchKernel`` by time, its op the innermost ``cpu_op`` holding the call; FLOPs =
fadd + fmul + 2·ffma per precision), HolisticTraceAnalysis's CUPTI counter analysis in its
own venv (when ``benchmarks/.hta-venv`` is there), generated traces whose counters are known
(``counter_traces``), and 2·M·N·K of the AlexNet classifier the shared trace ran.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from counter_traces import (
    ADD,
    DRAM,
    DRAM_READ,
    FADD,
    FFMA,
    FMUL,
    HALF_FMAS,
    KERNELS,
    K,
    M,
    N,
    range_flops,
    write_counter_trace,
)
from kineto_oracle import Holder, load

from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.kineto.counters import range_flops as counted_flops
from tb_roofline_plugin.kineto.ops import range_ops
from tb_roofline_plugin.kineto.trace_reader import read_trace
from tb_roofline_plugin.platforms.analysis import analyze_files
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.render.export import render, to_json
from tb_roofline_plugin.roofline.model import roofline_model
from tb_roofline_plugin.serve.stats_store import dumps, loads

CUPTI = "field/hta_cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"
REPO = Path(__file__).resolve().parents[1]
HTA_PYTHON = REPO / "benchmarks/.hta-venv/bin/python"
SASS = re.compile(r"^smsp__sass_thread_inst_executed_op_([hfd])(add|mul|fma)_pred_on\.sum$")


def _oracle_flops(args: dict) -> float:
    """add + mul + 2·fma of every precision, from a range's args."""
    total = 0.0
    for name, value in args.items():
        match = SASS.match(name)
        if match:
            total += value * (2 if match.group(2) == "fma" else 1)
    return total


def _oracle_ranges(events: list[dict]) -> list[tuple[dict, str]]:
    """(range, the name of its launch's innermost cpu_op) in time order."""
    ranges = sorted(
        (e for e in events if e.get("cat") == "cuda_profiler_range"), key=lambda e: e["ts"]
    )
    launches = sorted(
        (e for e in events if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"),
        key=lambda e: e["ts"],
    )
    assert len(ranges) == len(launches)
    ops = Holder([e for e in events if e.get("cat") == "cpu_op"])
    return [
        (r, ops.innermost((call["pid"], call["tid"]), call["ts"])["name"])
        for r, call in zip(ranges, launches)
    ]


@pytest.fixture(scope="module")
def cupti(shared_data):
    """(OpStats, raw events, our json) of the shared A100 trace with counters."""
    path = shared_data / CUPTI
    stats = analyze_trace(path)
    return stats, load(path)[1], to_json(roofline_model(stats), stats, [str(path)])


def _hw_records(document: dict) -> list[dict]:
    return [
        r for r in document["database"]["roofline_model_record"] if r["record_type"] == "ALL_HW"
    ]


# --- the counters of one range --------------------------------------------------------------


def test_flops_of_a_range_are_adds_plus_muls_plus_twice_the_fmas_per_precision():
    names = [
        FFMA,
        FADD,
        FMUL,
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",  # the same counter again
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
        "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_on.sum",  # a part of the one above
        "sm__ops_path_tensor_src_int8",  # integer operations, not FLOPs
        DRAM_READ,
    ]
    values = np.array([[10, 3, 4, 5, 7, 10, 1000, 600, 99, 1e6], [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]])
    flops = counted_flops(names, values)
    assert flops["fp32"].tolist() == [3 + 4 + 2 * 10, 1]
    assert flops["fp16"].tolist() == [2 * 5, 0]
    assert flops["fp64"].tolist() == [7, 0]
    assert flops["tensor_fp16"].tolist() == [1000, 0]
    assert set(flops) == {"fp16", "fp32", "fp64", "tensor_fp16"}


# --- the shared A100 trace ------------------------------------------------------------------


def test_each_op_holds_the_flops_of_its_kernels_ranges_summed_from_the_raw_json(cupti):
    stats, events, document = cupti
    kernels: dict[str, int] = defaultdict(int)
    flops: dict[str, float] = defaultdict(float)
    for r, op in _oracle_ranges(events):
        kernels[op] += 1
        flops[op] += _oracle_flops(r["args"])
    hardware = stats.hardware
    assert hardware.ranges == hardware.launches == hardware.joined == 77
    ours = dict(zip(hardware.db.name.tolist(), hardware.db.flops.tolist()))
    assert ours == dict(flops)
    assert dict(zip(hardware.db.name.tolist(), hardware.kernels.tolist())) == dict(kernels)
    # The json's table and the ALL_HW records say the same.
    table = {
        r["hlo_name"]: (r["kernels"], r["flops"]) for r in document["hardware_counters"]["ops"]
    }
    assert table == {op: (kernels[op], flops[op]) for op in flops}
    records = {r["hlo_name"]: r["flops_v2"] for r in _hw_records(document)}
    assert records.pop("Program") == sum(flops.values())
    assert records == dict(flops)
    assert document["hardware_counters"]["program"]["flops"] == sum(flops.values())


def test_the_ranges_map_to_the_kernels_launch_order_and_the_innermost_op(cupti, shared_data):
    _, events, _ = cupti
    assert range_ops(read_trace(shared_data / CUPTI)) == [op for _, op in _oracle_ranges(events)]


def test_the_classifier_gemms_measure_two_m_n_k_of_a_batch_of_128(cupti):
    """AlexNet's fc6 (9216 -> 4096) and fc7 (4096 -> 4096) at batch 128: each SGEMM's FFMA
    count is M·N·K exactly, so its FLOPs are 2·M·N·K plus its few adds and muls."""
    _, events, _ = cupti
    sgemm = [r for r, op in _oracle_ranges(events) if r["name"].startswith("ampere_sgemm")]
    ffma = [r["args"][FFMA] for r in sgemm]
    assert ffma[:2] == [128 * 9216 * 4096, 128 * 4096 * 4096]
    assert ffma[3:5] == ffma[:2]  # the second forward pass
    stats = cupti[0]
    addmm = stats.hardware.db.name.tolist().index("aten::addmm")
    gemms = sum(2 * r["args"][FFMA] for r in sgemm)
    assert stats.hardware.db.flops[addmm] >= gemms


def test_the_range_to_op_mapping_agrees_with_holistic_trace_analysis(cupti, shared_data):
    if not HTA_PYTHON.exists():
        pytest.skip("HolisticTraceAnalysis not installed (benchmarks/hta_counters.py installs it)")
    spec = importlib.util.spec_from_file_location("bench_hta", REPO / "benchmarks/hta_counters.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_hta"] = module
    try:
        spec.loader.exec_module(module)
        theirs = module.hta_ranges(str(HTA_PYTHON), shared_data / CUPTI)
    finally:
        del sys.modules["bench_hta"]
        for name in ("run", "kineto_vs_hta"):
            sys.modules.pop(name, None)
    assert len(theirs) == 77
    assert [r["bottom_level_op"] for r in theirs] == range_ops(read_trace(shared_data / CUPTI))
    stats = cupti[0]
    per_op: dict[str, float] = defaultdict(float)
    for r in theirs:
        per_op[r["bottom_level_op"]] += r["flops"]
    assert dict(zip(stats.hardware.db.name.tolist(), stats.hardware.db.flops.tolist())) == dict(
        per_op
    )


def test_what_the_counters_did_not_measure_is_said_never_filled_in(cupti):
    stats, _, document = cupti
    section = document["hardware_counters"]
    assert section["measured"] == {"flops": True, "tensor_flops": False, "dram_bytes": False}
    assert section["times_known"] is False
    for op in section["ops"]:
        assert op["bytes_accessed"] is None and op["operational_intensity"] is None
        assert op["time_us"] is None and op["measured_flop_rate"] is None
        assert op["modelled_flops"] == 0.0 and op["flops_ratio"] is None  # no shapes recorded
    notes = " ".join(section["notes"])
    assert "no DRAM counters recorded" in notes and "no tensor-pipe counter" in notes
    for record in _hw_records(document):
        assert record["include_infeed_outfeed"] is True
        assert record["bytes_accessed"] == "0" and record["bound_by"] == "Unknown"
    # Modelled op rows with their kernels counted, no time: Kineto records no kernel activity
    # beside the ranges, whose times are the capture split evenly.
    assert stats.all_db.time_ps.sum() == 0 and stats.all_db.total_time_ps == 0
    (warning,) = [w for w in stats.diagnostics.warnings if "range profiler" in w]
    assert "no device times" in warning and "77 cuda_profiler_range" in warning


def test_the_datatable_names_the_hardware_rows_total_hw(cupti, shared_data):
    stats = cupti[0]
    (table,) = json.loads(render(stats, "datatable", [str(shared_data / CUPTI)]))[:1]
    steps = [row["c"][0]["v"] for row in table["rows"]]
    assert steps.count("Total (HW)") == 1 + len(stats.hardware.db)  # Program and each op


def test_summary_shows_measured_flops_beside_modelled(shared_data):
    proc = run_cli("summary", shared_data / CUPTI)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Total (HW):"))
    assert "77 of 77 kernels counted" in lines[at]
    assert lines[at + 1].split()[:5] == ["op", "kernels", "measured", "FLOPs", "modelled"]
    assert lines[at + 3].split()[:4] == ["Program", "77", "80.2", "GFLOP"]
    assert lines[at + 4].split()[:4] == ["aten::cudnn_convolution", "28", "49.1", "GFLOP"]


# --- generated traces -----------------------------------------------------------------------


def test_dram_counters_give_measured_bytes_and_intensity(tmp_path):
    path = write_counter_trace(tmp_path / "w.1.pt.trace.json")
    stats = analyze_trace(path)
    hw = stats.hardware
    assert hw.measured["dram_bytes"] is True
    rows = {name: i for i, name in enumerate(hw.db.name.tolist())}
    assert set(rows) == {"aten::mm", "aten::add", "my_region"}
    mm, add = rows["aten::mm"], rows["aten::add"]
    assert hw.db.bytes_accessed[mm] == sum(DRAM[0]) + sum(DRAM[2])
    assert hw.values["dram_read_bytes"][mm] == DRAM[0][0] + DRAM[2][0]
    assert hw.db.flops[mm] == range_flops(0) + range_flops(2)
    assert hw.db.flops[add] == range_flops(1) == ADD + 2 * HALF_FMAS[1]
    document = to_json(roofline_model(stats), stats, [str(path)])
    ops = {r["hlo_name"]: r for r in document["hardware_counters"]["ops"]}
    intensity = (range_flops(0) + range_flops(2)) / (sum(DRAM[0]) + sum(DRAM[2]))
    assert ops["aten::mm"]["operational_intensity"] == pytest.approx(intensity, rel=1e-12)
    assert ops["aten::mm"]["bytes_accessed"] == sum(DRAM[0]) + sum(DRAM[2])
    modelled = 2 * (2.0 * M * N * K)  # two executions of [M, K] x [K, N]
    assert ops["aten::mm"]["modelled_flops"] == modelled
    assert ops["aten::mm"]["flops_ratio"] == pytest.approx(
        (range_flops(0) + range_flops(2)) / modelled
    )
    assert ops["aten::add"]["flops_ratio"] == pytest.approx(range_flops(1) / ADD)
    assert ops["my_region"]["modelled_flops"] == 0 and ops["my_region"]["flops_ratio"] is None
    (record,) = [r for r in _hw_records(document) if r["hlo_name"] == "aten::mm"]
    assert record["operational_intensity"] == pytest.approx(intensity, rel=1e-12)
    assert int(record["bytes_accessed"]) == sum(DRAM[0]) + sum(DRAM[2])


def test_kernels_with_counters_get_measured_rates_on_the_kernels_times(tmp_path):
    path = write_counter_trace(tmp_path / "w.1.pt.trace.json", with_kernels=True, tensor=True)
    stats = analyze_trace(path)
    document = to_json(roofline_model(stats), stats, [str(path)])
    hw = {r["hlo_name"]: r for r in _hw_records(document)}
    modelled = {
        r["hlo_name"]: r
        for r in document["database"]["roofline_model_record"]
        if r["record_type"] == "ALL" and r["include_infeed_outfeed"]
    }
    mm_us = KERNELS[0][4] + KERNELS[2][4]
    flops = range_flops(0, tensor=True) + range_flops(2, tensor=True)
    assert hw["aten::mm"]["total_time_in_us"] == modelled["aten::mm"]["total_time_in_us"] == mm_us
    assert hw["aten::mm"]["measured_flop_rate"] == pytest.approx(flops / (mm_us * 1e3))
    assert hw["aten::mm"]["bound_by"] != "Unknown"  # bytes measured: judged
    section = document["hardware_counters"]
    assert section["times_known"] is True and section["measured"]["tensor_flops"] is True
    (mm,) = [r for r in section["ops"] if r["hlo_name"] == "aten::mm"]
    assert mm["values"]["tensor_fp16"] == 3_000_000 and mm["time_us"] == mm_us


def test_ranges_that_do_not_match_the_launches_are_not_joined(tmp_path):
    path = write_counter_trace(tmp_path / "w.1.pt.trace.json", drop_range=True)
    stats = analyze_trace(path)
    assert stats.hardware is None and len(stats.all_db) == 0
    (warning,) = [w for w in stats.diagnostics.warnings if "range-profiler" in w]
    assert "3 CUPTI range-profiler ranges" in warning and "against 4 kernel launch calls" in warning
    document = to_json(roofline_model(stats), stats, [str(path)])
    assert "hardware_counters" not in document


def test_without_dram_counters_bytes_are_unknown_and_the_bound_too(tmp_path):
    path = write_counter_trace(tmp_path / "w.1.pt.trace.json", with_kernels=True, dram=False)
    stats = analyze_trace(path)
    document = to_json(roofline_model(stats), stats, [str(path)])
    for record in _hw_records(document):
        assert record["bound_by"] == "Unknown" and record["bytes_accessed"] == "0"
    (mm,) = [r for r in document["hardware_counters"]["ops"] if r["hlo_name"] == "aten::mm"]
    assert mm["bytes_accessed"] is None and mm["hbm_bw"] is None
    assert mm["measured_flop_rate"] > 0  # FLOPs and time measured: a rate


def test_hosts_add_up_their_counts_and_the_stats_cache_keeps_them(tmp_path):
    run = tmp_path / "run"
    paths = [
        write_counter_trace(run / f"worker{i}.1.pt.trace.json", with_kernels=True) for i in range(2)
    ]
    one = analyze_trace(paths[0]).hardware
    both = analyze_files(paths).hardware
    assert both.ranges == 2 * one.ranges and both.kernels.tolist() == (2 * one.kernels).tolist()
    assert both.db.flops.tolist() == (2 * one.db.flops).tolist()
    assert both.values["dram_write_bytes"].tolist() == (2 * one.values["dram_write_bytes"]).tolist()
    stats = analyze_files(paths)
    again = loads(dumps(stats))
    assert again.hardware.db.name.tolist() == stats.hardware.db.name.tolist()
    assert again.hardware.db.flops.tolist() == stats.hardware.db.flops.tolist()
    assert again.hardware.values.keys() == stats.hardware.values.keys()
    assert again.hardware.measured == stats.hardware.measured
    model = roofline_model(again).records
    assert (model["record_type"] == roofline_model_pb2.ALL_HW).sum() == 1 + len(stats.hardware.db)


def test_profiles_without_counters_have_no_hardware_records(shared_data):
    stats = analyze_trace(shared_data / "pytorch/a100_recsys/control.pt.trace.json.gz")
    assert stats.hardware is None
    records = roofline_model(stats).records
    assert not (records["record_type"] == roofline_model_pb2.ALL_HW).any()


def test_counters_of_every_name_cost_memory_in_proportion_to_the_trace(tmp_path):
    """A hostile trace: 3,000 ranges with 50 names of their own each (150,000 names) would
    be a 3.6 GB matrix of every name; only the counters read are columns."""
    events = []
    for i in range(3000):
        args = {f"made_up_counter_{i}_{j}": j for j in range(50)}
        args[FFMA] = i
        events.append(
            {"ph": "X", "cat": "cuda_profiler_range", "name": "k", "pid": 0, "tid": 0,
             "ts": 10 + i, "dur": 1, "args": args}
        )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": 10 + i, "dur": 1, "args": {"correlation": i}}
        )  # fmt: skip
    path = tmp_path / "hostile.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = read_trace(path)
    assert len(trace.counter_names) == 3000 * 50 + 1
    stats = analyze_trace(path)
    assert stats.hardware.db.flops.sum() == 2 * sum(range(3000))
    assert len(stats.hardware.counters) == 101  # 100 names listed, then how many more
    assert stats.hardware.counters[-1] == f"... and {3000 * 50 + 1 - 100:,} more"


def test_a_counter_that_is_not_a_number_counts_nothing_and_is_said(tmp_path):
    events = counter_events_with({FFMA: "many"}, {FFMA: None})
    path = tmp_path / "odd.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    stats = analyze_trace(path)
    assert stats.hardware.db.flops.sum() == 2 * 5 + 7  # ranges 2 and 3
    assert any("recorded in only some ranges" in n for n in stats.hardware.notes)


def counter_events_with(*first: dict) -> list[dict]:
    """``counter_events()`` with the first ranges' args replaced by ``first``, the others
    their own (range 2: 5 FFMA, range 3: 7 FADD)."""
    from counter_traces import counter_events

    events = counter_events(dram=False)
    ranges = [e for e in events if e["cat"] == "cuda_profiler_range"]
    for r, args in zip(ranges, first):
        r["args"] = args
    ranges[2]["args"] = {FFMA: 5}
    ranges[3]["args"] = {FADD: 7}
    return events
