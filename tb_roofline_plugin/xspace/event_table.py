"""The events of one line as numpy columns, decoded without a Python object per event.

With the compiled decoder (``_wire.c``, built by setup.py where a compiler is available)
a line is decoded in one C pass straight from its bytes in the file (a ``LineView`` of
profile_reader), whatever its stats; readers may ask for only some stats and for long
lines in pieces (``line_tables``); strings are built only when read.

Without it (or with ``TB_ROOFLINE_PURE=1``; tests compare the two), the line's events are
taken as raw bytes (``XLineLite`` in ``proto/xplane_lite.proto``). When every stat of a
line is varint-valued (ids, int64/uint64, refs), an event is nothing but varints: tags,
values and the lengths of its stats, so all of a line's events are decoded at once with
array operations. Lines with double or string stats (and full ``XLine`` messages) take the
per-event path, which gives the same table.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from ..arrays import unique
from ..protos import xplane_pb2

_wire: Any
try:
    from . import _wire  # type: ignore[attr-defined,no-redef]
except ImportError:  # built without a C compiler: the numpy/protobuf path does everything
    _wire = None

# Stat value kinds.
INT, DOUBLE, REF, STR, BYTES = 1, 2, 3, 4, 5
_STAT_KIND = {
    "int64_value": INT,
    "uint64_value": INT,
    "double_value": DOUBLE,
    "ref_value": REF,
    "str_value": STR,
    "bytes_value": BYTES,
}
_VARINT_KIND = {3: INT, 4: INT, 7: REF}  # XStat field numbers of varint values
CHUNK_BYTES = 4 << 20  # events decoded per batch, to keep temporary arrays small
CHUNK_EVENTS = 1 << 20  # events per piece when a long line is read in pieces
MAX_MAGNITUDE = 1e200  # stat values beyond this are corrupt; keeps every sum finite
MAX_TIME_PS = 1 << 62  # line timestamps beyond this overflow the ps time base
PURE_ENV = "TB_ROOFLINE_PURE"  # set to 1: decode without the compiled decoder
_EMPTY_I64 = np.zeros(0, np.int64)
_EVENT_PARSE_ERROR = "Error parsing message with type 'tensorflow.profiler.XEvent'"


def compiled_decoder() -> bool:
    """Whether lines are decoded by the compiled decoder (built, and not turned off)."""
    return _wire is not None and os.environ.get(PURE_ENV, "") in ("", "0")


@dataclass
class EventTable:
    """Events (times in ps on the line's base) and their stats as flat columns."""

    metadata_id: np.ndarray
    begin_ps: np.ndarray
    duration_ps: np.ndarray
    occurrences: np.ndarray
    stat_event: np.ndarray  # event index of each stat
    stat_id: np.ndarray  # stat metadata id
    stat_kind: np.ndarray  # INT, DOUBLE, REF, STR or BYTES
    stat_int: np.ndarray  # int64 bits (INT, REF: the referenced stat metadata id)
    stat_float: np.ndarray  # DOUBLE values
    stat_objects: list  # STR/BYTES values, indexed by stat_int

    def __len__(self) -> int:
        return len(self.metadata_id)

    @property
    def end_ps(self) -> np.ndarray:
        return self.begin_ps + self.duration_ps

    def _rows(self, stat_id: int | None) -> np.ndarray:
        if stat_id is None:
            return _EMPTY_I64
        return np.flatnonzero(self.stat_id == stat_id)

    def integers(self, stat_id: int | None) -> tuple[np.ndarray, np.ndarray]:
        """(present, int64 bits) per event of an integer stat (uint64 ids keep their bits)."""
        present = np.zeros(len(self), bool)
        values = np.zeros(len(self), np.int64)
        rows = self._rows(stat_id)
        rows = rows[self.stat_kind[rows] == INT]
        present[self.stat_event[rows]] = True
        values[self.stat_event[rows]] = self.stat_int[rows]
        return present, values

    def numbers(self, stat_id: int | None) -> np.ndarray:
        """float64 per event of a numeric stat (int or double); NaN where absent."""
        values = np.full(len(self), np.nan)
        rows = self._rows(stat_id)
        ints = rows[self.stat_kind[rows] == INT]
        values[self.stat_event[ints]] = self.stat_int[ints]
        doubles = rows[self.stat_kind[rows] == DOUBLE]
        values[self.stat_event[doubles]] = self.stat_float[doubles]
        values[np.isinf(values)] = np.nan  # corrupt values count as absent
        return np.clip(values, -MAX_MAGNITUDE, MAX_MAGNITUDE)

    def strings(self, stat_id: int | None, names: dict[int, str]) -> np.ndarray:
        """object per event of a string stat (ref values resolved through ``names``); None."""
        values = np.full(len(self), None, object)
        rows = self._rows(stat_id)
        refs = rows[self.stat_kind[rows] == REF]
        if len(refs):
            ids, inverse = unique(self.stat_int[refs], return_inverse=True)
            resolved = np.array([names.get(int(i), "") for i in ids], object)
            values[self.stat_event[refs]] = resolved[inverse]
        for row in rows[self.stat_kind[rows] == STR].tolist():
            values[self.stat_event[row]] = self.stat_objects[self.stat_int[row]]
        return values

    def string_codes(self, stat_id: int | None, names: dict[int, str]) -> tuple[np.ndarray, list]:
        """``strings`` factorized: (int64 code per event, -1 where absent; distinct values).

        ``values[codes[i]] == strings(stat_id, names)[i]`` wherever ``codes[i] >= 0``; the
        values are distinct, in order of first appearance among ref ids, then strings.
        Refs are resolved once per distinct id, with no Python object per event.
        """
        codes = np.full(len(self), -1, np.int64)
        rows = self._rows(stat_id)
        index: dict[str, int] = {}
        refs = rows[self.stat_kind[rows] == REF]
        if len(refs):
            ids, inverse = unique(self.stat_int[refs], return_inverse=True)
            resolved = [names.get(int(i), "") for i in ids.tolist()]
            id_codes = np.array([index.setdefault(v, len(index)) for v in resolved], np.int64)
            codes[self.stat_event[refs]] = id_codes[inverse.reshape(-1)]
        for row in rows[self.stat_kind[rows] == STR].tolist():
            value = self.stat_objects[self.stat_int[row]]
            codes[self.stat_event[row]] = index.setdefault(value, len(index))
        return codes, list(index)


class _WireObjects(Sequence):
    """The str/bytes stat values of a line decoded in C, built from the event bytes on read.

    Object ``i`` is the bytes ``[start[i], start[i] + length[i])`` of event ``event[i]`` (of
    the line's bytes, for a line decoded whole);
    str values were checked to be valid UTF-8 by the decoder.
    """

    def __init__(
        self,
        events: list,
        event: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        is_str: np.ndarray,
        buffer: memoryview | None = None,
    ) -> None:
        self._events = events
        self._buffer = buffer  # the line's bytes, when starts count from the line's start
        self._columns = (event, start, length, is_str)
        self._lists: tuple[list, ...] | None = None  # the columns as lists, once read

    def __len__(self) -> int:
        return len(self._columns[0])

    def __getitem__(self, index):  # an int: str | bytes; a slice: a list of them
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._lists is None:
            self._lists = tuple(column.tolist() for column in self._columns)
        event, start, length, is_str = self._lists
        source = self._buffer if self._buffer is not None else self._events[event[index]]
        raw = source[start[index] : start[index] + length[index]]
        raw = raw if isinstance(raw, bytes) else bytes(raw)
        return raw.decode("utf-8") if is_str[index] else raw


class _NotVarints(Exception):
    """The bytes hold a double, a string or a malformed field: use the per-event path."""


def _decode_varints(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All varints of ``buf`` (which must be nothing but varints): (values, start offsets).

    One pass per byte position within a varint: most varints are one or two bytes long,
    so the later passes touch few elements.
    """
    if len(buf) == 0:
        return np.zeros(0, np.uint64), _EMPTY_I64
    last = np.flatnonzero(buf < 0x80)
    if len(last) == 0 or last[-1] != len(buf) - 1:
        raise _NotVarints("unterminated varint")
    starts = np.empty_like(last)
    starts[0] = 0
    starts[1:] = last[:-1] + 1
    sizes = last - starts + 1
    if sizes.max() > 10:
        raise _NotVarints("varint longer than 10 bytes")
    values = (buf[starts] & 0x7F).astype(np.uint64)
    longer = np.flatnonzero(sizes > 1)
    for j in range(1, int(sizes.max())):
        longer = longer[sizes[longer] > j]
        byte = (buf[starts[longer] + j] & 0x7F).astype(np.uint64)
        values[longer] |= byte << np.uint64(7 * j)
    return values, starts


def _decode_chunk(events: list[bytes]) -> tuple:
    """Decodes events whose fields and stats are all varints, or raises _NotVarints."""
    lengths = np.fromiter(map(len, events), np.int64, len(events))
    buf = np.frombuffer(b"".join(events), np.uint8)
    values, positions = _decode_varints(buf)
    if len(values) % 2:
        raise _NotVarints("odd number of varints")
    tags, vals = values[0::2], values[1::2]
    tag_pos = positions[0::2]
    wire = (tags & np.uint64(7)).astype(np.int64)
    field = (tags >> np.uint64(3)).astype(np.int64)
    if np.any((wire != 0) & (wire != 2)):
        raise _NotVarints("a fixed-width field (double stat)")
    if np.any(field == 0) or np.any(tags > np.uint64(0xFFFFFFFF)):
        raise _NotVarints("an invalid tag (protobuf rejects it)")
    # A LEN field's content is the pairs up to the byte where it ends: they are one deeper.
    is_len = wire == 2
    content_end = positions[1::2][is_len] + np.diff(np.append(positions, len(buf)))[1::2][is_len]
    content_end = content_end + vals[is_len].astype(np.int64)
    first = np.flatnonzero(is_len) + 1
    last = np.searchsorted(tag_pos, content_end)
    aligned = np.append(tag_pos, len(buf))[last] == content_end
    if not aligned.all():
        raise _NotVarints("a length does not end on a field")
    steps = np.bincount(first, minlength=len(tags) + 1)[: len(tags) + 1]
    steps = steps - np.bincount(last, minlength=len(tags) + 1)[: len(tags) + 1]
    depth = np.cumsum(steps[:-1])
    if np.any(depth > 1) or np.any(is_len & (depth != 0)) or np.any(is_len & (field != 4)):
        raise _NotVarints("a string or nested stat value")
    if len(positions) == 0:
        raise _NotVarints("only empty events")
    event_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    first_varint = np.searchsorted(positions, event_start)
    if np.any(positions[np.minimum(first_varint, len(positions) - 1)] != event_start) or np.any(
        first_varint % 2
    ):
        raise _NotVarints("an event does not start on a field")
    counts = np.diff(np.append(first_varint, len(positions))) // 2
    event_of = np.repeat(np.arange(len(events)), counts)
    n = len(events)
    top = depth == 0
    columns = {}
    for number in (1, 2, 3, 5):
        col = np.zeros(n, np.int64)
        rows = top & (field == number)
        col[event_of[rows]] = vals[rows].astype(np.int64)
        columns[number] = col
    oneof = top & ((field == 2) | (field == 5))  # XEvent.data: the last one on the wire wins
    if np.any(np.bincount(event_of[oneof], minlength=n) > 1):
        raise _NotVarints("offset_ps and num_occurrences repeated or both set")
    header = top & is_len  # one per stat
    stat_index = np.cumsum(header) - 1
    inner = depth == 1
    count = int(header.sum())
    stat_event = event_of[header]
    stat_id = np.zeros(count, np.int64)
    rows = inner & (field == 1)
    stat_id[stat_index[rows]] = vals[rows].astype(np.int64)
    stat_kind = np.zeros(count, np.int8)
    stat_int = np.zeros(count, np.int64)
    values = inner & np.isin(field, list(_VARINT_KIND))  # XStat.value: the last one wins
    if np.any(np.bincount(stat_index[values], minlength=count) > 1):
        raise _NotVarints("a stat with more than one value")
    for number, kind in _VARINT_KIND.items():
        rows = inner & (field == number)
        stat_kind[stat_index[rows]] = kind
        stat_int[stat_index[rows]] = vals[rows].astype(np.int64)
    return columns, stat_event, stat_id, stat_kind, stat_int


def _chunks(events) -> list[list[bytes]]:
    """The events in batches of about CHUNK_BYTES (no Python loop over the events)."""
    events = list(events)
    ends = np.cumsum(np.fromiter(map(len, events), np.int64, len(events)))
    if len(ends) == 0:
        return []
    cuts = np.searchsorted(ends, np.arange(CHUNK_BYTES, ends[-1], CHUNK_BYTES), side="right")
    bounds = [0, *np.unique(cuts).tolist(), len(events)]
    return [events[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def _fast_table(events, timestamp_ns: int) -> EventTable:
    parts, stats, offset = [], [], 0
    for chunk in _chunks(events):
        columns, stat_event, stat_id, stat_kind, stat_int = _decode_chunk(chunk)
        parts.append(columns)
        stats.append((stat_event + offset, stat_id, stat_kind, stat_int))
        offset += len(chunk)
    if not parts:
        return _table([], [], [], [], (_EMPTY_I64,) * 4, [], timestamp_ns)
    cat = [np.concatenate([p[k] for p in parts]) for k in (1, 2, 3, 5)]
    stat_cols = tuple(np.concatenate([s[i] for s in stats]) for i in range(4))
    return _table(cat[0], cat[1], cat[2], cat[3], stat_cols, [], timestamp_ns)


def _compiled_line_table(
    raw: memoryview, timestamp_ns: int, start: int = 0, limit: int = -1, wanted=None
) -> tuple[EventTable, int]:
    """The table from one C pass over a serialized XLine (no bytes object per event), from
    byte ``start`` for at most ``limit`` events; and the byte offset to go on from."""
    decoded = _wire_call(_wire.decode_line, raw, start, limit, wanted)
    columns = [np.frombuffer(column, np.int64) for column in decoded[:4]]
    table = _wire_table(columns, decoded[4:12], timestamp_ns, buffer=raw)
    return table, decoded[12]


def line_tables(
    line, stat_ids=None, chunk_events: int = CHUNK_EVENTS, read_up_to=None, start: int = 0
) -> Iterator[EventTable]:
    """The events of ``line`` in pieces of at most ``chunk_events``, with only the stats
    ``stat_ids`` (None: all), so memory holds one piece whatever the line's size; from
    byte ``start`` of a line read from the file's bytes (where an earlier reader stopped).

    For readers whose events are independent of each other (steps, launches, kernels).
    Without the compiled decoder, or for decoded messages, one table of the whole line.
    ``read_up_to(line, end)``, where given, is told before each next piece is decoded that
    the line's bytes before ``end`` are read for good (the reader is done with the pieces
    before: ``Profile.done_with_line``).
    """
    raw = getattr(line, "raw", None)
    if raw is None or not compiled_decoder():
        yield line_table(line)
        return
    wanted = None
    if stat_ids is not None:
        wanted = np.asarray([i for i in stat_ids if i is not None], np.int64).tobytes()
    while True:
        table, start = _compiled_line_table(raw, line.timestamp_ns, start, chunk_events, wanted)
        yield table
        if start >= len(raw):
            return
        if read_up_to is not None:
            read_up_to(line, start)


def _compiled_table(events, timestamp_ns: int) -> EventTable:
    """The table from one C pass over the raw events (any stat kind).

    A malformed event raises DecodeError, as decoding it with ``XEvent.FromString`` does.
    """
    events = events if isinstance(events, list) else list(events)
    decoded = _wire_call(_wire.decode_events, events)
    columns = np.frombuffer(decoded[0], np.int64).reshape(4, len(events))
    return _wire_table(columns, decoded[1:9], timestamp_ns, events=events)


def _wire_call(decode, *args) -> tuple:
    """A call of the compiled decoder; malformed input is a DecodeError, as in protobuf."""
    try:
        return decode(*args)
    except _wire.WireError as exc:
        raise DecodeError(f"{_EVENT_PARSE_ERROR}: {exc}") from None


def _wire_table(event_columns, stats: tuple, timestamp_ns: int, events=None, buffer=None):
    """An EventTable from the compiled decoder's output: the four event columns (arrays),
    then its stat and string columns (the strings in ``events``, or in the line's
    ``buffer``)."""
    stat_event, stat_id, stat_int, stat_float, obj_event, obj_start, obj_length = (
        np.frombuffer(stats[i], np.float64 if i == 4 else np.int64) for i in (0, 1, 3, 4, 5, 6, 7)
    )
    stat_kind = np.frombuffer(stats[2], np.int8)
    is_str = stat_kind[stat_kind >= STR] == STR
    objects = _WireObjects(events, obj_event, obj_start, obj_length, is_str, buffer=buffer)
    metadata_id, offset, duration, occurrences = event_columns
    stat_cols = (stat_event, stat_id, stat_kind, stat_int)
    table = _table(metadata_id, offset, duration, occurrences, stat_cols, objects, timestamp_ns)
    table.stat_float = stat_float
    return table


def _table(
    metadata_id, offset, duration, occurrences, stat_cols, objects, timestamp_ns: int
) -> EventTable:
    if abs(int(timestamp_ns)) * 1000 > MAX_TIME_PS:
        raise ValueError(f"line timestamp {timestamp_ns} ns is out of range")
    occurrences = np.asarray(occurrences, np.int64)
    offset = np.asarray(offset, np.int64)
    duration = np.asarray(duration, np.int64)
    if np.any(np.abs(offset) > MAX_TIME_PS) or np.any((duration < 0) | (duration > MAX_TIME_PS)):
        raise ValueError("an event time or duration is out of range")
    stat_event, stat_id, stat_kind, stat_int = stat_cols
    return EventTable(
        metadata_id=np.asarray(metadata_id, np.int64),
        begin_ps=np.asarray(offset, np.int64) + timestamp_ns * 1000,
        duration_ps=np.asarray(duration, np.int64),
        occurrences=np.where(occurrences > 0, occurrences, 1),
        stat_event=np.asarray(stat_event, np.int64),
        stat_id=np.asarray(stat_id, np.int64),
        stat_kind=np.asarray(stat_kind, np.int8),
        stat_int=np.asarray(stat_int, np.int64),
        stat_float=np.zeros(len(stat_event)),
        stat_objects=objects,
    )


def _slow_table(events, timestamp_ns: int) -> EventTable:
    """The same table from XEvent messages, one at a time (any stat kind)."""
    mids, offsets, durations, occurrences = [], [], [], []
    stat_event, stat_id, stat_kind, stat_int, stat_float = [], [], [], [], []
    objects: list = []
    for i, event in enumerate(events):
        mids.append(event.metadata_id)
        offsets.append(event.offset_ps)
        durations.append(event.duration_ps)
        occurrences.append(event.num_occurrences)
        for stat in event.stats:
            which = stat.WhichOneof("value")
            kind = _STAT_KIND.get(which, 0)
            stat_event.append(i)
            stat_id.append(stat.metadata_id)
            stat_kind.append(kind)
            value = getattr(stat, which) if which else 0
            if kind == DOUBLE:
                stat_int.append(0)
                stat_float.append(value)
                continue
            if kind in (STR, BYTES):
                stat_int.append(len(objects))
                objects.append(value)
            else:
                stat_int.append(value if value < (1 << 63) else value - (1 << 64))
            stat_float.append(0.0)
    table = _table(
        mids,
        offsets,
        durations,
        occurrences,
        (stat_event, stat_id, stat_kind, stat_int),
        objects,
        timestamp_ns,
    )
    table.stat_float = np.asarray(stat_float, np.float64)
    return table


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def may_have_stats(line, stat_ids: list[int | None]) -> bool:
    """False when no event of the line can carry any of these stats (a cheap byte search).

    The compiled decoder walks the events' stats without decoding them (exact, malformed
    lines True). Otherwise looks for the stat's ``metadata_id`` field (tag 0x08 and the id)
    in the raw events; a false positive only costs decoding the line. Lines of full XLine
    messages: True.
    """
    raw = getattr(line, "raw", None)  # a LineView: search the line's bytes in the file
    wanted = [i for i in stat_ids if i is not None]
    if raw is not None and compiled_decoder():  # exact: the stats' ids, event by event
        ids = np.array([i & 0xFFFF_FFFF_FFFF_FFFF for i in wanted], np.uint64)
        return bool(wanted) and _wire.line_has_stats(raw, 0, len(raw), ids)
    if raw is not None and getattr(line, "base", None) is not None:
        span = (line.offset, line.offset + len(raw))
        needles = [b"\x08" + _varint_bytes(i) for i in stat_ids if i is not None]
        return any(line.base.find(needle, *span) >= 0 for needle in needles)
    if raw is not None:
        raw = bytes(raw)
    else:
        events = line.events
        if not len(events) or not isinstance(events[0], (bytes, bytearray, memoryview)):
            return True
        raw = b"".join(events)
    return any(b"\x08" + _varint_bytes(i) in raw for i in stat_ids if i is not None)


def line_table(line, full_line: xplane_pb2.XLine | None = None) -> EventTable:
    """The events of ``line`` (an XLineLite or an XLine) as columns.

    With the compiled decoder every XLineLite is decoded from its raw events in C.
    Otherwise, for an XLineLite whose events hold doubles or strings, ``full_line`` (the
    same line decoded as an XLine) is read event by event; without it the raw event bytes
    are decoded one by one. A malformed event raises DecodeError either way.
    """
    raw = getattr(line, "raw", None)  # a LineView: the line's bytes in the file
    if raw is not None and compiled_decoder():
        return _compiled_line_table(raw, line.timestamp_ns)[0]
    events = line.events
    if len(events) and isinstance(events[0], (bytes, bytearray, memoryview)):
        if compiled_decoder():
            return _compiled_table(events, line.timestamp_ns)
        try:
            return _fast_table(events, line.timestamp_ns)
        except _NotVarints:
            if full_line is not None:
                return _slow_table(full_line.events, line.timestamp_ns)
            decoded = [xplane_pb2.XEvent.FromString(e) for e in events]
            return _slow_table(decoded, line.timestamp_ns)
    return _slow_table(events, line.timestamp_ns)


def first_seen_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code per element, distinct keys in first-seen order) of an integer array."""
    distinct, first, inverse = unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return rank[inverse.ravel()], distinct[order]


