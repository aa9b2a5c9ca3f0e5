"""Our complete json form and the ``export`` command's formats.

``to_json`` / ``complete_json_text``: the RooflineModelDatabase as protobuf JSON plus what
the tab needs besides (device and peaks, steps, per-op details, wasted time, notes, and
what hardware counters measured beside the model, ``hardware``), the records written column
by column (``json_text`` is the fast writer). ``render`` /
``render_pieces``: one of ``FORMATS`` (datatable and csv come from ``datatable``).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

import numpy as np
from google.protobuf.descriptor import FieldDescriptor

from .. import __version__
from ..hlo.cost.shapes import roofline_dtype
from ..hlo.text import source_line
from ..ops.op_stats import (
    DEVICE_TIME_PREFIX,
    OpStats,
    StepInfo,
    step_arrays,
    steps_device_time_ps,
    steps_holding_ops,
    steps_without_ops_note,
)
from ..ops.selection import TOTAL, Selection, parse_step, select
from ..peaks.devices import CPU_HARDWARE_TYPES as _CPU_TYPES
from ..peaks.devices import DTYPES, core_unit, device_time_words, main_memory
from ..peaks.perf_env import CMEM_RD, CMEM_WR, HBM_RW, SRAM_WR, VMEM_RD, VMEM_WR
from ..protos import roofline_model_pb2
from ..roofline.formulas import ridge_point, safe_divide
from ..roofline.model import RooflineModel, as_model, roofline_model, step_roofline_model
from ..roofline.records import SOURCE_COLUMNS, RecordSet
from ..units import GIB_PER_GB
from ..wording import named
from .datatable import csv_pieces, datatable_pieces
from .json_text import (
    Field,
    bool_field,
    bool_texts,
    column_field,
    compiled_writer,
    dumps_pieces,
    float_columns_text,
    float_field,
    int_field,
    int_texts,
    list_rows_pieces,
    list_text,
    nested_object_fields,
    object_literals,
    objects_text,
    str_field,
    string_texts,
    table_field,
)

FORMATS = ("datatable", "json", "csv")
ABOVE_ROOF = 1.05  # roofline efficiency past which an op's number cannot be physical


def _memories(stats: OpStats) -> list[tuple[str, int]]:
    """(label, PerfEnv index) of the memories worth a roof on this device."""
    kind = stats.run_env.hardware_type
    main = main_memory(kind, stats.perf_env.memory)
    if kind == "GPU":
        return [(main, HBM_RW), ("Shared memory / L1", SRAM_WR)]
    if kind in _CPU_TYPES:
        return [(main, HBM_RW)]
    return [
        (main, HBM_RW),
        ("CMEM read", CMEM_RD),
        ("CMEM write", CMEM_WR),
        ("VMEM read", VMEM_RD),
        ("VMEM write", VMEM_WR),
    ]


def time_meaning(stats: OpStats) -> str:
    """What the profile's times are, in the words written beside them ("device time summed
    over 8 TensorCores")."""
    return device_time_words(stats.run_env.hardware_type, stats.run_env.device_core_count)


def time_note(stats: OpStats) -> str | None:
    """One line saying that every time of a profile with several cores is summed over them
    (None with one core, or when the profile's own note says it: PyTorch traces)."""
    if stats.run_env.device_core_count <= 1:
        return None
    if any(n.startswith(DEVICE_TIME_PREFIX) for n in stats.notes):
        return None
    unit = core_unit(stats.run_env.hardware_type)
    return (
        f"Times are {time_meaning(stats)}: Total, Average, each step and each op add up the "
        f"time of every {unit}, so they are longer than wall time (a step's wall time is that "
        f"of its longest-running {unit})."
    )


