"""A Kineto trace file (``*.pt.trace.json[.gz]``) as numpy columns, one row per complete event.

The trace is Chrome trace JSON: ``traceEvents`` (``ph: "X"`` complete events with ``cat``,
``name``, ``pid``, ``tid``, ``ts``/``dur`` in microseconds, ``args``) and ``deviceProperties``.
Only complete events are kept (flows, metadata and instants are not needed: a kernel is tied
to its op through the runtime call's correlation id and the call's place in the op's span).

Kineto of PyTorch 1.8-1.10 wrote other names (categories ``Operator``, ``Kernel``,
``Runtime``, ``Memcpy``, ``Memset``, ``Python``; the arg ``external id``; device properties
as ``computeProperties`` with ``major``, ``minor``, ``multiProcessorCount``): they are read
under today's names, so the rest of the code knows only those.

JSON is parsed by ``orjson`` when it is importable and the text is at most
``ORJSON_MAX_BYTES`` (whole-document parse: fastest), else by the standard library one event
at a time (``json.JSONDecoder.raw_decode``), so a trace of hundreds of MB never has a dict
per event alive at once; orjson is not a dependency. Events become columns in one pass;
after reading, memory holds arrays and the recorded shapes, types and ``Call stack`` (each
distinct stack once) of ``cpu_op`` rows, and the counters of CUPTI range-profiler ranges
(``cuda_profiler_range``: one per kernel, its args the hardware counters), only.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ProfileError
from ..files import DEFAULT_MAX_BYTES, GZIP_MAGIC, gunzip, read_regular

_orjson: Any
try:  # optional: faster, and no intermediate str for bytes input
    import orjson as _orjson  # type: ignore[no-redef]
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None

# Above this much JSON text, events are parsed one at a time even when orjson is there:
# orjson parses the whole document about twice as fast but holds every event's dict at
# once (on a 219 MB trace: 2.0 GB peak against 0.7 GB streamed, for 10 % less time overall,
# since turning events into columns costs as much as parsing them).
ORJSON_MAX_BYTES = 64 << 20
NO_VALUE = -1
# Older Kineto's category names (any case) -> today's.
MODERN_CATEGORIES = {
    "operator": "cpu_op",
    "kernel": "kernel",
    "runtime": "cuda_runtime",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    "python": "python_function",
}
# The categories of CPU ops (whose recorded shapes are kept), today's name first.
OP_CATEGORIES = ("cpu_op", "Operator")
# CUPTI range-profiler ranges: their args (hardware counters) are kept.
RANGE_CATEGORY = "cuda_profiler_range"
# Older Kineto's device property keys -> today's.
MODERN_PROPERTIES = {
    "major": "computeMajor",
    "minor": "computeMinor",
    "multiProcessorCount": "numSms",
}
_MISSING = object()
# Larger (or non-finite) flops/bytes args are corrupt: sums over millions of events must stay
# finite (as the XSpace reader's stat values).
MAX_MAGNITUDE = 1e200
# A capture's events span seconds to minutes; beyond a day (in us) times are corrupt, and
# bounding them keeps every time, end and sum of times in int64 picoseconds (9.2e18 ps is
# 107 days: a day leaves room for a hundred overlapping threads' sums).
MAX_SPAN_US = 86_400e6


@dataclass
class TraceEvents:
    """Complete events as columns; times in ns from the trace's first event (``base_us``)."""

    name: np.ndarray  # int32 code into ``names``
    names: list[str]
    category: np.ndarray  # int32 code into ``categories``
    categories: list[str]
    begin_ns: np.ndarray  # int64
    dur_ns: np.ndarray  # int64
    pid: np.ndarray  # int64 code into ``pids`` (pids may be strings: "Spans")
    thread: np.ndarray  # int64 code into ``threads``: (pid, tid) pairs
    pids: list
    threads: list
    correlation: np.ndarray  # int64, NO_VALUE when absent
    external_id: np.ndarray  # int64, NO_VALUE when absent
    device: np.ndarray  # int64, NO_VALUE when absent (GPU events)
    flops: np.ndarray  # float64: the ``flops`` arg (with_flops=True), 0 when absent
    # int64: the ``Sequence number`` arg (autograd: a backward node has its forward op's),
    # NO_VALUE when absent
    sequence: np.ndarray
    bytes: np.ndarray  # float64: the ``bytes`` arg of memcpy/memset, 0 when absent
    # Per cpu_op row (``op_rows`` are their row numbers): recorded arguments, unparsed.
    op_rows: np.ndarray
    op_dims: np.ndarray  # object: list per op, or None
    op_types: np.ndarray  # object
    op_concrete: np.ndarray  # object
    # The cuda_profiler_range rows (``range_rows``) and their numeric args (counters), one
    # entry per (range, counter): the range's index in ``range_rows``, the counter's in
    # ``counter_names``, its value (NaN: not a finite number). As many entries as the trace
    # has values, whatever names its ranges use.
    range_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counter_names: list[str] = field(default_factory=list)
    counter_range: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counter_name: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counter_value: np.ndarray = field(default_factory=lambda: np.zeros(0))
    op_stack: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # into stacks
    stacks: list[str] = field(default_factory=lambda: [""])  # ``Call stack`` args; 0: none
    base_us: float = 0.0
    device_properties: list[dict] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.begin_ns)

    @property
    def end_ns(self) -> np.ndarray:
        return self.begin_ns + self.dur_ns

    def code(self, category: str) -> int:
        """The code of a category (-1 when the trace has none)."""
        return self.categories.index(category) if category in self.categories else -1

    def of(self, *categories: str) -> np.ndarray:
        """Row mask of the events in any of ``categories``."""
        codes = [self.code(c) for c in categories if c in self.categories]
        return np.isin(self.category, codes)


