"""Comparing two selections (run, host or all hosts, step): what changed, op by op.

Each side is an OpStats and a Selection. Ops are aligned by (module name, op name):
program ids change between runs, module names do not (ops of same-named modules are
summed). A whole-profile selection is compared as its Average step (the mean complete
step, ``selection.per_step_selection``), so two runs with different step counts compare per
step and Compare's "per step" is the figure the Average step shows. Times are device time
(summed over the cores), and each side's ``time`` says so in words; ``warnings`` say when
the two sides cannot be compared as they are (no program or op in common, other devices,
per step against the whole profile). Main memory is named as in the summary, json and tab
(``main_memory``: DRAM on a CPU, the peaks' kind where known); the ``hbm_bw_*`` keys keep
XProf's field name.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ops.op_metrics import IDLE_NAME, combine
from ..ops.op_stats import OpStats
from ..ops.selection import Selection
from ..peaks.devices import device_time_words, main_memory
from ..protos import roofline_model_pb2
from ..wording import counted, spreadsheet_safe, terminal_safe
from .formulas import DatabasePeaks, record_metrics
from .records import program_db


@dataclass
class Side:
    label: str  # e.g. "train/r1 host0 step 3"
    stats: OpStats
    selection: Selection


_METRICS = (
    ("time_us", "total_time_in_us"),
    ("flop_rate", "measured_flop_rate"),
    ("hbm_bw", "hbm_bw"),
    ("efficiency", "roofline_efficiency"),
)


def _side_rows(side: Side) -> tuple[dict, dict[tuple[str, str], dict]]:
    """(Program metrics, {(module, op): op metrics}) of one side, times per step."""
    stats, selection = side.stats, side.selection
    peaks = DatabasePeaks.from_env(stats.perf_env, stats.run_env.hardware_type)
    memory = side_memory(side)

    def bound(label: str) -> str:  # XProf's "HBM" is the main memory, whatever its kind
        return memory if label == "HBM" else label

    cores = stats.run_env.device_core_count
    db = selection.db
    keep = (db.occurrences > 0) & (db.name != IDLE_NAME)
    ops = db.take(np.nonzero(keep)[0])
    names = stats.program_names
    modules = np.array([names.get(int(p), str(int(p))) for p in ops.program_id], object)
    ops.program_id = np.zeros(len(ops), np.uint64)  # merge same-named modules
    renamed = ops.name.copy()
    for i in range(len(ops)):
        renamed[i] = f"{modules[i]}\0{ops.name[i]}"
    ops.name = renamed
    ops = combine([ops]) if len(ops) else ops
    metrics = record_metrics(ops, db.total_time_ps, peaks, cores)
    rows = {}
    for i in range(len(ops)):
        module, name = str(ops.name[i]).split("\0", 1)
        row: dict[str, Any] = {key: float(metrics[field][i]) for key, field in _METRICS}
        row["bound_by"] = bound(str(metrics["bound_by"][i]))
        row["category"] = str(ops.category[i])
        row["wasted_us"] = row["time_us"] * max(1.0 - min(row["efficiency"], 1.0), 0.0)
        rows[(module, name)] = row
    prog = program_db([db], True)
    pm = record_metrics(prog, prog.time_ps, peaks, cores)
    program: dict[str, Any] = {key: float(pm[field][0]) for key, field in _METRICS}
    program["bound_by"] = bound(str(pm["bound_by"][0]))
    return program, rows


def per_step(side: Side) -> bool:
    """True when the side's times are of one step (a step, or the mean complete step)."""
    selection = side.selection
    return bool(selection.averaged_steps) or selection.record_type == roofline_model_pb2.PER_STEP


def time_words(side: Side) -> str:
    """What the side's times are: "device time summed over 8 TensorCores, per step (mean of 4
    complete steps)", "device time, of step 3", "device time, of the whole profile"."""
    env = side.stats.run_env
    selection = side.selection
    if selection.averaged_steps:
        what = f"per step (mean of {counted(selection.averaged_steps, 'complete step')})"
    elif selection.record_type == roofline_model_pb2.PER_STEP:
        what = f"of step {selection.step_num}"
    else:
        what = "of the whole profile (no complete steps)"
    return f"{device_time_words(env.hardware_type, env.device_core_count)}, {what}"


def _modules(side: Side) -> set[str]:
    """The module names of the programs with ops in the side's selection."""
    db = side.selection.db
    ran = np.unique(db.program_id[(db.occurrences > 0) & (db.name != IDLE_NAME)])
    names = side.stats.program_names
    return {names.get(int(p), str(int(p))) for p in ran}