def device_summary(stats: OpStats) -> dict:
    """Device, peaks (with their source and ridge points) and time-scale facts for the UI."""
    env = stats.perf_env
    peak_gflops = 1000.0 * env.peak_tera_flops_per_second
    memories = [
        {
            "name": name,
            "peak_gbps": env.peak_bws_gbps[index],
            "peak_gibps": env.peak_bws_gbps[index] / GIB_PER_GB,
            "ridge_point": ridge_point(peak_gflops, env.peak_bws_gbps[index] / GIB_PER_GB),
        }
        for name, index in _memories(stats)
        if env.peak_bws_gbps[index] > 0
    ]
    return {
        "hardware_type": stats.run_env.hardware_type,
        "device_type": stats.run_env.device_type,
        "device_core_count": stats.run_env.device_core_count,
        "active_core_count": stats.run_env.active_core_count,
        "core_unit": core_unit(stats.run_env.hardware_type),
        "time_meaning": time_meaning(stats),
        "peak_flop_rate_gflops": peak_gflops,
        "memories": memories,
        "main_memory": main_memory(stats.run_env.hardware_type, env.memory),
        "peaks_known": env.known,
        "has_megacore": env.has_megacore,
        "has_merged_vmem": env.has_merged_vmem,
        "has_cmem": env.has_cmem,
        "peaks_source": env.source if env.known else "none",
        "dtype_peak_gflops": {k: 1000.0 * v for k, v in env.dtype_tflops.items()},
        # The host's devices a view can show one by one (``device=N``), and the one shown.
        "devices": list(stats.devices),
        "selected_device": stats.device,
    }


# Op dtypes that keep XLA's name but run at another dtype's ceiling.
_DTYPE_CEILING = {"c128": "fp64", "c64": "fp32", "u8": "int8"}
NO_CEILING = "no {dtype} ceiling measured: judged on memory only"
NO_CEILING_BOUND = "no {dtype} roof"  # the summary's bound column for such an op
NO_CEILING_INFO = (
    "No {dtypes} ceiling in these peaks: {ops} judged on memory only, not against another "
    "dtype's peak. `tb-roofline calibrate` measures bf16 and int8 where torch or jax is installed."
)


def dtype_ceiling(dtype: str) -> str:
    """The ceiling key (``fp32``, ``bf16``, ``fp8``, ...) of an op's dtype, or "" (XLA's own
    names, ``f32``, are read too: stats cached before the names were one vocabulary)."""
    name = roofline_dtype(dtype)
    return name if name in DTYPES else _DTYPE_CEILING.get(dtype, "")


def _op_dtypes(stats: OpStats, selection: Selection, ops: RecordSet) -> list[str]:
    """Each op record's dtype ("" when unknown)."""
    db = selection.db
    by_op = dict(zip(zip(db.program_id.tolist(), db.name.tolist()), db.dtype.tolist()))
    return [
        by_op.get(op, "") for op in zip(ops["hlo_module_id"].tolist(), ops["hlo_name"].tolist())
    ]


def _op_texts(selection: Selection, ops: RecordSet) -> dict[str, list[str]]:
    """What each op record is known by (json only): its shapes, HLO line, framework op and
    source line (``file:line``: its metadata's, else the code that made it: a fusion's fused
    instructions', a PyTorch op's Python frame); "" when unknown."""
    db = selection.db
    where = {key: i for i, key in enumerate(zip(db.program_id.tolist(), db.name.tolist()))}
    rows = np.array(
        [where.get(op, -1) for op in zip(ops["hlo_module_id"].tolist(), ops["hlo_name"].tolist())],
        np.int64,
    )
    found = rows >= 0

    def column(values: np.ndarray) -> list[str]:
        out = np.full(len(rows), "", object)
        out[found] = values[rows[found]]
        return out.tolist()

    located = zip(
        column(db.source_file),
        column(db.source_line.astype(object)),
        column(db.source_stack),
        column(db.code_line),
    )
    return {
        "shapes": column(db.shapes),
        "hlo_text": column(db.hlo_text),
        "framework_op": column(db.framework_op),
        "source": [
            source_line(f, n if isinstance(n, int) else -1, s) or code for f, n, s, code in located
        ],
    }


def _missing_ceilings(stats: OpStats, ops: RecordSet, dtypes: list[str]) -> np.ndarray:
    """Which ops do FLOPs in a dtype whose ceiling the peaks lack, where that means no
    ceiling (a calibration or user file, ``PerfEnv.listed_dtypes_only``); built-in tables
    and profile peaks judge them by the single peak, as XProf does."""
    env = stats.perf_env
    if not env.listed_dtypes_only or not env.known:
        return np.zeros(len(dtypes), bool)
    missing = {
        d for d in set(dtypes) if dtype_ceiling(d) and dtype_ceiling(d) not in env.dtype_tflops
    }
    return np.array([d in missing for d in dtypes], bool) & (ops["measured_flop_rate"] > 0)


