"""The XLA:CPU host lines read in one compiled pass (``_wire.host_ops``) equal the array path
(each piece's EventTable: ``cpu._table_piece``) and a hand-made line's events.

Oracle: for a line built here event by event, the op, end, execution, schedule and root
columns written down from its events; on the shared JAX, TensorFlow and PyTorch/XLA
recordings and a generated profile, ``cpu.read_host_parts`` with the compiled pass turned
off (``host_op_tables`` None), read in pieces as the CPU reader reads them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_host_sums import RECORDINGS, _recording

from tb_roofline_plugin.demo import CpuSpec, cpu_xspace
from tb_roofline_plugin.platforms import cpu, host_sums
from tb_roofline_plugin.platforms.cpu_executions import EXECUTE_EVENTS, SCHEDULE_EVENT
from tb_roofline_plugin.platforms.host_steps import root_columns
from tb_roofline_plugin.protos import xplane_pb2
from tb_roofline_plugin.xspace.profile_reader import HOST_PLANE, decode_profile

compiled = pytest.mark.skipif(
    host_sums.host_op_tables({}, np.zeros(0), np.zeros(0), np.zeros(0)) is None,
    reason="the compiled decoder is not built",
)
STATS = ("hlo_op", "program_id", "_r", "step_num", "run_id", "_p", "_c", "device_ordinal")
OP, END, EXECUTE, SCHEDULE, OTHER = 1, 2, 3, 4, 5  # event metadata ids of the hand-made line
NAMED, UNNAMED = 20, 21  # stat metadata ids of an op name and of an empty name


def _space(events: list[dict], timestamp_ns: int = 1_000) -> xplane_pb2.XSpace:
    """A host plane of one line; each event a dict of its fields and (stat, value) pairs."""
    space = xplane_pb2.XSpace()
    plane = space.planes.add(name=HOST_PLANE)
    for key, name in enumerate(STATS, start=1):
        plane.stat_metadata[key].id, plane.stat_metadata[key].name = key, name
    plane.stat_metadata[NAMED].id, plane.stat_metadata[NAMED].name = NAMED, "fusion.1"
    plane.stat_metadata[UNNAMED].id = UNNAMED
    names = {OP: "fusion.1", END: "end: fusion.1", EXECUTE: EXECUTE_EVENTS[2],
             SCHEDULE: SCHEDULE_EVENT, OTHER: "python"}  # fmt: skip
    for key, name in names.items():
        plane.event_metadata[key].id, plane.event_metadata[key].name = key, name
    line = plane.lines.add(id=1, timestamp_ns=timestamp_ns)
    for spec in events:
        event = line.events.add(
            metadata_id=spec["meta"], offset_ps=spec["at"], duration_ps=spec["for"]
        )
        for stat_name, value in spec.get("stats", []):
            stat = event.stats.add(metadata_id=STATS.index(stat_name) + 1)
            if isinstance(value, tuple):  # ("ref", id) or ("str", text)
                if value[0] == "ref":
                    stat.ref_value = value[1]
                else:
                    stat.str_value = value[1]
            elif isinstance(value, float):
                stat.double_value = value
            elif value < 0:
                stat.int64_value = value
            else:
                stat.uint64_value = value
    return space


def _parts(data: bytes, monkeypatch, compiled_pass: bool, chunk_events: int, threads=False):
    """cpu.read_host_parts' columns (joined), roots (a NaN step number as None) and hlo_op
    codes and texts."""
    with monkeypatch.context() as patch:
        patch.setattr(cpu, "HOST_CHUNK_EVENTS", chunk_events)
        patch.setattr(cpu, "THREADS_MIN_BYTES", 0 if threads else 1 << 62)
        if not compiled_pass:
            patch.setattr(cpu, "host_op_tables", lambda *args: None)
        parts = cpu.read_host_parts(decode_profile(data).plane(HOST_PLANE))
    columns = {name: parts.joined(name).tolist() for name in list(parts.columns)}
    codes, texts = parts.hlo_ops.factorized()
    columns_of_roots = (column.tolist() for column in root_columns(parts.roots))
    roots = [(None if math.isnan(num) else num, b, e) for num, b, e in zip(*columns_of_roots)]
    return columns, roots, codes.tolist(), texts


def _check(data: bytes, monkeypatch) -> None:
    expected = _parts(data, monkeypatch, False, cpu.HOST_CHUNK_EVENTS)
    for chunk_events in (cpu.HOST_CHUNK_EVENTS, 7):
        assert _parts(data, monkeypatch, True, chunk_events) == expected
    # The lines read in threads (as a big profile's are): the same parts, in line order.
    assert _parts(data, monkeypatch, True, 7, threads=True) == expected


@compiled
@pytest.mark.parametrize("name", RECORDINGS)
def test_host_ops_of_recordings_equal_the_array_path(shared_data, name, monkeypatch):
    data = _recording(shared_data, name).read_bytes()
    columns, roots, codes, texts = _parts(data, monkeypatch, True, 7)
    assert len(columns["begin"]) > 0 and len(texts) > 0  # the recording has XLA ops
    _check(data, monkeypatch)


@compiled
def test_host_ops_of_a_generated_profile_equal_the_array_path(monkeypatch):
    data = cpu_xspace(CpuSpec(steps=5, threads=3, seed=7)).SerializeToString()
    _check(data, monkeypatch)


HAND_MADE = [
    # an op with every stat; an op without flow or run; an op whose hlo_op has no name
    {"meta": OP, "at": 10, "for": 5, "stats": [("hlo_op", ("ref", NAMED)), ("program_id", 7),
     ("run_id", 3), ("_p", 2**63 + 5), ("device_ordinal", 1)]},
    {"meta": OP, "at": 20, "for": 1, "stats": [("hlo_op", ("ref", NAMED)), ("program_id", 7)]},
    {"meta": OP, "at": 30, "for": 1, "stats": [("hlo_op", ("ref", UNNAMED)), ("program_id", 7)]},
    # an end with its flow id; an end event without _c (no end); an execution; a schedule
    {"meta": END, "at": 40, "for": 9, "stats": [("_c", 2**63 + 5)]},
    {"meta": END, "at": 50, "for": 9},
    {"meta": EXECUTE, "at": 60, "for": 4},
    {"meta": SCHEDULE, "at": 70, "for": 2},
    # roots: _r with step_num, _r alone, a double step_num alone, an infinite one (absent)
    {"meta": OTHER, "at": 80, "for": 100, "stats": [("_r", 1), ("step_num", 4)]},
    {"meta": OTHER, "at": 90, "for": 3, "stats": [("_r", 1)]},
    {"meta": OTHER, "at": 95, "for": 3, "stats": [("step_num", 2.0)]},
    {"meta": OTHER, "at": 99, "for": 3, "stats": [("step_num", math.inf)]},
]  # fmt: skip


@compiled
def test_host_ops_of_a_hand_made_line_are_its_events(monkeypatch):
    data = _space(HAND_MADE, timestamp_ns=1).SerializeToString()
    columns, roots, codes, texts = _parts(data, monkeypatch, True, 1 << 18)
    base = 1_000  # the line's timestamp, 1 ns
    assert columns["begin"] == [base + 10, base + 20]
    assert columns["end"] == [base + 15, base + 21]
    assert columns["flow"] == [-(2**63) + 5, 0] and columns["has_flow"] == [True, False]
    assert columns["program"] == [7, 7]
    assert columns["run"] == [3, 0] and columns["has_run"] == [True, False]
    assert columns["device"] == [1, 0]
    assert texts == ["fusion.1"] and codes == [0, 0]
    assert columns["flow_ids"] == [-(2**63) + 5] and columns["flow_end"] == [base + 49]
    assert columns["execute"] == [[base + 60], [base + 64]]
    assert columns["schedule"] == [base + 70]
    assert roots == [(4.0, base + 80, base + 180), (None, base + 90, base + 93),
                     (2.0, base + 95, base + 98)]  # fmt: skip
    _check(data, monkeypatch)


@compiled
@pytest.mark.parametrize(
    "odd",
    [
        {"meta": OP, "at": 1, "for": 1, "stats": [("hlo_op", ("str", "fusion.2")),
         ("program_id", 7)]},  # a string-valued hlo_op: named by its text
        {"meta": OP, "at": 1, "for": 1, "stats": [("hlo_op", ("ref", NAMED)),
         ("program_id", 7), ("program_id", 8)]},  # a stat twice: the last one counts
        {"meta": OP, "at": 1, "for": -1 & (2**63 - 1)},  # a duration out of range
    ],
    ids=["string hlo_op", "stat twice", "duration out of range"],
)  # fmt: skip
def test_host_ops_leave_odd_pieces_to_the_array_path(odd, monkeypatch):
    """The compiled pass gives such a piece back (None); the reader then reads it, and what
    follows on the line, from its EventTables: the same parts as the array path's."""
    events = HAND_MADE[:2] + [odd] + HAND_MADE[3:]
    data = _space(events).SerializeToString()
    plane = decode_profile(data).plane(HOST_PLANE)
    line = plane.lines[0]
    ids = [STATS.index(name) + 1 for name in STATS]
    tables = host_sums.host_op_tables(
        {NAMED: "fusion.1"}, np.array([END]), np.array([EXECUTE]), np.array([SCHEDULE])
    )
    assert host_sums.compiled_host_ops(line, 0, -1, ids, tables) is None
    first = host_sums.compiled_host_ops(line, 0, 2, ids, tables)  # the two ops before it
    assert first is not None and first[1].columns["begin"].tolist() == [1_000_010, 1_000_020]
    if odd["for"] < 0 or odd["for"] > 2**62:
        with pytest.raises(ValueError, match="out of range"):
            _parts(data, monkeypatch, True, 2)
        return
    _check(data, monkeypatch)
    assert _parts(data, monkeypatch, True, 2) == _parts(data, monkeypatch, False, 2)


@compiled
def test_ids_too_large_for_a_table_leave_the_plane_to_the_array_path():
    """A stat or event metadata id past MAX_TABLE_ID (or negative) has no byte in a lookup
    table: no tables, so every line is read from its EventTables."""
    empty = np.zeros(0, np.int64)
    big = host_sums.MAX_TABLE_ID
    assert host_sums.host_op_tables({big: "fusion.1"}, empty, empty, empty) is None
    assert host_sums.host_op_tables({1: "fusion.1"}, np.array([big]), empty, empty) is None
    assert host_sums.host_op_tables({1: "fusion.1"}, np.array([-1]), empty, empty) is None
    tables = host_sums.host_op_tables({3: "fusion.1", 5: ""}, np.array([2]), np.array([4]), empty)
    assert tables is not None
    assert tables.named == bytes([0, 0, 0, 1]) and tables.flags == bytes([0, 0, 1, 0, 2])
