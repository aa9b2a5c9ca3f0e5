"""Building XSpace protos from code: for demo data, benchmarks and tests.

Stats are given as a ``{name: value}`` dict; ints become int64, floats double, str
strings, bytes bytes. Wrap a value in ``U64`` for a uint64 stat or ``Ref`` for a
ref stat (a string stored as the name of another stat metadata).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Union

from ..protos import op_metrics_pb2, xplane_pb2


class U64(int):
    """A stat value to store as uint64_value."""


class Ref(str):
    """A stat value to store as ref_value (the id of a stat metadata with this name)."""


StatValue = Union[int, float, str, bytes]


class PlaneBuilder:
    """Adds stats, event metadata and events to one plane, interning metadata by name."""

    def __init__(self, plane: xplane_pb2.XPlane):
        self.plane = plane
        self._stat_ids = {m.name: k for k, m in plane.stat_metadata.items()}
        self._event_ids = {m.name: k for k, m in plane.event_metadata.items()}

    def stat_id(self, name: str) -> int:
        sid = self._stat_ids.get(name)
        if sid is None:
            sid = self._stat_ids[name] = len(self._stat_ids) + 1
            meta = self.plane.stat_metadata[sid]
            meta.id = sid
            meta.name = name
        return sid

    def fill_stats(self, container, stats: Mapping[str, StatValue] | None) -> None:
        """Appends ``stats`` to a repeated XStat field (plane, event or metadata stats)."""
        for name, value in (stats or {}).items():
            stat = container.add(metadata_id=self.stat_id(name))
            if isinstance(value, Ref):
                stat.ref_value = self.stat_id(str(value))
            elif isinstance(value, U64):
                stat.uint64_value = int(value) & ((1 << 64) - 1)
            elif isinstance(value, bool):
                stat.int64_value = int(value)
            elif isinstance(value, int):
                stat.int64_value = value
            elif isinstance(value, float):
                stat.double_value = value
            elif isinstance(value, bytes):
                stat.bytes_value = value
            else:
                stat.str_value = str(value)

    def event_metadata(
        self,
        name: str,
        display_name: str = "",
        stats: Mapping[str, StatValue] | None = None,
    ) -> int:
        """The id of the event metadata called ``name``, created on first use."""
        mid = self._event_ids.get(name)
        if mid is None:
            mid = self._event_ids[name] = len(self._event_ids) + 1
            meta = self.plane.event_metadata[mid]
            meta.id = mid
            meta.name = name
            meta.display_name = display_name
            self.fill_stats(meta.stats, stats)
        return mid

    def line(
        self, name: str, line_id: int | None = None, timestamp_ns: int = 0
    ) -> xplane_pb2.XLine:
        line = self.plane.lines.add(name=name, timestamp_ns=timestamp_ns)
        line.id = len(self.plane.lines) if line_id is None else line_id
        return line

    def event(
        self,
        line: xplane_pb2.XLine,
        metadata_id: int,
        offset_ps: int,
        duration_ps: int,
        stats: Mapping[str, StatValue] | None = None,
    ) -> xplane_pb2.XEvent:
        event = line.events.add(
            metadata_id=metadata_id, offset_ps=offset_ps, duration_ps=duration_ps
        )
        self.fill_stats(event.stats, stats)
        return event


def plane(space: xplane_pb2.XSpace, name: str, plane_id: int = 0, stats=None) -> PlaneBuilder:
    """Adds a plane to ``space`` and returns its builder."""
    builder = PlaneBuilder(space.planes.add(id=plane_id, name=name))
    builder.fill_stats(builder.plane.stats, stats)
    return builder


def memory_breakdown(entries: list[tuple[int, int, int]]) -> bytes:
    """Serialized MemoryAccessBreakdown of (operation_type, memory_space, bytes) entries."""
    message = op_metrics_pb2.MemoryAccessBreakdown()
    for op_type, space, num_bytes in entries:
        message.memory_accessed.add(
            operation_type=op_type, memory_space=space, bytes_accessed=num_bytes
        )
    return message.SerializeToString()
