"""Host step markers and kernel launches on ``/host:CPU`` (steps of GPU and CPU profiles).

A step root is a host event with stat ``_r`` (``jax.profiler.StepTraceAnnotation``,
``tf.profiler.experimental.Trace(..., _r=1)``, torch_xla step traces), numbered by its
``step_num`` stat or by order. A launch is a host event with a ``correlation_id`` stat
(``cuLaunchKernel``, ``hipModuleLaunchKernel``, ...): the kernel with the same id ran it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .profile_reader import as_float, as_uint64, line_stat_values
from .protos import xplane_pb2

MARKER_STATS = ("_r", "step_num", "correlation_id")


@dataclass
class HostMarkers:
    steps: list[tuple[int, int, int]] = field(default_factory=list)  # (number, begin, end) ps
    launch_ps: dict[int, int] = field(default_factory=dict)  # correlation id -> launch begin


def number_steps(roots: list[tuple[float, int, int]]) -> list[tuple[int, int, int]]:
    """Roots in time order; one without a ``step_num`` (-1) gets its position."""
    ordered = sorted(roots, key=lambda r: r[1])
    return [(int(num) if num >= 0 else i, b, e) for i, (num, b, e) in enumerate(ordered)]


def host_markers(plane: xplane_pb2.XPlane | None) -> HostMarkers:
    markers = HostMarkers()
    if plane is None:
        return markers
    roots = []
    for line in plane.lines:
        base = line.timestamp_ns * 1000
        values = line_stat_values(plane, line, MARKER_STATS)
        for i, event in enumerate(line.events):
            begin = base + event.offset_ps
            if values["_r"][i] is not None:
                roots.append(
                    (as_float(values["step_num"][i], -1), begin, begin + event.duration_ps)
                )
            correlation = values["correlation_id"][i]
            if correlation is not None:
                markers.launch_ps[as_uint64(correlation)] = begin
    markers.steps = number_steps(roots)
    return markers