def no_ceiling_ops(stats: OpStats, selection: Selection, ops: RecordSet) -> dict[tuple, str]:
    """{(module id, op name): ceiling key} of the ``ops`` records whose dtype has no ceiling."""
    dtypes = _op_dtypes(stats, selection, ops)
    rows = np.flatnonzero(_missing_ceilings(stats, ops, dtypes)).tolist()
    ids, names = ops["hlo_module_id"].tolist(), np.asarray(ops["hlo_name"], object).tolist()
    return {(ids[i], names[i]): dtype_ceiling(dtypes[i]) for i in rows}


def op_details(
    database: RooflineModel | roofline_model_pb2.RooflineModelDatabase,
    stats: OpStats,
    selection: Selection,
    columns: OpColumns | None = None,
) -> list[dict]:
    """Per op of the selection (infeed/outfeed included): dtype-aware efficiency, wasted time.

    ``dtype_peak_gflops`` is the ceiling of the op's own input dtype when known (else the
    single peak); wasted time is self time x (1 - roofline efficiency), never negative (self
    time: a loop's body is wasted in the body's rows, never again in the loop's), and its
    fraction is of the selection's device time. Ties keep record order (a stable sort).
    ``columns``: ``op_detail_columns`` of the same, made before.
    """
    columns = columns or op_detail_columns(as_model(database), stats, selection)
    lists = [v.tolist() if isinstance(v, np.ndarray) else v for v in columns.values()]
    return [dict(zip(columns, row)) for row in zip(*lists)]


def _op_details_text(columns: OpColumns, indent) -> str:
    """``json.dumps`` of ``op_details`` (of its ``op_detail_columns``) as the value of a
    top-level key."""
    if compiled_writer():
        literals, tail = object_literals(list(columns), indent, 2)
        fields = [column_field(lit, values) for lit, values in zip(literals, columns.values())]
        return "".join(list_rows_pieces(fields, tail, indent, 1))
    floats = [k for k, v in columns.items() if isinstance(v, np.ndarray) and v.dtype == float]
    arrays: list[np.ndarray] = [np.asarray(columns[k]) for k in floats]
    texts = dict(zip(floats, float_columns_text(arrays)))
    for key, values in columns.items():
        if key in texts:
            continue
        if isinstance(values, list) or values.dtype == object:
            texts[key] = string_texts(values)
        elif values.dtype == bool:
            texts[key] = bool_texts(values)
        else:
            texts[key] = int_texts(values)
    items = objects_text(list(columns), [texts[k] for k in columns], indent, 2)
    return list_text(items, indent, 1)


def selected_ops(model: RooflineModel, selection: Selection) -> RecordSet:
    """The op records of the selection (infeed/outfeed included), in rank order."""
    records = model.records
    wanted = (
        (records["record_type"] == selection.record_type)
        & (records["step_num"] == selection.step_num)
        & (records["rank"] != 0)
        & records["include_infeed_outfeed"]
    )
    return records.take(np.flatnonzero(wanted))


def _judged_efficiency(ops: RecordSet, no_ceiling: np.ndarray) -> np.ndarray:
    """Each op's roofline efficiency, memory's alone where its dtype has no ceiling."""
    memory = ops["memory_bw_relative_to_hw_limit"]
    return np.where(no_ceiling, memory, ops["roofline_efficiency"])


def _judged(ops: RecordSet) -> np.ndarray:
    """True for each op the roofline can judge (``roofline.classes``): an efficiency above
    the roof means something only for those."""
    from ..roofline.classes import JUDGED

    return _classes(ops) == JUDGED


def _classes(ops: RecordSet) -> np.ndarray:
    """Each op's roofline class (``roofline.classes``, imported for the json alone)."""
    from ..roofline.classes import roofline_classes

    return roofline_classes(
        ops["hlo_name"], ops["hlo_category"], ops["measured_flop_rate"], ops["measured_memory_bw"]
    )


def above_roof_warning(
    model: RooflineModel, selection: Selection, stats: OpStats | None = None
) -> str | None:
    """A WARNING naming the ops above their roof by more than ``ABOVE_ROOF``, and why a
    number that cannot be physical usually comes about; None when there are none. With
    ``stats``, an op whose dtype has no ceiling is judged by memory alone."""
    if not len(model.records):
        return None
    ops = selected_ops(model, selection)
    efficiency = ops["roofline_efficiency"]
    if stats is not None:
        efficiency = _judged_efficiency(
            ops, _missing_ceilings(stats, ops, _op_dtypes(stats, selection, ops))
        )
    above = np.flatnonzero((efficiency > ABOVE_ROOF) & _judged(ops))
    if not len(above):
        return None
    from .advice import percent_text

    above = above[np.argsort(-efficiency[above], kind="stable")]
    names = [
        f"{name} at {percent_text(value)}"
        for name, value in zip(
            np.asarray(ops["hlo_name"], object)[above].tolist(), efficiency[above].tolist()
        )
    ]
    return (
        f"Above their roof by more than {percent_text(ABOVE_ROOF - 1)} (not physical): "
        f"{named(names, 'op', at_most=3)} of the roof. Likely causes: peaks below the "
        "device's, cache hits counted as memory traffic (small tensors), a time covering only "
        "part of the work (asynchronous ops), or a cost above the real one."
    )


