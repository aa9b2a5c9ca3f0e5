"""Kineto traces against oracles computed here from the raw JSON, in plain Python.

Per-op kernel time: each kernel's runtime call (same ``correlation``), then the innermost
``cpu_op`` on the call's thread whose span holds the call, found by scanning that thread's
ops. GEMM FLOPs: 2·M·N·K (times the batch) from ``Input Dims``. Steps: the N of
``ProfilerStep#N``. Peaks: the devices' published figures.
"""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict

import numpy as np
import pytest

from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.peaks.devices import load_perf_env
from tb_roofline_plugin.peaks.perf_env import HBM_RW
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.render.summary import summary_text
from tb_roofline_plugin.roofline.model import build_database

A100 = "pytorch/a100_recsys/control.pt.trace.json.gz"
MI250 = "pytorch/mi250_minitoy/mi250_minitoy_train.pt.trace.json.gz"
CPU_CNN = "pytorch/cpu_cnn/worker0.1796108550851685382.pt.trace.json"
RUNTIME = ("cuda_runtime", "cuda_driver")


def _events(path) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as handle:
        return [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]


def _launching_ops(events: list[dict]) -> dict[int, dict]:
    """Kernel index -> the cpu_op that launched it (kernels without one are left out)."""
    threads: dict[tuple, list[dict]] = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op":
            threads[(e["pid"], e["tid"])].append(e)
    starts = {}
    for key, ops in threads.items():
        ops.sort(key=lambda e: (e["ts"], -e["dur"]))
        starts[key] = [e["ts"] for e in ops]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in RUNTIME}
    found = {}
    for i, e in enumerate(events):
        if e.get("cat") != "kernel":
            continue
        call = calls.get(e["args"].get("correlation"))
        if call is None or (call["pid"], call["tid"]) not in threads:
            continue
        ops, key = threads[(call["pid"], call["tid"])], (call["pid"], call["tid"])
        t = call["ts"]
        # The latest-starting op that holds t is the innermost one (ops nest).
        for j in range(bisect.bisect_right(starts[key], t) - 1, -1, -1):
            if ops[j]["ts"] + ops[j]["dur"] >= t:
                found[i] = ops[j]
                break
    return found


def _op_row_times(db) -> dict[str, float]:
    """us per row of the ops that launched kernels (not the rows of kernels without one)."""
    mine = [c not in ("IDLE", "annotation", "kernel without op") for c in db.category.tolist()]
    return {n: t / 1e6 for n, t, m in zip(db.name.tolist(), db.time_ps.tolist(), mine) if m}


def _row(db, name: str) -> int:
    rows = [i for i, n in enumerate(db.name.tolist()) if n == name]
    assert len(rows) == 1, name
    return rows[0]


def _gemm_flops(op: dict) -> float:
    dims = op["args"]["Input Dims"]
    name = op["name"]
    a, b = (dims[1], dims[2]) if name == "aten::addmm" else (dims[0], dims[1])
    batch = a[0] if len(a) == 3 else 1
    return 2.0 * batch * a[-2] * a[-1] * b[-1]


@pytest.fixture(scope="module")
def a100(shared_data):
    path = shared_data / A100
    return path, analyze_trace(path), _events(path)


@pytest.fixture(scope="module")
def mi250(shared_data):
    path = shared_data / MI250
    return path, analyze_trace(path), _events(path)


def test_a100_kernel_time_per_op_is_the_sum_of_its_kernels(a100):
    _, stats, events = a100
    oracle: dict[str, float] = defaultdict(float)
    for i, op in _launching_ops(events).items():
        oracle[op["name"]] += events[i]["dur"]
    ours = _op_row_times(stats.all_db)
    assert ours == pytest.approx(dict(oracle))
    assert ours["aten::mm"] == pytest.approx(41_925.0)
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    assert kernels == 8_568
    db = stats.all_db
    assert int(db.occurrences.sum()) + int(stats.unattributed.occurrences.sum()) == kernels + 882


