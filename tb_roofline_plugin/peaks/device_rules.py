"""Peaks of the profiled device by rule: GPU peaks from a ``/device:GPU:N`` plane's
capability stats (XProf's rules, ``docs/xspace.md`` §5, so GPU profiles get XProf's numbers
without XProf) and per-dtype ceilings (``gpu_dtype_tflops``, ``tpu_dtype_tflops``), which
XProf does not have."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from ..xspace.profile_reader import as_float, as_str
from .devices import BUILTIN, DevicePeaks, lookup
from .perf_env import HBM_RW, SRAM_RD, SRAM_WR, PerfEnv

# --- GPU peaks from plane stats (XProf's rules, docs/xspace.md §5) -------------------------


class _SmRates(NamedTuple):
    """NVIDIA dense FLOPs (int8: ops) per SM per cycle; 0 where the path does not exist."""

    cuda_fp64: int
    cuda_fp32: int
    cuda_bf16: int
    cuda_fp16: int
    cuda_int8: int
    tc_fp64: int
    tc_tf32: int
    tc_bf16: int
    tc_fp16: int
    tc_fp8: int
    tc_int8: int
    tc_int4: int

    def xprof_peak(self) -> int:
        """XProf's single rate: max(vector fp32, vector fp16, tensor tf32, tensor fp16)."""
        return max(self.cuda_fp32, self.cuda_fp16, self.tc_tf32, self.tc_fp16)

    def per_dtype(self) -> dict[str, int]:
        """Each dtype's best path (vector or tensor); dtypes without a path are left out."""
        rates = {
            "fp64": max(self.cuda_fp64, self.tc_fp64),
            "fp32": self.cuda_fp32,
            "tf32": self.tc_tf32,
            "bf16": max(self.cuda_bf16, self.tc_bf16),
            "fp16": max(self.cuda_fp16, self.tc_fp16),
            "fp8": self.tc_fp8,
            "int8": max(self.cuda_int8, self.tc_int8),
        }
        return {k: v for k, v in rates.items() if v > 0}