def no_ceiling_info(model: RooflineModel, selection: Selection, stats: OpStats) -> str | None:
    """An INFO naming the ops whose dtype has no ceiling in calibrated or user peaks."""
    if not len(model.records):
        return None
    missing = no_ceiling_ops(stats, selection, selected_ops(model, selection))
    if not missing:
        return None
    names = list(dict.fromkeys(name for _, name in missing))  # one name in many programs
    ops = named(names, "op", at_most=3)
    if len(names) < len(missing):
        ops = (
            f"{len(missing):,} ops ({', '.join(names[:3])}{' and more' if len(names) > 3 else ''})"
        )
    kinds = "/".join(sorted(set(missing.values())))
    return NO_CEILING_INFO.format(dtypes=kinds, ops=ops)


def _with_plausibility(
    header: dict, model: RooflineModel, selection: Selection, stats: OpStats
) -> dict:
    """Our json's diagnostics: XProf's, plus the above-roof warning (not in the datatable)."""
    warning = above_roof_warning(model, selection, stats)
    info = no_ceiling_info(model, selection, stats)
    if warning is None and info is None:
        return header
    diagnostics = dict(header.get("diagnostics", {}))
    if info is not None:
        diagnostics["info"] = [*diagnostics.get("info", []), info]
    if warning is not None:
        diagnostics["warnings"] = [*diagnostics.get("warnings", []), warning]
    return {**header, "diagnostics": diagnostics}


OpColumns = dict[str, np.ndarray | list]


def op_detail_columns(model: RooflineModel, stats: OpStats, selection: Selection) -> OpColumns:
    """The columns of ``op_details``, in its key order (the ops' details and the advice are
    both read from them: made once per selection's json)."""
    ops = selected_ops(model, selection)
    db = selection.db
    dtypes = _op_dtypes(stats, selection, ops)
    no_ceiling = _missing_ceilings(stats, ops, dtypes)
    ceilings = stats.perf_env.dtype_tflops
    peak = model.header.peak_flop_rate
    ceiling_of = {d: ceilings.get(dtype_ceiling(d), 0.0) * 1000.0 or peak for d in set(dtypes)}
    ceiling = np.array([ceiling_of[d] for d in dtypes], np.float64)
    ceiling[no_ceiling] = 0.0
    compute = safe_divide(ops["measured_flop_rate"], ceiling)
    memory = ops["memory_bw_relative_to_hw_limit"]
    efficiency = ops["roofline_efficiency"]
    from ..roofline.classes import JUDGED

    classes = _classes(ops)
    judged = classes == JUDGED
    # Python's max(a, b) / min(a, b) keep ``a`` on ties and NaN: the same values as before.
    capped = np.where(1.0 < efficiency, 1.0, efficiency)
    wasted = ops["total_self_time_in_us"] * np.where(0.0 > 1.0 - capped, 0.0, 1.0 - capped)
    wasted[no_ceiling] = 0.0  # with no compute ceiling, what could be gained is unknown
    wasted = np.where(judged, wasted, 0.0)  # the roofline cannot judge the others
    # Ranked: the judged ops, most wasted time first (ties in record order); the others 0.
    order = np.flatnonzero(judged)
    order = order[np.argsort(-wasted[order], kind="stable")]
    wasted_rank = np.zeros(len(ops), np.int64)
    wasted_rank[order] = np.arange(1, len(order) + 1)
    return {
        "hlo_module_id": list(map(str, ops["hlo_module_id"].tolist())),
        "hlo_name": ops["hlo_name"],
        "rank": ops["rank"],
        "dtype": dtypes,
        "dtype_peak_gflops": ceiling,
        "dtype_compute_efficiency": compute,
        "dtype_roofline_efficiency": np.where(compute > memory, compute, memory),
        "wasted_time_us": wasted,
        "wasted_time_fraction": safe_divide(wasted, db.total_time_ps / 1e6),
        "above_roof": judged & (_judged_efficiency(ops, no_ceiling) > ABOVE_ROOF),
        "wasted_time_rank": wasted_rank,
        "dtype_note": [
            NO_CEILING.format(dtype=d) if n else "" for d, n in zip(dtypes, no_ceiling.tolist())
        ],
        "roofline_class": classes.tolist(),
        "program_name": [
            stats.program_names.get(int(m), "") for m in ops["hlo_module_id"].tolist()
        ],
        **_op_texts(selection, ops),
    }


