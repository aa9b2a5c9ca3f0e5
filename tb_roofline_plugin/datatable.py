"""XProf-compatible output: ``[roofline_table, diagnostics_table]`` google DataTables.

Same column ids, types, labels and order as XProf 2.24.2 (37 columns by default and
on TPU, 30 on GPU), the same property keys and step strings (semantics doc, section 11).
"""

from __future__ import annotations

import csv
import html
import io
import re

from .protos import roofline_model_pb2 as rm
from .roofline import ridge_point

# (id, type, label, record field or a special key)
_DEFAULT_COLUMNS = (
    ("step", "string", "Step", "#step"),
    ("rank", "number", "Rank", "rank"),
    ("category", "string", "Category", "hlo_category"),
    ("operation", "string", "Operation", "hlo_name"),
    ("occurrences", "number", "# Occurrences", "occurrences"),
    ("total_time", "number", "Total Time (us)", "total_time_in_us"),
    ("avg_time", "number", "Avg. time (us)", "avg_time_in_us"),
    ("total_self_time", "number", "Total self time (us)", "total_self_time_in_us"),
    ("avg_self_time", "number", "Avg. self time (us)", "avg_self_time_in_us"),
    (
        "total_self_time_percent",
        "number",
        "Total self time (%)",
        "total_self_time_as_fraction",
    ),
    (
        "cumulative_total_self_time_percent",
        "number",
        "Cumulative total self time (%)",
        "cumulative_total_self_time_as_fraction",
    ),
    ("dma_stall_percent", "number", "%time stalled by DMA", "dma_stall_fraction"),
    ("measured_flop_rate", "number", "Normalized FLOP Rate (GFLOP/s)", "measured_flop_rate"),
    ("model_flop_rate", "number", "Model FLOP Rate (GFLOP/s)", "model_flop_rate"),
    ("measured_memory_bw", "number", "Memory BW (GiB/s)", "measured_memory_bw"),
    ("hbm_bw", "number", "HBM BW (GiB/s)", "hbm_bw"),
    ("cmem_read_bw", "number", "CMEM Read BW (GiB/s)", "cmem_read_bw"),
    ("cmem_write_bw", "number", "CMEM Write BW (GiB/s)", "cmem_write_bw"),
    ("vmem_read_bw", "number", "VMEM Read BW (GiB/s)", "vmem_read_bw"),
    ("vmem_write_bw", "number", "VMEM Write BW (GiB/s)", "vmem_write_bw"),
    (
        "operational_intensity",
        "number",
        "Operational Intensity (FLOP/Byte)",
        "operational_intensity",
    ),
    (
        "hbm_operational_intensity",
        "number",
        "HBM Operational Intensity (FLOP/Byte)",
        "hbm_operational_intensity",
    ),
    (
        "cmem_read_operational_intensity",
        "number",
        "CMEM Read Operational Intensity (FLOP/Byte)",
        "cmem_read_operational_intensity",
    ),
    (
        "cmem_write_operational_intensity",
        "number",
        "CMEM Write Operational Intensity (FLOP/Byte)",
        "cmem_write_operational_intensity",
    ),
    (
        "vmem_read_operational_intensity",
        "number",
        "VMEM Read Operational Intensity (FLOP/Byte)",
        "vmem_read_operational_intensity",
    ),
    (
        "vmem_write_operational_intensity",
        "number",
        "VMEM Write Operational Intensity (FLOP/Byte)",
        "vmem_write_operational_intensity",
    ),
    (
        "bottleneck_operational_intensity",
        "number",
        "Bottleneck Operational Intensity (FLOP/Byte)",
        "bottleneck_operational_intensity",
    ),
    ("bound_by", "string", "Bound by", "bound_by"),
    ("total_time_per_core", "number", "Total Time per core (us)", "total_time_per_core_in_us"),
    ("total_time_in_percentage", "number", "Total Time (%)", "total_time_in_percentage"),
    ("optimal_flop_rate", "number", "Optimal FLOP Rate (GFLOP/s)", "optimal_flop_rate"),
    ("roofline_efficiency", "number", "Roofline efficiency (%)", "roofline_efficiency"),
    ("compute_efficiency", "number", "FLOP Rate / Peak (%)", "flop_rate_relative_to_hw_limit"),
    (
        "max_mem_bw_utilization",
        "number",
        "Max memory BW utilization (among supported memories) (%)",
        "memory_bw_relative_to_hw_limit",
    ),
    ("include_infeed_outfeed", "boolean", "Include Infeed/Outfeed", "include_infeed_outfeed"),
    ("hlo_module_id", "string", "Program ID", "#module"),
    ("source_info", "string", "Source Info", "#source"),
)
_GPU_ORDER = (
    "step",
    "rank",
    "category",
    "operation",
    "occurrences",
    "total_time",
    "avg_time",
    "total_self_time",
    "avg_self_time",
    "total_self_time_percent",
    "cumulative_total_self_time_percent",
    "measured_flop_rate",
    "model_flop_rate",
    "measured_memory_bw",
    "hbm_bw",
    "vmem_write_bw",
    "operational_intensity",
    "hbm_operational_intensity",
    "vmem_write_operational_intensity",
    "bottleneck_operational_intensity",
    "bound_by",
    "total_time_per_core",
    "total_time_in_percentage",
    "optimal_flop_rate",
    "roofline_efficiency",
    "compute_efficiency",
    "max_mem_bw_utilization",
    "include_infeed_outfeed",
    "hlo_module_id",
    "source_info",
)
_GPU_LABELS = {
    "vmem_write_bw": "SHM/L1 BW (GiB/s)",
    "vmem_write_operational_intensity": "SHM/L1 Operational Intensity (FLOP/Byte)",
}


