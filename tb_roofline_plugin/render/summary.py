"""A terminal summary of a roofline: device, program and the ops that take the time."""

from __future__ import annotations

from ..ops.op_stats import OpStats
from ..protos import roofline_model_pb2
from ..roofline.model import build_database
from .export import device_summary


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _record_row(rec: roofline_model_pb2.RooflineModelRecord, label: str) -> list[str]:
    return [
        label,
        rec.hlo_name[:40],
        rec.bound_by,
        f"{rec.total_time_in_us:,.1f}",
        f"{100 * rec.total_time_in_percentage:.1f}",
        f"{rec.measured_flop_rate:,.1f}",
        f"{rec.hbm_bw:,.1f}",
        f"{rec.bottleneck_operational_intensity:.3g}",
        f"{100 * rec.roofline_efficiency:.1f}",
    ]


_HEADER = [
    "step/rank",
    "operation",
    "bound by",
    "time (us)",
    "time %",
    "GFLOP/s",
    "HBM GiB/s",
    "OI (F/B)",
    "roofline %",
]


def summary_text(stats: OpStats, sources: list[str], top: int = 10) -> str:
    database = build_database(stats)
    device = device_summary(stats)
    out = [
        f"profile: {', '.join(sources)}",
        f"device: {device['device_type'] or 'unknown'} ({device['hardware_type']}), "
        f"{device['device_core_count']} cores; peak {device['peak_flop_rate_gflops']:,.0f} "
        f"GFLOP/s per core",
    ]
    for memory in device["memories"]:
        out.append(
            f"  {memory['name']}: {memory['peak_gbps']:,.1f} GB/s, "
            f"ridge point {memory['ridge_point']:.1f} FLOP/byte"
        )
    records = [r for r in database.roofline_model_record if r.include_infeed_outfeed]
    rows = [list(_HEADER)]
    for rec in records:
        if rec.record_type == roofline_model_pb2.ALL and rec.rank == 0:
            rows.append(_record_row(rec, "Total"))
        elif rec.record_type == roofline_model_pb2.AVERAGE_STEP:
            rows.append(_record_row(rec, "Average"))
        elif rec.record_type == roofline_model_pb2.PER_STEP:
            rows.append(_record_row(rec, f"step {rec.step_num}"))
    ops = [r for r in records if r.record_type == roofline_model_pb2.ALL and r.rank > 0][:top]
    rows.extend(_record_row(rec, str(rec.rank)) for rec in ops)
    out.append("")
    out.append(_table(rows) if len(rows) > 1 else "no device ops in this profile")
    diag = database.diagnostics
    for severity, messages in (("INFO", diag.info), ("WARNING", diag.warnings)):
        out.extend(f"{severity}: {m}" for m in messages)
    return "\n".join(out) + "\n"


def demo_summary(path: str) -> str:
    from ..platforms.analysis import analyze_file

    return f"wrote demo profile {path}\n" + summary_text(analyze_file(path), [path])
