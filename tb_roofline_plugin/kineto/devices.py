"""Peaks of the GPU a Kineto trace ran on, from its ``deviceProperties`` and the built-in table.

Kineto records each GPU's name, compute capability, SM (CU) count and memory size, but no
clock, so peaks come from ``device_peaks.BUILTIN``: the entry the name points to (memory size
and form factor pick among variants: "A100-PG509-200" with 42.5 GB is the A100 SXM 40 GB),
else the entry for the compute capability, SM count and memory size (a gfx942 with 304 CUs is
an MI300X with 192 GiB, an MI325X with 256 GiB). ROCm reports some Instinct GPUs as "AMD
Radeon Graphics" and others with no name at all; there the arch comes from compute capability
and CU count, and an entry with another SM/CU count is scaled to the trace's, as
``device_peaks.gpu_dtype_tflops`` does for XSpace profiles (an MI250 GCD has 104 CUs to an
MI250X GCD's 110, at the same 1.7 GHz). Memory bandwidth is never scaled: it does not follow
the SM count.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import NamedTuple

from ..peaks.devices import BUILTIN, DevicePeaks, lookup
from ..peaks.perf_env import SRAM_RD, SRAM_WR, PerfEnv


class _Part(NamedTuple):
    sms: int  # SMs (NVIDIA) or CUs (AMD) as deviceProperties' numSms says
    memory_gib: int  # nominal memory size; 0 = any
    key: str  # BUILTIN entry


# (vendor, compute major, minor) -> the parts with that capability, for names the table does
# not know. The nearest SM count wins, then the nearest memory size.
_BY_CAPABILITY: dict[tuple[str, int, int], tuple[_Part, ...]] = {
    ("NVIDIA", 6, 0): (_Part(56, 16, "quadro-gp100"),),
    ("NVIDIA", 7, 0): (_Part(80, 0, "v100-sxm2"),),
    ("NVIDIA", 7, 5): (_Part(68, 11, "rtx-2080-ti"), _Part(40, 16, "t4")),
    ("NVIDIA", 8, 0): (_Part(108, 80, "a100-sxm-80gb"), _Part(108, 40, "a100-sxm-40gb")),
    ("NVIDIA", 8, 6): (_Part(82, 24, "rtx-3090"), _Part(72, 24, "a10")),
    ("NVIDIA", 8, 9): (_Part(128, 24, "rtx-4090"), _Part(142, 48, "l40s"), _Part(58, 24, "l4")),
    ("NVIDIA", 9, 0): (
        _Part(132, 80, "h100-sxm"),
        _Part(132, 141, "h200"),
        _Part(114, 80, "h100-pcie"),
    ),
    ("NVIDIA", 10, 0): (_Part(148, 0, "b200"),),
    ("NVIDIA", 10, 3): (_Part(148, 0, "b300"),),
    ("AMD", 9, 0): (_Part(110, 0, "mi250x"),),  # gfx90a (HIP reports 9.0); MI250: 104 CUs
    ("AMD", 9, 4): (_Part(304, 192, "mi300x"), _Part(304, 256, "mi325x")),
    ("AMD", 9, 5): (_Part(256, 0, "mi355x"),),
}
# The AMD arch of each compute capability HIP reports, and back from a gfx name.
_AMD_ARCH = {(9, 0): "gfx90a", (9, 4): "gfx942", (9, 5): "gfx950"}
_AMD_CC = {arch: cc for cc, arch in _AMD_ARCH.items()}
# Compute capabilities only AMD reports (NVIDIA has no 9.4 or 9.5).
_AMD_ONLY_CC = ((9, 4), (9, 5))
_GFX = re.compile(r"gfx[0-9a-f]{3,}")
_GB = re.compile(r"(\d+)\s*GB")
_GIB = float(1 << 30)


def _vendor(name: str, properties: dict, cc: tuple[int, int]) -> str:
    """AMD by its name, else, for a nameless device, by its 64-wide wavefronts, its LDS
    property or a capability only HIP reports; NVIDIA otherwise."""
    lowered = name.lower()
    if any(word in lowered for word in ("amd", "radeon", "instinct")) or _GFX.search(lowered):
        return "AMD"
    if name:
        return "NVIDIA"
    amd_like = properties.get("warpSize") == 64 or "maxSharedMemoryPerMultiProcessor" in properties
    return "AMD" if amd_like or cc in _AMD_ONLY_CC else "NVIDIA"


def _by_name(name: str, memory_gib: float) -> DevicePeaks | None:
    """The built-in entry the device name points to, picking the variant by memory size."""
    try:
        return _closest_variant(lookup(name), name, memory_gib)
    except KeyError:
        pass
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    for prefix in ("nvidia", "tesla", "amd", "instinct"):
        compact = compact.removeprefix(prefix)
    for length in range(len(compact), 3, -1):
        try:
            return _closest_variant(lookup(compact[:length]), name, memory_gib)
        except KeyError:
            continue
    return None


def _closest_variant(found: DevicePeaks, name: str, memory_gib: float) -> DevicePeaks:
    """Among entries of the same model and form factor, the one whose memory is nearest."""
    model = found.name.split(" ")[1] if " " in found.name else found.name
    pcie = "pcie" in name.lower()
    same = [
        p
        for p in BUILTIN.values()
        if p.vendor == found.vendor
        and model in p.name.split(" ")
        and ("PCIe" in p.name) == pcie
        and _GB.search(p.name)
    ]
    if memory_gib <= 0 or not same:
        return found
    return min(same, key=lambda p: abs(float(_GB.search(p.name).group(1)) - memory_gib))  # type: ignore[union-attr]


def _by_capability(vendor: str, cc: tuple[int, int], sms: int, memory_gib: float) -> _Part | None:
    """The part of this capability nearest in SM count, then in memory size."""
    parts = _BY_CAPABILITY.get((vendor, *cc), ())
    if not parts:
        return None

    def distance(part: _Part) -> tuple[int, float]:
        by_memory = abs(part.memory_gib - memory_gib) if part.memory_gib and memory_gib else 0.0
        return (abs(part.sms - sms) if sms else 0, by_memory)

    return min(parts, key=distance)


def _count(value, limit: int = 1 << 20) -> int:
    """A whole-number property (0 when it is missing, not a number, negative or beyond
    ``limit``: a corrupt property must not fail the trace)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if 0 <= value < limit else 0  # False for NaN


