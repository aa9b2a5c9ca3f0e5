"""Reading XSpace profiles (``*.xplane.pb``): only the planes an analysis needs.

The file is walked at the protobuf wire level first: each plane's name is read
without decoding the plane, and only the planes a caller asks for are handed to
protobuf. Host planes with millions of events are skipped at the cost of a few
varint reads. Stats are resolved by name, numeric kinds are interchangeable and
negative ids are masked to uint64, as ``docs/xspace.md`` prescribes.
"""

from __future__ import annotations

import math
import mmap
import os
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Callable, Union

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import ProfileError
from ..files import DEFAULT_MAX_BYTES, read_regular, read_releasable, release_range
from ..protos import xplane_lite_pb2, xplane_pb2
from .discovery import SNIFF_BYTES, TRACE_NAME, looks_like_trace
from .event_table import line_tables, split_message

UINT64_MASK = (1 << 64) - 1
TPU_CORE_PLANE = re.compile(r"^/device:TPU:([0-9]+)$")
GPU_PLANE = re.compile(r"^/device:GPU:([0-9]+)$")
METADATA_PLANE = "/host:metadata"
HOST_PLANE = "/host:CPU"
TASK_ENV_PLANE = "Task Environment"

# Planes one XSpace may hold: a host's file has a plane per device (at most a few hundred)
# and a few host planes; a million empty ones (2 bytes each) would cost a Python object each.
MAX_PLANES = 10_000
TOO_MANY_PLANES = f"not a profile this reader takes: more than {MAX_PLANES:,} planes"

# Decides from a plane's name (and the names of all planes) whether to decode it.
PlaneFilter = Callable[[str, "Sequence[str]"], bool]

_PAST_END = "corrupt or truncated (a field runs past the end of the data)"
_WIRE_VARINT, _WIRE_FIXED64, _WIRE_LEN, _WIRE_FIXED32 = 0, 1, 2, 5
_FOREIGN_MAGIC = (
    (b"\x1f\x8b", "a gzip file"),
    (b"PK\x03\x04", "a zip archive"),
    (b"{", "a JSON document"),
    (b"[", "a JSON document"),
    (b"<", "an XML/HTML document"),
    (b"\x89PNG", "a PNG image"),
)


# A trace in a file named *.xplane.pb (any other name is looked into: discovery.is_trace_file).
TRACE_LOOK = (
    "it looks like a PyTorch profiler trace (JSON), but a file named *.xplane.pb is read as "
    f"XSpace: name it {TRACE_NAME}"
)


def device_planes_only(name: str, all_names: Sequence[str] | None = None) -> bool:
    """Device planes and ``/host:metadata`` (no host events)."""
    return name.startswith("/device:") or name == METADATA_PLANE


def with_host_plane(name: str, all_names: Sequence[str] | None = None) -> bool:
    """Device planes, metadata and the host plane (needed for host steps and CPU ops)."""
    return device_planes_only(name) or name == HOST_PLANE


_last_names: tuple[Sequence[str], bool] = ((), False)  # the last file's names, and the answer


def _has_tpu_planes(names: Sequence[str]) -> bool:
    """Once per file, not once per plane (10,000 planes would cost 10^8 matches): the
    answer for the same names object (decode_profile's tuple) is kept."""
    global _last_names
    last, answer = _last_names
    if last is not names:
        answer = any(TPU_CORE_PLANE.match(n) for n in names)
        _last_names = (names, answer)
    return answer


def analysis_planes(name: str, all_names: Sequence[str]) -> bool:
    """What the roofline needs: the host plane only without TPU planes (GPU steps, CPU ops).

    TPU steps and ops are on the device planes, so a TPU profile's host plane, often the
    biggest part of the file, is skipped undecoded.
    """
    if _has_tpu_planes(all_names):
        return device_planes_only(name)
    return with_host_plane(name)


