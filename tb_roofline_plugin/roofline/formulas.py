"""Every per-record roofline formula, exactly as XProf's ``roofline_model`` tool defines it
(``docs/roofline-semantics.md`` sections 7-9), vectorized with numpy over all records at
once: rates, intensities, utilizations, ``bound_by``, ridge points. ``safe_divide`` is
XProf's SafeDivide, so no NaN or infinity can come out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ops.op_metrics import (
    CMEM,
    HBM,
    READ,
    VMEM,
    WRITE,
    OpMetricsDb,
)
from ..peaks.perf_env import CMEM_RD, CMEM_WR, HBM_RW, SRAM_WR, VMEM_RD, VMEM_WR, PerfEnv
from ..units import GIB_PER_GB


def safe_divide(a, b):
    """XProf's SafeDivide: 0 where |b| < 1e-10, else a / b (element-wise)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    small = np.abs(b) < 1e-10
    return np.where(small, 0.0, a / np.where(small, 1.0, b))


def giga_to_gibi(x):
    return np.asarray(x, np.float64) / GIB_PER_GB


def gibibytes_per_second(num_bytes, ns):
    return giga_to_gibi(safe_divide(num_bytes, ns))


def ridge_point(peak_gflops: float, peak_gibps: float) -> float:
    """FLOP per byte where a memory roof meets the compute roof (0 without bandwidth)."""
    return float(safe_divide(peak_gflops, peak_gibps * GIB_PER_GB))


def is_infeed_or_outfeed(category: str) -> bool:
    return "infeed" in category or "outfeed" in category


@dataclass
class DatabasePeaks:
    """The database-level peaks (GFLOP/s, GiB/s) and flags the records are judged by."""

    peak_flop_rate: float
    peak_hbm_bw: float
    peak_cmem_read_bw: float
    peak_cmem_write_bw: float
    peak_vmem_read_bw: float
    peak_vmem_write_bw: float
    megacore: bool
    has_cmem: bool
    has_merged_vmem: bool
    is_gpu: bool
    perf_env: PerfEnv

    @classmethod
    def from_env(cls, env: PerfEnv, hardware_type: str) -> DatabasePeaks:
        bws = env.peak_bws_gbps
        gib = [float(giga_to_gibi(b)) for b in bws]
        is_gpu = hardware_type == "GPU"
        if is_gpu:
            cmem_r = cmem_w = 0.0
            vmem_r, vmem_w = gib[1], gib[2]
            has_cmem, merged = False, True
        else:
            has_cmem, merged = env.has_cmem, env.has_merged_vmem
            cmem_r, cmem_w = (gib[CMEM_RD], gib[CMEM_WR]) if has_cmem else (0.0, 0.0)
            if not has_cmem and merged:
                vmem_r, vmem_w = gib[VMEM_RD], gib[VMEM_WR]
            else:
                vmem_r = vmem_w = 0.0
        return cls(
            peak_flop_rate=1000.0 * env.peak_tera_flops_per_second,
            peak_hbm_bw=gib[HBM_RW],
            peak_cmem_read_bw=cmem_r,
            peak_cmem_write_bw=cmem_w,
            peak_vmem_read_bw=vmem_r,
            peak_vmem_write_bw=vmem_w,
            megacore=env.has_megacore and not is_gpu,
            has_cmem=has_cmem,
            has_merged_vmem=merged,
            is_gpu=is_gpu,
            perf_env=env,
        )


