"""Peaks of the GPU a Kineto trace ran on, from its ``deviceProperties`` and the built-in table.

Kineto records each GPU's name, compute capability, SM (CU) count and memory size, but no
clock, so peaks come from ``device_peaks.BUILTIN``: the entry the name points to (memory size
and form factor pick among variants: "A100-PG509-200" with 42.5 GB is the A100 SXM 40 GB),
else the entry for the compute capability and SM count. ROCm reports every Instinct GPU as
"AMD Radeon Graphics"; there the arch comes from compute capability and CU count, and the
arch's entry is scaled by CUs as ``device_peaks.gpu_dtype_tflops`` does for XSpace profiles
(an MI250 GCD has 104 CUs to an MI250X GCD's 110, at the same 1.7 GHz).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..peaks.devices import BUILTIN, DevicePeaks, lookup
from ..peaks.perf_env import SRAM_RD, SRAM_WR, PerfEnv

# (vendor, compute major, minor, SMs) -> built-in entry, for names the table does not know.
_BY_CAPABILITY: dict[tuple[str, int, int], tuple[tuple[int, str], ...]] = {
    ("NVIDIA", 7, 0): ((80, "v100-sxm2"),),
    ("NVIDIA", 8, 0): ((108, "a100-sxm-80gb"),),
    ("NVIDIA", 9, 0): ((132, "h100-sxm"), (114, "h100-pcie")),
    ("AMD", 9, 0): ((110, "mi250x"),),  # gfx90a (HIP reports 9.0); MI250: 104 CUs
    ("AMD", 9, 4): ((304, "mi300x"),),
    ("AMD", 9, 5): ((256, "mi355x"),),
}
_GB = re.compile(r"(\d+)\s*GB")


def _vendor(name: str) -> str:
    lowered = name.lower()
    return "AMD" if ("amd" in lowered or "radeon" in lowered or "instinct" in lowered) else "NVIDIA"


def _by_name(name: str, memory_gb: float) -> DevicePeaks | None:
    """The built-in entry the device name points to, picking the variant by memory size."""
    try:
        return _closest_variant(lookup(name), name, memory_gb)
    except KeyError:
        pass
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    for prefix in ("nvidia", "tesla", "amd", "instinct"):
        compact = compact.removeprefix(prefix)
    for length in range(len(compact), 3, -1):
        try:
            return _closest_variant(lookup(compact[:length]), name, memory_gb)
        except KeyError:
            continue
    return None


def _closest_variant(found: DevicePeaks, name: str, memory_gb: float) -> DevicePeaks:
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
    if memory_gb <= 0 or not same:
        return found
    return min(same, key=lambda p: abs(float(_GB.search(p.name).group(1)) - memory_gb))  # type: ignore[union-attr]


def _count(value, limit: int = 1 << 20) -> int:
    """A whole-number property (0 when it is missing, not a number, negative or beyond
    ``limit``: a corrupt property must not fail the trace)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if 0 <= value < limit else 0  # False for NaN


def device_peaks(properties: dict) -> tuple[PerfEnv, str]:
    """PerfEnv (``source`` says how it was found) and a device description for one GPU;
    an empty PerfEnv (source "none") when neither the name nor the capability is known."""
    name = str(properties.get("name", "")) or "unknown GPU"
    major, minor = _count(properties.get("computeMajor")), _count(properties.get("computeMinor"))
    sms = _count(properties.get("numSms"))
    memory_gb = _count(properties.get("totalGlobalMem"), 1 << 60) / 1e9
    vendor = _vendor(name)
    described = f"{name} (compute {major}.{minor}, {sms} {'CUs' if vendor == 'AMD' else 'SMs'})"
    found = _by_name(name, memory_gb) if vendor == "NVIDIA" else None
    if found is not None:
        return found.to_perf_env(
            f"built-in table ({found.name}), from the trace's device name"
        ), described
    choices = _BY_CAPABILITY.get((vendor, major, minor), ())
    if not choices:
        return PerfEnv(source="none"), described
    ref_sms, key = min(choices, key=lambda c: abs(c[0] - sms))
    entry = BUILTIN[key]
    if vendor == "NVIDIA":
        entry = _closest_variant(entry, name, memory_gb)
    env = entry.to_perf_env(f"built-in table ({entry.name}), from compute {major}.{minor}")
    if vendor == "AMD" and sms > 0 and sms != ref_sms:
        scale = sms / ref_sms
        env = replace(
            env,
            peak_tera_flops_per_second=env.peak_tera_flops_per_second * scale,
            dtype_tflops={k: v * scale for k, v in env.dtype_tflops.items()},
            peak_bws_gbps=[
                b * scale if i in (SRAM_RD, SRAM_WR) else b for i, b in enumerate(env.peak_bws_gbps)
            ],  # LDS per CU
            source=f"built-in table ({entry.name}) scaled to {sms} of its {ref_sms} CUs, "
            f"from compute {major}.{minor}",
        )
    return env, described
