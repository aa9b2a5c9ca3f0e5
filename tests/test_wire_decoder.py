"""The compiled event decoder (``_wire.c``) gives exactly the table protobuf and numpy give.

Every line of every real and generated profile is decoded by both paths; hand-built events
cover each stat kind, extreme values, unknown fields, oneof and repeated-field rules, and
malformed input, which must raise DecodeError (a one-line ProfileError upstream) like
``XEvent.FromString`` does.
"""

from __future__ import annotations

import math
import struct

import fuzz_support as fs
import numpy as np
import pytest
from google.protobuf.message import DecodeError

from tb_roofline_plugin.demo import CpuSpec, cpu_xspace
from tb_roofline_plugin.errors import ProfileError
from tb_roofline_plugin.platforms.analysis import analyze_bytes
from tb_roofline_plugin.protos import xplane_lite_pb2, xplane_pb2
from tb_roofline_plugin.xspace import event_table
from tb_roofline_plugin.xspace.event_table import BYTES, DOUBLE, INT, REF, STR, line_table
from tb_roofline_plugin.xspace.profile_reader import decode_profile

compiled = pytest.mark.skipif(
    event_table._wire is None,
    reason="the compiled decoder is not built (python setup.py build_ext --inplace)",
)
REAL = [(n, d) for n, d in fs.shared_profiles() if "CORRUPT" not in n]
GENERATED = [
    *fs.demo_profiles(),
    ("demo_cpu.xplane.pb", cpu_xspace(CpuSpec(steps=2)).SerializeToString()),
]


def _line(*events: bytes, timestamp_ns: int = 7) -> xplane_lite_pb2.XLineLite:
    return xplane_lite_pb2.XLineLite(timestamp_ns=timestamp_ns, events=list(events))


def _pure(line) -> event_table.EventTable:
    with fs.pure_decoder():
        return line_table(line)


def _protobuf(line) -> event_table.EventTable:
    events = [xplane_pb2.XEvent.FromString(e) for e in line.events]
    return event_table._slow_table(events, line.timestamp_ns)


def _all_agree(line) -> event_table.EventTable:
    """The compiled table, after checking it equals the pure and the protobuf one."""
    table = line_table(line)
    assert isinstance(table.stat_objects, event_table._WireObjects)  # the C path was taken
    assert fs.same_tables(table, _pure(line)) is None
    assert fs.same_tables(table, _protobuf(line)) is None
    return table


def _every_line_agrees(data: bytes) -> int:
    profile = decode_profile(data, want=lambda name, names: True)
    events = 0
    for plane in profile.planes:
        for line in plane.lines:
            table = line_table(line)  # decoded from the line's bytes in place
            assert fs.same_tables(table, _pure(line)) is None, (plane.name, line.name)
            if event_table.compiled_decoder():  # ... equal to decoding the events one by one
                per_event = event_table._compiled_table(line.events, line.timestamp_ns)
                assert fs.same_tables(table, per_event) is None, (plane.name, line.name)
            events += len(table)
    return events


@compiled
@pytest.mark.parametrize("name", [n for n, _ in REAL])
def test_compiled_and_pure_tables_are_identical_on_every_line_of_real_profiles(name):
    assert _every_line_agrees(dict(REAL)[name]) > 0


@compiled
@pytest.mark.parametrize("name", [n for n, _ in GENERATED])
def test_compiled_and_pure_tables_are_identical_on_generated_profiles(name):
    assert _every_line_agrees(dict(GENERATED)[name]) > 0


def test_real_profiles_are_there_to_compare(shared_data):
    assert len(REAL) >= 7


@compiled
def test_every_stat_kind_and_extreme_value_is_decoded():
    event = xplane_pb2.XEvent(metadata_id=-3, offset_ps=11, duration_ps=5)
    values = [
        ("int64_value", -5),
        ("int64_value", -(2**63)),
        ("uint64_value", 2**64 - 1),
        ("uint64_value", 2**63),
        ("double_value", 1.5),
        ("double_value", -0.0),
        ("double_value", math.inf),
        ("double_value", math.nan),
        ("str_value", ""),
        ("str_value", "é€😀"),
        ("bytes_value", b"\x00\xff"),
        ("bytes_value", b""),
        ("ref_value", 2**64 - 1),
    ]
    for i, (field, value) in enumerate(values):
        event.stats.add(metadata_id=i + 1, **{field: value})
    event.stats.add(metadata_id=99)  # no value
    table = _all_agree(_line(event.SerializeToString()))
    assert table.metadata_id.tolist() == [-3] and table.begin_ps.tolist() == [7011]
    kinds = [INT] * 4 + [DOUBLE] * 4 + [STR] * 2 + [BYTES] * 2 + [REF, 0]
    assert table.stat_kind.tolist() == kinds
    assert table.stat_int[:4].tolist() == [-5, -(2**63), -1, -(2**63)]
    assert table.stat_int[12] == -1 and table.stat_id.tolist()[-1] == 99
    floats = table.stat_float[4:8]
    assert floats[0] == 1.5 and math.copysign(1, floats[1]) == -1 and floats[2] == math.inf
    assert math.isnan(floats[3])
    assert list(table.stat_objects) == ["", "é€😀", b"\x00\xff", b""]
    assert table.stat_int[8:12].tolist() == [0, 1, 2, 3]  # indexes into stat_objects
    assert table.numbers(7)[0] != table.numbers(7)[0]  # inf counts as absent (NaN)
    assert table.strings(10, {})[0] == "é€😀" and table.strings(9, {})[0] == ""


