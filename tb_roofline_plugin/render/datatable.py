"""XProf-compatible output: ``[roofline_table, diagnostics_table]`` google DataTables.

Same column ids, types, labels and order as XProf 2.24.2 (37 columns by default and
on TPU, 30 on GPU), the same property keys and step strings (semantics doc, section 11).
"""

from __future__ import annotations

import io
import json
import re
from typing import Iterable, Iterator

import numpy as np

from ..platforms.in_threads import thread_map
from ..protos import roofline_model_pb2
from ..roofline.formulas import ridge_point
from ..roofline.model import RooflineModel, as_model
from ..roofline.records import RecordSet
from ..wording import spreadsheet_safe, spreadsheet_safe_all
from .json_text import (
    Field,
    bool_field,
    bool_texts,
    compiled_writer,
    dumps_pieces,
    float_columns_text,
    float_field,
    int_field,
    rows_text,
    str_field,
    string_texts,
    table_field,
)

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


def is_gpu_database(database: roofline_model_pb2.RooflineModelDatabase) -> bool:
    return "GPU" in database.device_type


_STEP_NAMES = {
    roofline_model_pb2.ALL: "Total",
    roofline_model_pb2.AVERAGE_STEP: "Average",
    roofline_model_pb2.ALL_HW: "Total (HW)",
    roofline_model_pb2.INVALID_RECORD_TYPE: "Invalid",
}


def step_strings(records: RecordSet) -> list[str]:
    """The Step cell of every record: Total, Average, the step number, ..."""
    kinds = records["record_type"]
    out = np.full(len(kinds), "Unknown", object)
    for kind, name in _STEP_NAMES.items():
        out[kinds == kind] = name
    per_step = kinds == roofline_model_pb2.PER_STEP
    out[per_step] = list(map(str, records["step_num"][per_step].tolist()))
    return out.tolist()


# XProf's escape of a source cell's text: html.escape's, with ' as &#39; (the html module's
# import, entities and all, is a start-up cost of its own).
_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#39;"))


def _escape(text: str) -> str:
    for character, entity in _ESCAPES:  # & first: the entities are not escaped again
        text = text.replace(character, entity)
    return text


def source_info_cells(records: RecordSet) -> list[str]:
    """XProf's source cell (file:line, the stack as its title) of every record, or ""."""
    shown, cells = _shown_source_cells(records)
    out = np.full(len(records["source_file"]), "", object)
    out[shown] = cells
    return out.tolist()


def _shown_source_cells(records: RecordSet) -> tuple[np.ndarray, list[str]]:
    """The records with a source cell, and their cells."""
    files, lines = records["source_file"], records["source_line"]
    shown = np.flatnonzero((files != "") & (lines != -1))
    cells = [
        f"<div class='source-info-cell' title='{_escape(stack)}'>{_escape(name)}:{line}</div>"
        for name, line, stack in zip(
            files[shown].tolist(), lines[shown].tolist(), records["source_stack"][shown].tolist()
        )
    ]
    return shown, cells


# Records whose cells are text at once: a piece of ~5 MB stays in the heap, below malloc's
# mmap threshold, where the next piece reuses its pages (50,000 records, a fresh 29 MB
# mapping a piece, cost a CPU profile's export 15,000 page faults, 0.08 s, and 21 MB).
ROWS_PER_PIECE = 8_192
PIECES_AT_ONCE = 2  # compiled pieces written together, in as many threads (cores allowing)


def _column_values(records: RecordSet, key: str, kind: str) -> list:
    """One column's cell values, as Python values."""
    if key == "#step":
        return step_strings(records)
    if key == "#module":
        return list(map(str, records["hlo_module_id"].tolist()))
    if key == "#source":
        return source_info_cells(records)
    if kind == "number":
        return records[key].astype(np.float64).tolist()
    return records[key].tolist()