class StringCodes:
    """Numbers the distinct strings of a stat (``None``: absent) across lines."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.parts: list[np.ndarray] = []

    def _code(self, text) -> int:
        return self.index.setdefault(text, len(self.index))

    def add(self, table: EventTable, stat_id: int | None, names: dict[int, str]) -> None:
        """The codes of one line's events: as ``table.strings``, without a str per event."""
        local, values = table.string_codes(stat_id, names)
        mapping = np.asarray([self._code(v) for v in values] + [-1], np.int32)
        self.parts.append(mapping[local])  # local -1 (absent) picks the trailing -1

    def add_distinct(self, texts: list[str], inverse: np.ndarray) -> None:
        """The codes of one line's events, given as distinct ``texts`` and each one's index."""
        resolved = np.asarray([self._code(t) for t in texts], np.int32)
        self.parts.append(resolved[inverse])

    def factorized(self) -> tuple[np.ndarray, list]:
        """(int32 code per event of all lines, distinct values in first-seen order).

        Renumbered part by part (no sort over all events): a value's number is its rank
        of first appearance; -1 (absent) stands for None.
        """
        texts = list(self.index)
        rank = np.full(len(texts) + 1, -1, np.int32)  # rank[-1]: the absent value
        order: list[int] = []
        for part in self.parts:
            distinct, first = unique(part, return_index=True)
            seen_first = distinct[np.argsort(first, kind="stable")]
            new = seen_first[rank[seen_first] < 0]
            rank[new] = np.arange(len(order), len(order) + len(new), dtype=np.int32)
            order.extend(new.tolist())
        codes = np.concatenate([rank[part] for part in self.parts]) if self.parts else rank[:0]
        return codes, [texts[c] if c >= 0 else None for c in order]