def columns(is_gpu: bool) -> list[tuple[str, str, str, str]]:
    if not is_gpu:
        return list(_DEFAULT_COLUMNS)
    by_id = {c[0]: c for c in _DEFAULT_COLUMNS}
    return [
        (cid, by_id[cid][1], _GPU_LABELS.get(cid, by_id[cid][2]), by_id[cid][3])
        for cid in _GPU_ORDER
    ]


def is_gpu_database(database: rm.RooflineModelDatabase) -> bool:
    return "GPU" in database.device_type


def step_string(record: rm.RooflineModelRecord) -> str:
    kind = record.record_type
    if kind == rm.ALL:
        return "Total"
    if kind == rm.AVERAGE_STEP:
        return "Average"
    if kind == rm.PER_STEP:
        return str(record.step_num)
    if kind == rm.ALL_HW:
        return "Total (HW)"
    if kind == rm.INVALID_RECORD_TYPE:
        return "Invalid"
    return "Unknown"


def source_info_cell(record: rm.RooflineModelRecord) -> str:
    info = record.source_info
    if not info.file_name or info.line_number == -1:
        return ""
    stack = html.escape(info.stack_frame, quote=True).replace("&#x27;", "&#39;")
    file_name = html.escape(info.file_name, quote=True).replace("&#x27;", "&#39;")
    return f"<div class='source-info-cell' title='{stack}'>{file_name}:{info.line_number}</div>"


def _cell(record: rm.RooflineModelRecord, key: str, kind: str):
    if key == "#step":
        return step_string(record)
    if key == "#module":
        return str(record.hlo_module_id)
    if key == "#source":
        return source_info_cell(record)
    value = getattr(record, key)
    if kind == "number":
        return float(value)
    return value


def format_property(value: float | bool) -> str:
    """C++ ``absl::StrCat(double)``: 6 significant digits; booleans as 0/1."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return format(float(value), ".6g")


def properties(database: rm.RooflineModelDatabase) -> dict[str, str]:
    db = database
    ridge = {
        "hbm_ridge_point": ridge_point(db.peak_flop_rate, db.peak_hbm_bw),
        "cmem_read_ridge_point": ridge_point(db.peak_flop_rate, db.peak_cmem_read_bw),
        "cmem_write_ridge_point": ridge_point(db.peak_flop_rate, db.peak_cmem_write_bw),
        "vmem_read_ridge_point": ridge_point(db.peak_flop_rate, db.peak_vmem_read_bw),
        "vmem_write_ridge_point": ridge_point(db.peak_flop_rate, db.peak_vmem_write_bw),
    }
    if is_gpu_database(db):
        props = {
            "device_type": db.device_type,
            "peak_flop_rate": format_property(db.peak_flop_rate),
            "peak_hbm_bw": format_property(db.peak_hbm_bw),
            "peak_vmem_write_bw": format_property(db.peak_vmem_write_bw),
            "hbm_ridge_point": format_property(ridge["hbm_ridge_point"]),
            "vmem_write_ridge_point": format_property(ridge["vmem_write_ridge_point"]),
        }
    else:
        props = {
            "device_type": db.device_type,
            "megacore": format_property(db.megacore),
            "has_cmem": format_property(db.has_cmem),
            "has_merged_vmem": format_property(db.has_merged_vmem),
            "peak_flop_rate": format_property(db.peak_flop_rate),
            "peak_hbm_bw": format_property(db.peak_hbm_bw),
            "peak_cmem_read_bw": format_property(db.peak_cmem_read_bw),
            "peak_cmem_write_bw": format_property(db.peak_cmem_write_bw),
            "peak_vmem_read_bw": format_property(db.peak_vmem_read_bw),
            "peak_vmem_write_bw": format_property(db.peak_vmem_write_bw),
            **{k: format_property(v) for k, v in ridge.items()},
            "time_scale_multiplier": format_property(db.time_scale_multiplier),
        }
    return dict(sorted(props.items()))


def to_datatable(database: rm.RooflineModelDatabase) -> list[dict]:
    """The body of XProf's ``roofline_model`` tool for this database."""
    cols = columns(is_gpu_database(database))
    table = {
        "cols": [{"id": cid, "label": label, "type": kind} for cid, kind, label, _ in cols],
        "p": properties(database),
        "rows": [
            {"c": [{"v": _cell(rec, key, kind)} for _, kind, _, key in cols]}
            for rec in database.roofline_model_record
        ],
    }
    diag = database.diagnostics
    diagnostics = {
        "cols": [
            {"id": "severity", "label": "Severity", "type": "string"},
            {"id": "message", "label": "Message", "type": "string"},
        ],
        "rows": [
            {"c": [{"v": severity}, {"v": message}]}
            for severity, messages in (
                ("INFO", diag.info),
                ("WARNING", diag.warnings),
                ("ERROR", diag.errors),
            )
            for message in messages
        ],
    }
    return [table, diagnostics]


def to_csv(datatable: list[dict]) -> str:
    """XProf's ``data_csv``: the first table, label header, every field quoted."""
    table = datatable[0]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow([c["label"] for c in table["cols"]])
    for row in table["rows"]:
        writer.writerow([str(cell["v"]) for cell in row["c"]])
    return out.getvalue()


def csv_file_name(tag: str, run: str, host: str) -> str:
    """``<tag>_<run>_<host suffix>.csv`` with unsafe characters replaced, as XProf names it."""
    suffix = host.rsplit("-", 1)[-1]
    parts = [re.sub(r"[^A-Za-z0-9_-]", "_", p) for p in (tag, run, suffix) if p]
    return "_".join(parts) + ".csv"