def advice(
    model: RooflineModel, stats: OpStats, selection: Selection, columns: OpColumns | None = None
) -> list[dict]:
    """ "Where the time goes" of the selection (``render.advice``); ``columns``: its
    ``op_detail_columns``, made before."""
    from .advice import advice_lines

    ops = selected_ops(model, selection)
    columns = columns or op_detail_columns(model, stats, selection)
    device = device_summary(stats)
    return advice_lines(
        names=ops["hlo_name"].tolist(),
        module_ids=list(columns["hlo_module_id"]),
        categories=ops["hlo_category"].tolist(),
        bound_by=ops["bound_by"].tolist(),
        efficiency=ops["roofline_efficiency"],
        wasted_us=np.asarray(columns["wasted_time_us"]),
        wasted_rank=np.asarray(columns["wasted_time_rank"]),
        self_time_us=ops["total_self_time_in_us"],
        classes=list(columns["roofline_class"]),
        dtypes=list(columns["dtype"]),
        device_time_us=selection.db.total_time_ps / 1e6,
        memory=device["main_memory"],
        peaks_known=bool(device["peaks_known"]),
    )


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
    out: dict[str, Any] = {}
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


# The record fields by field number (their order in the JSON mapping), source_info included.
_RECORD_FIELDS = sorted(
    roofline_model_pb2.RooflineModelRecord.DESCRIPTOR.fields, key=lambda f: f.number
)
_DATABASE_NUMBERS = {
    f.name: f.number for f in roofline_model_pb2.RooflineModelDatabase.DESCRIPTOR.fields
}
_RECORDS_KEY = "roofline_model_record"


def _record_patterns(records: RecordSet) -> list[tuple[np.ndarray, list]]:
    """Records grouped by the optional fields they set (step_num, source_info): the
    records' indices and the fields they set, in JSON order."""
    per_step = records.is_per_step()
    has_source = records["has_source_info"]
    patterns = []
    for step_set in (False, True):
        for source_set in (False, True):
            index = np.flatnonzero((per_step == step_set) & (has_source == source_set))
            if len(index):
                fields = [
                    f
                    for f in _RECORD_FIELDS
                    if (f.name != "step_num" or step_set)
                    and (f.name != "source_info" or source_set)
                ]
                patterns.append((index, fields))
    return patterns


def _source_dicts(records: RecordSet) -> list[dict]:
    """SourceInfo as protobuf JSON (proto3: empty and zero fields left out)."""
    return [
        {k: v for k, v in (("file_name", f), ("line_number", n), ("stack_frame", s)) if v}
        for f, n, s in zip(
            records["source_file"].tolist(),
            records["source_line"].tolist(),
            records["source_stack"].tolist(),
        )
    ]


def _field_values(records: RecordSet, field) -> list:
    """A record field's column as ``message_to_dict`` gives it (int64 as str, enums named)."""
    if field.name == "source_info":
        return _source_dicts(records)
    values = records[field.name].tolist()
    if field.type == FieldDescriptor.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        return [names.get(v, v) for v in values]
    if field.type in _INT64_TYPES:
        return list(map(str, values))
    return values


def _field_texts(records: RecordSet, field, indent: int | None, level: int) -> list[str]:
    """A record field's column as JSON text (a record's fields are at ``level``)."""
    if field.type == FieldDescriptor.TYPE_BOOL:
        return bool_texts(records[field.name])
    if field.type in _INT64_TYPES:
        return ['"' + v + '"' for v in map(str, records[field.name].tolist())]
    if field.type == FieldDescriptor.TYPE_STRING:
        return string_texts(records[field.name])
    if field.type == FieldDescriptor.TYPE_ENUM:
        return string_texts(_field_values(records, field))
    if field.name == "source_info":
        return _source_texts(records, indent, level)
    return int_texts(records[field.name])  # uint32 step_num