class LineView:
    """One line: its header decoded, its events decoded from the file's bytes on each read.

    Keeping the line's place in the file instead of its events (a Python bytes object per
    event) keeps a profile's memory close to the size of the file.
    """

    __slots__ = ("id", "display_id", "name", "display_name", "timestamp_ns", "duration_ps",
                 "raw", "base", "offset")  # fmt: skip

    def __init__(
        self, raw: memoryview, base: bytes | mmap.mmap | None = None, offset: int = 0
    ) -> None:
        # The header without the events (field 4): protobuf would walk them all to skip them.
        split = _split(raw, 0, len(raw), 4, spans=False)
        header = xplane_lite_pb2.XLineHeader.FromString(raw if split is None else split[1])
        self.id, self.display_id = header.id, header.display_id
        self.name, self.display_name = header.name, header.display_name
        self.timestamp_ns, self.duration_ps = header.timestamp_ns, header.duration_ps
        self.raw = raw  # the XLine's bytes
        self.base, self.offset = base, offset  # the file's bytes and where the line starts

    @property
    def events(self):
        """The events as raw bytes (decoded now; not kept)."""
        return xplane_lite_pb2.XLineLite.FromString(self.raw).events


class PlaneView:
    """A plane: metadata and stats decoded (an XPlaneLite without lines), lines as LineViews.

    ``metadata_digest`` is a digest of the plane without its lines, id and name: planes with
    the same digest (the cores and hosts of one program) describe their events alike, so
    what a reader derives from the metadata alone can be kept for the next one.
    """

    def __init__(
        self,
        message: xplane_lite_pb2.XPlaneLite,
        lines: list[LineView],
        rest: bytes,
        shared: SharedMetadata | None = None,
        head: xplane_lite_pb2.XPlaneLite | None = None,
    ) -> None:
        self._message = message
        self.lines = lines
        self._rest: bytes | None = None if shared else rest  # the bytes without the lines
        self._shared = shared
        self._digest: bytes | None = None
        if head is not None:  # a message shared with another plane: its own id and name
            self.id, self.name = head.id, head.name

    @property
    def metadata_digest(self) -> bytes:
        """Computed on first use (only TPU core planes are asked), once for planes that
        share their metadata."""
        if self._digest is None:
            if self._shared is not None:
                self._digest = self._shared.digest()
            else:
                self._digest = _tail_digest(_metadata_tail(self._rest or b""))
            self._rest = None
        return self._digest

    def __getattr__(self, name: str):
        return getattr(self._message, name)


class SharedMetadata:
    """A TPU core plane's metadata (all but its lines, id and name), decoded once for the
    planes that have it byte for byte: the cores and hosts of one program (a pod)."""

    def __init__(self, tail: bytes, message: xplane_lite_pb2.XPlaneLite) -> None:
        self.tail = tail
        self.message = message
        self._digest: bytes | None = None

    def digest(self) -> bytes:
        if self._digest is None:
            self._digest = _tail_digest(self.tail)
        return self._digest


SHARED_MIN_BYTES = 4096  # metadata below this is decoded as fast as compared
_SHARED_KEPT = 4  # the metadata of the last few TPU programs read (of any file)
_shared: list[SharedMetadata] = []
_shared_lock = threading.Lock()


def _plane_view(
    buf: memoryview, start: int, end: int, base: bytes | mmap.mmap | None, shareable: bool = False
) -> PlaneView:
    """Splits a plane's lines (field 3) from the rest, which protobuf decodes (or, for a
    ``shareable`` plane of metadata read before, takes decoded)."""
    split = _split(buf, start, end, 3)
    if split is not None:
        spans, rest_bytes = split
        lines = [LineView(buf[s:e], base, s) for s, e in spans]
    else:
        rest, lines, pos = bytearray(), [], start
        for number, wire, vstart, vend in _fields(buf, start, end):
            field_end = vend if wire != _WIRE_VARINT else vstart
            if number == 3 and wire == _WIRE_LEN:
                lines.append(LineView(buf[vstart:vend], base, vstart))
            else:
                rest += buf[pos:field_end]
            pos = field_end
        rest_bytes = bytes(rest)
    at = _shareable_from(rest_bytes) if shareable else None
    if at is not None:
        with _shared_lock:
            kept = list(_shared)
        for shared in kept:  # compared in place, not copied
            if len(shared.tail) == len(rest_bytes) - at and rest_bytes.endswith(shared.tail):
                head = xplane_lite_pb2.XPlaneLite.FromString(rest_bytes[:at])
                return PlaneView(shared.message, lines, rest_bytes, shared, head)
    message = xplane_lite_pb2.XPlaneLite.FromString(rest_bytes)
    if at is None:
        return PlaneView(message, lines, rest_bytes)
    shared = SharedMetadata(rest_bytes[at:], message)
    with _shared_lock:
        _shared.insert(0, shared)
        del _shared[_SHARED_KEPT:]
    return PlaneView(message, lines, rest_bytes, shared)