def _device(side: Side) -> str:
    env = side.stats.run_env
    return env.device_type or env.hardware_type or "an unknown device"


def _listed(names: set[str], at_most: int = 3) -> str:
    shown = sorted(names)[:at_most]
    return ", ".join(shown) + (
        f" and {len(names) - at_most:,} more" if len(names) > at_most else ""
    )


def compare_warnings(a: Side, b: Side, matched: int) -> list[str]:
    """Why A and B may not compare as they are: no program or op in common, other devices or
    core counts, or one side per step and the other the whole profile."""
    out = []
    modules_a, modules_b = _modules(a), _modules(b)
    if modules_a and modules_b and not modules_a & modules_b:
        out.append(
            f"A and B share no program (A: {_listed(modules_a)}; B: {_listed(modules_b)}): "
            "no op can be matched, so every op is only in A or only in B. Compare runs of "
            "the same program."
        )
    elif modules_a and modules_b and not matched:
        out.append("A and B share no op: every op is only in A or only in B.")
    env_a, env_b = a.stats.run_env, b.stats.run_env
    if _device(a) != _device(b):
        out.append(
            f"A ran on {_device(a)} and B on {_device(b)}: each side is judged against its "
            "own device's peaks, so efficiencies compare but times are of other hardware."
        )
    elif env_a.device_core_count != env_b.device_core_count:
        out.append(
            f"A's times are {device_time_words(env_a.hardware_type, env_a.device_core_count)}"
            f" and B's {device_time_words(env_b.hardware_type, env_b.device_core_count)}: "
            "compare them per core."
        )
    if per_step(a) != per_step(b):
        which, other = ("A", "B") if per_step(a) else ("B", "A")
        out.append(
            f"{which}'s times are per step and {other}'s of the whole profile ({other} has no "
            "complete steps): the times do not compare."
        )
    return out


def side_memory(side: Side) -> str:
    """The name of a side's main memory (DRAM, HBM3, GDDR6, ...)."""
    return main_memory(side.stats.run_env.hardware_type, side.stats.perf_env.memory)


def _delta(a: float | None, b: float | None) -> tuple[float | None, float | None]:
    if a is None or b is None:
        return None, None
    return b - a, (100.0 * (b - a) / a if abs(a) > 1e-10 else None)


def compare(a: Side, b: Side) -> dict:
    """The program-level change and the aligned op table, sorted by |time delta|."""
    program_a, rows_a = _side_rows(a)
    program_b, rows_b = _side_rows(b)
    program = {"bound_by_a": program_a["bound_by"], "bound_by_b": program_b["bound_by"]}
    for metric in ("time_us", "flop_rate", "hbm_bw", "efficiency"):
        delta, pct = _delta(program_a[metric], program_b[metric])
        program.update({f"{metric}_a": program_a[metric], f"{metric}_b": program_b[metric]})
        program.update({f"{metric}_delta": delta, f"{metric}_delta_pct": pct})
    ops = []
    for key in list(rows_a) + [k for k in rows_b if k not in rows_a]:
        ra, rb = rows_a.get(key), rows_b.get(key)
        either = ra if ra is not None else rows_b[key]
        row = {
            "program": key[0],
            "operation": key[1],
            "category": either["category"],
            "only_in": "A" if rb is None else "B" if ra is None else "",
            "bound_by_a": ra["bound_by"] if ra else None,
            "bound_by_b": rb["bound_by"] if rb else None,
            "wasted_us_a": ra["wasted_us"] if ra else None,
            "wasted_us_b": rb["wasted_us"] if rb else None,
        }
        for metric in ("time_us", "flop_rate", "hbm_bw", "efficiency"):
            va = ra[metric] if ra else None
            vb = rb[metric] if rb else None
            if metric == "time_us":  # an op missing on one side took no time there
                va, vb = va or 0.0, vb or 0.0
            delta, pct = _delta(va, vb)
            row.update({f"{metric}_a": va, f"{metric}_b": vb, f"{metric}_delta": delta})
            if metric == "time_us":
                row["time_us_delta_pct"] = pct
        ops.append(row)
    ops.sort(key=lambda r: (-abs(r["time_us_delta"]), r["program"], r["operation"]))
    memory = {"a": side_memory(a), "b": side_memory(b)}
    matched = sum(1 for op in ops if not op["only_in"])
    return {
        "a": a.label,
        "b": b.label,
        "memory": memory,
        "time": {"a": time_words(a), "b": time_words(b)},
        "per_step": {"a": per_step(a), "b": per_step(b)},
        "warnings": compare_warnings(a, b, matched),
        "program": program,
        "ops": ops,
    }


