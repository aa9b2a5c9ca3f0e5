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
import os
import tempfile
from dataclasses import asdict, fields
from typing import Any

import numpy as np

from ..ops.op_metrics import OpMetricsDb
from ..ops.op_stats import Diagnostics, OpStats, StepInfo, shared_table
from ..ops.step_ops import StepOps
from ..peaks.perf_env import PerfEnv, RunEnvironment

FORMAT = "tb-roofline-stats/5"  # 5: op dtypes named fp32/bf16 (not f32), PerfEnv.listed_dtypes_only
_OBJECT_COLUMNS = ("name", "category", "source_file", "source_stack", "dtype")


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
        if f.name in _OBJECT_COLUMNS:
            value = np.asarray([str(v) for v in value], dtype=str)
        out[f"{prefix}.{f.name}"] = np.asarray(value)
    return out


def _db_from(prefix: str, data) -> OpMetricsDb:
    cols: dict[str, Any] = {}
    for f in fields(OpMetricsDb):
        if f.name == "extra":
            continue
        value = data[f"{prefix}.{f.name}"]
        if f.name in _OBJECT_COLUMNS:
            value = value.astype(object)
        elif f.name == "total_time_ps":
            value = int(value)
        cols[f.name] = value
    return OpMetricsDb(**cols)


def dumps(stats: OpStats) -> bytes:
    arrays = _db_arrays("all", stats.all_db)
    if stats.unattributed is not None:
        arrays.update(_db_arrays("unattributed", stats.unattributed))
    table, index = shared_table(stats.steps)
    if table is not None:
        arrays.update({f"table.values.{k}": np.asarray(v) for k, v in table.values.items()})
        for key, value in table.static.items():
            value = np.asarray([str(v) for v in value], str) if value.dtype == object else value
            arrays[f"table.static.{key}"] = value
        arrays.update({"table.offsets": table.offsets, "table.op": table.op})
        arrays.update({"table.total": table.total_time_ps, "table.index": index})
    else:
        for i, step in enumerate(stats.steps):
            arrays.update(_db_arrays(f"step{i}", step.db))
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
        if "table.offsets" in npz:
            static = {
                name[len("table.static.") :]: npz[name] for name in npz.files
                if name.startswith("table.static.")
            }  # fmt: skip
            table = StepOps(
                values={
                    name[len("table.values.") :]: npz[name]
                    for name in npz.files
                    if name.startswith("table.values.")
                },
                static={
                    k: v.astype(object) if v.dtype.kind == "U" else v for k, v in static.items()
                },
                offsets=npz["table.offsets"],
                op=npz["table.op"],
                total_time_ps=npz["table.total"],
            )
            steps = [
                StepInfo(int(num), bool(done), duration_ps=int(dur), table=table, index=int(i))
                for i, (num, done, dur) in zip(npz["table.index"].tolist(), meta["steps"])
            ]
        else:
            steps = [
                StepInfo(int(num), bool(done), _db_from(f"step{i}", npz), duration_ps=int(dur))
                for i, (num, done, dur) in enumerate(meta["steps"])
            ]
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
        )


def save(cache_dir: str, key: str, stats: OpStats) -> str:
    """Writes ``<cache_dir>/<key>.npz`` atomically; returns its path."""
    os.makedirs(cache_dir, exist_ok=True)
    target = os.path.join(cache_dir, f"{key}.npz")
    handle, temporary = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(dumps(stats))
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return target


def load(cache_dir: str, key: str) -> OpStats | None:
    """The cached OpStats, or None when absent or unreadable."""
    path = os.path.join(cache_dir, f"{key}.npz")
    try:
        with open(path, "rb") as f:
            return loads(f.read())
    except (OSError, ValueError, KeyError, TypeError):
        return None
