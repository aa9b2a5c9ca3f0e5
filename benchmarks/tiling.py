"""Large profiles for the benchmarks (``run.py --sizes 1000``): a small generated profile with
its middle steps repeated at the wire level (``write_tiled_profile``, ``write_large_profile``).

Building a 1 GB profile as one XSpace takes about ten times that in memory. A large profile
is instead a small one (the template) whose complete middle steps are written again and
again, each copy one window later, with step numbers, correlation ids and run ids moved on,
straight to the file at the wire level: an XLine's `events` can be written piecewise, so
only the template is ever in memory.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

from tb_roofline_plugin.demo import CpuSpec, GpuSpec, TpuSpec, cpu_xspace, gpu_xspace, tpu_xspace
from tb_roofline_plugin.demo.common import NS
from tb_roofline_plugin.protos import xplane_pb2

_PLANES_TAG, _LINES_TAG = b"\x0a", b"\x1a"  # XSpace.planes = 1, XPlane.lines = 3, both LEN
_STEP_LINES = ("Steps", "python")  # where step events are: TPU `Steps`, GPU/CPU step roots
# Stats that move with each copy, and by what: the window (ps), its steps, or a value span.
_MOVING_STATS = {
    "device_offset_ps": "time",
    "step_num": "step",
    "correlation_id": "correlation",
    "run_id": "run",
}


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _stat_value(stat: xplane_pb2.XStat) -> int:
    return stat.int64_value if stat.WhichOneof("value") == "int64_value" else stat.uint64_value


def _step_begins(plane: xplane_pb2.XPlane) -> dict[int, int]:
    """{step number: absolute begin (ps)} of the step events on the plane's step lines."""
    ids = {k for k, m in plane.stat_metadata.items() if m.name == "step_num"}
    begins: dict[int, int] = {}
    for line in plane.lines:
        if line.name in _STEP_LINES and ids:
            base = line.timestamp_ns * NS
            for event in line.events:
                for stat in event.stats:
                    if stat.metadata_id in ids:
                        begins[_stat_value(stat)] = base + event.offset_ps
    return begins


class _Segment:
    """Events of one line that move together, with the stats that move with them."""

    def __init__(self, line: xplane_pb2.XLine, plane: xplane_pb2.XPlane, steps: bool) -> None:
        """`steps`: the events are a TPU `Steps` line's, named after their step number."""
        self.line = line
        self.events = list(line.events)
        kinds = {
            k: _MOVING_STATS[m.name]
            for k, m in plane.stat_metadata.items()
            if m.name in _MOVING_STATS
        }
        self.stats: dict[tuple[str, str], list] = {}
        self.ranges: dict[str, list[int]] = {}
        self.step_events: list[tuple[xplane_pb2.XEvent, int]] = []
        names = {k: m.name for k, m in plane.event_metadata.items()}
        for event in self.events:
            for stat in event.stats:
                kind = kinds.get(stat.metadata_id)
                if kind is None:
                    continue
                field = stat.WhichOneof("value")
                if field not in ("int64_value", "uint64_value"):
                    continue
                self.stats.setdefault((kind, field), []).append(stat)
                value = getattr(stat, field)
                low, high = self.ranges.setdefault(kind, [value, value])
                self.ranges[kind] = [min(low, value), max(high, value)]
                if kind == "step" and steps and names.get(event.metadata_id) == str(value):
                    self.step_events.append((event, value))

    def move(self, times: int, deltas: dict[str, int], step_meta=None) -> None:
        """Moves every event `times` windows on (negative: back)."""
        shift = times * deltas["time"]
        if shift:
            for event in self.events:
                event.offset_ps += shift
        for (kind, field), stats in self.stats.items():
            delta = times * deltas[kind]
            if field == "int64_value":
                for stat in stats:
                    stat.int64_value += delta
            else:
                for stat in stats:
                    stat.uint64_value += delta
        if step_meta is not None:
            step = times * deltas["step"]
            for event, number in self.step_events:
                event.metadata_id = step_meta(number + step)
            self.step_events = [(event, number + step) for event, number in self.step_events]