def _source_texts(records: RecordSet, indent: int | None, level: int) -> list[str]:
    """``json.dumps`` of ``_source_dicts`` at ``level``: one template per set of present
    fields."""
    files, lines, stacks = records["source_file"], records["source_line"], records["source_stack"]
    present = 4 * (files != "") + 2 * (lines != 0) + (stacks != "")
    texts = {
        "file_name": lambda index: string_texts(files[index]),
        "line_number": lambda index: int_texts(lines[index]),
        "stack_frame": lambda index: string_texts(stacks[index]),
    }
    out = np.full(len(files), "{}", object)
    for code in np.unique(present).tolist():
        keys = [k for bit, k in zip((4, 2, 1), texts) if code & bit]
        if keys:
            index = np.flatnonzero(present == code)
            out[index] = objects_text(keys, [texts[k](index) for k in keys], indent, level)
    return out.tolist()


def _per_record(records: RecordSet, make) -> list:
    """``make(sub_records, fields)`` for each group of records setting the same fields,
    put back into record order."""
    patterns = _record_patterns(records)
    if len(patterns) == 1:
        return make(records, patterns[0][1])
    out = [None] * len(records)
    for index, fields in patterns:
        for i, item in zip(index.tolist(), make(records.take(index), fields)):
            out[i] = item
    return out


def record_dicts(records: RecordSet) -> list[dict]:
    """The records as ``message_to_dict`` of their messages, from the columns."""

    def make(sub: RecordSet, fields: list) -> list[dict]:
        names = [f.name for f in fields]
        columns = [_field_values(sub, f) for f in fields]
        return [dict(zip(names, row)) for row in zip(*columns)]

    return _per_record(records, make)


def records_text(records: RecordSet, indent: int | None, level: int) -> str:
    """``json.dumps`` of ``record_dicts(records)`` as a value nested at ``level``."""
    return "".join(_records_pieces(records, indent, level))


def _records_pieces(records: RecordSet, indent: int | None, level: int) -> list[str]:
    """``records_text`` in pieces."""
    if compiled_writer():
        literals, tail = object_literals([f.name for f in _RECORD_FIELDS], indent, level + 1)
        fields = [
            cell
            for f, literal in zip(_RECORD_FIELDS, literals)
            for cell in _record_fields(records, f, literal, indent, level)
        ]
        return list_rows_pieces(fields, tail, indent, level)
    return [_records_text_pure(records, indent, level)]


def _records_text_pure(records: RecordSet, indent: int | None, level: int) -> str:
    """``records_text`` in Python: each column as text, one template per set of fields."""

    def make(sub: RecordSet, fields: list) -> list[str]:
        doubles = [f for f in fields if f.type == FieldDescriptor.TYPE_DOUBLE]
        texts = dict(zip(doubles, float_columns_text([sub[f.name] for f in doubles])))
        columns = [
            texts[f] if f in texts else _field_texts(sub, f, indent, level + 2) for f in fields
        ]
        return objects_text([f.name for f in fields], columns, indent, level + 1)

    return list_text(_per_record(records, make), indent, level)


def _record_fields(
    records: RecordSet, field, literal: str, indent: int | None, level: int
) -> list[Field]:
    """A record field's column for the compiled writer (the records at ``level + 1``), present
    where the schema sets it; SourceInfo as protobuf JSON (empty and zero fields left out)."""
    if field.name == "step_num":
        return [int_field(literal, records["step_num"], mask=records.is_per_step())]
    if field.name == "source_info":
        files, lines, stacks = (records[k] for k in SOURCE_COLUMNS)
        items: list[tuple[str, Callable[[str, np.ndarray], Field]]] = [
            ("file_name", lambda text, mask: str_field(text, files, mask=mask)),
            ("line_number", lambda text, mask: int_field(text, lines, mask=mask)),
            ("stack_frame", lambda text, mask: str_field(text, stacks, mask=mask)),
        ]
        present = [files != "", lines != 0, stacks != ""]
        mask = records["has_source_info"]
        return nested_object_fields(literal, items, present, mask, indent, level + 2)
    return [_record_field(records, field, literal)]