def test_a100_gemm_flops_are_2mnk_per_execution(a100):
    _, stats, events = a100
    launched = _launching_ops(events)
    oracle: dict[str, float] = defaultdict(float)
    seen = set()
    for op in launched.values():
        if op["name"] in ("aten::mm", "aten::addmm", "aten::bmm") and id(op) not in seen:
            seen.add(id(op))
            oracle[op["name"]] += _gemm_flops(op)
    for name in ("aten::mm", "aten::addmm", "aten::bmm"):
        assert stats.all_db.flops[_row(stats.all_db, name)] == pytest.approx(oracle[name])
    # cuBLAS/CUTLASS ran these fp32 GEMMs as TF32 tensor-core kernels.
    assert stats.all_db.dtype[_row(stats.all_db, "aten::mm")] == "tf32"


def test_a100_steps_are_the_profiler_steps_and_hold_their_ops_kernels(a100):
    _, stats, events = a100
    spans = {
        int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    }
    assert [s.step_num for s in stats.steps] == sorted(spans) == list(range(1009, 1015))
    assert all(s.complete for s in stats.steps)
    per_step: dict[int, float] = defaultdict(float)
    for i, op in _launching_ops(events).items():
        for number, (begin, end) in spans.items():
            if begin <= op["ts"] < end:
                per_step[number] += events[i]["dur"]
    for step in stats.steps:
        busy = sum(_op_row_times(step.db).values())
        assert busy == pytest.approx(per_step[step.step_num])


def test_a100_peaks_are_the_a100_40gb(a100):
    _, stats, _ = a100
    env = stats.perf_env
    # NVIDIA A100 datasheet, SXM 40 GB: 1,555 GB/s; 19.5 TF fp32, 156 tf32, 312 bf16/fp16.
    assert env.peak_bws_gbps[HBM_RW] == 1555.0
    assert env.dtype_tflops["fp32"] == 19.5
    assert env.dtype_tflops["tf32"] == 156.0
    assert env.dtype_tflops["bf16"] == 312.0
    assert "A100 SXM 40 GB" in env.source
    assert stats.run_env.hardware_type == "GPU" and stats.run_env.device_core_count == 1


