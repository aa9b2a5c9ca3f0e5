"""Converted profiles on disk: OpStats as a numpy ``.npz`` (no pickle), keyed by file identity.

Used by the Dask export and ``--roofline_cache_dir``: a pod-scale run converted once
elsewhere opens instantly. Files are written atomically (temporary name, then rename)
and read with ``allow_pickle=False``, so a cache file can never run code; anything
unreadable is treated as absent.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import socket
import tempfile
import time
from dataclasses import asdict, fields
from typing import Any

import numpy as np

from ..files import read_regular
from ..ops.hardware import HardwareCounts
from ..ops.op_metrics import STRING_COLUMNS, OpMetricsDb
from ..ops.op_stats import Diagnostics, LayerSplit, OpStats, StepInfo, shared_table
from ..ops.step_ops import StepOps
from ..peaks.perf_env import PerfEnv, RunEnvironment
from ..platforms.analysis import process_alive

_LOG = logging.getLogger(__name__)
# 7: XLA:CPU self times are busy shares; the host's devices; 8: hardware counters (Total (HW));
# 9: ops' shapes, HLO text, framework op (issue 21), op_path, PyTorch's layer split (issue 23)
FORMAT = "tb-roofline-stats/9"


def cache_key(path: str, size: int, mtime: float, peaks: str | None = None) -> str:
    """A file name for the converted result of one profile file as it is now."""
    text = json.dumps([FORMAT, os.fspath(path), int(size), float(mtime), peaks or ""])
    return hashlib.sha256(text.encode()).hexdigest()


def _db_arrays(prefix: str, db: OpMetricsDb) -> dict[str, Any]:
    out = {}
    for f in fields(db):
        if f.name == "extra":
            continue
        value = getattr(db, f.name)
        if f.name in STRING_COLUMNS:
            value = np.asarray([str(v) for v in value], dtype=str)
        out[f"{prefix}.{f.name}"] = np.asarray(value)
    return out


def _db_from(prefix: str, data) -> OpMetricsDb:
    cols: dict[str, Any] = {}
    for f in fields(OpMetricsDb):
        if f.name == "extra":
            continue
        value = data[f"{prefix}.{f.name}"]
        if f.name in STRING_COLUMNS:
            value = value.astype(object)
        elif f.name == "total_time_ps":
            value = int(value)
        cols[f.name] = value
    _same_lengths(prefix, [v for k, v in cols.items() if k != "total_time_ps"])
    return OpMetricsDb(**cols)


def _same_lengths(what: str, arrays: list, length: int | None = None) -> None:
    """ValueError unless every array has one entry per row (``length`` when given): a
    damaged or hand-made cache file is refused, not served as wrong data."""
    lengths = {np.shape(a)[0] if np.ndim(a) else -1 for a in arrays}
    if length is not None:
        lengths.add(length)
    if len(lengths) > 1 or -1 in lengths:
        raise ValueError(f"{what}: arrays of inconsistent lengths {sorted(lengths)}")


def _steps_arrays(prefix: str, steps: list[StepInfo]) -> dict[str, Any]:
    """The steps' ops: their shared table's arrays, or each step's db."""
    arrays: dict[str, Any] = {}
    table, index = shared_table(steps)
    if table is not None:
        arrays.update({f"{prefix}table.values.{k}": np.asarray(v) for k, v in table.values.items()})
        for key, value in table.static.items():
            value = np.asarray([str(v) for v in value], str) if value.dtype == object else value
            arrays[f"{prefix}table.static.{key}"] = value
        arrays.update({f"{prefix}table.offsets": table.offsets, f"{prefix}table.op": table.op})
        arrays.update({f"{prefix}table.total": table.total_time_ps, f"{prefix}table.index": index})
    else:
        for i, step in enumerate(steps):
            arrays.update(_db_arrays(f"{prefix}step{i}", step.db))
    return arrays


SPLIT = "layers."  # the prefix of OpStats.layer_split's arrays