class _TiledLine:
    """One line as three parts: events before the window, in it (repeated), and after it."""

    def __init__(self, line: xplane_pb2.XLine, plane: xplane_pb2.XPlane, start: int, period: int):
        """Splits `line`'s events at the window [start, start + period) (absolute ps)."""
        begin = start - line.timestamp_ns * NS
        end = begin + period
        before, inside, after = xplane_pb2.XLine(), xplane_pb2.XLine(), xplane_pb2.XLine()
        overlong = []  # (index, duration) of window events that end after it (host filler)
        for event in line.events:
            offset = event.offset_ps
            if offset < begin:
                before.events.append(event)
            elif offset < end:
                if offset + event.duration_ps > end:
                    overlong.append((len(inside.events), event.duration_ps))
                inside.events.append(event)
            else:
                after.events.append(event)
        self.front = xplane_pb2.XLine(
            id=line.id, name=line.name, timestamp_ns=line.timestamp_ns
        ).SerializeToString()
        self.back = xplane_pb2.XLine(
            duration_ps=line.duration_ps, display_id=line.display_id, display_name=line.display_name
        )
        line.ClearField("events")
        self.before = before.SerializeToString()
        steps = line.name == "Steps"
        self.inside = _Segment(inside, plane, steps)
        self.after = _Segment(after, plane, steps)
        self.cut = [(self.inside.events[i], duration, end) for i, duration in overlong]

    def window(self, last: bool) -> bytes:
        """The window's events; those that end after it are cut at its end but in the last
        copy, so that no copy overlaps the next one."""
        for event, duration, end in self.cut:
            event.duration_ps = duration if last else end - event.offset_ps
        return self.inside.line.SerializeToString()