def _file_text(path: str, data: bytes | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The trace's JSON text: ``data`` (the file's bytes, read by the caller) or the local
    regular file's, gunzipped when gzip; at most ``max_bytes`` read and unpacked."""
    if data is None:
        data = read_regular(path, max_bytes)
    if data[:2] == GZIP_MAGIC:
        data = gunzip(data, path, max_bytes)
    if not data.strip():
        raise ProfileError(path, "empty file, not a PyTorch profiler trace")
    return data


def load_document(
    path: str | os.PathLike, data: bytes | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[dict, Iterable]:
    """The trace's top-level keys but ``traceEvents``, and its events (an iterator that
    parses them one by one without orjson); a one-line ProfileError for anything else.
    ``data``: the file's bytes when the caller read them (remote logdirs)."""
    where = os.fspath(path)
    data = _file_text(where, data, max_bytes)
    try:
        if _orjson is not None and len(data) <= ORJSON_MAX_BYTES:
            document = _orjson.loads(data)
            del data
            events = document.get("traceEvents") if isinstance(document, dict) else None
            if not isinstance(events, list):
                raise ProfileError(where, NO_EVENTS)
            document.pop("traceEvents")
            return document, events
        return _streamed(data.decode("utf-8"), where)
    except UnicodeDecodeError:
        raise ProfileError(where, "not UTF-8 text, not a PyTorch profiler trace") from None
    except (ValueError, RecursionError) as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ProfileError(where, f"not valid JSON ({detail[:120]})") from None


NO_EVENTS = "JSON without a traceEvents list, not a PyTorch profiler trace"
_SPACE = re.compile(r"[ \t\n\r]*")
_decoder = json.JSONDecoder()


def _streamed(text: str, where: str) -> tuple[dict, Iterable]:
    """The top-level object read key by key with the standard library, the events parsed
    one at a time as they are iterated, so no list of every event's dict is ever held.
    The keys after ``traceEvents`` are in the document once the events are consumed; a
    document without ``traceEvents`` raises when the events are."""
    document: dict = {}
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[at : at + 1] != "{":
        raise ProfileError(where, NO_EVENTS)
    return document, _document_events(text, at + 1, document, where)


def _document_events(text: str, at: int, document: dict, where: str) -> Iterator:
    found = False
    while True:
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at : at + 1] == "}":
            break
        key, at = _decoder.raw_decode(text, at)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at : at + 1] != ":":
            raise ValueError(f"Expecting ':' delimiter: char {at}")
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        if key == "traceEvents" and text[at : at + 1] == "[":
            found = True
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
            while text[at : at + 1] != "]":
                item, at = _decoder.raw_decode(text, at)
                yield item
                at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
                if text[at : at + 1] == ",":
                    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                elif text[at : at + 1] != "]":
                    raise ValueError(f"Expecting ',' delimiter: char {at}")
            at += 1
        else:
            document[key], at = _decoder.raw_decode(text, at)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at : at + 1] == ",":
            at += 1
        elif text[at : at + 1] != "}":
            raise ValueError(f"Expecting ',' delimiter: char {at}")
    if not found:
        raise ProfileError(where, NO_EVENTS)


