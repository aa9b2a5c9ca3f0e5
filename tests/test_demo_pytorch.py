"""The demo logdir's PyTorch GPU run (``demo.pytorch``): found as a run with a host per
worker, converted by the command, with its steps, device and per-op FLOPs; FLOPs are worked
out here from the model's shapes (2·M·N·K per GEMM ...), not with the cost model."""

from __future__ import annotations

import json

import pytest

from tb_roofline_plugin import cli
from tb_roofline_plugin.demo import DEMO_RUNS, KinetoSpec, write_demo_logdir, write_trace
from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.xspace.discovery import discover

STAMP = "1767225600000"  # the demo's fixed start, in ms, as the handler names files


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("demo")
    return logdir, write_demo_logdir(logdir, runs=("torch_gpu",))


def test_demo_runs_include_a_pytorch_gpu_run():
    assert DEMO_RUNS[-1] == "torch_gpu"


def test_pytorch_run_is_discovered_with_a_host_per_worker(demo):
    logdir, written = demo
    names = sorted(p.relative_to(logdir).as_posix() for p in written)
    assert [n for n in names if n.startswith("torch_gpu/")] == [
        f"torch_gpu/worker0.{STAMP}.pt.trace.json.gz",
        f"torch_gpu/worker1.{STAMP}.pt.trace.json.gz",
    ]
    run = discover(str(logdir))["torch_gpu"]
    assert sorted(run.hosts) == ["worker0", "worker1"]
    assert run.hosts["worker1"].path.endswith(f"worker1.{STAMP}.pt.trace.json.gz")


