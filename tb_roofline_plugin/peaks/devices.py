"""Device peaks beyond a profile's own stats: a built-in table, user files, calibration.

Profile values win: whatever must match XProf comes from the profile's plane stats
(``perf_env.tpu_perf_env``, ``gpu_perf_env`` here). This module adds what XProf lacks:

- ``BUILTIN``: public per-device peaks (``docs/device-peaks.md``), each with its sources. They
  are the fallback when a profile carries no peaks (CPU, old runtimes) and the basis of
  per-dtype ceilings and what-if comparisons. Figures are dense (no 2:4 sparsity), per device
  as XProf shows it: per GPU, per GCD for MI250X, **per TensorCore** for TPU.
- ``gpu_perf_env``: XProf's rules for GPU peaks from ``/device:GPU:N`` plane stats
  (``docs/xspace.md`` §5), so GPU profiles get XProf's numbers without XProf.
- ``gpu_dtype_tflops`` / ``tpu_dtype_tflops``: per-dtype ceilings for the profiled device.
- ``calibrate``: a numpy measurement of this machine, for CPU profiles that carry no peaks.

Units: TFLOP/s (10^12 FLOP/s; ``int8`` in TOPS) and GB/s (10^9 B/s). XProf's tables show GiB/s.

User peak file (``load_peaks(path)``), a JSON object::

    {
      "name": "my accelerator",            # required, non-empty string
      "dtype_tflops": {"fp32": 1.2, ...},  # required; keys from DTYPES; values >= 0
      "hbm_gbps": 20.0,                    # required, >= 0: main-memory bandwidth
      "shared_memory_gbps": 0.0,           # optional, >= 0: GPU shared memory / L1 / LDS
      "vmem_read_gbps": 0.0,               # optional, >= 0 (TPU)
      "vmem_write_gbps": 0.0,              # optional, >= 0 (TPU)
      "cores_per_chip": 1,                 # optional integer >= 1
      "has_megacore": false,               # optional
      "has_merged_vmem": false,            # optional
      "vendor": "user",                    # optional: NVIDIA, AMD, Google, CPU or user
      "source": "where the figures come from",  # optional
      "notes": "free text",                # optional
      "details": {...},                    # optional, ignored (calibration measurements)
      "comment": "..."                     # optional, ignored
    }

``calibrate()`` returns this shape, so its output (``write_calibration``) loads as a user file.
Other keys are rejected, so a misspelt field is reported instead of silently ignored.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, NamedTuple

import numpy as np

from ..xspace.profile_reader import as_float, as_str
from .perf_env import HBM_RW, SRAM_RD, SRAM_WR, VMEM_RD, VMEM_WR, PerfEnv

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
# The dtypes whose maximum is XProf's single peak (XProf: max of fp32/fp16 vector and
# tf32/fp16 tensor; bf16 equals fp16 wherever both exist). fp8 and int8 never enter it.
_XPROF_PEAK_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16")
VENDORS = ("NVIDIA", "AMD", "Google", "CPU", "user")
_GPU_VENDORS = ("NVIDIA", "AMD")
GIB_PER_GB = 1.073741824  # GB/s ÷ this = GiB/s, as XProf's tables show them

TPU_FP32_APPROXIMATE_NOTE = (
    "approximate: TPU FP32 matmuls run as multi-pass BF16; fp32 is taken as bf16/2 "
    "(XProf's own test oracle), other sources say 1/3 or 1/6"
)


@dataclass(frozen=True)
class DevicePeaks:
    """One device's dense peaks, with where they come from (shown next to every roof)."""

    name: str
    vendor: str
    dtype_tflops: dict[str, float]  # per device (per TensorCore on TPU); int8 in TOPS
    hbm_gbps: float
    shared_memory_gbps: float = 0.0  # GPU shared memory / L1 / LDS aggregate; 0 = unknown
    vmem_read_gbps: float = 0.0  # TPU; 0 where unpublished
    vmem_write_gbps: float = 0.0
    cores_per_chip: int = 1
    has_megacore: bool = False
    has_merged_vmem: bool = False
    source: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise _PeaksError(f"device peaks {self.name!r}: {problem}", problem)
        # A private copy, so a caller's dict cannot change a frozen entry afterwards.
        object.__setattr__(self, "dtype_tflops", dict(self.dtype_tflops))

    def peak_tflops(self) -> float:
        """XProf-like single peak: the best float rate (fp8/int8 are left out, as in XProf).

        Falls back to the best of all dtypes when only fp8/int8 are given.
        """
        floats = [self.dtype_tflops[d] for d in _XPROF_PEAK_DTYPES if d in self.dtype_tflops]
        values = floats or list(self.dtype_tflops.values())
        return max(values, default=0.0)

    def to_perf_env(self, source_label: str = "built-in table") -> PerfEnv:
        """A PerfEnv in XProf's layout; ``source_label`` says where the peaks came from.

        TPUs put VMEM in both the SRAM and VMEM slots, as libtpu's plane stats do. Everything
        else puts shared memory in SRAM_RD/WR (XProf's GPU convention); NVIDIA and AMD entries
        always have merged VMEM, as XProf's GPU roofline does.
        """
        bws = [0.0] * 7
        bws[HBM_RW] = self.hbm_gbps
        bws[VMEM_RD], bws[VMEM_WR] = self.vmem_read_gbps, self.vmem_write_gbps
        if self.vendor == "Google":
            bws[SRAM_RD], bws[SRAM_WR] = self.vmem_read_gbps, self.vmem_write_gbps
        else:
            bws[SRAM_RD] = bws[SRAM_WR] = self.shared_memory_gbps
        merged = self.has_merged_vmem or self.vendor in _GPU_VENDORS
        return PerfEnv(
            peak_tera_flops_per_second=self.peak_tflops(),
            peak_bws_gbps=bws,
            has_megacore=self.has_megacore and self.vendor not in _GPU_VENDORS,
            has_merged_vmem=merged,
            source=source_label,
            dtype_tflops=dict(self.dtype_tflops),
        )

    def to_json(self) -> dict[str, object]:
        """The user-file shape; ``from_json(to_json())`` gives an equal object."""
        return {
            "name": self.name,
            "vendor": self.vendor,
            "dtype_tflops": {d: self.dtype_tflops[d] for d in DTYPES if d in self.dtype_tflops},
            "hbm_gbps": self.hbm_gbps,
            "shared_memory_gbps": self.shared_memory_gbps,
            "vmem_read_gbps": self.vmem_read_gbps,
            "vmem_write_gbps": self.vmem_write_gbps,
            "cores_per_chip": self.cores_per_chip,
            "has_megacore": self.has_megacore,
            "has_merged_vmem": self.has_merged_vmem,
            "source": self.source,
            "notes": self.notes,
        }

    @classmethod
    def from_json(cls, data: object, default_source: str = "user file") -> DevicePeaks:
        """Validates a user-file object; ``ValueError`` with a one-line reason otherwise."""
        return _from_json(data, default_source)


