"""The output formats: XProf's datatable, our complete json, and csv."""

from __future__ import annotations

import json

from google.protobuf import json_format

from . import __version__
from .datatable import to_csv, to_datatable
from .op_stats import OpStats
from .perf_env import CMEM_RD, CMEM_WR, HBM_RW, SRAM_RD, SRAM_WR, VMEM_RD, VMEM_WR
from .protos import roofline_model_pb2 as rm
from .roofline import build_database, ridge_point

FORMATS = ("datatable", "json", "csv")
_MEMORIES = (
    ("HBM", HBM_RW),
    ("SRAM read", SRAM_RD),
    ("SRAM write", SRAM_WR),
    ("CMEM read", CMEM_RD),
    ("CMEM write", CMEM_WR),
    ("VMEM read", VMEM_RD),
    ("VMEM write", VMEM_WR),
)


def device_summary(stats: OpStats) -> dict:
    """Device, peaks (with their source and ridge points) and time-scale facts for the UI."""
    env = stats.perf_env
    peak_gflops = 1000.0 * env.peak_tera_flops_per_second
    # On TPU the SRAM peaks repeat the VMEM ones; on GPU they are shared memory / L1.
    is_gpu = stats.run_env.hardware_type == "GPU"
    memories = [
        {
            "name": name,
            "peak_gbps": env.peak_bws_gbps[index],
            "peak_gibps": env.peak_bws_gbps[index] / 1.073741824,
            "ridge_point": ridge_point(peak_gflops, env.peak_bws_gbps[index] / 1.073741824),
        }
        for name, index in _MEMORIES
        if env.peak_bws_gbps[index] > 0 and (is_gpu or index not in (SRAM_RD, SRAM_WR))
    ]
    return {
        "hardware_type": stats.run_env.hardware_type,
        "device_type": stats.run_env.device_type,
        "device_core_count": stats.run_env.device_core_count,
        "active_core_count": stats.run_env.active_core_count,
        "peak_flop_rate_gflops": peak_gflops,
        "memories": memories,
        "has_megacore": env.has_megacore,
        "has_merged_vmem": env.has_merged_vmem,
        "has_cmem": env.has_cmem,
        "peaks_source": env.source if env.known else "none",
    }


def to_json(database: rm.RooflineModelDatabase, stats: OpStats, sources: list[str]) -> dict:
    """Our complete form: the database as protobuf JSON plus what the UI needs besides."""
    return {
        "format": "tb-roofline/1",
        "generator": f"tb_roofline_plugin {__version__}",
        "sources": sources,
        "hosts": stats.hosts,
        "device": device_summary(stats),
        "steps": [
            {
                "step_num": s.step_num,
                "complete": s.complete,
                "duration_us": s.duration_ps / 1e6,
            }
            for s in stats.steps
        ],
        "database": json_format.MessageToDict(database, preserving_proto_field_name=True),
    }


def render(stats: OpStats, fmt: str, sources: list[str]) -> str:
    """The text of ``stats`` in one of FORMATS."""
    database = build_database(stats)
    if fmt == "datatable":
        return json.dumps(to_datatable(database))
    if fmt == "json":
        return json.dumps(to_json(database, stats, sources), indent=1)
    if fmt == "csv":
        return to_csv(to_datatable(database))
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