def dumps(stats: OpStats) -> bytes:
    arrays = _db_arrays("all", stats.all_db)
    if stats.unattributed is not None:
        arrays.update(_db_arrays("unattributed", stats.unattributed))
    arrays.update(_steps_arrays("", stats.steps))
    split = stats.layer_split
    if split is not None:
        arrays.update(_db_arrays(f"{SPLIT}all", split.all_db))
        arrays.update(_steps_arrays(SPLIT, split.steps))
    hardware = stats.hardware
    if hardware is not None:
        arrays.update(_db_arrays("hw", hardware.db))
        arrays["hw.kernels"] = np.asarray(hardware.kernels, np.int64)
        arrays.update({f"hw.values.{k}": np.asarray(v) for k, v in hardware.values.items()})
    meta = {
        "format": FORMAT,
        "hosts": stats.hosts,
        "run_env": asdict(stats.run_env),
        "perf_env": asdict(stats.perf_env),
        "diagnostics": asdict(stats.diagnostics),
        "has_step_markers": bool(stats.has_step_markers),
        "notes": stats.notes,
        "program_names": {str(k): v for k, v in stats.program_names.items()},
        "steps": [[int(s.step_num), bool(s.complete), int(s.duration_ps)] for s in stats.steps],
        "unattributed": stats.unattributed is not None,
        "devices": [int(d) for d in stats.devices],
        "device": stats.device,
        "hardware": None
        if hardware is None
        else {
            "values": list(hardware.values),
            "measured": hardware.measured,
            "ranges": hardware.ranges,
            "launches": hardware.launches,
            "joined": hardware.joined,
            "counters": hardware.counters,
            "source": hardware.source,
            "notes": hardware.notes,
        },
        "layer_split": split is not None,
        "layer_split_steps": split is not None and bool(split.steps),
    }
    arrays["meta"] = np.asarray(json.dumps(meta))
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def loads(data: bytes) -> OpStats:
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        meta = json.loads(str(npz["meta"]))
        if meta.get("format") != FORMAT:
            raise ValueError(f"unknown stats format {meta.get('format')!r}")
        steps = _steps_from("", npz, meta["steps"])
        split = None
        if meta.get("layer_split"):
            split_steps = meta["steps"] if meta.get("layer_split_steps") else []
            split = LayerSplit(_db_from(f"{SPLIT}all", npz), _steps_from(SPLIT, npz, split_steps))
        return OpStats(
            hosts=list(meta["hosts"]),
            run_env=RunEnvironment(**meta["run_env"]),
            perf_env=PerfEnv(**meta["perf_env"]),
            all_db=_db_from("all", npz),
            steps=steps,
            diagnostics=Diagnostics(**meta["diagnostics"]),
            has_step_markers=bool(meta["has_step_markers"]),
            unattributed=_db_from("unattributed", npz) if meta["unattributed"] else None,
            notes=list(meta["notes"]),
            program_names={int(k): v for k, v in meta["program_names"].items()},
            devices=[int(d) for d in meta["devices"]],
            device=None if meta["device"] is None else int(meta["device"]),
            hardware=_hardware_from(meta.get("hardware"), npz),
            layer_split=split,
        )


def _steps_from(prefix: str, npz, meta_steps: list) -> list[StepInfo]:
    """The steps ``_steps_arrays`` wrote, numbered, complete and timed as ``meta_steps``."""
    if f"{prefix}table.offsets" not in npz:
        return [
            StepInfo(int(num), bool(done), _db_from(f"{prefix}step{i}", npz), duration_ps=int(dur))
            for i, (num, done, dur) in enumerate(meta_steps)
        ]
    static = {
        name[len(f"{prefix}table.static.") :]: npz[name]
        for name in npz.files
        if name.startswith(f"{prefix}table.static.")
    }
    table = StepOps(
        values={
            name[len(f"{prefix}table.values.") :]: npz[name]
            for name in npz.files
            if name.startswith(f"{prefix}table.values.")
        },
        static={k: v.astype(object) if v.dtype.kind == "U" else v for k, v in static.items()},
        offsets=npz[f"{prefix}table.offsets"],
        op=npz[f"{prefix}table.op"],
        total_time_ps=npz[f"{prefix}table.total"],
    )
    index = npz[f"{prefix}table.index"]
    _check_table(table, index, len(meta_steps))
    return [
        StepInfo(int(num), bool(done), duration_ps=int(dur), table=table, index=int(i))
        for i, (num, done, dur) in zip(index.tolist(), meta_steps)
    ]