def slower_by_pct(result: dict) -> float:
    """How much slower B's program time per step is than A's, in percent (negative: faster)."""
    delta = result["program"]["time_us_delta_pct"]
    return 0.0 if delta is None else delta


def _fmt(value, spec: str = ",.1f") -> str:
    return "-" if value is None else format(value, spec)


def compare_table(result: dict, top: int = 20) -> str:
    """A terminal table: the program change, then the ops that changed most."""
    p = result["program"]
    memory = result.get("memory", {"a": "HBM", "b": "HBM"})
    name = memory["a"] if memory["a"] == memory["b"] else f"{memory['a']} -> {memory['b']}"
    time = result.get("time", {"a": "", "b": ""})
    change = f"({_fmt(p['time_us_delta_pct'], '+.1f')}%)"
    per_step = result.get("per_step", {})
    head = "Program time per step" if per_step.get("a") and per_step.get("b") else "Program time"
    if time["a"] == time["b"]:
        what = time["a"].split(", ", 1)  # [device time words, "per step (...)"]
        program_lines = [
            f"{head} ({what[0]}): {_fmt(p['time_us_a'])} -> {_fmt(p['time_us_b'])} µs {change}"
        ]
    else:
        program_lines = [
            f"{head} {change}:",
            f"  A: {_fmt(p['time_us_a'])} µs, {time['a']}",
            f"  B: {_fmt(p['time_us_b'])} µs, {time['b']}",
        ]
    lines = [
        f"A: {result['a']}",
        f"B: {result['b']}",
        *(f"WARNING: {w}" for w in result.get("warnings", [])),
        "",
        *program_lines,
        f"FLOP rate: {_fmt(p['flop_rate_a'])} -> {_fmt(p['flop_rate_b'])} GFLOP/s; "
        f"{name}: {_fmt(p['hbm_bw_a'])} -> {_fmt(p['hbm_bw_b'])} GiB/s",
        f"Roofline efficiency: {_fmt(100 * p['efficiency_a'])}% -> "
        f"{_fmt(100 * p['efficiency_b'])}%; bound by {p['bound_by_a']} -> {p['bound_by_b']}",
        "",
    ]
    header = ["operation", "program", "time A µs", "time B µs", "delta µs", "delta %"]
    header += ["eff A %", "eff B %", "bound by", "note"]
    rows = [header]
    for op in result["ops"][:top]:
        bound = op["bound_by_a"] or "-"
        if op["bound_by_b"] != op["bound_by_a"]:
            bound = f"{op['bound_by_a'] or '-'} -> {op['bound_by_b'] or '-'}"
        rows.append(
            [
                op["operation"][:36],
                op["program"][:24],
                _fmt(op["time_us_a"]),
                _fmt(op["time_us_b"]),
                _fmt(op["time_us_delta"], "+,.1f"),
                _fmt(op["time_us_delta_pct"], "+.1f"),
                _fmt(None if op["efficiency_a"] is None else 100 * op["efficiency_a"]),
                _fmt(None if op["efficiency_b"] is None else 100 * op["efficiency_b"]),
                bound,
                f"only in {op['only_in']}" if op["only_in"] else "",
            ]
        )
    rows = [[terminal_safe(c) for c in row] for row in rows]  # names are shown, not obeyed
    lines = [terminal_safe(line) for line in lines]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for n, row in enumerate(rows):
        cells = [
            c.ljust(w) if i < 2 or i > 7 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


CSV_FIELDS = (
    "program",
    "operation",
    "category",
    "only_in",
    "time_us_a",
    "time_us_b",
    "time_us_delta",
    "time_us_delta_pct",
    "flop_rate_a",
    "flop_rate_b",
    "flop_rate_delta",
    "hbm_bw_a",
    "hbm_bw_b",
    "hbm_bw_delta",
    "efficiency_a",
    "efficiency_b",
    "efficiency_delta",
    "bound_by_a",
    "bound_by_b",
    "wasted_us_a",
    "wasted_us_b",
)


def compare_csv(result: dict) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for op in result["ops"]:
        writer.writerow(
            {k: "" if op.get(k) is None else spreadsheet_safe(op[k]) for k in CSV_FIELDS}
        )
    return out.getvalue()