def record_metrics(
    db: OpMetricsDb, total_time_ps, peaks: DatabasePeaks, core_count: int
) -> dict[str, np.ndarray]:
    """The per-record formulas of section 7 and the bound_by rule of section 8, for every row."""
    t = db.time_ps.astype(np.float64)
    ns = t / 1000.0
    flops = db.flops
    occ = db.occurrences.astype(np.float64)
    has_bd = db.has_breakdown
    bd = db.breakdown
    hbm_bytes = np.where(has_bd, bd[:, HBM, READ] + bd[:, HBM, WRITE], db.bytes_accessed)
    memory = {
        "hbm": hbm_bytes,
        "cmem_read": bd[:, CMEM, READ],
        "cmem_write": bd[:, CMEM, WRITE],
        "vmem_read": bd[:, VMEM, READ],
        "vmem_write": bd[:, VMEM, WRITE],
    }
    out: dict[str, np.ndarray] = {
        "total_time_in_us": t / 1e6,
        "avg_time_in_us": safe_divide(t / 1e6, occ),
        "total_self_time_in_us": db.self_time_ps / 1e6,
        "avg_self_time_in_us": safe_divide(db.self_time_ps / 1e6, occ),
        "total_time_in_percentage": safe_divide(t, total_time_ps),
        "dma_stall_fraction": safe_divide(db.dma_stall_ps, t),
        "measured_flop_rate": safe_divide(flops, ns),
        "model_flop_rate": safe_divide(np.where(db.model_flops > 0, db.model_flops, flops), ns),
        "measured_memory_bw": gibibytes_per_second(db.bytes_accessed, ns),
        "operational_intensity": safe_divide(flops, db.bytes_accessed),
        "hbm_bw": gibibytes_per_second(hbm_bytes, ns),
    }
    for kind in ("cmem_read", "cmem_write", "vmem_read", "vmem_write"):
        out[f"{kind}_bw"] = gibibytes_per_second(memory[kind], ns)
    for kind, num_bytes in memory.items():
        out[f"{kind}_operational_intensity"] = safe_divide(flops, num_bytes)
    out["total_time_per_core_in_us"] = safe_divide(out["total_time_in_us"], core_count)

    bound_by, bottleneck_oi = _bound_by(out, memory, peaks)
    out["bound_by"] = bound_by
    out["bottleneck_operational_intensity"] = bottleneck_oi

    u_flops = safe_divide(out["measured_flop_rate"], peaks.peak_flop_rate)
    zero = np.zeros(len(t))
    u_hbm = safe_divide(out["hbm_bw"], peaks.peak_hbm_bw)
    u_cr = safe_divide(out["cmem_read_bw"], peaks.peak_cmem_read_bw) if peaks.has_cmem else zero
    u_cw = safe_divide(out["cmem_write_bw"], peaks.peak_cmem_write_bw) if peaks.has_cmem else zero
    merged = peaks.has_merged_vmem
    u_vr = safe_divide(out["vmem_read_bw"], peaks.peak_vmem_read_bw) if merged else zero
    u_vw = safe_divide(out["vmem_write_bw"], peaks.peak_vmem_write_bw) if merged else zero
    max_mem = np.maximum.reduce([u_cw, u_cr, u_hbm, u_vw, u_vr])
    efficiency = np.maximum(max_mem, u_flops)
    out["flop_rate_relative_to_hw_limit"] = u_flops
    out["memory_bw_relative_to_hw_limit"] = max_mem
    out["roofline_efficiency"] = efficiency
    out["optimal_flop_rate"] = safe_divide(out["measured_flop_rate"], efficiency)
    return out


def _bound_by(
    out: dict[str, np.ndarray], memory: dict[str, np.ndarray], peaks: DatabasePeaks
) -> tuple[np.ndarray, np.ndarray]:
    """Visits Compute, HBM, then the on-chip memories; a later one wins only if strictly greater."""
    env = peaks.perf_env
    n = len(out["hbm_bw"])
    candidates = [
        (
            "Compute",
            safe_divide(out["measured_flop_rate"], 1000.0 * env.peak_tera_flops_per_second),
            out["operational_intensity"],
            np.ones(n, bool),
        ),
        (
            "HBM",
            safe_divide(out["hbm_bw"], giga_to_gibi(env.peak_bws_gbps[HBM_RW])),
            out["hbm_operational_intensity"],
            np.ones(n, bool),
        ),
    ]
    if peaks.is_gpu:
        shm_peak = env.peak_bws_gbps[SRAM_WR]
        if shm_peak > 0:
            candidates.append(
                (
                    "Shm/L1",
                    safe_divide(out["hbm_bw"], giga_to_gibi(shm_peak)),
                    out["hbm_operational_intensity"],
                    np.ones(n, bool),
                )
            )
    else:
        for memory_label, kind, index in (
            ("CMEM Read", "cmem_read", CMEM_RD),
            ("CMEM Write", "cmem_write", CMEM_WR),
            ("VMEM Read", "vmem_read", VMEM_RD),
            ("VMEM Write", "vmem_write", VMEM_WR),
        ):
            peak = env.peak_bws_gbps[index]
            if peak > 0:
                candidates.append(
                    (
                        memory_label,
                        safe_divide(out[f"{kind}_bw"], giga_to_gibi(peak)),
                        out[f"{kind}_operational_intensity"],
                        memory[kind] > 0,
                    )
                )
    best = np.zeros(n)
    label = np.full(n, "Unknown", object)
    oi = np.zeros(n)
    for memory_name, util, intensity, enabled in candidates:
        wins = enabled & (util > best)
        best = np.where(wins, util, best)
        label[wins] = memory_name
        oi = np.where(wins, intensity, oi)
    return label, oi
