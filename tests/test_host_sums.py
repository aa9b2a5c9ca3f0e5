"""The XLA:CPU host lines' integer stats read in one pass (``_wire.host_integers``) equal
``EventTable.integers`` (the numpy path) and the raw events.

Oracle: each host line's events decoded here with ``xplane_pb2``, the last int64/uint64
value of each wanted stat per event taken in plain Python (uint64 ids as their int64 bits).
Both paths must give these bits on the shared JAX, TensorFlow and PyTorch/XLA recordings and
a generated profile, read in pieces as the CPU reader reads them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_roofline_plugin.demo import CpuSpec, cpu_xspace
from tb_roofline_plugin.platforms import cpu, host_sums
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import xplane_pb2
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.xspace import event_table
from tb_roofline_plugin.xspace.event_table import INT, REF, EventTable, line_tables
from tb_roofline_plugin.xspace.profile_reader import HOST_PLANE, decode_profile, stat_ids

RECORDINGS = (
    "jax-cpu/jax_matmul",
    "jax-cpu/jax_mlp",
    "jax-cpu/jax_transformer",
    "tf-cpu/mlp_xla",
    "ptxla-cpu/mlp_server",
    "ptxla-cpu/mlp_direct",
    "new-producers/jax_sharded4_jit",
)
compiled = pytest.mark.skipif(
    not host_sums.compiled_host_sums(), reason="the compiled decoder is not built"
)


def _recording(shared_data: Path, name: str) -> Path:
    (path,) = (shared_data / name).glob("plugins/profile/*/*.xplane.pb")
    return path


def _generated(tmp_path: Path) -> Path:
    path = tmp_path / "cpu.xplane.pb"
    path.write_bytes(cpu_xspace(CpuSpec(steps=5, threads=3, seed=7)).SerializeToString())
    return path


def _oracle(data: bytes, names) -> list[list[tuple[list[bool], list[int]]]]:
    """Per host line, per wanted stat: (present, int64 bits) of each event, from the raw
    events in plain Python."""
    space = xplane_pb2.XSpace.FromString(data)
    plane = next(p for p in space.planes if p.name == HOST_PLANE)
    ids = {meta.name: key for key, meta in plane.stat_metadata.items()}
    out = []
    for line in plane.lines:
        per_stat = []
        for name in names:
            present, bits = [], []
            for event in line.events:
                value = None
                for stat in event.stats:
                    kind = stat.WhichOneof("value")
                    if name in ids and stat.metadata_id == ids[name]:
                        if kind in ("int64_value", "uint64_value"):
                            raw = getattr(stat, kind)
                            value = raw - (1 << 64) if raw >= 1 << 63 else raw
                present.append(value is not None)
                bits.append(0 if value is None else value)
            per_stat.append((present, bits))
        out.append(per_stat)
    return out


def _read(data: bytes, chunk_events: int) -> list[list[tuple[list[bool], list[int]]]]:
    """Per host line, per stat of cpu._INTEGER_STATS: integer_stats over the line's pieces."""
    profile = decode_profile(data)
    plane = profile.plane(HOST_PLANE)
    ids = stat_ids(plane, cpu._INTEGER_STATS)
    wanted = [ids.get(name) for name in cpu._INTEGER_STATS]
    out = []
    for line in plane.lines:
        pieces = [
            host_sums.integer_stats(table, wanted)
            for table in line_tables(line, wanted, chunk_events=chunk_events)
        ]
        per_stat = []
        for k in range(len(wanted)):
            present = np.concatenate([piece[k][0] for piece in pieces])
            bits = np.concatenate([piece[k][1] for piece in pieces])
            assert present.dtype == bool and bits.dtype == np.int64
            per_stat.append((present.tolist(), bits.tolist()))
        out.append(per_stat)
    return out


def _check_profile(path: Path, monkeypatch) -> None:
    data = path.read_bytes()
    expected = _oracle(data, cpu._INTEGER_STATS)
    ops = sum(sum(present) for line in expected for present, _ in line[1:2])
    assert ops > 0  # the profile has XLA op events with program ids
    if host_sums.compiled_host_sums():
        for chunk_events in (-1, 7):  # whole lines, and pieces of a few events
            assert _read(data, chunk_events) == expected
    monkeypatch.setenv(event_table.PURE_ENV, "1")
    assert not host_sums.compiled_host_sums()
    assert _read(data, -1) == expected


@pytest.mark.parametrize("name", RECORDINGS)
def test_integer_stats_of_recordings_are_the_raw_events(shared_data, name, monkeypatch):
    _check_profile(_recording(shared_data, name), monkeypatch)


def test_integer_stats_of_a_generated_profile_are_the_raw_events(tmp_path, monkeypatch):
    _check_profile(_generated(tmp_path), monkeypatch)


def _table(stat_event, stat_id, stat_kind, stat_int, events: int) -> EventTable:
    zeros = np.zeros(events, np.int64)
    return EventTable(
        metadata_id=zeros,
        begin_ps=zeros,
        duration_ps=zeros,
        occurrences=zeros,
        stat_event=np.asarray(stat_event, np.int64),
        stat_id=np.asarray(stat_id, np.int64),
        stat_kind=np.asarray(stat_kind, np.int8),
        stat_int=np.asarray(stat_int, np.int64),
        stat_float=np.zeros(len(stat_event)),
        stat_objects=[],
    )


@compiled
def test_the_last_integer_of_an_event_counts_and_other_kinds_do_not():
    # Event 0: stat 5 twice (7 then -3: the last counts); event 1: stat 5 as a ref (not an
    # integer), stat 9 = 2**63 - 1; event 2: nothing; event 3: stat 9 = -1 (uint64 bits).
    table = _table(
        stat_event=[0, 0, 1, 1, 3],
        stat_id=[5, 5, 5, 9, 9],
        stat_kind=[INT, INT, REF, INT, INT],
        stat_int=[7, -3, 11, (1 << 63) - 1, -1],
        events=4,
    )
    got = host_sums.integer_stats(table, [5, None, 9])
    assert [(p.tolist(), v.tolist()) for p, v in got] == [
        ([True, False, False, False], [-3, 0, 0, 0]),
        ([False] * 4, [0] * 4),
        ([False, True, False, True], [0, (1 << 63) - 1, 0, -1]),
    ]
    assert [(p.tolist(), v.tolist()) for p, v in got] == [
        (p.tolist(), v.tolist()) for p, v in (table.integers(i) for i in (5, None, 9))
    ]


@compiled
def test_host_integers_refuses_columns_that_disagree():
    one = np.array([1], np.int64)
    with pytest.raises(ValueError, match="different lengths"):
        host_sums._wire.host_integers(
            np.zeros(2, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int8),
            np.zeros(3, np.int64), one.tobytes(), [np.zeros(1, bool)], [np.zeros(1, np.int64)],
        )  # fmt: skip
    with pytest.raises(ValueError, match="out of range"):
        host_sums._wire.host_integers(
            np.array([4], np.int64), one, np.array([INT], np.int8), one, one.tobytes(),
            [np.zeros(2, bool)], [np.zeros(2, np.int64)],
        )  # fmt: skip


@compiled
def test_the_cpu_export_is_the_same_on_the_pure_path(shared_data, monkeypatch):
    path = _recording(shared_data, "jax-cpu/jax_transformer")
    text = render(analyze_file(path), "json", [path.name])
    monkeypatch.setenv(event_table.PURE_ENV, "1")
    assert render(analyze_file(path), "json", [path.name]) == text