def _shareable_from(rest: bytes) -> int | None:
    """Where the metadata of a plane's bytes (``rest``: without its lines) starts, if it is
    worth sharing; None if not (small, or malformed: protobuf then says what is wrong)."""
    if len(rest) < SHARED_MIN_BYTES:
        return None
    try:
        return _head_end(rest)
    except _WireError:
        return None


def _head_end(rest: bytes) -> int:
    """Where a plane's leading id and name end (fields 1 and 2, where serializers write
    them; elsewhere they are part of the metadata, which only makes it the plane's own)."""
    view, pos = memoryview(rest), 0
    while pos < len(view) and view[pos] in (0x08, 0x12):  # id (varint), name (bytes)
        tag = view[pos]
        value, pos = _varint(view, pos + 1, len(view))
        if tag == 0x12:
            pos += value
    return min(pos, len(view))


def _metadata_tail(rest: bytes) -> memoryview:
    return memoryview(rest)[_head_end(rest) :]


def _tail_digest(tail) -> bytes:
    try:  # hashlib's own BLAKE2, without hashlib loading OpenSSL (milliseconds of start-up)
        from _blake2 import blake2b
    except ImportError:  # a Python built without it: hashlib's
        from hashlib import blake2b
    return blake2b(tail, digest_size=16).digest()


# A plane as readers take it: decoded whole (tests, demo) or with lines read lazily.
Plane = Union[xplane_pb2.XPlane, PlaneView]


@dataclass
class Profile:
    """The decoded part of one host's XSpace."""

    path: str
    hostnames: list[str]
    planes: list[PlaneView]  # events stay in the file's bytes (event_table.py)
    skipped_planes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Set by the one who owns the file's bytes: lines may go once the readers are done.
    release_lines: bool = False

    def done_reading(self) -> None:
        """The platform reader has read the lines: drop them (and so the file's bytes, which
        they point into) when this profile owns them, so analysis runs without the file."""
        if self.release_lines:
            for plane in self.planes:
                plane.lines = []

    def done_with_line(self, line, end: int | None = None) -> None:
        """The platform reader has read this line for good (``end``: its bytes before
        ``end``): where this profile owns the file's bytes and they were read releasable,
        their pages go now, and a whole line with them (any later read of it fails), so
        that a reader of a large host plane holds the file's bytes it has not read yet and
        what it made of the rest, not both."""
        base = getattr(line, "base", None)
        if not self.release_lines or line.raw is None or not isinstance(base, mmap.mmap):
            return
        read = len(line.raw) if end is None else min(end, len(line.raw))
        release_range(base, line.offset, line.offset + read)
        if end is None:
            line.raw = None

    def plane(self, name: str) -> PlaneView | None:
        return next((p for p in self.planes if p.name == name), None)

    def planes_matching(self, pattern: re.Pattern[str]) -> list[PlaneView]:
        """Planes whose name matches, ordered by the number the pattern captures."""
        found = [(int(m.group(1)), p) for p in self.planes if (m := pattern.match(p.name))]
        return [p for _, p in sorted(found, key=lambda t: t[0])]

    @property
    def all_plane_names(self) -> list[str]:
        return [p.name for p in self.planes] + self.skipped_planes


class _WireError(Exception):
    pass