def test_a100_copies_are_listed_apart_and_unlaunched_kernels_are_rows(a100):
    _, stats, events = a100
    copies = [e for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
    un = stats.unattributed
    memory = un.category == "memory copy"
    assert int(un.occurrences[memory].sum()) == len(copies) == 882
    assert un.time_ps[memory].sum() / 1e6 == pytest.approx(sum(e["dur"] for e in copies))
    lonely = 8_568 - len(_launching_ops(events))
    db = stats.all_db
    rows_of_their_own = np.isin(db.category, ["annotation", "kernel without op"])
    assert int(db.occurrences[rows_of_their_own].sum()) == lonely
    assert any("882 memcpy/memset" in n for n in stats.notes)


def test_a100_categories_users_recognise(a100):
    _, stats, _ = a100
    db = stats.all_db
    category = dict(zip(db.name.tolist(), db.category.tolist()))
    assert category["aten::mm"] == category["aten::bmm"] == "matmul"
    assert category["record_param_comms"] == "communication (NCCL)"
    assert category["aten::native_layer_norm"] == "normalization"
    assert category["aten::add"] == "elementwise"
    assert category["aten::sum"] == "reduction"
    lookups = [n for n in category if "SplitLookupFunction" in n or "split_embedding" in n]
    assert len(lookups) == 2 and {category[n] for n in lookups} == {"embedding"}


def test_a100_exports_and_summary_work_unchanged(a100):
    path, stats, _ = a100
    database = build_database(stats)
    assert len(database.roofline_model_record) > 20
    table, _ = json.loads(render(stats, "datatable", [str(path)]))
    assert any("aten::mm" in json.dumps(row) for row in table["rows"])
    doc = json.loads(render(stats, "json", [str(path)], step="average"))
    assert doc
    csv = render(stats, "csv", [str(path)])
    assert "aten::addmm" in csv
    text = summary_text(stats, [str(path)])
    assert "aten::mm" in text and "NVIDIA A100-PG509-200" in text


def test_mi250_ops_steps_and_peaks(mi250):
    _, stats, events = mi250
    oracle: dict[str, float] = defaultdict(float)
    for i, op in _launching_ops(events).items():
        oracle[op["name"]] += events[i]["dur"]
    db = stats.all_db
    ours = _op_row_times(db)
    assert ours == pytest.approx(dict(oracle), abs=1e-3)
    assert sum(1 for e in events if e.get("cat") == "kernel") == 14
    assert int(db.occurrences[db.name != "IDLE"].sum()) == 14
    # addmm(bias [8], x [32, 20], w [20, 8]) style: 2·M·N·K from the recorded shapes.
    for op in {id(o): o for o in _launching_ops(events).values()}.values():
        if op["name"] == "aten::addmm":
            assert db.flops[_row(db, "aten::addmm")] == pytest.approx(_gemm_flops(op))
    assert [(s.step_num, s.complete) for s in stats.steps] == [(1, True), (2, False)]
    # MI250 (public spec 362.1 TF fp16 per card, 2 GCDs, 104 CUs each): 181.05 per GCD.
    assert stats.perf_env.dtype_tflops["fp16"] == pytest.approx(181.05, rel=1e-3)
    assert stats.perf_env.peak_bws_gbps[HBM_RW] == pytest.approx(1638.4)


@pytest.fixture(scope="module")
def cpu_cnn(shared_data):
    path = shared_data / CPU_CNN
    return path, analyze_trace(path), _events(path)


def test_cpu_trace_counts_each_gemm_and_conv_once(cpu_cnn):
    _, stats, _ = cpu_cnn
    assert [s.step_num for s in stats.steps] == [2, 3, 4, 5]
    assert all(s.complete for s in stats.steps)
    conv = 2 * 32 * 16 * 32 * 32 * 3 * 9 + 2 * 32 * 32 * 32 * 32 * 16 * 9  # two 3x3 convs
    for step in stats.steps:
        db = step.db
        assert db.flops[_row(db, "aten::addmm")] == 8_552_448  # by hand, forward
        assert db.flops[_row(db, "aten::mkldnn_convolution")] == conv
        names = set(db.name.tolist())
        assert not names & {"aten::linear", "aten::conv2d", "aten::convolution", "aten::relu"}
    assert stats.run_env.hardware_type == "CPU" and not stats.perf_env.known


def _self_us(events: list[dict], name: str) -> float:
    """Σ over the cpu ops called ``name`` of their span minus the spans of the ops directly
    inside them (one thread: the cpu_cnn trace's), by a stack walk."""
    ops = sorted(
        (e for e in events if e.get("cat") == "cpu_op"), key=lambda e: (e["ts"], -e["dur"])
    )
    stack: list[dict] = []
    own: dict[int, float] = {}
    for e in ops:
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
            stack.pop()
        own[id(e)] = e["dur"]
        if stack:
            own[id(stack[-1])] -= e["dur"]
        stack.append(e)
    return sum(own[id(e)] for e in ops if e["name"] == name)


def test_cpu_op_time_is_its_self_time(cpu_cnn):
    # An op's time is its self time; aten::linear's (dispatch around its addmm and aten::t)
    # goes to the longer of the two, the addmm.
    _, stats, events = cpu_cnn
    spans = _self_us(events, "aten::addmm") + _self_us(events, "aten::linear")
    db = stats.all_db
    assert db.time_ps[_row(db, "aten::addmm")] / 1e6 == pytest.approx(spans, abs=1e-3)
    assert db.occurrences[_row(db, "aten::addmm")] == 8


def test_cpu_trace_is_judged_by_the_peaks_given(shared_data):
    peaks = load_perf_env("a100")
    stats = analyze_trace(shared_data / CPU_CNN, peaks=peaks)
    assert stats.perf_env is peaks and stats.perf_env.known
    assert not stats.diagnostics.warnings
