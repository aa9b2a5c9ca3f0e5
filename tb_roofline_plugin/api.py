"""``tb_roofline_plugin.analyze``: a profile's roofline as tables, for notebooks.

The tables are the CLI's ``export --format json`` (``Analysis.json``, the same document) cut
into rows: pandas DataFrames when pandas is installed (it is not a dependency), else lists
of dicts. Values are the json's, but the protobuf JSON's quoted 64-bit integers (``rank``,
``occurrences``, ``hlo_module_id``, ``flops``, ``bytes_accessed``) are ints and a record's
``source_info`` is three columns.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from .errors import RooflineError
from .peaks.perf_env import PerfEnv

# The device panel's keys that are peaks (the rest names the device).
PEAK_KEYS = (
    "peaks_known",
    "peaks_source",
    "peak_flop_rate_gflops",
    "dtype_peak_gflops",
    "memories",
)
# Record fields the protobuf JSON writes as strings (64-bit integers).
_INTEGER_FIELDS = ("rank", "hlo_module_id", "occurrences", "flops", "bytes_accessed")
_SOURCE_COLUMNS = (("source_file", "file_name"), ("source_line", "line_number"))
_SOURCE_STACK = ("source_stack", "stack_frame")
_RECORD_TYPES = {"total": "ALL", "average": "AVERAGE_STEP"}
Table = Any  # a pandas DataFrame, or a list of dicts


def analyze(
    path: str | os.PathLike,
    host: str | None = None,
    peaks: str | PerfEnv | None = None,
    step: str | int = "total",
    dataframes: bool | None = None,
) -> Analysis:
    """The roofline of a profile: an ``.xplane.pb`` file, a PyTorch profiler trace, or a run
    folder (all its hosts, or ``host``). ``peaks``: a built-in device name or a peaks JSON
    file (as ``--peaks``), or a PerfEnv. ``step``: ``"total"``, ``"average"`` or a step
    number (the op table's selection, as ``export --step``). ``dataframes``: tables as
    pandas DataFrames (default: when pandas is importable) or lists of dicts.

    Bad input raises ``tb_roofline_plugin.errors.RooflineError`` with a one-line message.
    """
    from .ops.selection import parse_step, select
    from .platforms.analysis import analyze_files
    from .render.export import selection_model, to_json
    from .xspace.sources import profile_files

    files = profile_files(path, host)
    stats = analyze_files(files, _perf_env(peaks))
    selection = select(stats, parse_step(str(step)))
    document = to_json(selection_model(stats, selection), stats, files, selection)
    return Analysis(document, _use_pandas(dataframes), stats=stats, sources=files)


def _perf_env(peaks: str | PerfEnv | None) -> PerfEnv | None:
    if peaks is None or isinstance(peaks, PerfEnv):
        return peaks
    from .peaks.devices import load_perf_env

    try:
        return load_perf_env(str(peaks))
    except (KeyError, ValueError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        raise RooflineError(f"peaks: {message}") from None


def _use_pandas(wanted: bool | None) -> bool:
    if wanted is False:
        return False
    try:
        import pandas  # noqa: F401
    except ImportError:
        if wanted:
            raise RooflineError("dataframes=True needs pandas: pip install pandas") from None
        return False
    return True


class Analysis:
    """A profile's roofline: ``device`` and ``peaks`` (dicts), and tables: ``steps`` (each
    step: complete, duration, holds ops), ``op_table`` (the op records of the selection
    with their details: dtype, wasted time, class), ``step_table`` (the Program of the whole
    profile, the average step and each step), ``layer_table`` (the layer tree, None until
    the json carries one), ``hw_table`` (what hardware counters measured per op beside the
    model, None without counters). ``json``: the CLI's json document itself."""

    def __init__(self, document: dict, pandas: bool = False, stats=None, sources=()) -> None:
        self.json = document
        self.pandas = pandas
        self._stats = stats
        self._sources = list(sources)

    def _table(self, rows: list[dict], columns: Iterable[str] | None = None) -> Table:
        if not self.pandas:
            return rows
        import pandas as pd

        return pd.DataFrame(rows, columns=list(columns) if columns is not None else None)

    @property
    def selection(self) -> str:
        return self.json["step"]

    @property
    def hosts(self) -> list[str]:
        return list(self.json["hosts"])

    @property
    def device(self) -> dict:
        return self.json["device"]

    @property
    def peaks(self) -> dict:
        return {k: self.device[k] for k in PEAK_KEYS if k in self.device}

    @property
    def notes(self) -> list[str]:
        return list(self.json["notes"])

    @property
    def diagnostics(self) -> dict:
        return self.json["database"].get("diagnostics", {})

    @property
    def steps(self) -> Table:
        return self._table(
            [dict(s) for s in self.json["steps"]],
            ("step_num", "complete", "duration_us", "holds_ops"),
        )

    def _records(self) -> list[dict]:
        return self.json["database"].get("roofline_model_record", [])

    @property
    def op_table(self) -> Table:
        """The op records of the selection (infeed/outfeed included), rank order, each with
        its ``ops`` details (``program_name``, ``dtype``, ``wasted_time_us``, ...)."""
        wanted = _RECORD_TYPES.get(self.selection, "PER_STEP")
        details = {(int(d["hlo_module_id"]), d["hlo_name"]): d for d in self.json["ops"]}
        rows = []
        for record in self._records():
            if not record.get("include_infeed_outfeed") or record["record_type"] != wanted:
                continue
            row = record_row(record)
            if row["rank"] == 0:
                continue
            for key, value in details.get((row["hlo_module_id"], row["hlo_name"]), {}).items():
                row.setdefault(key, value)
            rows.append(row)
        return self._table(rows, _columns(rows))

    @property
    def step_table(self) -> Table:
        """The Program records (infeed/outfeed included): Total, Average, each step; the
        ``step`` column as the datatable names it (Total, Average, the step number)."""
        rows = []
        for record in self._records():
            if not record.get("include_infeed_outfeed") or record["record_type"] == "ALL_HW":
                continue
            row = record_row(record)
            if row["rank"] != 0:
                continue
            kind = record["record_type"]
            step = {"ALL": "Total", "AVERAGE_STEP": "Average"}.get(kind)
            rows.append({"step": step or str(row.get("step_num", "")), **row})
        return self._table(rows, _columns(rows))

    @property
    def layer_table(self) -> Table:
        """The layer tree of the selection (the json's ``layers``), one row per node in
        pre-order, the Program first (``depth`` 0): its place (``id``, ``parent``, ``path``,
        ``kind``), sums and roofline point; the forward and backward passes' figures as
        ``forward_*`` / ``backward_*`` columns. Each leaf's ops are in ``layer_ops``."""
        rows = [layer_row(node) for node in self.json["layers"]["nodes"]]
        return self._table(rows, _columns(rows))

    def layer_ops(self, layer_id: int) -> Table:
        """The ops of one leaf of the layer tree (by its ``id``), most self time first."""
        nodes = self.json["layers"]["nodes"]
        if not 0 <= layer_id < len(nodes):
            raise ValueError(f"no layer {layer_id} (layers: 0 to {len(nodes) - 1})")
        rows = list(nodes[layer_id].get("ops", []))
        return self._table(rows, _columns(rows))

    @property
    def hardware(self) -> dict | None:
        """The json's ``hardware_counters`` (what was measured, notes, Program and ops)."""
        return self.json.get("hardware_counters")

    @property
    def hw_table(self) -> Table | None:
        """Per op, what hardware counters measured beside the model (Total (HW)): kernels,
        measured and modelled FLOPs and bytes, their ratios, FLOPs per precision; None
        without counters. Unmeasured values are None, never the model's."""
        section = self.hardware
        if section is None:
            return None
        rows = [hardware_row(r) for r in section["ops"]]
        return self._table(rows, _columns(rows))

    def summary(self, top: int = 10) -> str:
        """The CLI's ``summary`` text (of the whole profile)."""
        if self._stats is None:
            raise RooflineError("this Analysis holds no profile to summarise")
        from .render.summary import summary_text

        return summary_text(self._stats, self._sources, top=top)

    def __repr__(self) -> str:
        device = self.device
        ops = len(self.json["ops"])
        hw = "" if self.hardware is None else ", with Total (HW)"
        return (
            f"<Analysis of {', '.join(self.json['sources'])}: {device['device_type']} "
            f"({device['hardware_type']}), {len(self.json['steps'])} steps, {ops} ops"
            f"{hw}>"
        )