def _split(buf: memoryview, start: int, end: int, number: int, spans: bool = True):
    """``split_message`` with its errors as this module's (None without the compiled decoder)."""
    try:
        return split_message(buf, start, end, number, spans)
    except ValueError as exc:
        message = str(exc)
        raise _WireError(_PAST_END if "past the end" in message else message) from None


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise _WireError(_PAST_END)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _WireError("corrupt (varint longer than 10 bytes)")


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Yields (field number, wire type, value start, value end or varint value)."""
    pos = start
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise _WireError("corrupt (field number 0)")
        if wire == _WIRE_VARINT:
            value, pos = _varint(buf, pos, end)
            yield number, wire, pos, value
        elif wire == _WIRE_LEN:
            length, pos = _varint(buf, pos, end)
            if pos + length > end:
                raise _WireError(_PAST_END)
            yield number, wire, pos, pos + length
            pos += length
        elif wire in (_WIRE_FIXED64, _WIRE_FIXED32):
            size = 8 if wire == _WIRE_FIXED64 else 4
            if pos + size > end:
                raise _WireError(_PAST_END)
            yield number, wire, pos, pos + size
            pos += size
        else:
            raise _WireError(f"corrupt (invalid wire type {wire})")


def _text(buf: memoryview, start: int, end: int) -> str:
    try:
        return bytes(buf[start:end]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _WireError("corrupt (a name is not valid UTF-8)") from exc


def _plane_name(buf: memoryview, start: int, end: int) -> str:
    for number, wire, vstart, vend in _fields(buf, start, end):
        if number == 2 and wire == _WIRE_LEN:
            return _text(buf, vstart, vend)
    return ""


def decode_profile(
    data: bytes | memoryview | mmap.mmap, path: str = "<bytes>", want: PlaneFilter = analysis_planes
) -> Profile:
    """Decodes the planes ``want`` accepts; raises ProfileError naming ``path`` on bad input."""
    buf = memoryview(data)
    if len(buf) == 0:
        raise ProfileError(path, "empty file (0 bytes), not an XSpace profile")
    profile = Profile(path=path, hostnames=[], planes=[])
    try:
        found: list[tuple[str, int, int]] = []  # (name, start, end) of each plane, in order
        for number, wire, start, end in _fields(buf, 0, len(buf)):
            if wire != _WIRE_LEN:
                continue
            if number == 1:
                if len(found) == MAX_PLANES:
                    raise ProfileError(path, TOO_MANY_PLANES)
                found.append((_plane_name(buf, start, end), start, end))
            elif number in (2, 3, 4):
                target = {2: profile.errors, 3: profile.warnings, 4: profile.hostnames}[number]
                target.append(_text(buf, start, end))
        names = tuple(name for name, _, _ in found)  # a tuple: filters may cache by it
        for name, start, end in found:
            if want(name, names):
                base = data if isinstance(data, (bytes, mmap.mmap)) else None
                shareable = TPU_CORE_PLANE.match(name) is not None
                profile.planes.append(_plane_view(buf, start, end, base, shareable))
            else:
                profile.skipped_planes.append(name)
    except (_WireError, DecodeError) as exc:
        foreign = _foreign(buf)
        if foreign:
            raise ProfileError(path, f"not an XSpace profile: {foreign}") from None
        detail = f"wire format is {exc}" if isinstance(exc, _WireError) else str(exc)
        raise ProfileError(path, f"not a valid XSpace profile: {detail}") from None
    if not profile.planes and not profile.skipped_planes:
        foreign = _foreign(buf) or "no profile planes found"
        raise ProfileError(path, f"not an XSpace profile: {foreign}")
    return profile


def _foreign(buf: memoryview) -> str:
    """What a file that is no XSpace looks like ("" when nothing is recognised)."""
    head = bytes(buf[:SNIFF_BYTES])
    if looks_like_trace(head):
        return TRACE_LOOK
    text = head.lstrip(b" \t\r\n")  # JSON may start with whitespace, other formats not
    for magic, what in _FOREIGN_MAGIC:
        if head.startswith(magic) or (what == "a JSON document" and text.startswith(magic)):
            return f"it looks like {what}"
    return ""


def read_bytes(
    path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES, releasable: bool = False
) -> bytes | mmap.mmap:
    """The bytes of a local regular profile file of at most ``max_bytes``; ProfileError
    naming it when it cannot be read, is no regular file or is larger. ``releasable``: see
    ``read_releasable``."""
    name = os.fspath(path)
    if os.path.isdir(name):
        raise ProfileError(name, "is a directory, expected an .xplane.pb file")
    return read_releasable(name, max_bytes) if releasable else read_regular(name, max_bytes)


def read_profile(
    path: str | os.PathLike, want: PlaneFilter = analysis_planes, release_lines: bool = False
) -> Profile:
    """Reads and decodes one ``.xplane.pb`` file; with ``release_lines`` the file's bytes
    are let go once the platform reader is done with the lines (``done_reading``)."""
    profile = decode_profile(read_bytes(path, releasable=release_lines), os.fspath(path), want)
    profile.release_lines = release_lines
    return profile


# --- stats -----------------------------------------------------------------------------------


def stat_names(plane: Plane) -> dict[int, str]:
    return {key: meta.name for key, meta in plane.stat_metadata.items()}


def stat_ids(plane: Plane, names: Iterable[str]) -> dict[str, int]:
    """Maps each wanted stat name to its metadata id in this plane (absent names left out)."""
    wanted = set(names)
    return {meta.name: key for key, meta in plane.stat_metadata.items() if meta.name in wanted}


def stat_value(stat: xplane_pb2.XStat, names: dict[int, str]) -> int | float | str | bytes | None:
    """The stat's value; a ref value is the name of the stat metadata it points to."""
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        return names.get(stat.ref_value, "")
    return getattr(stat, kind)


