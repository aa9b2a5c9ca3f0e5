"""Total (HW) beside the model: what hardware counters measured per op against what the cost
model says, as our json's ``hardware_counters`` and the summary's table.

The measured numbers are the ALL_HW records'; the modelled ones the ALL records' (include
infeed/outfeed) of the same op. A quantity the counters did not measure is null, never the
model's; a ratio is measured / modelled, null where the model has nothing to compare.
"""

from __future__ import annotations

import numpy as np

from ..ops.hardware import DRAM_BYTES, FLOPS, TENSOR_FLOPS
from ..ops.op_stats import OpStats
from ..protos import roofline_model_pb2
from ..roofline.model import RooflineModel
from ..roofline.records import RecordSet
from ..wording import terminal_safe

STEP = "Total (HW)"  # the datatable's step string of ALL_HW records
NO_MODEL = (
    "no modelled FLOPs to compare: the model gives these ops none (no recorded shapes, or no "
    "cost model; see the json's notes)"
)
NO_TIMES = "no device times in this profile: measured FLOPs and bytes per op, no rate (GFLOP/s)"


def _records(model: RooflineModel, record_type: int) -> RecordSet:
    """The include-infeed/outfeed records of one record type (Program first)."""
    records = model.records
    if not len(records):
        return records
    wanted = (records["record_type"] == record_type) & records["include_infeed_outfeed"]
    return records.take(np.flatnonzero(wanted))


def _ratio(measured: float | None, modelled: float) -> float | None:
    if measured is None or not modelled > 0:
        return None
    return measured / modelled


def _by_measured(row: dict) -> tuple[float, float, str]:
    """Most measured FLOPs first, then most measured bytes, then by name."""
    return (-(row["flops"] or 0.0), -(row["bytes_accessed"] or 0), row["hlo_name"])


def hardware_section(stats: OpStats, model: RooflineModel) -> dict | None:
    """The json's ``hardware_counters``: what was measured, the notes, and the Program and
    each op (most measured FLOPs first) measured beside modelled; None without counters."""
    hardware = stats.hardware
    if hardware is None:
        return None
    measured = hardware.measured
    has_flops = measured.get(FLOPS, False) or measured.get(TENSOR_FLOPS, False)
    has_bytes = measured.get(DRAM_BYTES, False)
    timed = hardware.db.total_time_ps > 0
    hw, modelled = (
        _records(model, roofline_model_pb2.ALL_HW),
        _records(model, roofline_model_pb2.ALL),
    )
    model_of: dict[tuple[int, str], tuple[float, int]] = {}
    program_model = (0.0, 0)
    for module, name, rank, flops, num_bytes in zip(
        modelled["hlo_module_id"].tolist(),
        modelled["hlo_name"].tolist(),
        modelled["rank"].tolist(),
        modelled["flops_v2"].tolist(),
        modelled["bytes_accessed"].tolist(),
    ):
        if rank == 0:
            program_model = (flops, int(num_bytes))
        else:
            model_of[(int(module), str(name))] = (flops, int(num_bytes))
    slot = {
        key: i
        for i, key in enumerate(zip(hardware.db.program_id.tolist(), hardware.db.name.tolist()))
    }
    rows: list[dict] = []
    program = None
    for i in range(len(hw)):
        module, name = int(hw["hlo_module_id"][i]), str(hw["hlo_name"][i])
        is_program = int(hw["rank"][i]) == 0
        model_flops, model_bytes = (
            program_model if is_program else model_of.get((module, name), (0.0, 0))
        )
        flops = float(hw["flops_v2"][i]) if has_flops else None
        num_bytes = int(hw["bytes_accessed"][i]) if has_bytes else None
        row = {
            "hlo_module_id": str(module),
            "hlo_name": name,
            "hlo_category": str(hw["hlo_category"][i]),
            "kernels": 0,
            "flops": flops,
            "modelled_flops": model_flops,
            "flops_ratio": _ratio(flops, model_flops),
            "bytes_accessed": num_bytes,
            "modelled_bytes": model_bytes,
            "bytes_ratio": _ratio(num_bytes, model_bytes),
            "operational_intensity": float(hw["operational_intensity"][i])
            if has_flops and has_bytes and num_bytes
            else None,
            "modelled_operational_intensity": model_flops / model_bytes if model_bytes else None,
            "time_us": float(hw["total_time_in_us"][i]) if timed else None,
            "measured_flop_rate": float(hw["measured_flop_rate"][i])
            if timed and has_flops
            else None,
            "hbm_bw": float(hw["hbm_bw"][i]) if timed and has_bytes else None,
            "values": {},
        }
        if is_program:
            row["kernels"] = int(hardware.kernels.sum())
            row["values"] = {k: float(v.sum()) for k, v in hardware.values.items()}
            program = row
        else:
            at = slot.get((module, name))
            if at is not None:
                row["kernels"] = int(hardware.kernels[at])
                row["values"] = {k: float(v[at]) for k, v in hardware.values.items()}
            rows.append(row)
    rows.sort(key=_by_measured)
    return {
        "step": STEP,
        "source": hardware.source,
        "ranges": hardware.ranges,
        "kernel_launches": hardware.launches,
        "joined": hardware.joined,
        "counters": hardware.counters,
        "measured": dict(measured),
        "times_known": timed,
        "notes": hardware.notes,
        "program": program,
        "ops": rows,
    }