class _PeaksError(ValueError):
    """A validation error that also carries the bare problem, for callers naming a file."""

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


def _problem(p: DevicePeaks) -> str:
    if not isinstance(p.name, str) or not p.name.strip():
        return "name must be a non-empty string"
    if not isinstance(p.dtype_tflops, Mapping) or not p.dtype_tflops:
        return "dtype_tflops must be a non-empty object"
    unknown = [k for k in p.dtype_tflops if k not in DTYPES]
    if unknown:
        return f"unknown dtype key(s) {', '.join(map(repr, unknown))} (known: {', '.join(DTYPES)})"
    for key, value in p.dtype_tflops.items():
        if not _is_nonneg(value):
            return f"dtype_tflops[{key!r}] must be a number >= 0, got {value!r}"
    for name in ("hbm_gbps", "shared_memory_gbps", "vmem_read_gbps", "vmem_write_gbps"):
        value = getattr(p, name)
        if not _is_nonneg(value):
            return f"{name} must be a number >= 0, got {value!r}"
    if isinstance(p.cores_per_chip, bool) or not isinstance(p.cores_per_chip, int):
        return f"cores_per_chip must be an integer >= 1, got {p.cores_per_chip!r}"
    if p.cores_per_chip < 1:
        return f"cores_per_chip must be an integer >= 1, got {p.cores_per_chip!r}"
    return ""


def _is_nonneg(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


_REQUIRED = ("name", "dtype_tflops", "hbm_gbps")
_OPTIONAL = (
    "vendor",
    "shared_memory_gbps",
    "vmem_read_gbps",
    "vmem_write_gbps",
    "cores_per_chip",
    "has_megacore",
    "has_merged_vmem",
    "source",
    "notes",
)
_IGNORED = ("details", "comment")


def _from_json(data: object, default_source: str) -> DevicePeaks:
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(map(repr, missing))}")
    unknown = [k for k in data if k not in _REQUIRED + _OPTIONAL + _IGNORED]
    if unknown:
        known = ", ".join(_REQUIRED + _OPTIONAL)
        raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))} (known: {known})")
    for key in ("vendor", "source", "notes"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"{key} must be a string, got {data[key]!r}")
    for key in ("has_megacore", "has_merged_vmem"):
        if key in data and not isinstance(data[key], bool):
            raise ValueError(f"{key} must be true or false, got {data[key]!r}")
    kwargs = {k: data[k] for k in _REQUIRED + _OPTIONAL if k in data}
    kwargs.setdefault("vendor", "user")
    kwargs["source"] = kwargs.get("source") or default_source
    try:
        return DevicePeaks(**kwargs)
    except _PeaksError as error:
        # The bare problem: the caller names the file.
        raise ValueError(error.problem) from None


