"""Peaks of a Kineto trace's GPU from its deviceProperties (name, compute capability, SMs)."""

from __future__ import annotations

import json

import pytest

from tb_roofline_plugin.demo.pytorch import KinetoSpec, write_trace
from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.kineto.devices import device_peaks
from tb_roofline_plugin.peaks.perf_env import HBM_RW, SRAM_WR
from tb_roofline_plugin.render.export import device_summary, render
from tb_roofline_plugin.render.summary import summary_text


def props(name: str, major: int, minor: int, sms: int, memory_gb: float) -> dict:
    return {
        "name": name,
        "computeMajor": major,
        "computeMinor": minor,
        "numSms": sms,
        "totalGlobalMem": int(memory_gb * 1e9),
    }


def rocm(name: str, major: int, minor: int, cus: int, memory_bytes: int) -> dict:
    """deviceProperties as PyTorch on ROCm writes them (the MI300X trace in shared data)."""
    return {
        "id": 0,
        "name": name,
        "totalGlobalMem": memory_bytes,
        "computeMajor": major,
        "computeMinor": minor,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 131072,
        "warpSize": 64,
        "sharedMemPerBlock": 65536,
        "numSms": cus,
        "maxSharedMemoryPerMultiProcessor": 65536,
    }


GIB = 1 << 30
MI300X_BYTES = 206141652992  # the shared MI300X trace's totalGlobalMem (192 GiB)


@pytest.mark.parametrize(
    ("device", "bf16", "hbm", "source"),
    [
        # Public datasheet figures (dense): A100 SXM 80 GB 312 TF, 2,039 GB/s; 40 GB 1,555 GB/s.
        (props("NVIDIA A100-SXM4-80GB", 8, 0, 108, 85.1), 312.0, 2039.0, "A100 SXM 80 GB"),
        (props("NVIDIA A100-PG509-200", 8, 0, 108, 42.5), 312.0, 1555.0, "A100 SXM 40 GB"),
        # H100 SXM5: 989.4 TF bf16, 3,350 GB/s.
        (props("NVIDIA H100 80GB HBM3", 9, 0, 132, 85.0), 989.4, 3350.0, "H100 SXM5"),
        # A name the table does not know: by compute capability and SM count.
        (props("NVIDIA Graphics Device", 8, 0, 108, 85.0), 312.0, 2039.0, "from compute 8.0"),
        # H200 by capability and its 141 GB (CUDA reports 150.75e9 B).
        (props("NVIDIA Graphics Device", 9, 0, 132, 150.75), 989.4, 4800.0, "H200"),
        # MI300X: 1,307.4 TF bf16, 5,300 GB/s.
        (props("AMD Instinct MI300X", 9, 4, 304, 206.0), 1307.4, 5300.0, "MI300X"),
        # B300 (HGX): 2,250 TF bf16 dense, 8 TB/s; CUDA names it "NVIDIA B300 SXM6 AC".
        (props("NVIDIA B300 SXM6 AC", 10, 3, 148, 287.4), 2250.0, 8000.0, "B300"),
        (props("NVIDIA Graphics Device", 10, 3, 148, 287.4), 2250.0, 8000.0, "compute 10.3"),
        # RTX 4090: 165.2 TF bf16 (FP32 accumulate), 1,008 GB/s GDDR6X.
        (props("NVIDIA GeForce RTX 4090", 8, 9, 128, 25.4), 165.2, 1008.0, "RTX 4090"),
        # RTX 3090: 71 TF bf16 (FP32 accumulate), 936 GB/s GDDR6X.
        (props("NVIDIA GeForce RTX 3090", 8, 6, 82, 25.4), 71.0, 936.0, "RTX 3090"),
        # L40S: 362.05 TF bf16, 864 GB/s; L4: 121 TF, 300 GB/s; A10: 125 TF, 600 GB/s.
        (props("NVIDIA L40S", 8, 9, 142, 47.7), 362.05, 864.0, "L40S"),
        (props("NVIDIA L4", 8, 9, 58, 23.6), 121.0, 300.0, "NVIDIA L4"),
        (props("NVIDIA A10", 8, 6, 72, 23.8), 125.0, 600.0, "NVIDIA A10"),
        # MI325X by its name: compute as MI300X, 6 TB/s HBM3e.
        (props("AMD Instinct MI325X", 9, 4, 304, 274.9), 1307.4, 6000.0, "MI325X"),
    ],
)
def test_gpu_peaks_from_device_properties(device, bf16, hbm, source):
    env, described = device_peaks(device)
    assert env.dtype_tflops["bf16"] == pytest.approx(bf16)
    assert env.peak_bws_gbps[HBM_RW] == pytest.approx(hbm)
    assert source in env.source
    assert device["name"] in described


@pytest.mark.parametrize(
    ("device", "dtype", "tflops", "gbps", "memory", "source"),
    [
        # Quadro GP100 (Pascal, no tensor cores): 20.67 TF fp16, 10.34 fp32, 717 GB/s HBM2.
        (props("Quadro GP100", 6, 0, 56, 17.07), "fp16", 20.67, 717.0, "HBM2", "Quadro GP100"),
        (props("NVIDIA Graphics Device", 6, 0, 56, 17.07), "fp32", 10.34, 717.0, "HBM2", "6.0"),
        # RTX 2080 Ti: 53.8 TF fp16 tensor (FP32 accumulate), 616 GB/s GDDR6; no bf16.
        (props("NVIDIA GeForce RTX 2080 Ti", 7, 5, 68, 11.55), "fp16", 53.8, 616.0, "GDDR6", "Ti"),
        (props("NVIDIA Graphics Device", 7, 5, 68, 11.55), "int8", 215.2, 616.0, "GDDR6", "7.5"),
        # T4: 65 TF fp16 (tensor, mixed), 320 GB/s GDDR6.
        (props("Tesla T4", 7, 5, 40, 15.8), "fp16", 65.0, 320.0, "GDDR6", "NVIDIA T4"),
    ],
)
def test_gpus_without_bf16(device, dtype, tflops, gbps, memory, source):
    env, _ = device_peaks(device)
    assert env.dtype_tflops[dtype] == pytest.approx(tflops)
    assert "bf16" not in env.dtype_tflops
    assert env.peak_bws_gbps[HBM_RW] == gbps and env.memory == memory
    assert source in env.source