def _property(properties: dict, *keys: str):
    """The first of ``keys`` present (old Kineto wrote ``major``/``multiProcessorCount``)."""
    return next((properties[k] for k in keys if k in properties), None)


def device_peaks(properties: dict) -> tuple[PerfEnv, str]:
    """PerfEnv (``source`` says how it was found) and a device description for one GPU;
    an empty PerfEnv (source "none") when neither the name nor the capability is known."""
    raw_name = properties.get("name")
    name = str(raw_name).strip() if raw_name is not None else ""
    major = _count(_property(properties, "computeMajor", "major"))
    minor = _count(_property(properties, "computeMinor", "minor"))
    sms = _count(_property(properties, "numSms", "multiProcessorCount"))
    memory_gib = _count(_property(properties, "totalGlobalMem"), 1 << 60) / _GIB
    vendor = _vendor(name, properties, (major, minor))
    gfx = _GFX.search(name.lower())
    if vendor == "AMD" and gfx and (major, minor) == (0, 0):
        major, minor = _AMD_CC.get(gfx.group(0), (0, 0))
    unit = "CUs" if vendor == "AMD" else "SMs"
    described = f"{name or 'unknown GPU'} (compute {major}.{minor}, {sms} {unit})"
    found = _by_name(name, memory_gib) if name and not gfx else None
    if found is not None:
        return found.to_perf_env(
            f"built-in table ({found.name}), from the trace's device name"
        ), described
    part = _by_capability(vendor, (major, minor), sms, memory_gib)
    if part is None:
        return PerfEnv(source="none"), described
    entry = BUILTIN[part.key]
    if vendor == "NVIDIA":
        entry = _closest_variant(entry, name, memory_gib)
    if not name or gfx:  # nothing better to call it: the entry the capability points to
        arch = _AMD_ARCH.get((major, minor), "") if vendor == "AMD" else ""
        described = (
            f"{entry.name} ({arch + ', ' if arch else ''}compute {major}.{minor}, {sms} {unit})"
        )
    env = entry.to_perf_env(f"built-in table ({entry.name}), from compute {major}.{minor}")
    if sms > 0 and sms != part.sms:
        scale = sms / part.sms
        env = replace(
            env,
            peak_tera_flops_per_second=env.peak_tera_flops_per_second * scale,
            dtype_tflops={k: v * scale for k, v in env.dtype_tflops.items()},
            peak_bws_gbps=[
                b * scale if i in (SRAM_RD, SRAM_WR) else b for i, b in enumerate(env.peak_bws_gbps)
            ],  # shared memory / LDS per SM
            source=f"built-in table ({entry.name}) scaled to {sms} of its {part.sms} {unit}, "
            f"from compute {major}.{minor}",
        )
    return env, described
