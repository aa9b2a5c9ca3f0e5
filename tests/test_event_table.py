"""The vectorized event decoder gives exactly what per-event protobuf decoding gives."""

from __future__ import annotations

import numpy as np
import pytest

from tb_roofline_plugin.demo.xspace_builder import U64, Ref, plane
from tb_roofline_plugin.protos import xplane_lite_pb2, xplane_pb2
from tb_roofline_plugin.xspace import event_table
from tb_roofline_plugin.xspace.event_table import (
    INT,
    REF,
    STR,
    _decode_varints,
    _NotVarints,
    line_table,
)


def _lite_and_full(space_plane: xplane_pb2.XPlane):
    data = space_plane.SerializeToString()
    return xplane_lite_pb2.XPlaneLite.FromString(data), xplane_pb2.XPlane.FromString(data)


def _assert_same(a, b):
    for key in ("metadata_id", "begin_ps", "duration_ps", "occurrences", "stat_event", "stat_id"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
    assert np.array_equal(a.stat_kind, b.stat_kind) and np.array_equal(a.stat_int, b.stat_int)


def _plane(stats_per_event, count=50):
    space = xplane_pb2.XSpace()
    builder = plane(space, "/device:GPU:0")
    line = builder.line("Stream #1", timestamp_ns=7)
    mid = builder.event_metadata("kernel")
    for i in range(count):
        builder.event(line, mid if i % 7 else mid + 1000, i * 1_000_003, i * 17, stats_per_event(i))
    line.events.add(metadata_id=mid, num_occurrences=5, duration_ps=3)  # an aggregated event
    return builder.plane


def test_varint_stats_take_the_vectorized_path_and_match():
    source = _plane(
        lambda i: {
            "correlation_id": U64(2**64 - 1 - i),
            "program_id": -i - 1,
            "hlo_op": Ref(f"fusion.{i % 3}"),
            "device_offset_ps": U64(5_000_000_000_000 + i),
        }
    )
    lite, full = _lite_and_full(source)
    fast = event_table._fast_table(
        lite.lines[0].events, lite.lines[0].timestamp_ns
    )  # raises if it had to fall back
    slow = event_table._slow_table(full.lines[0].events, full.lines[0].timestamp_ns)
    _assert_same(fast, slow)
    assert fast.begin_ps[1] == 7000 + 1_000_003
    assert fast.occurrences[-1] == 5 and fast.occurrences[0] == 1
    present, values = fast.integers(
        lite.stat_metadata and {m.name: k for k, m in lite.stat_metadata.items()}["correlation_id"]
    )
    assert present[:50].all() and values[0].astype(np.uint64) == np.uint64(2**64 - 1)
    names = {k: m.name for k, m in lite.stat_metadata.items()}
    hlo = fast.strings({m.name: k for k, m in lite.stat_metadata.items()}["hlo_op"], names)
    assert hlo[4] == "fusion.1" and hlo[-1] is None
    assert set(fast.stat_kind.tolist()) == {INT, REF}


def test_string_and_double_stats_fall_back_to_the_same_table():
    source = _plane(lambda i: {"name": f"op {i}", "scale": 1.5 * i, "n": i})
    lite, full = _lite_and_full(source)
    with pytest.raises(_NotVarints):
        event_table._fast_table(lite.lines[0].events, lite.lines[0].timestamp_ns)
    table = line_table(lite.lines[0])
    _assert_same(table, event_table._slow_table(full.lines[0].events, full.lines[0].timestamp_ns))
    ids = {m.name: k for k, m in lite.stat_metadata.items()}
    assert table.numbers(ids["scale"])[3] == 4.5
    assert table.strings(ids["name"], {})[2] == "op 2"
    assert STR in table.stat_kind.tolist()


def test_varint_decoder_edges():
    data = b"\x00\x7f\x80\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x96\x01"
    values, starts = _decode_varints(np.frombuffer(data, np.uint8))
    assert values.tolist() == [0, 127, 128, 2**64 - 1, 150]
    assert starts.tolist() == [0, 1, 2, 4, 14]
    with pytest.raises(_NotVarints):
        _decode_varints(np.frombuffer(b"\x01\x80", np.uint8))
    with pytest.raises(_NotVarints):
        _decode_varints(np.frombuffer(b"\xff" * 11 + b"\x01", np.uint8))


def test_many_events_are_decoded_in_chunks(monkeypatch):
    monkeypatch.setattr(event_table, "CHUNK_BYTES", 64)
    source = _plane(lambda i: {"program_id": i}, count=200)
    lite, full = _lite_and_full(source)
    assert len(event_table._chunks(lite.lines[0].events)) > 10
    _assert_same(
        event_table._fast_table(lite.lines[0].events, lite.lines[0].timestamp_ns),
        event_table._slow_table(full.lines[0].events, full.lines[0].timestamp_ns),
    )


def test_empty_line():
    lite, _ = _lite_and_full(_plane(lambda i: {}, count=0))
    table = line_table(lite.lines[0])
    assert len(table) == 1 and table.occurrences.tolist() == [5]