def _columns_text(records: RecordSet, cols: list, form: str) -> list[list[str]]:
    """Every column's cells as text: ``json`` (JSON values) or ``csv`` (``str`` of each)."""
    numbers = [i for i, (_, kind, _, _) in enumerate(cols) if kind == "number"]
    float_form = "json" if form == "json" else "repr"
    number_texts = float_columns_text([records[cols[i][3]] for i in numbers], float_form)
    texts = dict(zip(numbers, number_texts))
    for i, (_, kind, _, key) in enumerate(cols):
        if i in texts:
            continue
        if kind == "boolean":
            values = records[key]
            texts[i] = bool_texts(values) if form == "json" else list(map(str, values.tolist()))
        else:
            strings = _column_values(records, key, kind)
            texts[i] = string_texts(strings) if form == "json" else spreadsheet_safe_all(strings)
    return [texts[i] for i in range(len(cols))]


# The row templates of the compiled writer: (first literal, literal between cells, tail,
# separator between rows) of a datatable row and of a CSV line.
_TEMPLATES = {
    "json": ('{"c": [{"v": ', '}, {"v": ', "}]}", ", "),
    "csv": ('"', '","', '"\n', ""),
}


def _step_fields(records: RecordSet, literal: str, form: str) -> list[Field]:
    """The Step cell as two fields, one present in each row: the name of a record type, or
    the step number of a PER_STEP record."""
    kinds = records["record_type"].astype(np.int64)
    per_step = kinds == roofline_model_pb2.PER_STEP
    by_number: dict[int, str] = {int(kind): name for kind, name in _STEP_NAMES.items()}
    names = [by_number.get(kind, "Unknown") for kind in range(max(by_number) + 1)]
    names.append("Unknown")  # every other record type
    codes = np.where((kinds >= 0) & (kinds < len(names) - 1), kinds, len(names) - 1)
    texts = [string_texts([n])[0] if form == "json" else n for n in names]
    return [
        table_field(literal, codes, texts, mask=~per_step),
        int_field(literal, records["step_num"], quoted=form == "json", mask=per_step),
    ]


def _source_field(records: RecordSet, literal: str, form: str) -> Field:
    """The Source Info cell: "" or XProf's cell, for the few records that have one."""
    shown, cells = _shown_source_cells(records)
    codes = np.zeros(len(records["source_file"]), np.int64)
    codes[shown] = np.arange(1, len(shown) + 1)
    texts = ["", *cells]
    if form == "json":
        texts = string_texts(texts)
    else:
        texts = [t.replace('"', '""') for t in spreadsheet_safe_all(texts)]
    return table_field(literal, codes, texts)


def _row_fields(records: RecordSet, cols: list, form: str) -> tuple[list[Field], str, str]:
    """(fields, tail, separator) of the compiled writer for rows of ``cols`` (``json``: the
    datatable's rows, ``csv``: CSV lines)."""
    first, between, tail, separator = _TEMPLATES[form]
    fields: list[Field] = []
    for i, (_, kind, _, key) in enumerate(cols):
        literal = first if i == 0 else between
        if key == "#step":
            fields += _step_fields(records, literal, form)
        elif key == "#module":
            fields.append(int_field(literal, records["hlo_module_id"], quoted=form == "json"))
        elif key == "#source":
            fields.append(_source_field(records, literal, form))
        elif kind == "number":
            fields.append(float_field(literal, records[key], "json" if form == "json" else "repr"))
        elif kind == "boolean":
            texts = ("true", "false") if form == "json" else ("True", "False")
            fields.append(bool_field(literal, records[key], texts))
        else:
            values = records[key] if form == "json" else spreadsheet_safe_all(records[key])
            fields.append(str_field(literal, values, form))
    return fields, tail, separator


def format_property(value: float | bool) -> str:
    """C++ ``absl::StrCat(double)``: 6 significant digits; booleans as 0/1."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return format(float(value), ".6g")


def properties(database: roofline_model_pb2.RooflineModelDatabase) -> dict[str, str]:
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


def _tables(model: RooflineModel) -> tuple[list, dict, dict]:
    """(columns, roofline table without rows, diagnostics table) of a model."""
    header = model.header
    cols = columns(is_gpu_database(header))
    table = {
        "cols": [{"id": cid, "label": label, "type": kind} for cid, kind, label, _ in cols],
        "p": properties(header),
        "rows": [],
    }
    diag = header.diagnostics
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
    return cols, table, diagnostics


def to_datatable(database: RooflineModel | roofline_model_pb2.RooflineModelDatabase) -> list[dict]:
    """The body of XProf's ``roofline_model`` tool for this database."""
    model = as_model(database)
    cols, table, diagnostics = _tables(model)
    values = [_column_values(model.records, key, kind) for _, kind, _, key in cols]
    table["rows"] = [{"c": [{"v": v} for v in row]} for row in zip(*values)]
    return [table, diagnostics]