def test_mi300x_without_a_name_is_known_by_gfx942_and_its_304_cus():
    env, described = device_peaks(rocm("", 9, 4, 304, MI300X_BYTES))
    assert described == "AMD Instinct MI300X (gfx942, compute 9.4, 304 CUs)"
    assert env.source == "built-in table (AMD Instinct MI300X), from compute 9.4"
    assert env.dtype_tflops["bf16"] == 1307.4 and env.peak_bws_gbps[HBM_RW] == 5300.0
    assert env.memory == "HBM3"


def test_mi325x_is_told_from_mi300x_by_its_memory():
    env, described = device_peaks(rocm("", 9, 4, 304, 256 * GIB))
    assert described == "AMD Instinct MI325X (gfx942, compute 9.4, 304 CUs)"
    assert env.peak_bws_gbps[HBM_RW] == 6000.0 and env.dtype_tflops["fp8"] == 2614.9
    assert env.memory == "HBM3e"
    generic, described = device_peaks(rocm("AMD Radeon Graphics", 9, 4, 304, 256 * GIB))
    assert "MI325X" in generic.source and described.startswith("AMD Radeon Graphics (")


def test_mi355x_without_a_name():
    env, described = device_peaks(rocm("", 9, 5, 256, 288 * GIB))
    assert described == "AMD Instinct MI355X (gfx950, compute 9.5, 256 CUs)"
    assert env.dtype_tflops["bf16"] == 2516.6 and env.peak_bws_gbps[HBM_RW] == 8000.0


def test_a_gfx_name_gives_the_arch():
    env, described = device_peaks(rocm("gfx942:sramecc+:xnack-", 0, 0, 304, MI300X_BYTES))
    assert described == "AMD Instinct MI300X (gfx942, compute 9.4, 304 CUs)"
    assert env.dtype_tflops["bf16"] == 1307.4


def test_radeon_graphics_name_stays_and_cus_scale_the_arch_entry():
    """The shared MI250 trace: 'AMD Radeon Graphics', gfx90a (9.0), 104 CUs of MI250X's 110."""
    env, described = device_peaks(rocm("AMD Radeon Graphics", 9, 0, 104, 68702699520))
    assert described == "AMD Radeon Graphics (compute 9.0, 104 CUs)"
    assert env.dtype_tflops["bf16"] == pytest.approx(191.5 * 104 / 110)
    assert env.peak_bws_gbps[HBM_RW] == 1638.4  # bandwidth is not scaled by CUs
    assert env.source.startswith("built-in table (AMD Instinct MI250X (per GCD)) scaled to 104")


def test_nvidia_capability_fallback_scales_by_sms():
    """An A30 (8.0, 56 SMs, 24 GB) is not in the table: the A100 entry at 56 of 108 SMs."""
    env, _ = device_peaks(props("NVIDIA A30", 8, 0, 56, 25.2))
    assert env.dtype_tflops["bf16"] == pytest.approx(312.0 * 56 / 108)
    assert env.peak_bws_gbps[SRAM_WR] == pytest.approx(38983.7 * 56 / 108)
    assert "scaled to 56 of its 108 SMs" in env.source


def test_old_kineto_property_names():
    """PyTorch 1.8-1.10 wrote major/minor/multiProcessorCount."""
    old = {"name": "", "major": 7, "minor": 0, "multiProcessorCount": 80, "totalGlobalMem": 0}
    env, described = device_peaks(old)
    assert env.dtype_tflops["fp16"] == 125.0 and "compute 7.0, 80 SMs" in described


def test_unknown_gpu_has_no_peaks():
    env, described = device_peaks(props("Mystery GPU", 5, 2, 10, 4.0))
    assert not env.known and env.source == "none"
    assert "compute 5.2" in described


def test_rtx_2080_ti_memory_roof_is_gddr6(tmp_path):
    """The summary, json and tab name the memory by its kind; XProf's datatable keeps HBM."""
    path = tmp_path / "w.pt.trace.json"
    write_trace(path, KinetoSpec(steps=2, layers=1, batch=8, seed=3))
    document = json.loads(path.read_text())
    document["deviceProperties"] = [
        {"id": 0, **props("NVIDIA GeForce RTX 2080 Ti", 7, 5, 68, 11.55), "warpSize": 32}
    ]
    path.write_text(json.dumps(document))
    stats = analyze_trace(path)
    device = device_summary(stats)
    assert device["main_memory"] == "GDDR6"
    assert [(m["name"], m["peak_gbps"]) for m in device["memories"]] == [
        ("GDDR6", 616.0),
        ("Shared memory / L1", 26895.4),
    ]
    text = summary_text(stats, [str(path)])
    assert "  GDDR6: 616.0 GB/s" in text and "GDDR6 GiB/s" in text and "HBM" not in text
    table = json.loads(render(stats, "datatable", [str(path)]))[0]
    labels = [column["label"] for column in table["cols"]]
    assert any("HBM" in label for label in labels) and not any("GDDR" in x for x in labels)