# --- built-in table (docs/device-peaks.md) --------------------------------------------------


def _shm_gbps(cores: int, bytes_per_cycle: int, ghz: float) -> float:
    """XProf's shared-memory/LDS rule: cores × bytes per core per cycle × clock."""
    return round(cores * bytes_per_cycle * ghz, 1)


_SHM_NOTE = "shared memory by XProf's rule: {c} {unit} x {b} B/cycle x {g} GHz"
_SPEC_CLOCK = (
    " (SM count and boost clock are NVIDIA's public specs, not in device-peaks.md;"
    " they reproduce its FP32 figure)"
)

_A100_SOURCE = (
    'NVIDIA, "NVIDIA A100 Tensor Core GPU" datasheet, as tabulated on glennklockwood.com, '
    '"A100" (garden/processors); fudzilla.com, "Nvidia unveils the A100 Tensor Core GPU" '
    "(9.7 FP64, 19.5 FP32, 1.6 TB/s)"
)
_A100_DTYPES = {
    "fp64": 19.5,
    "fp32": 19.5,
    "tf32": 156.0,
    "bf16": 312.0,
    "fp16": 312.0,
    "int8": 624.0,
}
_A100_NOTES = "fp64 is the tensor rate (vector 9.7); " + _SHM_NOTE.format(
    c=108, unit="SMs", b=256, g=1.41
)
_H100_SXM_DTYPES = {
    "fp64": 67.0,
    "fp32": 67.0,
    "tf32": 494.7,
    "bf16": 989.4,
    "fp16": 989.4,
    "fp8": 1978.9,
    "int8": 1978.9,
}
_H100_SXM_NOTES = (
    "fp64 is the tensor rate (vector 34); datasheet figures at the low-precision clock, while "
    "XProf uses the profile's max SM clock (132 x 1.98 GHz x 4096 = 1070 TF); "
    + _SHM_NOTE.format(c=132, unit="SMs", b=256, g=1.98)
)
_B200_SOURCE = (
    'glennklockwood.com, "B200"; nvidia.com, "NVIDIA DGX B200"; hmc-tech.com, '
    '"NVIDIA B200 vs NVIDIA B100" (TF32 1.13 PF, 4.5 PF FP8, 7.7 TB/s)'
)


def _tpu(
    name: str,
    cores: int,
    dtypes: dict[str, float],
    hbm_chip_gbps: float,
    source: str,
    notes: str,
    **kwargs: object,
) -> DevicePeaks:
    """A TPU entry from per-chip figures, stored per TensorCore (as XProf shows TPU peaks)."""
    per_core = {k: round(v / cores, 3) for k, v in dtypes.items()}
    return DevicePeaks(
        name=name,
        vendor="Google",
        dtype_tflops=per_core,
        hbm_gbps=round(hbm_chip_gbps / cores, 3),
        cores_per_chip=cores,
        source=source,
        notes=notes,
        **kwargs,  # type: ignore[arg-type]
    )


_TPU_PER_CORE = "per TensorCore (per-chip figure / {n}); VMEM bandwidth unpublished"