# Keyed by major*1000 + minor*10, as XProf does (docs/xspace.md §5).
_NVIDIA_PER_SM_CYCLE: dict[int, _SmRates] = {
    10000: _SmRates(148, 296, 592, 592, 1184, 148, 4096, 8192, 8192, 16384, 16384, 0),
    9000: _SmRates(128, 256, 512, 512, 1024, 256, 2048, 4096, 4096, 8192, 8192, 0),
    8090: _SmRates(128, 256, 256, 256, 512, 0, 512, 1024, 1024, 2048, 2048, 4096),
    8060: _SmRates(128, 256, 256, 256, 512, 0, 256, 512, 1024, 0, 2048, 4096),
    8000: _SmRates(64, 128, 256, 512, 512, 128, 1024, 2048, 2048, 0, 4096, 0),
    7050: _SmRates(64, 128, 0, 256, 512, 0, 0, 0, 1024, 0, 2048, 4096),
    7000: _SmRates(64, 128, 0, 256, 512, 0, 0, 0, 1024, 0, 0, 0),
    6010: _SmRates(8, 256, 0, 4, 1024, 0, 0, 0, 0, 0, 0, 0),
    6000: _SmRates(64, 128, 0, 256, 512, 0, 0, 0, 0, 0, 0, 0),
    5000: _SmRates(4, 256, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    3000: _SmRates(128, 384, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    2000: _SmRates(8, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
}
_NVIDIA_ARCH = {
    2: "Fermi",
    3: "Kepler",
    5: "Maxwell",
    6: "Pascal",
    9: "Hopper",
    10: "Blackwell",
}


class _AmdArch(NamedTuple):
    flops_per_cu_cycle: int  # XProf's single rate (openxla/xprof#3163)
    lds_bytes_per_cu_cycle: int
    builtin: str  # BUILTIN key for per-dtype ceilings, "" if none
    ref_cus: int  # that entry's CU count and clock, to scale it to the profile's device
    ref_ghz: float


_AMD_ARCHS: dict[str, _AmdArch] = {
    "gfx908": _AmdArch(1024, 128, "", 0, 0.0),
    "gfx90a": _AmdArch(1024, 128, "mi250x", 110, 1.7),
    "gfx942": _AmdArch(2048, 128, "mi300x", 304, 2.1),
    "gfx950": _AmdArch(4096, 256, "mi355x", 256, 2.4),
}
_AMD_CC_ARCH = {(9, 4): "gfx942", (9, 5): "gfx950"}
_GFX_NAME = re.compile(r"gfx[0-9a-f]{3,}")


def _cc(stats: Mapping[str, object]) -> tuple[int, int]:
    return int(as_float(stats.get("compute_cap_major"))), int(
        as_float(stats.get("compute_cap_minor"))
    )


def _is_amd(stats: Mapping[str, object]) -> bool:
    return as_str(stats.get("device_vendor")).strip().lower().startswith("amd")


def _nvidia_rates(major: int, minor: int) -> _SmRates:
    """The entry for this cc, else the highest entry below it, else the lowest (XProf)."""
    key = major * 1000 + minor * 10
    below = [k for k in _NVIDIA_PER_SM_CYCLE if k <= key]
    return _NVIDIA_PER_SM_CYCLE[max(below) if below else min(_NVIDIA_PER_SM_CYCLE)]


def _amd_arch(stats: Mapping[str, object]) -> str:
    """gfx name from ``gpu_device_name`` (e.g. "gfx90a:sramecc+"), else from cc 9.4 / 9.5."""
    found = _GFX_NAME.match(as_str(stats.get("gpu_device_name")).strip().lower())
    if found:
        return found.group(0)
    return _AMD_CC_ARCH.get(_cc(stats), "")


def gpu_device_type(stats: Mapping[str, object]) -> str:
    """XProf's device type string for a GPU plane ("Nvidia GPU (Hopper)", "AMD GPU - gfx942")."""
    if _is_amd(stats):
        arch = _amd_arch(stats)
        return f"AMD GPU - {arch}" if arch else "AMD GPU - gfx-9XX series"
    major, minor = _cc(stats)
    if major == 7:
        arch = "Volta" if minor < 5 else "Turing"
    elif major == 8:
        arch = "Ampere" if minor < 9 else "Ada Lovelace"
    else:
        arch = _NVIDIA_ARCH.get(major, "")
    return f"Nvidia GPU ({arch})" if arch else "Nvidia GPU"


def _cores_ghz(stats: Mapping[str, object]) -> tuple[float, float]:
    return as_float(stats.get("core_count")), as_float(stats.get("clock_rate")) / 1e6


def gpu_perf_env(stats: Mapping[str, object]) -> tuple[PerfEnv, str]:
    """PerfEnv and device type from a ``/device:GPU:N`` plane's stats, by XProf's rules.

    ``stats`` maps stat names to values (``profile_reader.stats_dict``). Missing stats count
    as 0, so a plane without them yields zero peaks, as in XProf.
    """
    cores, ghz = _cores_ghz(stats)
    if _is_amd(stats):
        arch = _AMD_ARCHS.get(_amd_arch(stats))
        flops_per_core = arch.flops_per_cu_cycle if arch else 0
        shm_bytes_per_core = arch.lds_bytes_per_cu_cycle if arch else 0
    else:
        major, minor = _cc(stats)
        flops_per_core = _nvidia_rates(major, minor).xprof_peak()
        shm_bytes_per_core = 64 if major <= 2 else 256
    peak = as_float(stats.get("peak_teraflops_per_second"))
    if peak <= 0:
        peak = cores * ghz * flops_per_core / 1000.0
    shm = cores * shm_bytes_per_core * ghz
    sram_rd = as_float(stats.get("peak_sram_rd_bw_gigabytes_per_second"))
    sram_wr = as_float(stats.get("peak_sram_wr_bw_gigabytes_per_second"))
    bws = [0.0] * 7
    bws[HBM_RW] = as_float(stats.get("memory_bandwidth")) / 1e9
    bws[SRAM_RD] = sram_rd if sram_rd > 0 else shm
    bws[SRAM_WR] = sram_wr if sram_wr > 0 else shm
    # XProf's GPU roofline database always has merged VMEM (shared memory / L1 / LDS).
    env = PerfEnv(peak_tera_flops_per_second=peak, peak_bws_gbps=bws, has_merged_vmem=True)
    return env, gpu_device_type(stats)


def gpu_dtype_tflops(stats: Mapping[str, object]) -> dict[str, float]:
    """Per-dtype dense ceilings (TFLOP/s; int8 TOPS) for the profile's GPU.

    NVIDIA: the per-SM-per-cycle table (best of vector and tensor path) × SMs × clock. The
    clock is the profile's max SM clock, so these can exceed datasheet figures.
    AMD: the built-in entry for the arch (MI250X per GCD, MI300X, MI355X) scaled by the
    profile's CUs × clock against that entry's, or unscaled when those stats are missing;
    empty for other archs. Not XProf's: XProf has one peak for all dtypes.
    """
    cores, ghz = _cores_ghz(stats)
    if _is_amd(stats):
        arch = _AMD_ARCHS.get(_amd_arch(stats))
        if arch is None or not arch.builtin:
            return {}
        table = BUILTIN[arch.builtin].dtype_tflops
        scale = (cores * ghz) / (arch.ref_cus * arch.ref_ghz) if cores > 0 and ghz > 0 else 1.0
        return {k: v * scale for k, v in table.items()}
    if cores <= 0 or ghz <= 0:
        return {}
    rates = _nvidia_rates(*_cc(stats)).per_dtype()
    return {k: cores * ghz * v / 1000.0 for k, v in rates.items()}


def tpu_dtype_tflops(device_type_string: str, peak_tflops: float) -> dict[str, float]:
    """Per-dtype ceilings per TensorCore for a TPU profile.

    bf16 is the profile's peak (the table's when the profile has none). fp32 = bf16/2 is
    approximate (``TPU_FP32_APPROXIMATE_NOTE``). fp8/int8 keep the built-in table's ratio to
    bf16 when the device is known, so they follow the profile's peak.
    """
    try:
        entry: DevicePeaks | None = lookup(device_type_string)
    except KeyError:
        entry = None
    if entry is not None and entry.vendor != "Google":
        entry = None
    table_bf16 = entry.dtype_tflops.get("bf16", 0.0) if entry else 0.0
    bf16 = peak_tflops if peak_tflops > 0 else table_bf16
    if bf16 <= 0:
        return {}
    result = {"bf16": bf16, "fp32": bf16 / 2.0}
    if entry is not None and table_bf16 > 0:
        for dtype in ("fp8", "int8"):
            if dtype in entry.dtype_tflops:
                result[dtype] = entry.dtype_tflops[dtype] / table_bf16 * bf16
    return result