class _Tiler:
    """A template profile split at a window of complete steps, written with that window
    repeated: copies of the window follow each other, then what came after it."""

    def __init__(self, space: xplane_pb2.XSpace) -> None:
        self.space = space
        begins = [_step_begins(plane) for plane in space.planes]
        first = next((b for b in begins if len(b) >= 3), None)
        if first is None:
            raise ValueError("a tiled profile needs a template with at least 3 steps")
        numbers = sorted(first)
        # The window: from the first complete step (the first may be cut) to the last one,
        # which stays after the copies (the profile may have cut it short).
        self.period = first[numbers[-1]] - first[numbers[1]]
        self.planes = []
        for plane, own in zip(space.planes, begins):
            own = own if len(own) >= 3 else first
            start = own[sorted(own)[1]]
            self.planes.append(
                [_TiledLine(line, plane, start, self.period) for line in plane.lines]
            )
            plane.ClearField("lines")
        spans = {"step": numbers[-1] - numbers[1]}
        for kind in ("correlation", "run"):
            ranges = [
                segment.ranges[kind]
                for lines in self.planes
                for line in lines
                for segment in (line.inside, line.after)
                if kind in segment.ranges
            ]
            spans[kind] = max(r[1] for r in ranges) - min(r[0] for r in ranges) + 1 if ranges else 0
        self.deltas = {"time": self.period, **spans}
        self.fixed = space.ByteSize() + sum(
            len(line.before) + line.after.line.ByteSize() + len(line.front) + 16
            for lines in self.planes
            for line in lines
        )

    def window_bytes(self, times: int) -> int:
        """Bytes of the window's events when moved `times` windows on."""
        segments = [line.inside for lines in self.planes for line in lines]
        for segment in segments:
            segment.move(times, self.deltas)
        size = sum(segment.line.ByteSize() for segment in segments)
        for segment in segments:
            segment.move(-times, self.deltas)
        return size

    def copies_for(self, target_bytes: int) -> int:
        """Copies of the window that make the file about `target_bytes`."""
        first = self.window_bytes(0)
        copies = max(1, round((target_bytes - self.fixed) / first))
        # Offsets grow, and so do their varints: average the first and the last copy.
        per_copy = (first + self.window_bytes(copies - 1)) / 2
        return max(1, round((target_bytes - self.fixed) / per_copy))

    def write(self, path: Path, copies: int) -> None:
        """Writes the profile with the window `copies` times (1: the template itself)."""
        with open(path, "wb") as out, tempfile.TemporaryFile(dir=path.parent) as spool:
            for plane, lines in zip(self.space.planes, self.planes):
                self._write_plane(out, spool, plane, lines, copies)
            tail = xplane_pb2.XSpace()
            tail.CopyFrom(self.space)
            tail.ClearField("planes")
            out.write(tail.SerializeToString(deterministic=True))

    def _write_plane(self, out, spool, plane: xplane_pb2.XPlane, lines, copies: int) -> None:
        spool.seek(0)
        spool.truncate()
        names = {m.name: k for k, m in plane.event_metadata.items()}
        next_id = [max(plane.event_metadata, default=0) + 1]

        def step_meta(number: int) -> int:
            """The id of the event metadata named after step `number` (added when new)."""
            mid = names.get(str(number))
            if mid is None:
                mid = names[str(number)] = next_id[0]
                next_id[0] += 1
                plane.event_metadata[mid].CopyFrom(
                    xplane_pb2.XEventMetadata(id=mid, name=str(number))
                )
            return mid

        later = (copies - 1) * self.period
        records = []
        for line in lines:
            size = spool.write(line.before)
            for copy in range(copies):
                if copy:
                    line.inside.move(1, self.deltas, step_meta)
                size += spool.write(line.window(last=copy == copies - 1))
            line.inside.move(1 - copies, self.deltas, step_meta)  # back to the template
            line.after.move(copies - 1, self.deltas, step_meta)
            size += spool.write(line.after.line.SerializeToString())
            line.after.move(1 - copies, self.deltas, step_meta)
            back = xplane_pb2.XLine()
            back.CopyFrom(line.back)
            if back.duration_ps:
                back.duration_ps += later
            back = back.SerializeToString()
            records.append((line.front, size, back))
        front = xplane_pb2.XPlane(id=plane.id, name=plane.name).SerializeToString()
        rest = xplane_pb2.XPlane()
        rest.CopyFrom(plane)
        rest.ClearField("id")
        rest.ClearField("name")
        stop = {k for k, m in plane.stat_metadata.items() if m.name == "profile_stop_time"}
        for stat in rest.stats:
            if stat.metadata_id in stop:
                stat.uint64_value += later // NS
        back = rest.SerializeToString(deterministic=True)
        body = 0
        heads = []
        for line_front, size, line_back in records:
            length = len(line_front) + size + len(line_back)
            head = _LINES_TAG + _varint(length) + line_front
            heads.append(head)
            body += len(head) + size + len(line_back)
        out.write(_PLANES_TAG + _varint(len(front) + body + len(back)) + front)
        spool.seek(0)
        for head, (_, size, line_back) in zip(heads, records):
            out.write(head)
            while size:
                chunk = spool.read(min(size, 1 << 24))
                out.write(chunk)
                size -= len(chunk)
            out.write(line_back)
        out.write(back)


def write_tiled_profile(path: str | os.PathLike, space: xplane_pb2.XSpace, copies: int) -> Path:
    """Writes `space` with its complete steps but the first and the last written `copies` times.

    Each copy comes one window (those steps' span) after the previous one, with its step
    numbers, correlation ids and run ids moved on so they stay unique; the last step follows
    the copies. `space` needs at least 3 steps, and is used up (its lines are cleared). The
    file is written under a temporary name and renamed once complete.
    """
    if copies < 1:
        raise ValueError(f"copies must be >= 1, got {copies}")
    return _write_tiled(path, _Tiler(space), copies)


def _write_tiled(path: str | os.PathLike, tiler: _Tiler, copies: int) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        tiler.write(partial, copies)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return path


def write_large_profile(
    path: str | os.PathLike,
    spec: TpuSpec | GpuSpec | CpuSpec,
    target_bytes: int,
    template_bytes: int = 40_000_000,
) -> Path:
    """Writes a profile of about `target_bytes` for `spec` in the memory of a small one.

    The template is `spec`'s profile of about `template_bytes` (at least 3 steps); its middle
    steps are repeated as `write_tiled_profile` does until the file is about `target_bytes`.
    """
    build = {TpuSpec: tpu_xspace, GpuSpec: gpu_xspace, CpuSpec: cpu_xspace}[type(spec)]
    tiler = _Tiler(build(replace(spec, target_bytes=min(template_bytes, target_bytes))))
    return _write_tiled(path, tiler, tiler.copies_for(target_bytes))