def stats_dict(stats: Iterable[xplane_pb2.XStat], names: dict[int, str]) -> dict[str, object]:
    return {names.get(s.metadata_id, ""): stat_value(s, names) for s in stats}


MAX_MAGNITUDE = 1e200  # larger (or non-finite) stat values are corrupt: sums must stay finite


def as_float(value: object, default: float = 0.0) -> float:
    """int64, uint64 and double stats are interchangeable numbers; NaN/inf give ``default``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if not math.isfinite(number):
            return default
        return max(-MAX_MAGNITUDE, min(number, MAX_MAGNITUDE))
    return default


def as_uint64(value: object, default: int = 0) -> int:
    """Ids that are uint64 fingerprints may be stored as negative int64: mask them."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value & UINT64_MASK
    if isinstance(value, float):
        return int(value) & UINT64_MASK
    return default


def as_str(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


# --- events ----------------------------------------------------------------------------------


@dataclass
class LineEvents:
    """The events of one line as arrays (times in ps on the profile's time base)."""

    metadata_id: np.ndarray
    begin_ps: np.ndarray
    duration_ps: np.ndarray
    occurrences: np.ndarray
    stats: dict[str, np.ndarray]

    @property
    def end_ps(self) -> np.ndarray:
        return self.begin_ps + self.duration_ps

    def __len__(self) -> int:
        return len(self.metadata_id)


def line_events(
    plane: Plane,
    line: xplane_pb2.XLine | LineView,
    *,
    numeric_stats: Iterable[str] = (),
    device_time: bool = True,
) -> LineEvents:
    """Reads one line's events; with ``device_time`` the device_offset/duration stats win.

    ``numeric_stats`` names event stats to read into float64 arrays (NaN where absent).
    """
    wanted = list(numeric_stats)
    ids = stat_ids(plane, [*wanted, "device_offset_ps", "device_duration_ps"])
    (table,) = line_tables(line, list(ids.values()), chunk_events=-1)  # only these stats
    begin, duration = table.begin_ps, table.duration_ps
    if device_time:
        has_offset, offset = table.integers(ids.get("device_offset_ps"))
        has_duration, dev_duration = table.integers(ids.get("device_duration_ps"))
        both = has_offset & has_duration
        begin = np.where(both, offset, begin)
        duration = np.where(both, dev_duration, duration)
    values = {name: table.numbers(ids.get(name)) for name in wanted}
    return LineEvents(table.metadata_id, begin, duration, table.occurrences, values)