@compiled
def test_unknown_fields_of_every_wire_type_are_skipped():
    plain = xplane_pb2.XEvent(metadata_id=4, offset_ps=100, duration_ps=9)
    plain.stats.add(metadata_id=2, int64_value=-1)
    noise = b"".join(fs._EVENT_NOISE[:7])  # unknown fields and known ones of the wrong type
    table = _all_agree(_line(noise + plain.SerializeToString() + noise))
    assert table.metadata_id.tolist() == [4] and table.duration_ps.tolist() == [9]
    assert table.begin_ps.tolist() == [7100]
    assert table.stat_id.tolist() == [2] and table.stat_int.tolist() == [-1]


@compiled
def test_the_last_field_wins_in_oneofs_and_repeated_scalars():
    offset_then_count = b"\x10\x05\x28\x07"
    count_then_offset = b"\x28\x07\x10\x05"
    twice = b"\x08\x01\x08\x02"
    stat = b"\x22\x04\x18\x05\x38\x06" + b"\x22\x05\x38\x06\x2a\x01a"  # uint64 -> ref; ref -> str
    table = _all_agree(_line(offset_then_count, count_then_offset, twice + stat))
    assert table.begin_ps.tolist() == [7000, 7005, 7000]
    assert table.occurrences.tolist() == [7, 1, 1]
    assert table.metadata_id.tolist() == [0, 0, 2]
    assert table.stat_kind.tolist() == [REF, STR] and table.stat_int.tolist() == [6, 0]
    assert list(table.stat_objects) == ["a"]


@compiled
def test_strings_are_read_from_the_event_bytes_only_when_asked():
    events = [
        xplane_pb2.XEvent(stats=[xplane_pb2.XStat(metadata_id=1, str_value=f"op {i}")])
        for i in range(3)
    ]
    table = line_table(_line(*(e.SerializeToString() for e in events)))
    objects = table.stat_objects
    assert isinstance(objects, event_table._WireObjects) and len(objects) == 3
    assert objects[2] == "op 2" and objects[-1] == "op 2" and objects[0:2] == ["op 0", "op 1"]


_MALFORMED = {
    "truncated varint": b"\x08",
    "truncated varint, continued": b"\x08\x80",
    "varint longer than 10 bytes": b"\x08" + b"\xff" * 10 + b"\x01",
    "length past the end": b"\x22\x05\x08\x01",
    "string past the end": b"\x22\x05\x2a\x03ab",
    "truncated double": b"\x22\x08\x11" + bytes(7),
    "truncated fixed32": b"\x5d\x01\x02\x03",
    "truncated fixed64": b"\x59\x01\x02",
    "wire type 6": b"\x0e",
    "wire type 7": b"\x57",
    "field number 0": b"\x00\x01",
    "tag above 2**32 - 1": b"\x80\x80\x80\x80\x10\x01",
    "end-group outside a group": b"\x0c",
    "unterminated group": b"\x53\x08\x01",
    "mismatched end-group": b"\x53\x5c",
    "end-group in a stat": b"\x22\x01\x0c",
    "invalid UTF-8 string": b"\x22\x04\x2a\x02\xff\xfe",
    "surrogate in a string": b"\x22\x05\x2a\x03\xed\xa0\x80",
    "overlong UTF-8": b"\x22\x04\x2a\x02\xc0\x80",
    "code point past U+10FFFF": b"\x22\x06\x2a\x04\xf4\x90\x80\x80",
    "groups 101 deep": b"\x53" * 101 + b"\x54" * 101,
    "groups 100 deep in a stat": b"\x22\xc8\x01" + b"\x53" * 100 + b"\x54" * 100,
}