_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def amount(value: float | None, unit: str) -> str:
    """A count with an SI prefix (``49.1 GFLOP``, ``53.2 kB``); ``-`` for none."""
    if value is None:
        return "-"
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:,.3g} {prefix}{unit}"
    return f"{value:,.3g} {unit}"


def _times(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}x" if value >= 0.01 else f"{value:.1e}x"


def hardware_lines(section: dict | None, top: int = 10) -> list[str]:
    """The summary's Total (HW) table: the Program and the ``top`` ops with the most
    measured FLOPs, measured beside modelled with their ratio."""
    if section is None:
        return []
    measured = section["measured"]
    with_bytes = measured.get(DRAM_BYTES, False)
    timed = section["times_known"]
    head = ["op", "kernels", "measured FLOPs", "modelled FLOPs", "measured/model"]
    if with_bytes:
        head += ["measured bytes", "modelled bytes", "measured OI"]
    if timed:
        head += ["time (µs)", "measured GFLOP/s"]
    rows = [head]
    shown = [r for r in [section["program"]] if r is not None] + section["ops"][:top]
    for r in shown:
        cells = [
            r["hlo_name"][:40],
            f"{r['kernels']:,}",
            amount(r["flops"], "FLOP"),
            amount(r["modelled_flops"], "FLOP") if r["modelled_flops"] else "-",
            _times(r["flops_ratio"]),
        ]
        if with_bytes:
            oi = r["operational_intensity"]
            cells += [
                amount(r["bytes_accessed"], "B"),
                amount(r["modelled_bytes"], "B") if r["modelled_bytes"] else "-",
                "-" if oi is None else f"{oi:.3g}",
            ]
        if timed:
            rate = r["measured_flop_rate"]
            cells += [f"{r['time_us']:,.1f}", "-" if rate is None else f"{rate:,.1f}"]
        rows.append(cells)
    widths = [max(len(terminal_safe(row[i])) for row in rows) for i in range(len(head))]
    lines = [
        f"{STEP}: hardware counters ({section['joined']:,} of {section['ranges']:,} kernels "
        "counted) against the model" + ("" if timed else f"; {NO_TIMES}") + ":"
    ]
    for n, row in enumerate(rows):
        cells = [
            terminal_safe(c).ljust(w) if i == 0 else terminal_safe(c).rjust(w)
            for i, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    if section["program"] is not None and not section["program"]["modelled_flops"]:
        lines.append(NO_MODEL)
    if len(section["ops"]) > top:
        lines.append(
            f"({len(section['ops']) - top:,} more ops: `tb-roofline export --format json`)"
        )
    return lines