def datatable_pieces(
    database: RooflineModel | roofline_model_pb2.RooflineModelDatabase,
) -> Iterable[str]:
    """``json.dumps(to_datatable(database))`` in pieces, written column by column.

    Cells become text a piece of records at a time, as the pieces are written: a profile
    with a million step records never holds its text (587 MB for 500k steps) at once.
    """
    model = as_model(database)
    cols, table, diagnostics = _tables(model)
    threads = 1  # pieces written at once: the compiled writer lets the GIL go
    if compiled_writer():
        fields, tail, separator = _row_fields(model.records, cols, "json")
        threads = PIECES_AT_ONCE

        def piece(span: tuple[int, int]) -> str:
            return rows_text(fields, tail, separator, *span)

    else:
        template = '{"c": [' + ", ".join(['{"v": %s}'] * len(cols)) + "]}"

        def piece(span: tuple[int, int]) -> str:
            texts = _columns_text(model.records.take(slice(*span)), cols, "json")
            return ", ".join([template % row for row in zip(*texts)])

    count = len(model.records)
    spans = [
        (start, min(start + ROWS_PER_PIECE, count)) for start in range(0, count, ROWS_PER_PIECE)
    ]

    def rows() -> Iterator[str]:
        yield "["
        for first in range(0, len(spans), threads):
            texts = thread_map(piece, spans[first : first + threads], threads)
            for i, text in enumerate(texts, first):
                if i:
                    yield ", "
                yield text
        yield "]"

    pieces = dumps_pieces([table, diagnostics], {(0, "rows"): rows()}, None)
    return pieces if pieces is not None else [json.dumps(to_datatable(model))]


def datatable_text(database: RooflineModel | roofline_model_pb2.RooflineModelDatabase) -> str:
    """``json.dumps(to_datatable(database))``, written column by column."""
    return "".join(datatable_pieces(database))


def csv_text(database: RooflineModel | roofline_model_pb2.RooflineModelDatabase) -> str:
    """``to_csv(to_datatable(database))``, written column by column."""
    return "".join(csv_pieces(database))


def csv_pieces(database: RooflineModel | roofline_model_pb2.RooflineModelDatabase) -> list[str]:
    """``csv_text`` in pieces (its header line, then its records)."""
    import csv  # the CSV format's, not the datatable's

    model = as_model(database)
    cols, _, _ = _tables(model)
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow([label for _, _, label, _ in cols])
    if compiled_writer():
        fields, tail, separator = _row_fields(model.records, cols, "csv")
        try:
            return [out.getvalue(), rows_text(fields, tail, separator)]
        except UnicodeEncodeError:  # a lone surrogate (from a JSON trace): csv writes it as is
            pass
    for start in range(0, len(model.records), ROWS_PER_PIECE):
        part = model.records.take(slice(start, start + ROWS_PER_PIECE))
        writer.writerows(zip(*_columns_text(part, cols, "csv")))
    return [out.getvalue()]


def to_csv(datatable: list[dict]) -> str:
    """XProf's ``data_csv``: the first table, label header, every field quoted."""
    import csv

    table = datatable[0]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow([c["label"] for c in table["cols"]])
    for row in table["rows"]:
        writer.writerow([str(spreadsheet_safe(cell["v"])) for cell in row["c"]])
    return out.getvalue()


def csv_file_name(tag: str, run: str, host: str) -> str:
    """``<tag>_<run>_<host suffix>.csv`` with unsafe characters replaced, as XProf names it."""
    suffix = host.rsplit("-", 1)[-1]
    parts = [re.sub(r"[^A-Za-z0-9_-]", "_", p) for p in (tag, run, suffix) if p]
    return "_".join(parts) + ".csv"