@compiled
@pytest.mark.parametrize("name", list(_MALFORMED))
def test_malformed_events_raise_decode_error_like_protobuf(name):
    line = _line(b"\x08\x01", _MALFORMED[name])
    with pytest.raises(DecodeError, match=r"event 1 is corrupt"):
        line_table(line)
    raw = memoryview(line.SerializeToString())
    with pytest.raises(DecodeError, match=r"event 1 is corrupt"):
        event_table._compiled_line_table(raw, line.timestamp_ns)
    with pytest.raises(DecodeError):
        _pure(line)
    with pytest.raises(DecodeError):
        _protobuf(line)


@compiled
def test_the_deepest_groups_protobuf_accepts_are_accepted():
    top = b"\x53" * 100 + b"\x54" * 100
    in_stat = b"\x22\xc6\x01" + b"\x53" * 99 + b"\x54" * 99
    table = _all_agree(_line(top, in_stat, b"\x22\x06\x2a\x04\xf4\x8f\xbf\xbf"))
    assert table.stat_kind.tolist() == [0, STR]
    assert list(table.stat_objects) == ["\U0010ffff"]


@compiled
def test_a_corrupt_event_is_a_one_line_profile_error():
    with pytest.raises(ProfileError) as error:
        analyze_bytes(fs.malformed_event_profile(), "bad.xplane.pb")
    message = str(error.value)
    assert "\n" not in message and "bad.xplane.pb" in message
    assert "event 0 is corrupt (truncated varint)" in message


def _string_table() -> tuple[event_table.EventTable, dict[int, str]]:
    names = {1: "hlo_op", 20: "fusion.1", 21: "copy.2", 22: "fusion.1"}
    stats = [{"ref_value": 20}, {"str_value": "copy.2"}, {}, {"ref_value": 21}]
    stats += [{"ref_value": 22}, {"str_value": "dot"}, {"ref_value": 99}]
    events = [
        xplane_pb2.XEvent(stats=[xplane_pb2.XStat(metadata_id=1, **s)] if s else []) for s in stats
    ]
    return line_table(_line(*(e.SerializeToString() for e in events))), names


@pytest.mark.parametrize("pure", [False, True])
def test_string_codes_factorize_what_strings_returns(pure):
    if pure:
        with fs.pure_decoder():
            table, names = _string_table()
    else:
        table, names = _string_table()
    codes, values = table.string_codes(1, names)
    assert values == ["fusion.1", "copy.2", "", "dot"]  # ref 99 has no name: ""
    assert codes.tolist() == [0, 1, -1, 1, 0, 3, 2]
    strings = table.strings(1, names)
    assert [values[c] if c >= 0 else None for c in codes] == strings.tolist()


def test_string_codes_of_an_absent_stat_are_all_minus_one():
    table, names = _string_table()
    codes, values = table.string_codes(None, names)
    assert codes.tolist() == [-1] * 7 and values == []
    codes, values = table.string_codes(5, names)
    assert codes.tolist() == [-1] * 7 and values == []


def test_pure_env_and_a_missing_extension_select_the_numpy_path(monkeypatch):
    line = _line(xplane_pb2.XEvent(metadata_id=3, offset_ps=1).SerializeToString())
    monkeypatch.setenv(event_table.PURE_ENV, "1")
    assert not event_table.compiled_decoder()
    assert isinstance(line_table(line).stat_objects, list)
    monkeypatch.delenv(event_table.PURE_ENV)
    monkeypatch.setattr(event_table, "_wire", None)
    assert not event_table.compiled_decoder()
    assert line_table(line).metadata_id.tolist() == [3]


@compiled
def test_compiled_columns_are_writable_int64_arrays():
    event = xplane_pb2.XEvent(metadata_id=1, offset_ps=2, duration_ps=3, num_occurrences=0)
    event.stats.add(metadata_id=4, double_value=0.5)
    table = line_table(_line(event.SerializeToString()))
    for name in ("metadata_id", "duration_ps", "stat_event", "stat_id", "stat_int"):
        column = getattr(table, name)
        assert column.dtype == np.int64 and column.flags.writeable, name
    assert table.stat_float.dtype == np.float64 and table.stat_float.tolist() == [0.5]
    assert struct.pack("<d", table.numbers(4)[0]) == struct.pack("<d", 0.5)


