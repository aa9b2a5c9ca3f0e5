"""Every shared PyTorch trace written by other people (``field/``) and the LSTM recording,
against oracles computed here from the raw JSON in plain Python (``kineto_oracle``).

For each trace: it reads through the CLI under its own name; the share of kernel time our
op table gives to CPU ops, annotations and kernels alone equals the oracle's; every kernel's
time is in a row; Total holds the complete steps; the device is named with the right peaks;
GEMM FLOPs are 2·M·N·K; no op is above its compute roof.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from conftest import run_cli
from kineto_oracle import complete_steps_us, gemm_flops, kernel_owners, load

from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.ops.op_stats import ANNOTATION_CATEGORY, NO_OP_CATEGORY

# trace -> (device named in summary, fp32 TFLOP/s, main memory GB/s): the devices'
# published figures (None: no GPU, or no activity to judge).
FIELD = {
    "field/hta_cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz": (
        "NVIDIA A100-PG509-200",
        19.5,
        1555.0,
    ),
    "field/hta_distinfo_nf/distributed_info_not_found.json.gz": (
        "NVIDIA A100-PG509-200",
        19.5,
        1555.0,
    ),
    "field/hta_triton/triton_example.json.gz": ("NVIDIA A100-PG509-200", 19.5, 1555.0),
    "field/kineto_gpu_metrics/gpu_metrics_input.json": ("Tesla V100-DGXS-32GB", 15.7, 900.0),
    "field/kineto_r50_w0/worker0.1623143089861.pt.trace.json.gz": (
        "Tesla V100-DGXS-32GB",
        15.7,
        900.0,
    ),
    "field/tl_h100_qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": (
        "NVIDIA H100 80GB HBM3",
        66.9,
        3350.0,
    ),
    # MI210: fp32 matrix rate 45.3 TF (vector 22.6), 1.6384 TB/s.
    "field/tl_mi210_gpu_only/gpu_only_trace.json.gz": ("AMD Instinct MI210", 45.3, 1638.4),
    "field/tl_mi300_sglang_decode/sglang_Qwen3-8B_decode.json.gz": (
        "AMD Instinct MI300X",
        163.4,
        5300.0,
    ),
    "new-producers/torch_lstm/lstm_lm.1796151468267422256.pt.trace.json": ("CPU", None, None),
}
TRACES = sorted(FIELD)


@pytest.fixture(scope="module")
def traces(shared_data):
    """trace -> (its OpStats, its raw events)."""
    return {rel: (analyze_trace(shared_data / rel), load(shared_data / rel)[1]) for rel in TRACES}


@pytest.mark.parametrize("rel", TRACES)
def test_the_cli_reads_the_trace_under_its_own_name(shared_data, rel):
    proc = run_cli("summary", str(shared_data / rel))
    assert proc.returncode == 0, proc.stderr
    device_line = proc.stdout.splitlines()[1]
    assert device_line.startswith(f"device: {FIELD[rel][0]}")


@pytest.mark.parametrize("rel", TRACES)
def test_kernel_time_goes_where_the_oracle_says(traces, rel):
    stats, events = traces[rel]
    owners = kernel_owners(events)
    if not owners:
        pytest.skip("no kernel events in this trace")
    by_kind: dict[str, float] = defaultdict(float)
    for kernel, kind, _ in owners:
        by_kind[kind] += kernel["dur"]
    db = stats.all_db
    real = db.name != "IDLE"
    time_us = db.time_ps / 1e6
    ours = {
        "annotation": float(time_us[real & (db.category == ANNOTATION_CATEGORY)].sum()),
        "none": float(time_us[real & (db.category == NO_OP_CATEGORY)].sum()),
    }
    ours["op"] = float(time_us[real].sum()) - ours["annotation"] - ours["none"]
    whole = sum(by_kind.values())
    for kind in ("op", "annotation", "none"):
        assert ours[kind] / whole == pytest.approx(by_kind[kind] / whole, abs=1e-9), kind
    # Nothing dropped: the rows hold every kernel's time and count.
    assert float(time_us[real].sum()) == pytest.approx(whole)
    assert int(db.occurrences[real].sum()) == len(owners)


@pytest.mark.parametrize("rel", TRACES)
def test_total_holds_the_complete_steps(traces, rel):
    stats, events = traces[rel]
    spans = complete_steps_us(events)
    steps = [s for s in stats.steps if s.complete]
    assert {s.step_num for s in stats.steps} <= set(spans)
    total_us = stats.all_db.total_time_ps / 1e6
    assert total_us >= sum(s.db.total_time_ps for s in steps) / 1e6 - 1e-6
    if any(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for e in events):
        assert len(steps) == len(spans)
        assert total_us >= max(spans.values(), default=0.0) - 1e-3


@pytest.mark.parametrize("rel", TRACES)
def test_device_and_peaks_are_the_datasheets(traces, rel):
    stats, _ = traces[rel]
    name, fp32_tflops, memory_gbps = FIELD[rel]
    assert stats.run_env.device_type.startswith(name)
    if fp32_tflops is None:
        assert stats.run_env.hardware_type == "CPU"
        return
    assert stats.run_env.hardware_type == "GPU"
    assert stats.perf_env.dtype_tflops["fp32"] == pytest.approx(fp32_tflops, rel=0.02)
    assert stats.perf_env.peak_bws_gbps[0] == pytest.approx(memory_gbps)


@pytest.mark.parametrize("rel", TRACES)
def test_gemm_flops_are_2mnk(traces, rel):
    stats, events = traces[rel]
    ran = {id(o) for _, kind, o in kernel_owners(events) if kind == "op"}
    on_gpu = stats.run_env.hardware_type == "GPU"
    if on_gpu and not any(e.get("cat") == "kernel" for e in events):
        # No kernel ran on the GPU in the trace: no op has a device time, so none is a row,
        # but where counter ranges stand for the kernels (Total (HW)): rows with no time.
        ops = stats.all_db.name != "IDLE"
        if any(e.get("cat") == "cuda_profiler_range" for e in events):
            assert ops.any() and stats.all_db.time_ps.sum() == 0
        else:
            assert not ops.any()
        return
    oracle: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("cat") != "cpu_op" or e["name"] not in ("aten::mm", "aten::addmm", "aten::bmm"):
            continue
        if on_gpu and id(e) not in ran:
            continue
        flops = gemm_flops(e)
        if flops is not None:
            oracle[e["name"]] += flops
    if not oracle:
        pytest.skip("no GEMM with recorded shapes")
    db = stats.all_db
    ours = {n: float(f) for n, f in zip(db.name.tolist(), db.flops.tolist()) if n in oracle}
    assert ours == pytest.approx(dict(oracle), rel=1e-12)


@pytest.mark.parametrize("rel", TRACES)
def test_no_op_is_above_its_compute_roof(traces, rel):
    """Each op's FLOP rate (its FLOPs over its time) is at most its dtype's ceiling (else the
    device's highest), with XProf's 5 % tolerance."""
    stats, _ = traces[rel]
    env = stats.perf_env
    if not env.known:
        pytest.skip("no peaks: no roof to be above")
    db = stats.all_db
    timed = (db.time_ps > 0) & (db.flops > 0)
    if not timed.any():
        pytest.skip("no op with FLOPs and time")
    for name, dtype, flops, time_ps in zip(
        db.name[timed].tolist(),
        db.dtype[timed].tolist(),
        db.flops[timed].tolist(),
        db.time_ps[timed].tolist(),
    ):
        ceiling_tflops = env.dtype_tflops.get(dtype) or env.peak_tera_flops_per_second
        rate_tflops = flops / (time_ps / 1e12) / 1e12
        assert rate_tflops <= 1.05 * ceiling_tflops, (name, dtype, rate_tflops, ceiling_tflops)


def test_resnet50_convolutions_cost_what_torchvision_publishes(traces):
    """PyTorch 1.9 records no strides; the backward ops' shapes give each convolution's
    output. torchvision lists ResNet-50 at 4.09 GFLOPS (multiply-adds) per 224 x 224 image:
    8.18 GFLOP, of which the final 2048 x 1000 layer is 0.004."""
    rel = "field/kineto_r50_w0/worker0.1623143089861.pt.trace.json.gz"
    stats, events = traces[rel]
    forwards = [e for e in events if e["name"] == "aten::cudnn_convolution"]
    batch = forwards[0]["args"]["Input Dims"][0][0]
    images = batch * len(forwards) / 53  # ResNet-50: 53 convolutions per forward pass
    db = stats.all_db
    flops = dict(zip(db.name.tolist(), db.flops.tolist()))
    per_image = flops["aten::cudnn_convolution"] / images
    assert batch == 32 and images == 6 * 32
    assert per_image == pytest.approx(2 * 4.09e9 - 2 * 2048 * 1000, rel=0.01)
    # The gradient with respect to the input skips the first layer (the image).
    first = 2 * 112 * 112 * 64 * 3 * 7 * 7
    assert flops["aten::cudnn_convolution_backward_input"] / images == pytest.approx(
        per_image - first, rel=1e-9
    )