BUILTIN: dict[str, DevicePeaks] = {
    "v100-sxm2": DevicePeaks(
        name="NVIDIA V100 SXM2",
        vendor="NVIDIA",
        dtype_tflops={"fp64": 7.8, "fp32": 15.7, "fp16": 125.0},
        hbm_gbps=900.0,
        shared_memory_gbps=_shm_gbps(80, 256, 1.53),
        source=(
            'NVIDIA, "NVIDIA Tesla V100 GPU Accelerator" datasheet; NVIDIA Developer Blog, '
            '"Programming Tensor Cores in CUDA 9" ("125 Tensor TFLOPS"); techrival.com, '
            '"NVIDIA Volta Tesla V100 Cards Detailed" (launch figures 15 / 7.5 / 120 at 1455 MHz)'
        ),
        notes=(
            "fp16 is the tensor rate (launch figure 120 at 1455 MHz); XProf's test derives "
            "125.34 (80 SMs x 1.53 GHz x 1024); "
            + _SHM_NOTE.format(c=80, unit="SMs", b=256, g=1.53)
        ),
    ),
    "v100-pcie": DevicePeaks(
        name="NVIDIA V100 PCIe",
        vendor="NVIDIA",
        dtype_tflops={"fp64": 7.0, "fp32": 14.0, "fp16": 112.0},
        hbm_gbps=900.0,
        shared_memory_gbps=_shm_gbps(80, 256, 1.38),
        source='NVIDIA, "NVIDIA Tesla V100 GPU Accelerator" datasheet',
        notes="fp16 is the tensor rate; "
        + _SHM_NOTE.format(c=80, unit="SMs", b=256, g=1.38)
        + _SPEC_CLOCK,
    ),
    "a100-sxm-40gb": DevicePeaks(
        name="NVIDIA A100 SXM 40 GB",
        vendor="NVIDIA",
        dtype_tflops=_A100_DTYPES,
        hbm_gbps=1555.0,
        shared_memory_gbps=_shm_gbps(108, 256, 1.41),
        source=_A100_SOURCE,
        notes=_A100_NOTES,
    ),
    "a100-sxm-80gb": DevicePeaks(
        name="NVIDIA A100 SXM 80 GB",
        vendor="NVIDIA",
        dtype_tflops=_A100_DTYPES,
        hbm_gbps=2039.0,
        shared_memory_gbps=_shm_gbps(108, 256, 1.41),
        source=_A100_SOURCE,
        notes=_A100_NOTES + "; XProf's test: 108 SMs x 1.41 GHz x 2048 = 312",
    ),
    "a100-pcie-40gb": DevicePeaks(
        name="NVIDIA A100 PCIe 40 GB",
        vendor="NVIDIA",
        dtype_tflops=_A100_DTYPES,
        hbm_gbps=1555.0,
        shared_memory_gbps=_shm_gbps(108, 256, 1.41),
        source="same datasheet as A100 SXM: " + _A100_SOURCE,
        notes=_A100_NOTES,
    ),
    "a100-pcie-80gb": DevicePeaks(
        name="NVIDIA A100 PCIe 80 GB",
        vendor="NVIDIA",
        dtype_tflops=_A100_DTYPES,
        hbm_gbps=1935.0,
        shared_memory_gbps=_shm_gbps(108, 256, 1.41),
        source="same datasheet as A100 SXM: " + _A100_SOURCE,
        notes=_A100_NOTES,
    ),
    "h100-sxm": DevicePeaks(
        name="NVIDIA H100 SXM5 80 GB",
        vendor="NVIDIA",
        dtype_tflops=_H100_SXM_DTYPES,
        hbm_gbps=3350.0,
        shared_memory_gbps=_shm_gbps(132, 256, 1.98),
        source=(
            'NVIDIA H100 table on archive-lib.hpctech.co.jp, "NVIDIA H100" (sparse figures; '
            '"Specifications 1/2 lower without sparsity"); glennklockwood.com, "H100"'
        ),
        notes=_H100_SXM_NOTES,
    ),
    "h100-pcie": DevicePeaks(
        name="NVIDIA H100 PCIe 80 GB",
        vendor="NVIDIA",
        dtype_tflops={
            "fp64": 51.0,
            "fp32": 51.0,
            "tf32": 378.0,
            "bf16": 756.0,
            "fp16": 756.0,
            "fp8": 1513.0,
            "int8": 1513.0,
        },
        hbm_gbps=2000.0,
        shared_memory_gbps=_shm_gbps(114, 256, 1.62),
        source=(
            'archive-lib.hpctech.co.jp, "NVIDIA H100"; NVIDIA H100 PCIe product brief (114 SMs). '
            "XProf's test: 114 SMs x 1.62 GHz x 4096 = 756"
        ),
        notes="fp64 is the tensor rate (vector 26); "
        + _SHM_NOTE.format(c=114, unit="SMs", b=256, g=1.62),
    ),
    "h200": DevicePeaks(
        name="NVIDIA H200 SXM 141 GB",
        vendor="NVIDIA",
        dtype_tflops=_H100_SXM_DTYPES,
        hbm_gbps=4800.0,
        shared_memory_gbps=_shm_gbps(132, 256, 1.98),
        source=(
            'lzwjava.github.io, "NVIDIA H200 GPU Specifications and Features" (compute identical '
            'to H100 SXM; 3,958 FP8 is *with* sparsity); nvidia.com, "NVIDIA H200 Tensor Core GPU"'
        ),
        notes="compute as H100 SXM; " + _H100_SXM_NOTES,
    ),
    "b200": DevicePeaks(
        name="NVIDIA B200 (HGX, 1000 W)",
        vendor="NVIDIA",
        dtype_tflops={
            "fp64": 40.0,
            "fp32": 80.0,
            "tf32": 1100.0,
            "bf16": 2250.0,
            "fp16": 2250.0,
            "fp8": 4500.0,
            "int8": 4500.0,
        },
        hbm_gbps=8000.0,
        shared_memory_gbps=_shm_gbps(148, 256, 1.83),
        source=_B200_SOURCE,
        notes=(
            "XProf's test derives 2218 (148 SMs x 1.83 GHz x 8192); hmc-tech.com gives 7.7 TB/s; "
            + _SHM_NOTE.format(c=148, unit="SMs", b=256, g=1.83)
        ),
    ),
    "b200-gb200": DevicePeaks(
        name="NVIDIA B200 in GB200 (1200 W)",
        vendor="NVIDIA",
        dtype_tflops={
            "fp64": 45.0,
            "fp32": 90.0,
            "tf32": 1250.0,
            "bf16": 2500.0,
            "fp16": 2500.0,
            "fp8": 5000.0,
            "int8": 5000.0,
        },
        hbm_gbps=8000.0,
        source='glennklockwood.com, "B200"',
        notes="shared memory unknown: the GB200 clock is unpublished here",
    ),
    "l4": DevicePeaks(
        name="NVIDIA L4",
        vendor="NVIDIA",
        dtype_tflops={
            "fp64": 0.49,
            "fp32": 30.3,
            "tf32": 60.0,
            "bf16": 121.0,
            "fp16": 121.0,
            "fp8": 242.5,
            "int8": 242.5,
        },
        hbm_gbps=300.0,
        shared_memory_gbps=_shm_gbps(58, 256, 2.04),
        source=(
            "NVIDIA L4 datasheet figures (sparse: TF32 120, INT8 485) as listed on "
            'store.sourcecode.com (L4 product comparison); hmc-tech.com, "NVIDIA L4 vs NVIDIA T4" '
            "(FP64 0.49)"
        ),
        notes=(
            "24 GB GDDR6 (hbm_gbps is the GDDR6 bandwidth); 125.3 TF at the 2040 MHz boost clock; "
            + _SHM_NOTE.format(c=58, unit="SMs", b=256, g=2.04)
            + _SPEC_CLOCK
        ),
    ),
    "t4": DevicePeaks(
        name="NVIDIA T4",
        vendor="NVIDIA",
        dtype_tflops={"fp64": 0.25, "fp32": 8.1, "fp16": 65.0, "int8": 130.0},
        hbm_gbps=320.0,
        shared_memory_gbps=_shm_gbps(40, 256, 1.59),
        source=(
            'sysrqmts.com, "NVIDIA Tesla T4 Graphics Card"; geektopia.es, "Nvidia presenta la '
            'nueva Tesla T4…" (8.1 / 65 / 130 TOPS / 260 INT4)'
        ),
        notes=(
            "16 GB GDDR6; fp16 is the mixed-precision tensor rate; "
            + _SHM_NOTE.format(c=40, unit="SMs", b=256, g=1.59)
            + _SPEC_CLOCK
        ),
    ),
    "a10": DevicePeaks(
        name="NVIDIA A10",
        vendor="NVIDIA",
        dtype_tflops={
            "fp64": 0.98,
            "fp32": 31.2,
            "tf32": 62.5,
            "bf16": 125.0,
            "fp16": 125.0,
            "int8": 250.0,
        },
        hbm_gbps=600.0,
        shared_memory_gbps=_shm_gbps(72, 256, 1.695),
        source=(
            "NVIDIA A10 datasheet (secondary quotes only); baseten.co, "
            '"NVIDIA A10 vs A10G for ML model inference" (24 GB, 600 GB/s); sysrqmts.com, '
            '"NVIDIA A10 PCIe vs NVIDIA Quadro RTX 4000" (FP32 31.24, FP64 0.976, 600.2 GB/s)'
        ),
        notes=(
            "24 GB GDDR6; TF32/INT8 from secondary quotes only; "
            + _SHM_NOTE.format(c=72, unit="SMs", b=256, g=1.695)
            + _SPEC_CLOCK
        ),
    ),
    "mi250x": DevicePeaks(
        name="AMD Instinct MI250X (per GCD)",
        vendor="AMD",
        dtype_tflops={
            "fp64": 47.85,
            "fp32": 47.85,
            "bf16": 191.5,
            "fp16": 191.5,
            "int8": 191.5,
        },
        hbm_gbps=1638.4,
        shared_memory_gbps=_shm_gbps(110, 128, 1.7),
        cores_per_chip=2,
        source=(
            'AMD spec table as reproduced on zexron.com, "AMD MI250(X) Aldebaran as MCM with up '
            'to 47.9 teraflop/s and 560 watt TDP". Per GCD: half of each figure. '
            "XProf gfx90a: 1024 FLOP/CU/cycle"
        ),
        notes=(
            "per GCD (each GCD is its own /device:GPU plane): half the card's 220 CUs, "
            "95.7 matrix fp64/fp32, 383.0 bf16/fp16/int8, 3.2768 TB/s; fp64/fp32 are matrix "
            "rates (vector 23.95); XProf: 110 CUs x 1.7 GHz x 1024 = 191.5; "
            + _SHM_NOTE.format(c=110, unit="CUs", b=128, g=1.7)
        ),
    ),
    "mi300x": DevicePeaks(
        name="AMD Instinct MI300X",
        vendor="AMD",
        dtype_tflops={
            "fp64": 163.4,
            "fp32": 163.4,
            "tf32": 653.7,
            "bf16": 1307.4,
            "fp16": 1307.4,
            "fp8": 2614.9,
            "int8": 2614.9,
        },
        hbm_gbps=5300.0,
        shared_memory_gbps=_shm_gbps(304, 128, 2.1),
        source=(
            'rocm.docs.amd.com, "AMD Instinct MI300 series microarchitecture"; XProf gfx942: '
            "304 x 2.1 x 2048 = 1,307.4"
        ),
        notes=(
            "304 CUs, 2.1 GHz, 192 GB HBM3; fp64 is the matrix rate (vector 81.7); profiles' "
            "memory_bandwidth stat says 2662.4 GB/s (half the datasheet) and XProf uses that; "
            + _SHM_NOTE.format(c=304, unit="CUs", b=128, g=2.1)
        ),
    ),
    "mi355x": DevicePeaks(
        name="AMD Instinct MI355X",
        vendor="AMD",
        dtype_tflops={
            "fp64": 78.6,
            "fp32": 157.3,
            "bf16": 2516.6,
            "fp16": 2516.6,
            "fp8": 5033.0,
            "int8": 5033.0,
        },
        hbm_gbps=8000.0,
        shared_memory_gbps=_shm_gbps(256, 256, 2.4),
        source=(
            "tomshardware.com, \"AMD's Instinct MI355X accelerator will reportedly consume 1,400 "
            'watts" (288 GB, 8 TB/s); ISSCC 2026 reporting (news.lavx.hu, "ISSCC 2026: AMD\'s '
            'MI355X doubles throughput…": 8,192 FP8 FLOP/clock/CU, about 5 PF FP8); '
            "XProf gfx950: 256 x 2.4 x 4096 = 2,516.6"
        ),
        notes=(
            "256 CUs, 2.4 GHz, 288 GB HBM3E; fp64, fp32 and int8 unverified; tf32 unknown "
            "(CDNA 4 may have none); " + _SHM_NOTE.format(c=256, unit="CUs", b=256, g=2.4)
        ),
    ),
    "tpu-v2": _tpu(
        "Google TPU v2 (per TensorCore)",
        2,
        {"bf16": 46.0},
        716.0,
        'JAX documentation, "Pallas TPU: hardware" (jax/_src/pallas/mosaic/tpu_info.py in '
        'jax-ml/jax); XProf documentation, "Roofline Model" (screenshot: 24.3 TFLOP/s and '
        "667.6 GiB/s per TensorCore)",
        _TPU_PER_CORE.format(n=2)
        + "; secondary pages say 45 TF and ~600 GB/s per chip; XProf's screenshot shows "
        "24.3 TF and 716.8 GB/s per TensorCore, which contradicts a per-chip 716 GB/s",
    ),
    "tpu-v3": _tpu(
        "Google TPU v3 (per TensorCore)",
        2,
        {"bf16": 123.0},
        900.0,
        'Google Cloud documentation, "TPU v3" ("Peak compute per chip 123 teraflops (bf16)", '
        '"32 GiB, 900 GBps"); JAX tpu_info',
        _TPU_PER_CORE.format(n=2) + "; JAX tpu_info says 140 TF and 825 GB/s per chip",
    ),
    "tpu-v4": _tpu(
        "Google TPU v4 (per TensorCore)",
        2,
        {"bf16": 275.0, "int8": 275.0},
        1200.0,
        'Google Cloud documentation, "TPU v4"',
        _TPU_PER_CORE.format(n=2) + "; megacore; CMEM 128 MiB/chip (bandwidth unpublished)",
        has_megacore=True,
    ),
    "tpu-v5e": _tpu(
        "Google TPU v5e (v5 lite)",
        1,
        {"bf16": 197.0, "int8": 393.0},
        819.0,
        'Google Cloud documentation, "TPU v5e"',
        "one TensorCore per chip; fp8 unknown; a page variant says 800 GiBps; "
        "VMEM 128 MiB (bandwidth unpublished)",
    ),
    "tpu-v5p": _tpu(
        "Google TPU v5p (per TensorCore)",
        2,
        {"bf16": 459.0, "fp8": 459.0, "int8": 918.0},
        2765.0,
        'Google Cloud documentation, "TPU v5p"; "TPU7x (Ironwood)" comparison table (FP8 459)',
        _TPU_PER_CORE.format(n=2)
        + "; XProf's golden 'TPU v5' output shows 233.4 TF and 1382.4 GB/s per TensorCore, "
        "megacore 0, has_merged_vmem 0",
    ),
    "tpu-v6e": _tpu(
        "Google TPU v6e (Trillium)",
        1,
        {"bf16": 918.0, "fp8": 918.0, "int8": 1836.0},
        1638.0,
        'Google Cloud documentation, "TPU v6e"; data/xprof/tpu_inference_2.xplane.pb plane '
        "stats (918.0 TF, 1637.99 GB/s, VMEM read/write 23,296 / 16,128 GB/s per core)",
        "one TensorCore per chip ('TPU v6 Lite'); VMEM bandwidths from the profile's plane stats",
        vmem_read_gbps=23296.01,
        vmem_write_gbps=16128.03,
        has_merged_vmem=True,
    ),
    "tpu7x": _tpu(
        "Google TPU7x (Ironwood, per TensorCore)",
        2,
        {"bf16": 2307.0, "fp8": 4614.0},
        7370.0,
        'Google Cloud documentation, "TPU7x (Ironwood)" and "TPU7x (Ironwood) performance '
        'optimizations" (4,614 TFLOPS FP8)',
        _TPU_PER_CORE.format(n=2) + "; 192 GiB HBM per chip; int8 unknown",
    ),
}