def _hardware_from(meta: dict | None, npz) -> HardwareCounts | None:
    if meta is None:
        return None
    db = _db_from("hw", npz)
    values = {str(k): npz[f"hw.values.{k}"] for k in meta["values"]}
    _same_lengths("hardware rows", [npz["hw.kernels"], *values.values()], len(db))
    return HardwareCounts(
        db=db,
        kernels=npz["hw.kernels"],
        values=values,
        measured={str(k): bool(v) for k, v in meta["measured"].items()},
        ranges=int(meta["ranges"]),
        launches=int(meta["launches"]),
        joined=int(meta["joined"]),
        counters=[str(c) for c in meta["counters"]],
        source=str(meta["source"]),
        notes=[str(n) for n in meta["notes"]],
    )


def _check_table(table: StepOps, index, steps: int) -> None:
    """The step table's arrays agree: rows (values, op), ops (static), steps (offsets)."""
    _same_lengths("table rows", [*table.values.values(), table.op])
    if table.static:
        _same_lengths("table ops", list(table.static.values()))
    _same_lengths("table steps", [table.total_time_ps], len(table.offsets) - 1)
    _same_lengths("steps", [index], steps)
    offsets, rows = np.asarray(table.offsets), len(table.op)
    ops = len(next(iter(table.static.values()))) if table.static else 0
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != rows or np.any(np.diff(offsets) < 0):
        raise ValueError("table offsets do not cover the rows")
    if rows and (table.op.min() < 0 or table.op.max() >= ops):
        raise ValueError("table rows point past the ops")
    if len(index) and (np.min(index) < 0 or np.max(index) >= len(table)):
        raise ValueError("step index past the table")


def save(cache_dir: str, key: str, stats: OpStats) -> str:
    """Writes ``<cache_dir>/<key>.npz`` atomically; returns its path."""
    os.makedirs(cache_dir, exist_ok=True)
    target = os.path.join(cache_dir, f"{key}.npz")
    prefix = f"{TEMP_PREFIX}{_host_tag()}-{os.getpid()}-"
    handle, temporary = tempfile.mkstemp(dir=cache_dir, prefix=prefix, suffix=".npz")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(dumps(stats))
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return target


TEMP_PREFIX = ".tmp-"  # + host-pid-random.npz: a file being written, renamed when complete
TEMP_MAX_AGE_S = 24 * 3600  # a temporary of another machine is left alone for this long


def _host_tag() -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:64] or "host"


def remove_temporaries(cache_dir: str, now_s: float | None = None) -> list[str]:
    """Removes the temporaries an export killed mid-write left in ``cache_dir`` (those of
    a process of this machine that is gone, or older than TEMP_MAX_AGE_S); returns them.
    Those of a live export, here or on another machine, stay."""
    now_s = time.time() if now_s is None else now_s
    removed: list[str] = []
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(TEMP_PREFIX) and name.endswith(".npz")):
            continue
        path = os.path.join(cache_dir, name)
        match = re.match(rf"{re.escape(TEMP_PREFIX)}(.+)-([0-9]+)-", name)
        try:
            old = now_s - os.lstat(path).st_mtime > TEMP_MAX_AGE_S
            mine = match is not None and match.group(1) == _host_tag()
            if old or match is None or (mine and not process_alive(int(match.group(2)))):
                os.unlink(path)
                removed.append(path)
        except OSError:
            continue
    return removed


def load(cache_dir: str, key: str) -> OpStats | None:
    """The cached OpStats, or None when absent or damaged (truncated, not a zip, arrays of
    inconsistent lengths, a FIFO...): a damaged one is told in a WARNING, and converted again."""
    path = os.path.join(cache_dir, f"{key}.npz")
    if not os.path.lexists(path):
        return None
    try:
        return loads(read_regular(path))
    except Exception as exc:  # BadZipFile, EOFError, ValueError...: any damage, never a 500
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        _LOG.warning("tb-roofline: %s: damaged cache file, converted again (%s)", path, reason)
        return None
