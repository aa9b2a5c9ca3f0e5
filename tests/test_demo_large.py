"""Tiled profiles (`write_tiled_profile`, `write_large_profile`): the benchmark's 1 GB files are
small templates with their middle steps repeated at the wire level, so they must still be
valid XSpaces with steps, correlation ids and times that make sense."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

from tb_roofline_plugin.demo import CpuSpec, GpuSpec, TpuSpec, cpu_xspace, gpu_xspace, tpu_xspace
from tb_roofline_plugin.platforms.analysis import analyze_bytes
from tb_roofline_plugin.protos import xplane_pb2

TILING = Path(__file__).resolve().parents[1] / "benchmarks" / "tiling.py"


def _tiling():
    """benchmarks/tiling.py, the only user of the tiler besides these tests."""
    spec = importlib.util.spec_from_file_location("bench_tiling", TILING)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_tiling"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


tiling = _tiling()
write_large_profile, write_tiled_profile = tiling.write_large_profile, tiling.write_tiled_profile

SHAPES = {
    "gpu": (GpuSpec(steps=5, host="h"), gpu_xspace),
    "tpu": (TpuSpec(steps=5, host="h"), tpu_xspace),
    "cpu": (CpuSpec(steps=5, host="h"), cpu_xspace),
}


def _stat_values(plane: xplane_pb2.XPlane, event: xplane_pb2.XEvent) -> dict:
    out = {}
    for stat in event.stats:
        kind = stat.WhichOneof("value")
        out[plane.stat_metadata[stat.metadata_id].name] = getattr(stat, kind)
    return out


def _steps(space: xplane_pb2.XSpace) -> dict[str, list[tuple[int, int, int]]]:
    """{plane: [(step number, absolute begin, end)]} of the step events, in file order."""
    out = {}
    for plane in space.planes:
        for line in plane.lines:
            if line.name not in ("Steps", "python"):
                continue
            base = line.timestamp_ns * 1000
            for event in line.events:
                number = _stat_values(plane, event).get("step_num")
                if number is not None:
                    begin = base + event.offset_ps
                    out.setdefault(plane.name, []).append(
                        (number, begin, begin + event.duration_ps)
                    )
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_one_copy_is_the_template(tmp_path, shape):
    spec, build = SHAPES[shape]
    path = write_tiled_profile(tmp_path / "p.xplane.pb", build(spec), 1)
    assert path.read_bytes() == build(spec).SerializeToString(deterministic=True)
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_copies_repeat_the_middle_steps(tmp_path, shape):
    spec, build = SHAPES[shape]
    template = build(spec)
    data = write_tiled_profile(tmp_path / "h.xplane.pb", build(spec), 4).read_bytes()
    space = xplane_pb2.XSpace.FromString(data)
    assert [p.name for p in space.planes] == [p.name for p in template.planes]
    assert list(space.hostnames) == ["h"]

    # Steps 1..3 are the window: 4 copies of it, then step 4 renumbered to 13.
    for plane, steps in _steps(space).items():
        assert sorted(number for number, _, _ in steps) == list(range(14)), plane
        ordered = sorted(steps)
        assert all(a[2] <= b[1] for a, b in zip(ordered, ordered[1:])), plane
        if plane.startswith("/device:TPU"):
            tpu_plane = next(p for p in space.planes if p.name == plane)
            names = {k: m.name for k, m in tpu_plane.event_metadata.items()}
            steps_line = next(line for line in tpu_plane.lines if line.name == "Steps")
            assert [names[e.metadata_id] for e in steps_line.events] == [str(n) for n in range(14)]

    # Every line's events stay in time order, and lines with a duration last past their events.
    for plane in space.planes:
        for line in plane.lines:
            offsets = [e.offset_ps for e in line.events]
            assert offsets == sorted(offsets), (plane.name, line.name)
            if shape == "tpu" and plane.name == "/host:CPU":  # filler: one event at a time
                ends = [e.offset_ps + e.duration_ps for e in line.events]
                assert all(end <= begin for end, begin in zip(ends, offsets[1:])), line.name
            if line.events and line.duration_ps:
                assert line.duration_ps >= max(e.offset_ps + e.duration_ps for e in line.events)

    if shape == "gpu":  # every kernel's correlation id is one launch's, and unique
        launches, kernels = Counter(), Counter()
        for plane in space.planes:
            side = kernels if plane.name.startswith("/device:GPU") else launches
            for line in plane.lines:
                for event in line.events:
                    cid = _stat_values(plane, event).get("correlation_id")
                    if cid is not None:
                        side[cid] += 1
        assert max(launches.values()) == 1 and max(kernels.values()) == 1
        assert set(kernels) <= set(launches)
        assert len(kernels) > 2 * sum(1 for _ in template.planes[1].lines[0].events)

    stats = analyze_bytes(data, "h.xplane.pb")
    small = analyze_bytes(template.SerializeToString(), "h.xplane.pb")
    assert [s.step_num for s in stats.steps] == list(range(14))
    assert len(stats.complete_steps) == len(small.complete_steps) + 9
    assert set(stats.all_db.name) == set(small.all_db.name)
    assert stats.all_db.occurrences.sum() > 2.5 * small.all_db.occurrences.sum()


def test_large_profile_has_about_the_target_size(tmp_path):
    path = write_large_profile(
        tmp_path / "g.xplane.pb", GpuSpec(host="h"), 600_000, template_bytes=100_000
    )
    assert abs(path.stat().st_size - 600_000) < 30_000
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    numbers = [n for n, _, _ in _steps(space)["/host:CPU"]]
    assert sorted(numbers) == list(range(len(numbers))) and len(numbers) > 20


def test_tiling_needs_steps(tmp_path):
    with pytest.raises(ValueError, match="3 steps"):
        write_tiled_profile(tmp_path / "x.xplane.pb", gpu_xspace(GpuSpec(steps=2)), 2)
    with pytest.raises(ValueError, match="copies"):
        write_tiled_profile(tmp_path / "x.xplane.pb", gpu_xspace(GpuSpec()), 0)
    assert not list(tmp_path.iterdir())