def _record_field(records: RecordSet, field, literal: str) -> Field:
    """A field of every record (a scalar of the schema) for the compiled writer."""
    values = records[field.name]
    if field.type == FieldDescriptor.TYPE_DOUBLE:
        return float_field(literal, values)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return bool_field(literal, values)
    if field.type in _INT64_TYPES:
        return int_field(literal, values, quoted=True)
    if field.type == FieldDescriptor.TYPE_STRING:
        return str_field(literal, values)
    if field.type == FieldDescriptor.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        if len(values) and 0 <= values.min() and values.max() <= max(names):
            texts = [
                string_texts([names[v]])[0] if v in names else str(v) for v in range(max(names) + 1)
            ]
            return table_field(literal, values, texts)
        texts = string_texts(_field_values(records, field))  # as the Python path writes them
        return table_field(literal, np.arange(len(values)), texts)
    return int_field(literal, values)  # uint32 step_num


def _with_records(header: dict, records) -> dict:
    """A database dict with ``records`` in the place of its field number."""
    out: dict[str, Any] = {}
    for key, value in header.items():
        if _DATABASE_NUMBERS[key] > _DATABASE_NUMBERS[_RECORDS_KEY]:
            out.setdefault(_RECORDS_KEY, records)
        out[key] = value
    out.setdefault(_RECORDS_KEY, records)
    return out


def database_dict(database: RooflineModel | roofline_model_pb2.RooflineModelDatabase) -> dict:
    """``message_to_dict`` of the database, its records made from the columns."""
    if isinstance(database, roofline_model_pb2.RooflineModelDatabase):
        return message_to_dict(database)
    header = message_to_dict(database.header)
    if not len(database.records):
        return header
    return _with_records(header, record_dicts(database.records))


def step_dicts(steps: list[StepInfo]) -> list[dict]:
    """Each step as the json export and the steps route give it: ``duration_us`` its wall
    time, ``device_time_us`` its Program time (device time, summed over the cores)."""
    holding = steps_holding_ops(steps).tolist()
    device_us = (steps_device_time_ps(steps) / 1e6).tolist()
    return [
        {
            "step_num": s.step_num,
            "complete": s.complete,
            "duration_us": s.duration_ps / 1e6,
            "device_time_us": device,
            "holds_ops": holds,
        }
        for s, holds, device in zip(steps, holding, device_us)
    ]


def _steps_pieces(steps: list[StepInfo], indent: int | None) -> list[str] | None:
    """The text of ``step_dicts`` as the value of a top-level key, with the compiled writer
    (None: without it, or for numbers beyond 64 bits, which ``json.dumps`` writes)."""
    if not compiled_writer() or not steps:
        return None
    made = step_arrays(steps)
    if made is not None:
        numbers, durations, complete = made.numbers, made.durations, made.complete
    else:
        try:
            numbers = np.fromiter((s.step_num for s in steps), np.int64, len(steps))
            durations = np.fromiter((s.duration_ps for s in steps), np.int64, len(steps))
        except OverflowError:
            return None
        complete = np.fromiter((s.complete for s in steps), bool, len(steps))
    keys = ["step_num", "complete", "duration_us", "device_time_us", "holds_ops"]
    literals, tail = object_literals(keys, indent, 2)
    fields = [
        int_field(literals[0], numbers),
        bool_field(literals[1], complete),
        float_field(literals[2], durations / 1e6),
        float_field(literals[3], steps_device_time_ps(steps) / 1e6),
        bool_field(literals[4], steps_holding_ops(steps)),
    ]
    return list_rows_pieces(fields, tail, indent, 1)


def _body(
    model: RooflineModel,
    stats: OpStats,
    sources: list[str],
    selection: Selection,
    database: dict,
    ops: list[dict] | None = None,
    steps: list[dict] | None = None,
    op_columns: OpColumns | None = None,
) -> dict:
    # The json's own sections, imported here: a datatable or CSV export never loads them.
    from ..roofline.classes import BOUND_WORDS
    from .hardware import hardware_section
    from .layers import layers_dict

    op_columns = op_columns or op_detail_columns(model, stats, selection)
    body = {
        "step": selection.label,
        "format": "tb-roofline/1",
        "generator": f"tb_roofline_plugin {__version__}",
        "sources": sources,
        "hosts": stats.hosts,
        "device": device_summary(stats),
        "steps": step_dicts(stats.steps) if steps is None else steps,
        "ops": op_details(model, stats, selection, op_columns) if ops is None else ops,
        "unattributed_kernels": _unattributed(stats),
        "notes": _notes(stats),
        "advice": advice(model, stats, selection, op_columns),
        "layers": layers_dict(stats, parse_step(selection.label)),
        "roofline_classes": dict(BOUND_WORDS),
        "database": database,
    }
    hardware = hardware_section(stats, model) if selection.label == TOTAL else None
    if hardware is not None:  # only profiles with counters: the others' json is unchanged
        body = {**{k: v for k, v in body.items() if k != "database"}, "hardware_counters": hardware}
        body["database"] = database
    return body