@compiled
@pytest.mark.parametrize("name", [n for n, _ in GENERATED])
def test_a_line_read_in_pieces_with_some_stats_equals_the_whole_line(name):
    profile = decode_profile(dict(GENERATED)[name], want=lambda name, names: True)
    compared = 0
    for plane in profile.planes:
        ids = sorted(plane.stat_metadata)[::2]  # every other stat
        for line in plane.lines:
            whole = line_table(line)
            pieces = list(event_table.line_tables(line, ids, chunk_events=7))
            assert len(pieces) >= len(whole) // 7
            assert sum(len(p) for p in pieces) == len(whole)
            begins = np.concatenate([p.begin_ps for p in pieces])
            assert begins.tolist() == whole.begin_ps.tolist()
            for stat_id in ids:
                want = whole.numbers(stat_id)
                got = np.concatenate([p.numbers(stat_id) for p in pieces])
                assert np.array_equal(got, want, equal_nan=True), (line.name, stat_id)
            kept = {int(i) for p in pieces for i in np.unique(p.stat_id)}
            assert kept <= set(ids)
            compared += len(whole)
    assert compared >= 12


def _profile_layout(data: bytes) -> list:
    """What decode_profile makes of a file: each plane's non-line fields and line headers."""
    profile = decode_profile(data, want=lambda name, names: True)
    return [
        (
            plane.name,
            plane._message.SerializeToString(deterministic=True),
            [
                (line.id, line.display_id, line.name, line.display_name, line.timestamp_ns,
                 line.duration_ps, line.offset, bytes(line.raw))
                for line in plane.lines
            ],
        )
        for plane in profile.planes
    ]  # fmt: skip


@compiled
@pytest.mark.parametrize("name", [n for n, _ in REAL + GENERATED])
def test_compiled_and_pure_plane_splitting_give_the_same_planes_and_line_headers(name):
    data = dict(REAL + GENERATED)[name]
    compiled_layout = _profile_layout(data)
    with fs.pure_decoder():
        assert _profile_layout(data) == compiled_layout
    assert sum(len(lines) for _, _, lines in compiled_layout) > 0


@compiled
def test_split_message_returns_the_field_spans_and_the_other_fields_bytes():
    # Field 1 varint 5, field 3 "ab", field 2 "x", field 3 "", field 7 fixed32.
    message = b"\x08\x05" + b"\x1a\x02ab" + b"\x12\x01x" + b"\x1a\x00" + b"\x3d\x01\x02\x03\x04"
    data = b"??" + message
    spans, rest = event_table._wire.split_message(data, 2, len(data), 3)
    assert spans == [(6, 8), (13, 13)]
    assert rest == b"\x08\x05\x12\x01x\x3d\x01\x02\x03\x04"
    assert event_table._wire.split_message(data, 2, len(data), 3, False) == (None, rest)


@compiled
@pytest.mark.parametrize("cut", [3, 40, 200])
def test_a_truncated_plane_is_the_same_profile_error_with_and_without_the_compiled_splitter(cut):
    data = dict(GENERATED)["demo_cpu.xplane.pb"]
    space = xplane_pb2.XSpace.FromString(data)
    plane = space.planes[0].SerializeToString()
    # A plane cut `cut` bytes in, then a line field whose length runs past the plane's end.
    broken = b"\x0a" + _varint(len(plane[:cut]) + 2) + plane[:cut] + b"\x1a\x7f"
    with pytest.raises(ProfileError) as compiled_error:
        decode_profile(broken, "cut.xplane.pb")
    with fs.pure_decoder(), pytest.raises(ProfileError) as pure_error:
        decode_profile(broken, "cut.xplane.pb")
    assert str(compiled_error.value) == str(pure_error.value)
    assert "cut.xplane.pb" in str(compiled_error.value)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


@compiled
@pytest.mark.parametrize("name", [n for n, _ in REAL + GENERATED])
def test_line_has_stats_answers_whether_a_decoded_event_has_one_of_the_stats(name):
    profile = decode_profile(dict(REAL + GENERATED)[name], want=lambda name, names: True)
    answers = []
    for plane in profile.planes:
        for line in plane.lines:
            table = line_table(line)
            present = set(table.stat_id.tolist())
            choices = [[*plane.stat_metadata][:1], [*plane.stat_metadata][-2:], [987654]]
            for wanted in choices + [[table.stat_id[-1]]] if len(table.stat_id) else choices:
                ids = np.array(wanted, np.uint64)
                found = event_table._wire.line_has_stats(line.raw, 0, len(line.raw), ids)
                assert found == bool(present & set(wanted)), (plane.name, line.name, wanted)
                answers.append(found)
    assert True in answers and False in answers


@compiled
def test_line_has_stats_answers_true_for_a_malformed_line():
    line = _line(b"\x08\x01", b"\x22\x05\x08")  # a stat running past its event
    raw = line.SerializeToString()
    assert event_table._wire.line_has_stats(raw, 0, len(raw), np.array([5], np.uint64))