def split_message(buf: memoryview, start: int, end: int, number: int, spans: bool = True):
    """(spans of the length-delimited fields ``number`` or None when not asked for, bytes of
    the other fields) of the message in ``buf[start:end]``, by the compiled decoder; None
    without it. Raises ValueError (the decoder's WireError) on malformed input."""
    if not compiled_decoder():
        return None
    return _wire.split_message(buf, start, end, number, spans)


def compiled_span_sums(
    lines: list, stat_ids: list[int | None], window_begin, window_end
) -> tuple | None:
    """``_wire.span_sums`` of lines read from the file's bytes (LineViews): the lines'
    events summed per metadata id and per (window, metadata id) in one pass, as numpy
    columns; None without the compiled decoder, for decoded lines, or where the pass
    leaves the lines to the array path (``_wire.span_sums``' docstring says when)."""
    if not compiled_decoder() or any(getattr(line, "raw", None) is None for line in lines):
        return None
    begin = end = None
    if window_begin is not None:
        begin = np.ascontiguousarray(window_begin, np.int64)
        end = np.ascontiguousarray(window_end, np.int64)
        if len(begin) > 1 and (np.diff(begin) < 0).any():
            return None  # windows out of order: the array path's searchsorted
    raws = [line.raw for line in lines]
    stamps = [int(line.timestamp_ns) for line in lines]
    out = _wire.span_sums(raws, stamps, stat_ids, begin, end)
    if out is None:
        return None
    events, min_begin, max_end = out[:3]
    ids = [
        np.frombuffer(c, np.int64 if k in (0, 3) else np.float64) for k, c in enumerate(out[3:9])
    ]
    cells = [
        np.frombuffer(c, np.int64 if k in (0, 1, 4) else np.float64) for k, c in enumerate(out[9:])
    ]
    return events, min_begin, max_end, ids, cells