class _Codes:
    """Distinct values numbered in order of first appearance."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}

    def __call__(self, value: Any) -> int:
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.index)
        return code

    @property
    def values(self) -> list:
        return list(self.index)


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return NO_VALUE
    if isinstance(value, int):
        return value if abs(value) < 2**63 else NO_VALUE
    if isinstance(value, float) and value == value and abs(value) < 2**62:
        return int(value)
    if isinstance(value, str):
        try:
            number = int(value, 0)
        except ValueError:
            return NO_VALUE
        return number if abs(number) < 2**63 else NO_VALUE
    return NO_VALUE


def _number(value: Any) -> float:
    """A flops/bytes arg: 0 unless a finite number, at most MAX_MAGNITUDE in magnitude."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an int beyond float
            return 0.0
        return max(-MAX_MAGNITUDE, min(number, MAX_MAGNITUDE)) if math.isfinite(number) else 0.0
    return 0.0


def read_trace(
    path: str | os.PathLike, data: bytes | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> TraceEvents:
    """The trace's complete events as columns (see ``TraceEvents``); ``data``: the file's
    bytes when the caller read them; ``max_bytes`` bounds the file and its unpacked text."""
    where = os.fspath(path)
    # Millions of small containers (event dicts, shape lists) are made and mostly dropped
    # here, none in a cycle: the cyclic collector's passes over them would only cost time.
    enabled = gc.isenabled()
    gc.disable()
    try:
        document, events = load_document(where, data, max_bytes)
        return _columns(events, document, where)
    except UnicodeDecodeError:
        raise ProfileError(where, "not UTF-8 text, not a PyTorch profiler trace") from None
    except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ProfileError(where, f"not valid JSON ({detail[:120]})") from None
    except (TypeError, OverflowError) as error:
        raise ProfileError(where, f"malformed trace event ({error})") from None
    finally:
        if enabled:
            gc.enable()


CHUNK_EVENTS = 1 << 16  # events held as Python values before they become arrays
# Per-event columns: (name, how a chunk of raw values becomes an array).
_COLUMNS: dict[str, Callable[[list], np.ndarray]] = {
    "name": lambda v: np.asarray(v, np.int32),
    "category": lambda v: np.asarray(v, np.int32),
    "pid": lambda v: np.asarray(v, np.int64),
    "thread": lambda v: np.asarray(v, np.int64),
    "begin_us": lambda v: np.asarray(v, np.float64),
    "dur_us": lambda v: np.asarray(v, np.float64),
    "correlation": lambda v: _integers(v),
    "external_id": lambda v: _integers(v),
    "device": lambda v: _integers(v),
    "flops": lambda v: _floats(v),
    "bytes": lambda v: _floats(v),
    "sequence": lambda v: _integers(v),
}


def _columns(events: Iterable, document: dict, where: str) -> TraceEvents:
    """One pass over the events; every CHUNK_EVENTS events the Python values become arrays,
    so the values held at once stay bounded whatever the trace's size."""
    names, categories, pids, threads = _Codes(), _Codes(), _Codes(), _Codes()
    values: dict[str, list] = {key: [] for key in _COLUMNS}
    parts: dict[str, list[np.ndarray]] = {key: [] for key in _COLUMNS}
    name, category, pid, thread = (
        values["name"],
        values["category"],
        values["pid"],
        values["thread"],
    )
    begin_us, dur_us = values["begin_us"], values["dur_us"]
    correlation, external, device = values["correlation"], values["external_id"], values["device"]
    flops, nbytes, sequence = values["flops"], values["bytes"], values["sequence"]
    op_rows: list[int] = []
    op_dims: list[Any] = []
    op_types: list[Any] = []
    op_concrete: list[Any] = []
    op_stack: list[int] = []
    stacks = _Codes()
    stacks("")
    stack_code = stacks.index.get
    for op_category in OP_CATEGORIES:  # codes 0..len-1: one comparison tells a CPU op
        categories(op_category)
    op_codes = len(OP_CATEGORIES)
    range_code = categories(RANGE_CATEGORY)
    range_rows: list[int] = []
    range_args: list[dict] = []
    # Known values' codes looked up without a call (millions of events).
    name_code, category_code = names.index.get, categories.index.get
    pid_code, thread_code = pids.index.get, threads.index.get
    empty: dict = {}
    done = 0  # events already in ``parts``
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        ts, dur = event.get("ts"), event.get("dur", 0)
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
            continue
        args = event.get("args", empty)
        if not isinstance(args, dict):
            args = empty
        value = event.get("cat", "")
        cat = category_code(value)
        if cat is None:
            cat = categories(value)
        if cat < op_codes:
            op_rows.append(done + len(name))
            op_dims.append(args.get("Input Dims"))
            op_types.append(args.get("Input type"))
            op_concrete.append(args.get("Concrete Inputs"))
            value = args.get("Call stack", "")
            code = stack_code(value) if isinstance(value, str) else 0
            op_stack.append(stacks(value) if code is None else code)
        elif cat == range_code:
            range_rows.append(done + len(name))
            range_args.append(args)
        value = event.get("name", "")
        code = name_code(value)
        name.append(names(value) if code is None else code)
        category.append(cat)
        value = event.get("pid")
        code = pid_code(value)
        pid.append(pids(value) if code is None else code)
        value = (value, event.get("tid"))
        code = thread_code(value)
        thread.append(threads(value) if code is None else code)
        begin_us.append(ts)
        dur_us.append(dur)
        correlation.append(args.get("correlation", NO_VALUE))
        value = args.get("External id", _MISSING)
        external.append(args.get("external id", NO_VALUE) if value is _MISSING else value)
        device.append(args.get("device", NO_VALUE))
        flops.append(args.get("flops", 0))
        nbytes.append(args.get("bytes", 0))
        sequence.append(args.get("Sequence number", NO_VALUE))
        if len(name) == CHUNK_EVENTS:
            done += len(name)
            for key, convert in _COLUMNS.items():
                parts[key].append(convert(values[key]))
                values[key].clear()
    for key, convert in _COLUMNS.items():
        parts[key].append(convert(values[key]))
    column = {key: np.concatenate(chunks) for key, chunks in parts.items()}
    del parts, values
    column["category"], category_names = _modern_categories(column["category"], categories.values)
    # Integer microseconds (older Kineto) are exact in float64 up to 2^53; times are made
    # relative before scaling so nanosecond fractions survive.
    ts_us = column.pop("begin_us")
    dur_us = np.maximum(column.pop("dur_us"), 0.0)  # NaN stays NaN
    base = _check_times(ts_us, dur_us, where)
    begin_ns = np.rint((ts_us - base) * 1000.0).astype(np.int64)
    del ts_us
    dur_ns = np.rint(dur_us * 1000.0).astype(np.int64)
    counter_names, counter_range, counter_name, counter_value = _counters(range_args)
    del range_args
    return TraceEvents(
        **column,
        names=[str(n) for n in names.values],
        categories=category_names,
        begin_ns=begin_ns,
        dur_ns=dur_ns,
        pids=pids.values,
        threads=threads.values,
        op_rows=np.asarray(op_rows, np.int64),
        op_dims=_objects(op_dims),
        op_types=_objects(op_types),
        op_concrete=_objects(op_concrete),
        range_rows=np.asarray(range_rows, np.int64),
        counter_names=counter_names,
        counter_range=counter_range,
        counter_name=counter_name,
        counter_value=counter_value,
        op_stack=np.asarray(op_stack, np.int32),
        stacks=stacks.values,
        base_us=base,
        device_properties=_device_properties(document),
        metadata={
            k: v for k, v in document.items() if k not in ("deviceProperties", "computeProperties")
        },
    )


def _counters(range_args: list[dict]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The ranges' numeric args as (names, range index, name index, value) entries; a value
    that is not a finite number (or beyond MAX_MAGNITUDE) is NaN."""
    names: dict[str, int] = {}
    where: list[int] = []
    which: list[int] = []
    values: list[float] = []
    for i, args in enumerate(range_args):
        for key, value in args.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            where.append(i)
            which.append(names.setdefault(str(key), len(names)))
            number = _number(value)
            values.append(number if number or value == 0 else math.nan)
    return (
        list(names),
        np.asarray(where, np.int64),
        np.asarray(which, np.int64),
        np.asarray(values, np.float64),
    )


def _modern_categories(codes: np.ndarray, raw: list) -> tuple[np.ndarray, list[str]]:
    """The category column and names under today's names (``MODERN_CATEGORIES``), with
    only the categories events have: the mapping is worked out on the distinct codes,
    then applied to the column in one lookup."""
    used = np.bincount(codes, minlength=len(raw)) > 0
    names: list[str] = []
    lookup = np.full(len(raw), -1, np.int32)
    for code in np.flatnonzero(used).tolist():
        name = str(raw[code])
        name = MODERN_CATEGORIES.get(name.lower(), name)
        if name not in names:
            names.append(name)
        lookup[code] = names.index(name)
    if np.array_equal(lookup[used], np.arange(len(raw), dtype=np.int32)[used]):
        return codes, names
    return lookup[codes], names


def _device_properties(document: dict) -> list[dict]:
    """``deviceProperties`` (or older Kineto's ``computeProperties``), one dict per device,
    with today's keys (``MODERN_PROPERTIES``)."""
    properties = document.get("deviceProperties")
    if properties is None:
        properties = document.get("computeProperties")
    if not isinstance(properties, list):
        return []
    return [_modern_keys(p) for p in properties if isinstance(p, dict)]


def _modern_keys(device: dict) -> dict:
    """One device's properties, an older key renamed unless today's is there too."""
    renamed = {}
    for key, value in device.items():
        modern = MODERN_PROPERTIES.get(key)
        renamed[modern if modern is not None and modern not in device else key] = value
    return renamed


def _check_times(ts_us: np.ndarray, dur_us: np.ndarray, where: str) -> float:
    """The first event's time (us); a ProfileError when a time is not a finite number or the
    events span more than MAX_SPAN_US (their nanoseconds would not fit int64 sums)."""
    if not len(ts_us):
        return 0.0
    finite = np.isfinite(ts_us) & np.isfinite(dur_us)
    if not finite.all():
        at = int(np.flatnonzero(~finite)[0])
        raise ProfileError(
            where, f"an event's ts or dur is not a finite number (ts {ts_us[at]}, dur {dur_us[at]})"
        )
    base = float(ts_us.min())
    span = float((ts_us + dur_us).max()) - base
    if not span <= MAX_SPAN_US:
        raise ProfileError(
            where,
            f"events span {span / 1e6:.3g} s (ts {base:.6g} to {base + span:.6g} us), more than "
            "a day: corrupt times, not one profiler capture",
        )
    return base


def _integers(values: list) -> np.ndarray:
    """int64 column; values that are not integers (strings, floats, null) one by one."""
    try:
        column = np.asarray(values, np.int64)
        if column.ndim == 1:
            return column
    except (TypeError, ValueError, OverflowError):
        pass
    return np.fromiter((_int(v) for v in values), np.int64, count=len(values))


def _floats(values: list) -> np.ndarray:
    try:
        column = np.asarray(values, np.float64)
        if column.ndim == 1 and (np.abs(column) <= MAX_MAGNITUDE).all():  # False for NaN
            return column
    except (TypeError, ValueError, OverflowError):
        pass
    return np.fromiter((_number(v) for v in values), np.float64, count=len(values))


def _objects(values: list) -> np.ndarray:
    return np.fromiter(values, dtype=object, count=len(values))