def test_export_of_the_run_has_its_steps_device_and_workers(demo, capsys):
    logdir, _ = demo
    assert cli.main(["export", str(logdir / "torch_gpu"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hosts"] == ["worker0", "worker1"]
    assert [s["step_num"] for s in out["steps"]] == [2, 3, 4, 5]
    assert all(s["complete"] for s in out["steps"])
    assert out["device"]["device_type"] == "NVIDIA H100 80GB HBM3 (compute 9.0, 132 SMs)"
    assert out["device"]["peak_flop_rate_gflops"] == 989_400.0
    assert out["device"]["device_core_count"] == 2
    names = {op["hlo_name"] for op in out["ops"]}
    assert {"aten::addmm", "aten::mm", "aten::cudnn_convolution", "record_param_comms"} <= names
    copies = {k["name"]: k["occurrences"] for k in out["unattributed_kernels"]}
    # two uploads (images, labels) and loss.item() per step and worker
    assert copies == {"Memcpy HtoD (Pinned -> Device)": 16, "Memcpy DtoH (Device -> Pinned)": 8}


def model_flops(s: KinetoSpec) -> dict[str, float]:
    """One step's FLOPs per op, from the spec's shapes."""
    b, hw, t, d, f = s.batch, s.image, s.tokens, s.width, s.mlp
    e = d // s.heads
    c = [s.channels, *s.conv_channels]
    gemms = [(b * t, d, c[2])]
    for _ in range(s.layers):
        gemms += [(b * t, 3 * d, d), (b * t, d, d), (b * t, f, d), (b * t, d, f)]
    gemms.append((b, s.classes, d))
    conv = [2 * b * c[i + 1] * hw * hw * c[i] * 9 for i in range(2)]  # 3x3, stride 1, pad 1
    activations = [b * c[i + 1] * hw * hw for i in range(2)]
    attention = 4 * b * s.heads * t * t * e  # Q·Kᵀ and P·V
    params = sum(c[i + 1] * c[i] * 9 + 2 * c[i + 1] for i in range(2))
    params += sum(n * k + n for _, n, k in gemms) + 4 * s.layers * d
    return {
        "aten::addmm": sum(2 * m * n * k for m, n, k in gemms),
        "aten::mm": sum(4 * m * n * k for m, n, k in gemms),  # input and weight gradients
        "aten::sum": sum(m * n for m, n, _ in gemms),  # bias gradients
        "aten::cudnn_convolution": sum(conv),
        "aten::convolution_backward": conv[0] + 2 * conv[1],  # no input gradient for conv 1
        "aten::cudnn_batch_norm": 5 * sum(activations),
        "aten::cudnn_batch_norm_backward": 8 * sum(activations),
        "aten::clamp_min_": sum(activations),
        "aten::threshold_backward": sum(activations),
        "aten::_adaptive_avg_pool2d": activations[1],
        "aten::_flash_attention_forward": s.layers * attention,
        "aten::_flash_attention_backward": s.layers * 2.5 * attention,
        "aten::native_layer_norm": s.layers * 2 * 5 * b * t * d,
        "aten::native_layer_norm_backward": s.layers * 2 * 8 * b * t * d,
        "aten::add": s.layers * 2 * b * t * d,
        "aten::gelu": s.layers * 8 * b * t * f,
        "aten::gelu_backward": s.layers * 10 * b * t * f,
        "aten::mean": b * t * d,
        "aten::div": b * t * d,
        "aten::_log_softmax": 5 * b * s.classes,
        "aten::_log_softmax_backward_data": 5 * b * s.classes,
        "aten::nll_loss_forward": b * s.classes,
        "aten::_fused_adamw_": 10 * params,
        # no FLOPs: collectives, fills, ops without a cost model
        "record_param_comms": 0,
        "aten::fill_": 0,
        "aten::nll_loss_backward": 0,
        "aten::_adaptive_avg_pool2d_backward": 0,
    }


@pytest.mark.parametrize(
    ("spec", "device"),
    [(KinetoSpec(), "H100 SXM5 80 GB"),
     (KinetoSpec(device="a100", rank=1, seed=7, layers=2, batch=16, width=256, heads=4,
                 mlp=1024, steps=3, first_step=10), "A100 SXM 80 GB")],
)  # fmt: skip
def test_op_flops_are_those_of_the_models_shapes(tmp_path, spec, device):
    path = tmp_path / "worker.1.pt.trace.json.gz"
    expected = write_trace(path, spec)
    stats = analyze_trace(path)
    db = stats.all_db
    rows = {n: i for i, n in enumerate(db.name.tolist()) if n != "IDLE"}
    per_step = model_flops(spec)
    assert set(rows) == set(per_step)
    for name, flops in per_step.items():
        assert db.flops[rows[name]] == pytest.approx(spec.steps * flops, rel=1e-12), name
        assert db.time_ps[rows[name]] == expected["time_ns"][name] * 1000
    assert db.occurrences[rows["aten::addmm"]] == spec.steps * (4 * spec.layers + 2)
    assert db.occurrences[rows["record_param_comms"]] == spec.steps * 3  # three DDP buckets
    assert [s.step_num for s in stats.steps] == expected["steps"]
    assert expected["steps"] == list(range(spec.first_step, spec.first_step + spec.steps))
    assert device in stats.perf_env.source
    # GEMMs reach about 70 % of the bf16 peak, as the generator times them
    i = rows["aten::addmm"]
    rate = db.flops[i] / (db.time_ps[i] * 1e-12) / 1e12
    assert 0.55 < rate / stats.perf_env.dtype_tflops["bf16"] < 0.75


def test_same_spec_gives_the_same_bytes_and_ranks_differ(tmp_path):
    spec = KinetoSpec(steps=1, layers=1)
    a, b, c = (tmp_path / f"{n}.pt.trace.json.gz" for n in "abc")
    write_trace(a, spec)
    write_trace(b, spec)
    write_trace(c, KinetoSpec(steps=1, layers=1, rank=1, seed=1))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_invalid_specs_are_refused():
    with pytest.raises(ValueError, match="device"):
        KinetoSpec(device="v100")
    with pytest.raises(ValueError, match="heads"):
        KinetoSpec(width=100, heads=8)