_EXTRA_ALIASES = {
    "h100": "h100-sxm",
    "h100sxm5": "h100-sxm",
    "h100sxm580gb": "h100-sxm",
    "h10080gbhbm3": "h100-sxm",
    "h100pcie80gb": "h100-pcie",
    "h200sxm": "h200",
    "h200sxm141gb": "h200",
    "b200hgx": "b200",
    "gb200": "b200-gb200",
    "v100": "v100-sxm2",
    "v100sxm": "v100-sxm2",
    "v100sxm216gb": "v100-sxm2",
    "v100sxm232gb": "v100-sxm2",
    "v100pcie16gb": "v100-pcie",
    "v100pcie32gb": "v100-pcie",
    "a100": "a100-sxm-80gb",
    "a100sxm": "a100-sxm-80gb",
    "a100sxm4": "a100-sxm-80gb",
    "a100sxm480gb": "a100-sxm-80gb",
    "a100sxm440gb": "a100-sxm-40gb",
    "a10080gb": "a100-sxm-80gb",
    "a10040gb": "a100-sxm-40gb",
    "a100pcie": "a100-pcie-80gb",
    "a10080gbpcie": "a100-pcie-80gb",
    "a10040gbpcie": "a100-pcie-40gb",
    "mi250xgcd": "mi250x",
    "gfx90a": "mi250x",
    "gfx942": "mi300x",
    "gfx950": "mi355x",
    "v2": "tpu-v2",
    "v3": "tpu-v3",
    "v4": "tpu-v4",
    "v5e": "tpu-v5e",
    "v5lite": "tpu-v5e",
    "v5litepod": "tpu-v5e",
    "tpuv5lite": "tpu-v5e",
    "tpuv5litepod": "tpu-v5e",
    "v5p": "tpu-v5p",
    "tpuv5": "tpu-v5p",
    "v6e": "tpu-v6e",
    "v6lite": "tpu-v6e",
    "tpuv6lite": "tpu-v6e",
    "trillium": "tpu-v6e",
    "v7x": "tpu7x",
    "tpuv7x": "tpu7x",
    "tpuv7": "tpu7x",
    "ironwood": "tpu7x",
}
_VENDOR_PREFIXES = ("nvidia", "tesla", "amd", "instinct", "google", "cloud")


