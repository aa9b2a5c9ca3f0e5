"""Peaks of a Kineto trace's GPU from its deviceProperties (name, compute capability, SMs)."""

from __future__ import annotations

import pytest

from tb_roofline_plugin.kineto.devices import device_peaks
from tb_roofline_plugin.peaks.perf_env import HBM_RW


def props(name: str, major: int, minor: int, sms: int, memory_gb: float) -> dict:
    return {
        "name": name,
        "computeMajor": major,
        "computeMinor": minor,
        "numSms": sms,
        "totalGlobalMem": int(memory_gb * 1e9),
    }


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
        # MI300X: 1,307.4 TF bf16, 5,300 GB/s.
        (props("AMD Instinct MI300X", 9, 4, 304, 206.0), 1307.4, 5300.0, "MI300X"),
    ],
)
def test_gpu_peaks_from_device_properties(device, bf16, hbm, source):
    env, described = device_peaks(device)
    assert env.dtype_tflops["bf16"] == pytest.approx(bf16)
    assert env.peak_bws_gbps[HBM_RW] == pytest.approx(hbm)
    assert source in env.source
    assert device["name"] in described


def test_unknown_gpu_has_no_peaks():
    env, described = device_peaks(props("Mystery GPU", 5, 2, 10, 4.0))
    assert not env.known and env.source == "none"
    assert "compute 5.2" in described