def _notes(stats: OpStats) -> list[str]:
    """What times mean, the profile's notes, and one line when none of its steps holds an op."""
    extra = [time_note(stats), *stats.notes, steps_without_ops_note(stats)]
    return [n for n in extra if n]


def to_json(
    database: RooflineModel | roofline_model_pb2.RooflineModelDatabase,
    stats: OpStats,
    sources: list[str],
    selection: Selection | None = None,
) -> dict:
    """Our complete form: the database as protobuf JSON plus what the UI needs besides.

    For the whole profile the database is XProf's (Program rows per step); for a step or
    the average step it holds that step's Program and op records.
    """
    selection = selection or select(stats, TOTAL)
    model = as_model(database)
    header = _with_plausibility(database_dict(database), model, selection, stats)
    return _body(model, stats, sources, selection, header)


def complete_json_text(
    model: RooflineModel,
    stats: OpStats,
    sources: list[str],
    selection: Selection | None = None,
    indent: int | None = None,
    step_list: bool = True,
) -> str:
    """``json.dumps(to_json(...), indent=indent)``, the records written column by column;
    without ``step_list``, the ``steps`` key is left out (the tab has the list already)."""
    return "".join(complete_json_pieces(model, stats, sources, selection, indent, step_list))


def complete_json_pieces(
    model: RooflineModel,
    stats: OpStats,
    sources: list[str],
    selection: Selection | None = None,
    indent: int | None = None,
    step_list: bool = True,
) -> Iterable[str]:
    """``complete_json_text`` in pieces (the big ones never joined here)."""
    selection = selection or select(stats, TOTAL)
    header = _with_plausibility(message_to_dict(model.header), model, selection, stats)
    if len(model.records):
        header = _with_records(header, [])
    steps = None
    if len(model.records) and step_list:
        steps = _steps_pieces(stats.steps, indent)
    made_here = steps is None and step_list  # the list as dicts, json.dumps writes it
    columns = op_detail_columns(model, stats, selection)
    listed: list[dict] | None = None if made_here else []
    body = _body(model, stats, sources, selection, header, [], listed, columns)
    if not step_list:
        del body["steps"]
    if not len(model.records):
        body["ops"] = op_details(model, stats, selection, columns)
        return [json.dumps(body, indent=indent)]
    parts: dict[tuple, str | Iterable[str]] = {
        ("database", _RECORDS_KEY): _records_pieces(model.records, indent, 2),
        ("ops",): _op_details_text(columns, indent),
    }
    if steps is not None:
        parts[("steps",)] = steps
    pieces = dumps_pieces(body, parts, indent)
    if pieces is not None:
        return pieces
    # A placeholder clashed with the profile's text: the slow way.
    body["database"] = _with_plausibility(database_dict(model), model, selection, stats)
    body["ops"] = op_details(model, stats, selection, columns)
    if step_list:
        body["steps"] = step_dicts(stats.steps)
    return [json.dumps(body, indent=indent)]


def selection_model(stats: OpStats, selection: Selection) -> RooflineModel:
    """The database of a selection: the whole profile's, or a step's (or the average's)."""
    if selection.label == TOTAL:
        return roofline_model(stats)
    return step_roofline_model(stats, selection.db, selection.record_type, selection.step_num)


def selection_database(
    stats: OpStats, selection: Selection
) -> roofline_model_pb2.RooflineModelDatabase:
    return selection_model(stats, selection).database()


def render_pieces(
    stats: OpStats, fmt: str, sources: list[str], step: str | int = TOTAL
) -> Iterable[str]:
    """The text of ``stats`` in one of FORMATS, in pieces to be written one after the other
    (a big datatable is never joined in memory); ``step`` selects json records."""
    selection = select(stats, step)
    model = selection_model(stats, selection)
    if fmt == "datatable":
        return datatable_pieces(model)
    if fmt == "json":
        return complete_json_pieces(model, stats, sources, selection, indent=1)
    if fmt == "csv":
        return csv_pieces(model)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def render(stats: OpStats, fmt: str, sources: list[str], step: str | int = TOTAL) -> str:
    """The text of ``stats`` in one of FORMATS; ``step`` selects json records."""
    return "".join(render_pieces(stats, fmt, sources, step))
