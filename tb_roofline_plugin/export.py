"""The output formats: XProf's datatable, our complete json, and csv."""

from __future__ import annotations

import json

from google.protobuf.descriptor import FieldDescriptor

from . import __version__
from .datatable import to_csv, to_datatable
from .op_stats import OpStats
from .perf_env import CMEM_RD, CMEM_WR, HBM_RW, SRAM_WR, VMEM_RD, VMEM_WR
from .protos import roofline_model_pb2 as rm
from .roofline import build_database, ridge_point, safe_divide, step_database
from .selection import TOTAL, Selection, select

FORMATS = ("datatable", "json", "csv")


def _memories(stats: OpStats) -> list[tuple[str, int]]:
    """(label, PerfEnv index) of the memories worth a roof on this device."""
    kind = stats.run_env.hardware_type
    if kind == "GPU":
        return [("HBM", HBM_RW), ("Shared memory / L1", SRAM_WR)]
    if kind == "CPU":
        return [("DRAM", HBM_RW)]
    return [
        ("HBM", HBM_RW),
        ("CMEM read", CMEM_RD),
        ("CMEM write", CMEM_WR),
        ("VMEM read", VMEM_RD),
        ("VMEM write", VMEM_WR),
    ]


def device_summary(stats: OpStats) -> dict:
    """Device, peaks (with their source and ridge points) and time-scale facts for the UI."""
    env = stats.perf_env
    peak_gflops = 1000.0 * env.peak_tera_flops_per_second
    memories = [
        {
            "name": name,
            "peak_gbps": env.peak_bws_gbps[index],
            "peak_gibps": env.peak_bws_gbps[index] / 1.073741824,
            "ridge_point": ridge_point(peak_gflops, env.peak_bws_gbps[index] / 1.073741824),
        }
        for name, index in _memories(stats)
        if env.peak_bws_gbps[index] > 0
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
        "dtype_peak_gflops": {k: 1000.0 * v for k, v in env.dtype_tflops.items()},
    }


# XLA element types -> the compute ceiling they run at.
_DTYPE_CEILING = {
    "f64": "fp64",
    "c128": "fp64",
    "f32": "fp32",
    "c64": "fp32",
    "bf16": "bf16",
    "f16": "fp16",
    "s8": "int8",
    "u8": "int8",
}


def dtype_ceiling(dtype: str) -> str:
    """The ceiling key (``fp32``, ``bf16``, ``fp8``, ...) of an XLA element type, or ""."""
    if dtype.startswith("f8"):
        return "fp8"
    return _DTYPE_CEILING.get(dtype, "")


def op_details(
    database: rm.RooflineModelDatabase, stats: OpStats, selection: Selection
) -> list[dict]:
    """Per op of the selection (infeed/outfeed included): dtype-aware efficiency, wasted time.

    ``dtype_peak_gflops`` is the ceiling of the op's own input dtype when known (else the
    single peak); wasted time is time x (1 - roofline efficiency), never negative, and its
    fraction is of the selection's device time.
    """
    db = selection.db
    dtypes = {(int(p), n): d for p, n, d in zip(db.program_id, db.name, db.dtype)}
    ceilings = stats.perf_env.dtype_tflops
    total_us = db.total_time_ps / 1e6
    details = []
    for rec in database.roofline_model_record:
        wanted = rec.record_type == selection.record_type and rec.step_num == selection.step_num
        if not wanted or rec.rank == 0 or not rec.include_infeed_outfeed:
            continue
        dtype = dtypes.get((rec.hlo_module_id, rec.hlo_name), "")
        ceiling = ceilings.get(dtype_ceiling(dtype), 0.0) * 1000.0 or database.peak_flop_rate
        compute = float(safe_divide(rec.measured_flop_rate, ceiling))
        efficiency = max(rec.memory_bw_relative_to_hw_limit, compute)
        wasted = rec.total_time_in_us * max(1.0 - min(rec.roofline_efficiency, 1.0), 0.0)
        details.append(
            {
                "hlo_module_id": str(rec.hlo_module_id),
                "hlo_name": rec.hlo_name,
                "rank": rec.rank,
                "dtype": dtype,
                "dtype_peak_gflops": ceiling,
                "dtype_compute_efficiency": compute,
                "dtype_roofline_efficiency": efficiency,
                "wasted_time_us": wasted,
                "wasted_time_fraction": float(safe_divide(wasted, total_us)),
                "above_roof": rec.roofline_efficiency > 1.05,
            }
        )
    order = sorted(range(len(details)), key=lambda i: -details[i]["wasted_time_us"])
    for rank, i in enumerate(order, start=1):
        details[i]["wasted_time_rank"] = rank
    return details


def _unattributed(stats: OpStats) -> list[dict]:
    db = stats.unattributed
    if db is None:
        return []
    rows = sorted(range(len(db)), key=lambda i: -int(db.time_ps[i]))
    return [
        {
            "name": str(db.name[i]),
            "category": str(db.category[i]),
            "occurrences": int(db.occurrences[i]),
            "total_time_us": int(db.time_ps[i]) / 1e6,
        }
        for i in rows
    ]


_INT64_TYPES = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}


def message_to_dict(message) -> dict:
    """protobuf's JSON mapping with proto field names, for set fields only.

    The same result as ``json_format.MessageToDict(..., preserving_proto_field_name=True)``
    on our messages (64-bit integers as strings, enums by name), several times faster:
    databases with thousands of records are turned into JSON on every new selection.
    """
    out = {}
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if _is_repeated(field):
                out[field.name] = [message_to_dict(v) for v in value]
            else:
                out[field.name] = message_to_dict(value)
        elif field.type == FieldDescriptor.TYPE_ENUM:
            names = field.enum_type.values_by_number
            values = value if _is_repeated(field) else [value]
            named = [names[v].name if v in names else v for v in values]
            out[field.name] = named if _is_repeated(field) else named[0]
        elif field.type in _INT64_TYPES:
            out[field.name] = [str(v) for v in value] if _is_repeated(field) else str(value)
        else:
            out[field.name] = list(value) if _is_repeated(field) else value
    return out


def _is_repeated(field) -> bool:
    repeated = getattr(field, "is_repeated", None)
    return repeated if repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED


def to_json(
    database: rm.RooflineModelDatabase,
    stats: OpStats,
    sources: list[str],
    selection: Selection | None = None,
) -> dict:
    """Our complete form: the database as protobuf JSON plus what the UI needs besides.

    For the whole profile the database is XProf's (Program rows per step); for a step or
    the average step it holds that step's Program and op records.
    """
    selection = selection or select(stats, TOTAL)
    return {
        "step": selection.label,
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
        "ops": op_details(database, stats, selection),
        "unattributed_kernels": _unattributed(stats),
        "notes": stats.notes,
        "database": message_to_dict(database),
    }


def selection_database(stats: OpStats, selection: Selection) -> rm.RooflineModelDatabase:
    if selection.label == TOTAL:
        return build_database(stats)
    return step_database(stats, selection.db, selection.record_type, selection.step_num)


def render(stats: OpStats, fmt: str, sources: list[str], step: str | int = TOTAL) -> str:
    """The text of ``stats`` in one of FORMATS; ``step`` selects json records."""
    selection = select(stats, step)
    database = selection_database(stats, selection)
    if fmt == "datatable":
        return json.dumps(to_datatable(database))
    if fmt == "json":
        return json.dumps(to_json(database, stats, sources, selection), indent=1)
    if fmt == "csv":
        return to_csv(to_datatable(database))
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