def _compact(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_ALIASES: dict[str, str] = {_compact(key): key for key in BUILTIN}
_ALIASES.update(_EXTRA_ALIASES)


def lookup(name: str) -> DevicePeaks:
    """A built-in entry by key or alias, ignoring case, spaces, '-' and '_' ("TPU v6 Lite")."""
    compact = _compact(name)
    while True:
        if compact in _ALIASES:
            return BUILTIN[_ALIASES[compact]]
        prefix = next((p for p in _VENDOR_PREFIXES if compact.startswith(p)), None)
        if prefix is None or compact == prefix:
            break
        compact = compact[len(prefix) :]
    raise KeyError(f"unknown device {name!r}; valid names: {', '.join(BUILTIN)}")


def load_peaks(spec: str) -> DevicePeaks:
    """A built-in name, or a JSON peak file (schema in the module docstring).

    A spec with a path separator or a ``.json`` suffix is always a file; otherwise built-in
    names win over a same-named file in the working directory.
    """
    looks_like_path = spec.lower().endswith(".json") or "/" in spec or os.sep in spec
    if not looks_like_path:
        try:
            return lookup(spec)
        except KeyError:
            if not os.path.exists(spec):
                raise ValueError(
                    f"{spec!r} is neither a built-in device nor a file; "
                    f"built-in names: {', '.join(BUILTIN)}"
                ) from None
    return _load_file(spec)


def _load_file(path: str) -> DevicePeaks:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a directory, not a JSON peak file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot read ({error.strerror or error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise ValueError(f"{path}: not valid JSON ({error.msg} at {where})") from None
    try:
        return DevicePeaks.from_json(data, default_source=f"user file {path}")
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


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


# --- calibration ----------------------------------------------------------------------------


def _best_seconds(
    run: Callable[[], object], budget_s: float, min_reps: int = 3, max_reps: int = 50
) -> tuple[float, int]:
    """Best wall time of ``run`` after one warm-up: repeats until the budget or ``max_reps``."""
    run()
    best = math.inf
    reps = 0
    start = time.perf_counter()
    while reps < max_reps and (reps < min_reps or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
        reps += 1
    return best, reps


class _Deadline:
    """Splits what is left of the budget evenly over the timings still to run.

    Setup (random matrices, page-faulting the stream arrays) and warm-ups come out of the
    budget too, so the whole run stays close to ``seconds_budget``.
    """

    def __init__(self, seconds: float, timings: int) -> None:
        self.end = time.perf_counter() + seconds
        self.left = timings

    def share(self) -> float:
        share = max(0.0, self.end - time.perf_counter()) / max(1, self.left)
        self.left -= 1
        return share


def _matmul(dtype: type, n: int, deadline: _Deadline) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    seconds, reps = _best_seconds(lambda: np.matmul(a, b, out=out), deadline.share())
    flops = 2.0 * n**3
    return {
        "n": n,
        "flops": flops,
        "best_s": seconds,
        "reps": reps,
        "tflops": flops / seconds / 1e12,
    }


def _stream(array_mib: int, deadline: _Deadline) -> dict[str, dict[str, float]]:
    """Copy (b = a) and triad (a = b + s*c), counting the bytes numpy actually moves.

    numpy's triad is two passes (a = s*c, then a += b): 5 array-sizes of traffic, not 3.
    """
    count = max(1, array_mib * 2**20 // 8)
    a = np.full(count, 1.0)
    b = np.full(count, 2.0)
    c = np.full(count, 3.0)
    size = float(a.nbytes)

    def triad() -> None:
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    results = {}
    for name, run, traffic in (("copy", lambda: np.copyto(b, a), 2), ("triad", triad, 5)):
        seconds, reps = _best_seconds(run, deadline.share())
        moved = traffic * size
        results[name] = {
            "bytes": moved,
            "best_s": seconds,
            "reps": reps,
            "gbps": moved / seconds / 1e9,
        }
    return results


def calibrate(
    *, seconds_budget: float = 10.0, matrix_n: int = 2048, stream_mib: int = 512
) -> dict[str, object]:
    """Measures this machine's peaks with numpy; returns a ``load_peaks``-compatible dict.

    FLOP/s: best of repeated ``a @ b`` (2n³ FLOPs) for float32 and float64, on all BLAS
    threads. Bandwidth: best STREAM-style copy/triad over float64 arrays of ``stream_mib`` MiB
    each (3 arrays), which must be far larger than the last-level cache. ``seconds_budget``
    covers setup and the four timings; each timing still runs a warm-up and 3 repetitions,
    so a budget too small for the sizes is overrun rather than giving no figure.
    """
    if seconds_budget <= 0 or matrix_n < 1 or stream_mib < 1:
        raise ValueError("calibrate: seconds_budget, matrix_n and stream_mib must be positive")
    started = time.perf_counter()
    deadline = _Deadline(seconds_budget, timings=4)
    fp32 = _matmul(np.float32, matrix_n, deadline)
    fp64 = _matmul(np.float64, matrix_n, deadline)
    stream = _stream(stream_mib, deadline)
    hostname = socket.gethostname() or "localhost"
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    return {
        "name": f"calibrated {hostname}",
        "vendor": "CPU",
        "dtype_tflops": {"fp32": fp32["tflops"], "fp64": fp64["tflops"]},
        "hbm_gbps": max(stream["copy"]["gbps"], stream["triad"]["gbps"]),
        "source": f"calibration (numpy matmul, stream copy/triad) on {today}",
        "notes": (
            "measured, not a datasheet peak: BLAS matmul and numpy memory passes reach a "
            "fraction of the hardware's limits"
        ),
        "details": {
            "hostname": hostname,
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "numpy": np.__version__,
            "matmul_fp32": fp32,
            "matmul_fp64": fp64,
            "stream_array_mib": stream_mib,
            "stream_copy": stream["copy"],
            "stream_triad": stream["triad"],
            "seconds_budget": seconds_budget,
            "elapsed_s": time.perf_counter() - started,
        },
    }


def write_calibration(path: str, result: Mapping[str, object]) -> None:
    """Writes a ``calibrate()`` result as a JSON peak file (checked first, so it will load)."""
    DevicePeaks.from_json(result)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2, sort_keys=False)
        handle.write("\n")


def load_perf_env(spec: str) -> PerfEnv:
    """The PerfEnv of a ``--peaks`` spec, labelled with where its figures come from."""
    peaks = load_peaks(spec)
    if any(entry is peaks for entry in BUILTIN.values()):
        label = f"built-in table ({peaks.name})"
    elif peaks.source.startswith("calibration"):
        label = f"calibration ({spec})"
    else:
        label = f"user file ({spec})"
    return peaks.to_perf_env(label)
