"""A terminal summary of a roofline: device, program and the ops that take the time.

It stays readable at any size: a profile with thousands of steps shows its slowest few and
says how many there are, and every message is kept to a few lines.
"""

from __future__ import annotations

import re

from ..ops.op_stats import KERNEL_SHARE_PREFIX, OpStats
from ..ops.selection import TOTAL, select
from ..protos import roofline_model_pb2
from ..roofline.model import roofline_model
from ..wording import counted, numbered, terminal_safe
from .export import (
    NO_CEILING_BOUND,
    above_roof_warning,
    advice,
    device_summary,
    no_ceiling_info,
    no_ceiling_ops,
    selected_ops,
)
from .hardware import hardware_lines, hardware_section
from .layers import layers_table_rows

MAX_STEP_ROWS = 10  # more steps than this: the slowest ones, and a line saying how many
MAX_MESSAGES = 10  # per severity
MAX_MESSAGE_CHARS = 400
LONG_NUMBER_LIST = 8  # a run of more comma-separated numbers than this is summarised


def _table(rows: list[list[str]], left: int = 3) -> str:
    """Columns padded to their widths, the first ``left`` aligned left, the others right."""
    rows = [[terminal_safe(c) for c in row] for row in rows]  # names are shown, not obeyed
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [
            c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def chart_intensity(rec: roofline_model_pb2.RooflineModelRecord) -> float:
    """FLOP/byte where the record sits on a roofline: against its bounding memory, or, with
    no bound (no peaks known), its operational intensity (FLOPs per byte accessed)."""
    return rec.bottleneck_operational_intensity or rec.operational_intensity


def _record_row(
    rec: roofline_model_pb2.RooflineModelRecord,
    label: str,
    peaks_known: bool,
    memory: str = "HBM",
    no_ceiling: str = "",
) -> list[str]:
    """One table row; ``no_ceiling``: the op's dtype, which has no ceiling in the peaks (its
    efficiency is then memory's alone)."""
    bound = memory if rec.bound_by == "HBM" else rec.bound_by  # XProf's label for main memory
    efficiency = rec.roofline_efficiency
    if no_ceiling:
        bound = NO_CEILING_BOUND.format(dtype=no_ceiling)
        efficiency = rec.memory_bw_relative_to_hw_limit
    return [
        label,
        rec.hlo_name[:40],
        bound,
        f"{rec.total_time_in_us:,.1f}",
        f"{100 * rec.total_time_in_percentage:.1f}",
        f"{rec.measured_flop_rate:,.1f}",
        f"{rec.hbm_bw:,.1f}",
        f"{chart_intensity(rec):.3g}",
        f"{100 * efficiency:.1f}" if peaks_known else "-",
    ]


def _header(memory: str) -> list[str]:
    return [
        "step/rank",
        "operation",
        "bound by",
        "time (µs)",
        "time %",
        "GFLOP/s",
        f"{memory} GiB/s",
        "OI (F/B)",
        "roofline %",
    ]


_NUMBER = r"-?\d+(?:\.\d+)?"
_NUMBER_RUN = re.compile(f"{_NUMBER}(?:, {_NUMBER}){{{LONG_NUMBER_LIST},}}")


def readable_message(text: str, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """A message kept short: long runs of numbers become "0, 1, …, 1497 (1,498 in all)",
    and what is still too long is cut with a count of what was left out."""

    def collapse(match: re.Match) -> str:
        items = match.group(0).split(", ")
        return f"{items[0]}, {items[1]}, …, {items[-1]} ({len(items):,} in all)"

    text = _NUMBER_RUN.sub(collapse, text)
    if len(text) > max_chars:
        text = f"{text[:max_chars].rstrip()}… ({len(text) - max_chars:,} more characters)"
    return text


def _messages(severity: str, messages: list[str]) -> list[str]:
    out = [f"{severity}: {terminal_safe(readable_message(m))}" for m in messages[:MAX_MESSAGES]]
    if len(messages) > MAX_MESSAGES:
        more = len(messages) - MAX_MESSAGES
        out.append(f"{severity}: … and {more:,} more (see `tb-roofline export --format json`)")
    return out


def _step_rows(
    steps: list[roofline_model_pb2.RooflineModelRecord], peaks_known: bool, memory: str
) -> tuple[list[list[str]], str]:
    """Every step's Program row, or the slowest MAX_STEP_ROWS in step order and a line
    saying so."""
    chosen = steps
    if len(steps) > MAX_STEP_ROWS:
        slowest = sorted(steps, key=lambda r: -r.total_time_in_us)[:MAX_STEP_ROWS]
        chosen = sorted(slowest, key=lambda r: r.step_num)
    rows = [_record_row(r, f"step {r.step_num}", peaks_known, memory) for r in chosen]
    if len(chosen) == len(steps):
        return rows, ""
    numbers = [r.step_num for r in steps]
    return rows, (
        f"steps: the {len(chosen)} slowest of {numbered(numbers, 'step')} "
        "(every step: `tb-roofline export --format csv`)"
    )


def _device_lines(device: dict) -> list[str]:
    kind = f"{device['device_type'] or 'unknown'} ({device['hardware_type']})"
    unit = device["core_unit"]
    cores = counted(device["device_core_count"], unit)
    if device.get("selected_device") is not None:
        shown = counted(len(device["devices"]), unit)
        cores = f"{unit} {device['selected_device']} only (1 of {shown} with ops)"
    if not device["peaks_known"]:
        return [
            f"device: {kind}, {cores}; no peaks known: no roofs, bound or efficiency; OI is "
            "FLOPs per byte accessed. Give --peaks NAME|FILE (see `tb-roofline calibrate`)",
            f"  {device['main_memory']}: bandwidth unknown",
        ]
    peak = device["peak_flop_rate_gflops"]
    out = [f"device: {kind}, {cores}; peak {peak:,.0f} GFLOP/s per {unit}"]
    for memory in device["memories"]:
        out.append(
            f"  {memory['name']}: {memory['peak_gbps']:,.1f} GB/s, "
            f"ridge point {memory['ridge_point']:.1f} FLOP/byte"
        )
    return out


def summary_text(stats: OpStats, sources: list[str], top: int = 10) -> str:
    model = roofline_model(stats)
    database = model.database()
    device = device_summary(stats)
    known, memory = device["peaks_known"], device["main_memory"]
    out = [f"profile: {', '.join(sources)}", *_device_lines(device)]
    answer = advice(model, stats, select(stats, TOTAL))
    if answer:
        out.extend(["", "where the time goes:", *(f"- {a['text']}" for a in answer)])
    records = [r for r in database.roofline_model_record if r.include_infeed_outfeed]
    rows = [_header(memory)]
    steps = []
    footnote = ""
    for rec in records:
        if rec.record_type == roofline_model_pb2.ALL and rec.rank == 0:
            rows.append(_record_row(rec, "Total", known, memory))
        elif rec.record_type == roofline_model_pb2.AVERAGE_STEP:
            rows.append(_record_row(rec, "Average", known, memory))
        elif rec.record_type == roofline_model_pb2.PER_STEP:
            steps.append(rec)
    if steps:
        step_rows, footnote = _step_rows(steps, known, memory)
        rows.extend(step_rows)
    ops = [r for r in records if r.record_type == roofline_model_pb2.ALL and r.rank > 0][:top]
    total = select(stats, TOTAL)
    missing = no_ceiling_ops(stats, total, selected_ops(model, total)) if len(model.records) else {}
    for rec in ops:
        no_ceiling = missing.get((rec.hlo_module_id, rec.hlo_name), "")
        rows.append(_record_row(rec, str(rec.rank), known, memory, no_ceiling))
    out = [terminal_safe(line) for line in out]
    out.append("")
    if len(rows) > 1:
        out.append(
            f"time (µs): {device['time_meaning']}, not wall time (a step's wall time is its "
            "duration_us in `tb-roofline export --format json`)"
        )
        out.append(_table(rows))
    else:
        out.append("no device ops in this profile")
    if footnote:
        out.append(footnote)
    out.extend(terminal_safe(n) for n in stats.notes if n.startswith(KERNEL_SHARE_PREFIX))
    hardware = hardware_lines(hardware_section(stats, model), top)
    if hardware:
        out.extend(["", *hardware])
    diag = database.diagnostics
    warnings = list(diag.warnings)
    info = list(diag.info)
    above_roof = above_roof_warning(model, total, stats)
    if above_roof is not None:
        warnings.append(above_roof)
    ceiling_note = no_ceiling_info(model, total, stats)
    if ceiling_note is not None:
        info.append(ceiling_note)
    if stats.hardware is not None:
        info.extend(stats.hardware.notes)
    for severity, messages in (("INFO", info), ("WARNING", warnings)):
        out.extend(_messages(severity, list(messages)))
    return "\n".join(out) + "\n"


def layer_summary_text(
    stats: OpStats, sources: list[str], step: str | int = TOTAL, depth: int | None = 2
) -> str:
    """The layers of a selection (``render.layers``) down to ``depth``: each layer's self
    time (forward / backward), its roofline point, bound and efficiency."""
    device = device_summary(stats)
    memory = device["main_memory"]
    header, rows, doc = layers_table_rows(stats, step, depth, memory)
    out = [f"profile: {', '.join(sources)}", *_device_lines(device)]
    out = [terminal_safe(line) for line in out]
    deepest = doc["max_depth"]
    shown = "every depth" if depth is None else f"depth {min(depth, deepest)} of {deepest}"
    out.append("")
    out.append(f"layers of {_selection_words(doc['step'])} ({shown}; time: self time of the ops)")
    out.append(_table([header, *rows], left=2))
    out.extend(_messages("INFO", doc["notes"]))
    return "\n".join(out) + "\n"


def _selection_words(label: str) -> str:
    return {"total": "the whole profile", "average": "the average step"}.get(label, f"step {label}")


def demo_summary(path: str) -> str:
    from ..platforms.analysis import analyze_file

    return f"wrote demo profile {path}\n" + summary_text(analyze_file(path), [path])
