"""CPU traces: every ns of op time in one row, the innermost op doing the work; nothing
dropped; and on real traces the cost model against numbers worked out from the raw JSON."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.peaks.perf_env import HBM_RW

TORCH_LSTM = "new-producers/torch_lstm/lstm_lm.1796151468267422256.pt.trace.json"
QWEN = "field/tl_h100_qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
GPU_TRACES = [
    "pytorch/a100_recsys/control.pt.trace.json.gz",
    "pytorch/mi250_minitoy/mi250_minitoy_train.pt.trace.json.gz",
    "field/hta_triton/triton_example.json.gz",
    "field/tl_mi300_sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    QWEN,
]


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


def _forest(events: list[dict]) -> list[tuple[dict, dict | None, float]]:
    """(event, parent, self µs) of every cpu_op and user annotation but ProfilerStep#N, by a
    stack walk per thread."""
    by_thread: dict = defaultdict(list)
    for e in events:
        cat, name = e.get("cat"), e.get("name", "")
        if e.get("ph") == "X" and (
            cat == "cpu_op" or (cat == "user_annotation" and not name.startswith("ProfilerStep#"))
        ):
            by_thread[(e["pid"], e["tid"])].append(e)
    out = []
    for spans in by_thread.values():
        spans.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        own: dict[int, float] = {}
        parent: dict[int, dict | None] = {}
        for e in spans:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            own[id(e)] = e["dur"]
            parent[id(e)] = stack[-1] if stack else None
            if stack:
                own[id(stack[-1])] -= e["dur"]
            stack.append(e)
        out += [(e, parent[id(e)], own[id(e)]) for e in spans]
    return out


def _rows(stats) -> dict[str, int]:
    return {n: i for i, n in enumerate(stats.all_db.name.tolist()) if n != "IDLE"}


@pytest.fixture(scope="module")
def lstm(shared_data):
    path = shared_data / TORCH_LSTM
    return analyze_trace(path), _events(path)


def test_lstm_rows_hold_every_ns_of_the_root_spans(lstm):
    stats, events = lstm
    roots_us = sum(e["dur"] for e, parent, _ in _forest(events) if parent is None)
    db = stats.all_db
    rows_us = db.time_ps[db.name != "IDLE"].sum() / 1e6
    assert rows_us == pytest.approx(roots_us, rel=1e-6)


def test_lstm_rnn_layers_carry_the_gate_gemm_flops(lstm):
    stats, events = lstm
    rows = _rows(stats)
    expected = {"aten::mkldnn_rnn_layer": 0.0, "aten::mkldnn_rnn_layer_backward": 0.0}
    for e in events:
        if e.get("name") in expected:
            dims, concrete = e["args"]["Input Dims"], e["args"]["Concrete Inputs"]
            backward = "backward" in e["name"]
            mode, hidden = (concrete[14], concrete[15]) if backward else (concrete[9], concrete[10])
            assert mode == "2"  # LSTM: 4 gates
            t, b, i = dims[0]
            h = int(hidden)
            expected[e["name"]] += 2 * t * b * 4 * h * (i + h) * (2 if backward else 1)
    for name, flops in expected.items():
        assert flops > 0 and stats.all_db.flops[rows[name]] == flops
    # The forward and backward LSTM layers are 49 % of op time with the mm's: now in rows.
    time = stats.all_db.time_ps
    share = time[rows["aten::mkldnn_rnn_layer"]] + time[rows["aten::mkldnn_rnn_layer_backward"]]
    assert share / time[list(rows.values())].sum() > 0.45


def test_lstm_drops_no_op(lstm):
    """Every cpu_op name that ran as a leaf (no op inside) is a row; the names that are no
    row are exactly the composites and autograd nodes whose work the ops inside them do."""
    stats, events = lstm
    rows = set(_rows(stats))
    forest = _forest(events)
    has_child = {id(p) for _, p, _ in forest if p is not None}
    ops = [(e, own) for e, _, own in forest if e["cat"] == "cpu_op"]
    leaves = {e["name"] for e, _ in ops if id(e) not in has_child}
    assert leaves <= rows
    timed = {e["name"] for e, own in ops if own > 0}
    plumbing = {n for n in timed if n.startswith("autograd::") or "::" not in n}
    composites = {  # each checked in the trace: the op inside that does its work
        "aten::linear": "aten::mm", "aten::matmul": "aten::mm", "aten::lstm":
        "aten::mkldnn_rnn_layer", "aten::dropout": "aten::mul", "aten::embedding":
        "aten::index_select", "aten::embedding_backward": "aten::embedding_dense_backward",
        "aten::cross_entropy_loss": "aten::nll_loss_forward", "aten::nll_loss_nd":
        "aten::nll_loss_forward", "aten::nll_loss": "aten::nll_loss_forward",
        "aten::log_softmax": "aten::_log_softmax", "aten::_to_copy": "aten::copy_",
        "aten::clone": "aten::copy_", "aten::ones_like": "aten::fill_", "aten::zeros_like":
        "aten::zero_", "aten::stack": "aten::cat", "aten::_foreach_norm":
        "aten::linalg_vector_norm", "aten::_foreach_mul_": "aten::mul_",
    }  # fmt: skip
    assert timed - rows == set(composites) | (plumbing - rows)
    assert set(composites.values()) <= rows
    # Ops with neither a cost model nor a wrapper's role are named with their share.
    note = next(n for n in stats.notes if "without a cost model" in n)
    assert "aten::bernoulli_" in note and "% of op time" in note


def test_lstm_mm_flops_counted_once(lstm):
    # aten::linear -> aten::matmul -> aten::mm: the FLOPs are the mm's, once.
    stats, events = lstm
    flops = 0
    for e in events:
        if e.get("name") == "aten::mm":
            (m, k), (_, n) = e["args"]["Input Dims"][:2]
            flops += 2 * m * n * k
    rows = _rows(stats)
    assert stats.all_db.flops[rows["aten::mm"]] == flops
    assert "aten::linear" not in rows and "aten::matmul" not in rows


@pytest.fixture(scope="module")
def qwen(shared_data):
    path = shared_data / QWEN
    return analyze_trace(path), _events(path)


def test_qwen_index_select_bytes_are_the_rows_it_picks(qwen):
    stats, events = qwen
    per_run = []
    for e in events:
        if e.get("name") == "aten::index_select" and e.get("cat") == "cpu_op":
            (rows, width), _, (picked,) = e["args"]["Input Dims"]
            per_run.append(picked * width * 2 * 2 + picked * 8)  # bf16 read + written, indices
    db, at = stats.all_db, _rows(stats)["aten::index_select"]
    launched = db.occurrences[at]
    assert launched == len(per_run)
    assert 0.5 < db.bytes_accessed[at] / sum(per_run) < 2


def test_qwen_causal_attention_counts_half(qwen):
    stats, events = qwen
    rows = _rows(stats)
    name = next(n for n in ("aten::_flash_attention_forward",) if n in rows)
    full = 0
    for e in events:
        if e.get("name") == name and e.get("cat") == "cpu_op":
            (b, lq, h, d), (_, s, _, _), (_, _, _, dv) = e["args"]["Input Dims"][:3]
            assert e["args"]["Concrete Inputs"][8] == "True"  # is_causal
            full += 2 * b * h * lq * s * (d + dv)
    assert full > 0 and stats.all_db.flops[rows[name]] == full / 2


@pytest.mark.parametrize("trace", GPU_TRACES)
def test_no_gpu_op_above_its_roofs(shared_data, trace):
    stats = analyze_trace(shared_data / trace)
    db, env = stats.all_db, stats.perf_env
    assert env.known
    seconds = np.asarray(db.time_ps, float) / 1e12
    timed = seconds > 0
    peak = np.array([env.dtype_tflops.get(d, env.peak_tera_flops_per_second) for d in db.dtype])
    compute = np.asarray(db.flops, float)[timed] / seconds[timed] / (peak[timed] * 1e12)
    memory = np.asarray(db.bytes_accessed, float)[timed] / seconds[timed]
    memory /= env.peak_bws_gbps[HBM_RW] * 1e9
    names = np.asarray(db.name)[timed]
    assert compute.max(initial=0) <= 1.0, names[np.argmax(compute)]
    assert memory.max(initial=0) <= 1.0, names[np.argmax(memory)]


def _op(name, ts, dur, dims=None, types=None, concrete=None, cat="cpu_op"):
    args = {}
    if dims is not None:
        args = {"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete or []}
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def test_cpu_math_attention_shows_its_bmms_and_compiled_code_its_annotation(tmp_path):
    q = [2, 4, 64, 32]
    bmm = [[8, 64, 32], [8, 32, 64]]
    events = [
        _op("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _op("aten::scaled_dot_product_attention", 10, 300, [q, q, q], ["float"] * 3),
        _op("aten::_scaled_dot_product_attention_math", 20, 280, [q, q, q], ["float"] * 3),
        _op("aten::bmm", 30, 100, bmm, ["float"] * 2),
        _op("aten::_softmax", 140, 50, [[2, 4, 64, 64], [], []], ["float", "Scalar", "Scalar"]),
        _op("aten::bmm", 200, 90, [[8, 64, 64], [8, 64, 32]], ["float"] * 2),
        # A compiled graph: generated code with no op inside, then an extern mm.
        _op("## Call CompiledFxGraph fabc ##", 400, 500, cat="user_annotation"),
        _op("aten::mm", 700, 150, [[64, 32], [32, 16]], ["float"] * 2),
    ]
    path = tmp_path / "w.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    stats = analyze_trace(path)
    rows, db = _rows(stats), stats.all_db
    # SDPA and its math composite give way: 10 + 10 + 10 + 20 µs of dispatch go to the
    # longest inner op (the first bmm), the FLOPs are the bmms' and the softmax's.
    assert "aten::scaled_dot_product_attention" not in rows
    assert "aten::_scaled_dot_product_attention_math" not in rows
    assert db.time_ps[rows["aten::bmm"]] == (100 + 90 + 300 - 280 + 280 - 240) * 1e6
    assert db.flops[rows["aten::bmm"]] == 2 * 8 * 64 * 64 * 32 * 2
    assert db.flops[rows["aten::_softmax"]] == 5 * 2 * 4 * 64 * 64
    assert db.time_ps[rows["## Call CompiledFxGraph fabc ##"]] == (500 - 150) * 1e6
    assert db.time_ps[[*rows.values()]].sum() == (300 + 500) * 1e6
    assert any("## Call CompiledFxGraph fabc ##" in n for n in stats.notes)