def record_row(record: dict) -> dict:
    """A record of the json as a flat row: 64-bit integers as ints, source_info as columns."""
    row: dict[str, Any] = {}
    for key, value in record.items():
        if key == "source_info":
            for column, field in (*_SOURCE_COLUMNS, _SOURCE_STACK):
                row[column] = value.get(field, 0 if column == "source_line" else "")
        elif key in _INTEGER_FIELDS:
            row[key] = int(value)
        else:
            row[key] = value
    return row


def hardware_row(op: dict) -> dict:
    """An op of ``hardware_counters`` as a flat row: its ``values`` as columns."""
    row = {k: v for k, v in op.items() if k != "values"}
    row["hlo_module_id"] = int(row["hlo_module_id"])
    for key, value in op.get("values", {}).items():
        row[key if key.endswith("bytes") or key.endswith("instructions") else f"{key}_flops"] = (
            value
        )
    return row


def layer_row(node: dict) -> dict:
    """A node of the json's ``layers`` as one flat row: its ops and children left out (see
    ``layer_ops``), each pass's figures prefixed by the pass."""
    row: dict = {}
    for key, value in node.items():
        if key in ("ops", "children"):
            continue
        if isinstance(value, dict):
            row.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            row[key] = value
    return row


def _columns(rows: list[dict]) -> list[str]:
    """Every key of the rows, in order of first appearance."""
    return list(dict.fromkeys(k for row in rows for k in row))
