"""Device peaks (XProf's PerfEnv) and run environment, read from a profile's plane stats."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..xspace.profile_reader import Plane, as_float, as_str, stat_names, stats_dict

# Order of PerfEnv.peak_bws (GB/s): XProf's memory-bandwidth indices.
HBM_RW, SRAM_RD, SRAM_WR, CMEM_RD, CMEM_WR, VMEM_RD, VMEM_WR = range(7)
_TPU_BW_STATS = (
    "peak_hbm_bw_gigabytes_per_second",
    "peak_sram_rd_bw_gigabytes_per_second",
    "peak_sram_wr_bw_gigabytes_per_second",
    "peak_cmem_rd_bw_gigabytes_per_second",
    "peak_cmem_wr_bw_gigabytes_per_second",
    "peak_vmem_rd_bw_gigabytes_per_second",
    "peak_vmem_wr_bw_gigabytes_per_second",
)


@dataclass
class PerfEnv:
    """Per-core peaks: FLOP/s in TFLOP/s, bandwidths in GB/s (10^9 B/s)."""

    peak_tera_flops_per_second: float = 0.0
    peak_bws_gbps: list[float] = field(default_factory=lambda: [0.0] * 7)
    has_megacore: bool = False
    has_merged_vmem: bool = False
    source: str = "profile"  # where the peaks came from: profile, built-in table, user file, ...
    # Per-dtype compute ceilings in TFLOP/s ("fp32", "bf16", "fp8", ...); ours, not XProf's.
    dtype_tflops: dict[str, float] = field(default_factory=dict)
    # The main memory's kind ("HBM3", "GDDR6", ...) when known, for its roof's label; ours.
    memory: str = ""
    # True for a calibration or user file: a dtype missing from dtype_tflops has no ceiling
    # (an fp32 peak says nothing of bf16 on AMX). Profiles and built-in tables fall back to
    # the single peak, as XProf judges every op by it.
    listed_dtypes_only: bool = False

    @property
    def has_cmem(self) -> bool:
        return self.peak_bws_gbps[CMEM_RD] > 0 or self.peak_bws_gbps[CMEM_WR] > 0

    @property
    def known(self) -> bool:
        return self.peak_tera_flops_per_second > 0 or any(self.peak_bws_gbps)


@dataclass
class RunEnvironment:
    hardware_type: str = "CPU_ONLY"  # TPU, GPU or CPU_ONLY
    device_type: str = ""
    device_core_count: int = 0
    active_core_count: int = 0  # cores with at least one op event (ours, not XProf's)


def tpu_perf_env(plane: Plane) -> tuple[PerfEnv, str]:
    """PerfEnv and device type string from a TensorCore plane's capability stats."""
    stats = stats_dict(plane.stats, stat_names(plane))
    env = PerfEnv(
        peak_tera_flops_per_second=as_float(stats.get("peak_teraflops_per_second")),
        peak_bws_gbps=[as_float(stats.get(name)) for name in _TPU_BW_STATS],
        has_megacore=bool(as_float(stats.get("has_megacore"))),
        has_merged_vmem=bool(as_float(stats.get("has_merged_vmem"))),
    )
    return env, as_str(stats.get("device_type_string"))


def finite_env(env: PerfEnv) -> PerfEnv:
    """The same peaks with corrupt (non-finite, negative or absurd) values read as 0."""

    def clean(value: float) -> float:
        return value if math.isfinite(value) and 0 <= value < 1e15 else 0.0

    env.peak_tera_flops_per_second = clean(env.peak_tera_flops_per_second)
    env.peak_bws_gbps = [clean(b) for b in env.peak_bws_gbps]
    env.dtype_tflops = {k: clean(v) for k, v in env.dtype_tflops.items() if clean(v) > 0}
    return env
