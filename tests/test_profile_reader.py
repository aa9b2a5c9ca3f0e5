"""The profile reader: stats by name, interchangeable numbers, times, plane skipping, bad bytes."""

from __future__ import annotations

import pytest

from tb_roofline_plugin.errors import ProfileError
from tb_roofline_plugin.protos import xplane_pb2
from tb_roofline_plugin.xspace import profile_reader as reader


def _plane_with_stats() -> xplane_pb2.XPlane:
    plane = xplane_pb2.XPlane(id=7, name="/device:TPU:0")
    for sid, name in ((1, "program_id"), (2, "peak"), (3, "flag"), (4, "hlo_op"), (5, "fusion.1")):
        plane.stat_metadata[sid].id = sid
        plane.stat_metadata[sid].name = name
    plane.stats.add(metadata_id=1, int64_value=-8800332967749297542)
    plane.stats.add(metadata_id=2, double_value=918.0)
    plane.stats.add(metadata_id=3, uint64_value=1)
    plane.stats.add(metadata_id=4, ref_value=5)
    return plane


def test_stats_resolve_by_name_and_refs_become_strings():
    plane = _plane_with_stats()
    stats = reader.stats_dict(plane.stats, reader.stat_names(plane))
    assert stats["hlo_op"] == "fusion.1"
    assert stats["peak"] == 918.0


def test_numeric_kinds_are_interchangeable_and_negative_ids_are_masked():
    plane = _plane_with_stats()
    stats = reader.stats_dict(plane.stats, reader.stat_names(plane))
    assert reader.as_uint64(stats["program_id"]) == 9646411105960254074
    assert reader.as_float(stats["flag"]) == 1.0
    assert reader.as_float(stats["peak"]) == 918.0
    assert reader.as_float("text", default=-1.0) == -1.0


def test_event_time_is_line_timestamp_plus_offset_unless_device_times_are_present():
    plane = xplane_pb2.XPlane(name="/device:TPU:0")
    for sid, name in ((1, "device_offset_ps"), (2, "device_duration_ps"), (3, "step_num")):
        plane.stat_metadata[sid].id = sid
        plane.stat_metadata[sid].name = name
    line = plane.lines.add(name="XLA Ops", timestamp_ns=5)
    line.events.add(metadata_id=1, offset_ps=100, duration_ps=20)
    ev = line.events.add(metadata_id=2, offset_ps=300, duration_ps=40)
    ev.stats.add(metadata_id=1, uint64_value=9000)
    ev.stats.add(metadata_id=2, int64_value=70)
    ev.stats.add(metadata_id=3, int64_value=12)
    events = reader.line_events(plane, line, numeric_stats=("step_num",))
    assert events.begin_ps.tolist() == [5100, 9000]
    assert events.duration_ps.tolist() == [20, 70]
    assert events.end_ps.tolist() == [5120, 9070]
    assert events.stats["step_num"][1] == 12
    raw = reader.line_events(plane, line, device_time=False)
    assert raw.begin_ps.tolist() == [5100, 5300]


def _space_bytes() -> bytes:
    space = xplane_pb2.XSpace(hostnames=["h1"], warnings=["w"])
    space.planes.add(name="/host:CPU").lines.add(name="python").events.add(duration_ps=5)
    space.planes.add(name="/device:TPU:0", id=2)
    space.planes.add(name="/host:metadata")
    return space.SerializeToString()


def test_only_wanted_planes_are_decoded_and_the_rest_are_named():
    profile = reader.decode_profile(_space_bytes(), "x.xplane.pb")
    assert [p.name for p in profile.planes] == ["/device:TPU:0", "/host:metadata"]
    assert profile.skipped_planes == ["/host:CPU"]
    assert profile.hostnames == ["h1"] and profile.warnings == ["w"]
    with_host = reader.decode_profile(_space_bytes(), "x", reader.with_host_plane)
    assert [p.name for p in with_host.planes] == ["/host:CPU", "/device:TPU:0", "/host:metadata"]
    line = with_host.plane("/host:CPU").lines[0]
    assert reader.line_events(with_host.plane("/host:CPU"), line).duration_ps.tolist() == [5]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file (0 bytes)"),
        (_space_bytes()[:-3], "corrupt or truncated"),
        (b"\x0a\xff\xff\xff\xff\x0f", "corrupt or truncated"),
        (b"\x1f\x8b\x08\x00hello", "not an XSpace profile: it looks like a gzip file"),
        (b'{"a": 1}', "not an XSpace profile: it looks like a PyTorch profiler trace"),
        (b"\n [1, 2]", "not an XSpace profile: it looks like a JSON document"),
        (b"\x0f\x00", "not a valid XSpace profile: wire format is corrupt (invalid wire type 7)"),
        (b"\x08\x01", "not an XSpace profile: no profile planes found"),
        (b"\x22\x02\xff\xfe", "not valid UTF-8"),
    ],
)
def test_bad_bytes_raise_one_line_errors_naming_the_file(data, message):
    with pytest.raises(ProfileError) as info:
        reader.decode_profile(data, "bad.xplane.pb")
    text = str(info.value)
    assert text.startswith("bad.xplane.pb: ")
    assert message in text
    assert "\n" not in text


def test_missing_file_and_directory_are_reported(tmp_path):
    with pytest.raises(ProfileError, match="no such file"):
        reader.read_profile(tmp_path / "absent.xplane.pb")
    with pytest.raises(ProfileError, match="is a directory"):
        reader.read_profile(tmp_path)


def test_real_corrupt_sample_is_rejected_cleanly(shared_data):
    path = shared_data / "xprof" / "tpu_inference_2.CORRUPT_utf8_mangled.xplane.pb"
    with pytest.raises(ProfileError, match="not a valid XSpace profile"):
        reader.read_profile(path)


def test_real_tpu_sample_skips_host_planes(shared_data):
    profile = reader.read_profile(shared_data / "xprof" / "tpu_inference_2.xplane.pb")
    assert [p.name for p in profile.planes_matching(reader.TPU_CORE_PLANE)] == [
        f"/device:TPU:{i}" for i in range(4)
    ]
    assert set(profile.skipped_planes) == {"/host:CPU", "Task Environment"}
