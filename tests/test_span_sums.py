"""The one-pass sums of op events (``_wire.span_sums``) equal the array path and a Python oracle.

Per metadata id and per (step window, metadata id) cell: occurrences, time, self time (time
less the spans nested directly in it), a summed stat and the time scaled by another, an
event in the window it starts in. The compiled pass takes the lines' bytes in place; the
array path decodes them into per-event columns. They must give the same bits on every TPU
core of real and generated profiles, and the compiled pass must leave to the array path
what it cannot do exactly (events out of order, partial overlaps, sums that could round).
"""

from __future__ import annotations

import math

import fuzz_support as fs
import numpy as np
import pytest

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace
from tb_roofline_plugin.ops import span_sums as ss
from tb_roofline_plugin.platforms import tpu
from tb_roofline_plugin.platforms.analysis import analyze_bytes
from tb_roofline_plugin.protos import xplane_pb2
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.xspace import event_table
from tb_roofline_plugin.xspace.profile_reader import TPU_CORE_PLANE, decode_profile, line_events

compiled = pytest.mark.skipif(event_table._wire is None, reason="the compiled decoder is not built")
STATS = ("dma", "scale")
# Stat metadata ids of the hand-built plane.
OFFSET, DURATION, DMA, SCALE = 1, 2, 3, 4


def _normalized(sums: ss.SpanSums) -> tuple:
    """The sums as comparable bits: cells sorted by (window, id)."""
    order = np.lexsort((sums.cell_id, sums.cell_window))
    bits = {k: v.astype(np.float64).view(np.int64).tolist() for k, v in sums.per_id.items()}
    cell_bits = {k: v[order].view(np.int64).tolist() for k, v in sums.per_cell.items()}
    return (
        sums.events,
        sums.min_begin_ps,
        sums.max_end_ps,
        sums.ids.tolist(),
        bits,
        sums.cell_window[order].tolist(),
        sums.cell_id[order].tolist(),
        cell_bits,
    )


def _columns(windows) -> ss.Windows | None:
    """Windows given as (begin, end) pairs (or as the columns already) as the readers' columns."""
    if windows is None or isinstance(windows, tuple):
        return windows
    return (
        np.array([w[0] for w in windows], np.int64),
        np.array([w[1] for w in windows], np.int64),
    )


def _array(plane, lines, stats, windows) -> ss.SpanSums:
    parts = [line_events(plane, line, numeric_stats=stats) for line in lines]
    return ss.array_span_sums(parts, stats, _columns(windows))


def _both(plane, lines, stats, windows) -> tuple[ss.SpanSums | None, ss.SpanSums]:
    """(the compiled pass's sums or None where it declines, the array path's)."""
    ids = ss.stat_ids(plane, [*ss.DEVICE_TIME_STATS, *stats])
    wanted = [ids.get(n) for n in (*ss.DEVICE_TIME_STATS, *stats)]
    begin, end = _columns(windows) or (None, None)
    raw = event_table.compiled_span_sums(lines, wanted, begin, end)
    fast = ss._from_compiled(*raw) if raw is not None else None
    return fast, _array(plane, lines, stats, windows)


def _tpu_profiles() -> list[tuple[str, bytes]]:
    real = [(n, d) for n, d in fs.shared_profiles() if "CORRUPT" not in n and "xprof/" in n]
    generated = [(n, d) for n, d in fs.demo_profiles() if "gpu" not in n and "amd" not in n]
    pod_host = tpu_xspace(TpuSpec(steps=6, ops_per_step=50, seed=3)).SerializeToString()
    return [*real, *generated, ("pod_host.xplane.pb", pod_host)]


@compiled
@pytest.mark.parametrize("name", [n for n, _ in _tpu_profiles()])
def test_compiled_sums_equal_the_array_path_on_every_tpu_core(name):
    profile = decode_profile(dict(_tpu_profiles())[name])
    planes = profile.planes_matching(TPU_CORE_PLANE)
    steps = [tpu._steps(p) for p in planes]
    _, windows = tpu._core_windows(steps)
    compared = 0
    for plane, core_windows in zip(planes, windows):
        lines = [line for line in plane.lines if line.name in tpu.OP_LINES]
        fast, slow = _both(plane, lines, tpu._EVENT_STATS, core_windows)
        assert fast is not None  # real and generated cores are nested spans in order
        assert _normalized(fast) == _normalized(slow)
        compared += fast.events
    assert compared > 0


@pytest.mark.parametrize("name", [n for n, _ in _tpu_profiles()])
def test_tpu_results_without_the_compiled_decoder_are_the_same(name):
    data = dict(_tpu_profiles())[name]
    fast = render(analyze_bytes(data, name), "json", [name])
    with fs.pure_decoder():
        slow = render(analyze_bytes(data, name), "json", [name])
    assert fast == slow


# --- hand-built lines: what each sum is ---------------------------------------------------


def _plane(*lines: list[xplane_pb2.XEvent], timestamp_ns: int = 0) -> xplane_pb2.XPlane:
    plane = xplane_pb2.XPlane(id=1, name="/device:TPU:0")
    for key, name in ((OFFSET, "device_offset_ps"), (DURATION, "device_duration_ps")):
        plane.stat_metadata[key].id, plane.stat_metadata[key].name = key, name
    for key, name in ((DMA, "dma"), (SCALE, "scale")):
        plane.stat_metadata[key].id, plane.stat_metadata[key].name = key, name
    for k, events in enumerate(lines):
        line = plane.lines.add(id=k + 1, name="XLA Ops", timestamp_ns=timestamp_ns)
        line.events.extend(events)
    return plane


def _event(mid: int, begin: int, duration: int, occurrences: int = 0, **stats):
    event = xplane_pb2.XEvent(metadata_id=mid, duration_ps=duration)
    if occurrences:
        event.num_occurrences = occurrences
    else:
        event.offset_ps = begin
    for key, value in stats.items():
        stat_id = {"dma": DMA, "scale": SCALE, "dev_offset": OFFSET, "dev_duration": DURATION}[key]
        stat = event.stats.add(metadata_id=stat_id)
        if isinstance(value, float):
            stat.double_value = value
        else:
            stat.int64_value = value
    return event


def _sums(plane_message, windows=None) -> tuple[ss.SpanSums | None, ss.SpanSums]:
    space = xplane_pb2.XSpace(planes=[plane_message])
    plane = decode_profile(space.SerializeToString()).planes[0]
    return _both(plane, plane.lines, STATS, windows)


def _oracle(lines: list[list[tuple]], windows) -> dict:
    """Per (window or None, mid): [occurrences, time, self, dma, scaled], by a Python loop
    over (mid, begin, duration, occurrences, dma, scale) tuples: a span's parent is the
    innermost span before it in (begin, longest first, line order) that holds it."""
    sums: dict = {}
    for events in lines:
        rank = sorted(range(len(events)), key=lambda i: (events[i][1], -events[i][2], i))
        place = {i: k for k, i in enumerate(rank)}
        parent = {}
        for i, (_, begin, duration, *_rest) in enumerate(events):
            holders = [
                j
                for j, (_, b, d, *_r) in enumerate(events)
                if place[j] < place[i] and b <= begin and b + d >= begin + duration
            ]
            if holders:
                parent[i] = max(holders, key=place.__getitem__)
        for i, (mid, begin, duration, occ, dma, scale) in enumerate(events):
            children = sum(events[k][2] for k, p in parent.items() if p == i)
            row = [occ or 1, duration, duration - children, dma, duration * scale]
            keys = [(None, mid)]
            starts = [w for w, (b, e) in enumerate(windows or []) if b <= begin]
            if starts and begin < windows[starts[-1]][1]:
                keys.append((starts[-1], mid))
            for key in keys:
                total = sums.setdefault(key, [0.0] * 5)
                for k in range(5):
                    total[k] += row[k]
    return sums


def _as_oracle(sums: ss.SpanSums) -> dict:
    out = {}
    for i, mid in enumerate(sums.ids.tolist()):
        out[(None, mid)] = [float(sums.per_id[k][i]) for k in ss.SUMS]
    for c in range(len(sums.cell_id)):
        key = (int(sums.cell_window[c]), int(sums.ids[sums.cell_id[c]]))
        out[key] = [float(sums.per_cell[k][c]) for k in ss.SUMS]
    return out


@compiled
def test_nested_spans_sum_their_self_times_per_window_as_computed_by_hand():
    # A call [0, 100) holding a while [10, 90) holding fusions [10, 30) and [40, 90);
    # another fusion [100, 120) right after, touching the call's end; windows [0, 50) and
    # [95, 200): the call, the while and the first two fusions start in window 0, the
    # last fusion in window 1.
    events = [
        _event(7, 0, 100, dma=4),
        _event(8, 10, 80, scale=0.5),
        _event(9, 10, 20, dma=1.5),
        _event(9, 40, 50, occurrences=3, dev_offset=40, dev_duration=50),
        _event(9, 100, 20),
    ]
    windows = [(0, 50), (95, 200)]
    fast, slow = _sums(_plane(events), windows)
    assert fast is not None and _normalized(fast) == _normalized(slow)
    got = _as_oracle(fast)
    assert got[(None, 7)] == [1, 100, 20, 4, 100]  # self: 100 - 80 (the while)
    assert got[(None, 8)] == [1, 80, 10, 0, 40]  # self: 80 - 20 - 50; scaled 80 x 0.5
    assert got[(None, 9)] == [5, 90, 90, 1.5, 90]  # 1 + 3 + 1 occurrences
    assert got[(0, 9)] == [4, 70, 70, 1.5, 70] and got[(1, 9)] == [1, 20, 20, 0, 20]
    assert (1, 7) not in got and got[(0, 8)] == got[(None, 8)]
    assert (fast.min_begin_ps, fast.max_end_ps, fast.events) == (0, 120, 5)


@compiled
def test_an_event_in_no_window_and_at_a_window_end_counts_only_for_its_id():
    events = [_event(1, 0, 5), _event(1, 10, 5), _event(1, 20, 5), _event(2, 30, 1)]
    fast, slow = _sums(_plane(events), [(10, 20), (25, 30)])
    assert fast is not None and _normalized(fast) == _normalized(slow)
    got = _as_oracle(fast)
    assert got[(None, 1)][0] == 3 and got[(0, 1)][0] == 1  # [0,5) before; [20,25) a gap
    assert (1, 2) not in got  # starts at the end of window 1: outside


@compiled
@pytest.mark.parametrize(
    "case",
    [
        "partial overlap",
        "negative device duration",
        "duration out of range",
        "windows out of order",
    ],
)
def test_what_the_compiled_pass_cannot_sum_exactly_goes_to_the_array_path(case):
    events = [_event(1, 0, 50), _event(2, 10, 20), _event(3, 40, 5)]
    windows = [(0, 100)]
    if case == "partial overlap":
        events.append(_event(4, 45, 100))
    elif case == "negative device duration":
        events[2] = _event(3, 40, 5, dev_offset=41, dev_duration=-3)
    elif case == "duration out of range":
        events[2] = _event(3, 40, 2**62 + 1)
    else:
        windows = [(50, 100), (0, 10)]
    space = xplane_pb2.XSpace(planes=[_plane(events)])
    plane = decode_profile(space.SerializeToString()).planes[0]
    ids = ss.stat_ids(plane, [*ss.DEVICE_TIME_STATS, *STATS])
    wanted = [ids.get(n) for n in (*ss.DEVICE_TIME_STATS, *STATS)]
    begin, end = _columns(windows)
    assert event_table.compiled_span_sums(plane.lines, wanted, begin, end) is None
    if case == "duration out of range":  # the array path names the problem
        with pytest.raises(ValueError, match="out of range"):
            ss.span_sums(plane, plane.lines, STATS, _columns(windows))
        return
    got = ss.span_sums(plane, plane.lines, STATS, _columns(windows))
    assert _normalized(got) == _normalized(_array(plane, plane.lines, STATS, windows))


@compiled
def test_a_line_out_of_order_is_nested_in_time_order_and_summed_in_line_order():
    """Real XLA Ops lines have a few events out of place: nesting follows (begin, longest
    first), each float sum the line's order, as the array path's bincount does."""
    events = [
        _event(2, 10, 20, dma=0.1),
        _event(1, 0, 50, dma=0.2),
        _event(3, 40, 5, dma=0.3),
        _event(2, 10, 20, dma=0.7),  # a tie of begin and end: the earlier one holds it
        _event(2, 60, 5),
        _event(2, 55, 10),  # holds the one before it
    ]
    fast, slow = _sums(_plane(events), [(0, 58), (58, 100)])
    assert fast is not None and _normalized(fast) == _normalized(slow)
    got = _as_oracle(fast)
    assert got[(None, 1)][2] == 50 - 20 - 5  # the first span of mid 2 and the mid 3 one
    assert got[(None, 2)][2] == 0 + 20 + 5 + 5  # [10,30) holds its twin, [55,65) [60,65)
    assert got[(0, 2)][0] == 3 and got[(1, 2)][0] == 1
    plain = [
        (2, 10, 20, 0, 0.1, 1.0),
        (1, 0, 50, 0, 0.2, 1.0),
        (3, 40, 5, 0, 0.3, 1.0),
        (2, 10, 20, 0, 0.7, 1.0),
        (2, 60, 5, 0, 0.0, 1.0),
        (2, 55, 10, 0, 0.0, 1.0),
    ]
    assert got == _oracle([plain], [(0, 58), (58, 100)])


@compiled
def test_self_times_that_could_round_as_doubles_go_to_the_array_path():
    big = 2**52  # two such self times sum past 2**53
    events = [_event(1, 0, big), _event(1, big, big)]
    fast, slow = _sums(_plane(events))
    assert fast is None and slow.per_id["self_ps"][0] == 2.0 * big


@compiled
def test_stats_follow_the_decoders_rules():
    """A double wins over an int of the same stat, the last of each kind counts, inf is
    absent (0 summed, 1 scaling), magnitudes are clipped; device time needs both stats."""
    repeated = _event(1, 0, 10)
    for value in (3, 5):
        repeated.stats.add(metadata_id=DMA, int64_value=value)
    repeated.stats.add(metadata_id=DMA, double_value=2.5)
    repeated.stats.add(metadata_id=DMA, double_value=0.25)
    repeated.stats.add(metadata_id=DMA, int64_value=9)
    events = [
        repeated,
        _event(2, 20, 10, dma=math.inf, scale=math.inf),
        _event(3, 40, 10, dma=1e300, scale=-1e300),
        _event(4, 60, 10, dev_offset=1000),  # an offset without a duration: the event's time
        _event(5, 2000, 10, dev_offset=1000, dev_duration=7),  # both: the device's
    ]
    fast, slow = _sums(_plane(events))
    assert fast is not None and _normalized(fast) == _normalized(slow)
    got = _as_oracle(fast)
    assert got[(None, 1)][3] == 0.25 and got[(None, 2)][3:] == [0.0, 10.0]
    assert got[(None, 3)][3:] == [1e200, 10 * -1e200]
    assert got[(None, 4)][1] == 10 and got[(None, 5)][1] == 7
    assert fast.min_begin_ps == 0 and fast.max_end_ps == 1007


@compiled
@pytest.mark.parametrize("shift", [300, 1 << 40])
def test_stat_ids_past_the_slot_table_are_read_alike(shift):
    """Stat ids the compiled pass's table of 256 slots cannot hold are compared one by one:
    the same sums as with small ids, and as the array path's."""
    events = [
        _event(1, 0, 100, dma=0.5, scale=2.0),
        _event(2, 10, 20, dma=3, dev_offset=500, dev_duration=7),
        _event(1, 40, 10, scale=0.5),
    ]
    small, _ = _sums(_plane(events))
    moved = _plane(events)
    for key in list(moved.stat_metadata):
        name = moved.stat_metadata[key].name
        del moved.stat_metadata[key]
        moved.stat_metadata[key + shift].id, moved.stat_metadata[key + shift].name = (
            key + shift,
            name,
        )
    for stat in (s for line in moved.lines for e in line.events for s in e.stats):
        stat.metadata_id += shift
    fast, slow = _sums(moved)
    assert fast is not None and small is not None
    assert _normalized(fast) == _normalized(slow) == _normalized(small)
    assert _as_oracle(fast)[(None, 1)][4] == 100 * 2.0 + 10 * 0.5  # scaled time


@compiled
@pytest.mark.parametrize("seed", range(12))
def test_random_nested_lines_match_the_array_path_and_the_oracle(seed):
    """Lines of nested spans (ties of begin and end, zero durations, several lines whose
    windows go back) against the array path and an independent Python oracle."""
    rng = np.random.default_rng(seed)
    lines, tuples = [], []
    for _ in range(int(rng.integers(1, 4))):
        events: list = []
        plain: list = []
        _nest(rng, events, plain, 0, 200, 0)
        lines.append(events)
        tuples.append(plain)
    cuts = np.sort(rng.integers(0, 200, 4))
    windows = [(int(cuts[0]), int(cuts[1])), (int(cuts[2]), int(cuts[3]))]
    fast, slow = _sums(_plane(*lines), windows)
    assert fast is not None and _normalized(fast) == _normalized(slow)
    assert _as_oracle(fast) == _oracle(tuples, windows)


def _nest(rng, events: list, plain: list, begin: int, end: int, depth: int) -> None:
    """Random spans one after the other in [begin, end), each holding more (to depth 3)."""
    at = begin
    while at < end and len(events) < 40:
        length = int(rng.integers(0, max(end - at, 1) + 1))
        mid, dma = int(rng.integers(1, 5)), float(rng.integers(0, 4)) / 4
        events.append(_event(mid, at, length, dma=dma))
        plain.append((mid, at, length, 0, dma, 1.0))
        if depth < 3 and length > 1:
            _nest(rng, events, plain, at, at + length, depth + 1)
        at += length + int(rng.integers(0, 3))


def _two_ids_of_one_op() -> bytes:
    """A TPU core whose XLA Ops line has two metadata ids naming the same op (fusion.1 of
    program 0) and a third op; nested, with float stats that round differently when summed
    per id than in line order."""
    plane = xplane_pb2.XPlane(id=1, name="/device:TPU:0")
    plane.stat_metadata[DMA].id, plane.stat_metadata[DMA].name = DMA, "dma_stall_duration_ps"
    for key, name in ((1, "fusion.1"), (2, "fusion.1"), (3, "copy.2")):
        plane.event_metadata[key].id = key
        plane.event_metadata[key].name = f"%{name} = f32[8] fusion()"
        plane.event_metadata[key].display_name = name
    line = plane.lines.add(id=1, name="XLA Ops", timestamp_ns=0)
    dma = [0.1, 0.7, 0.2, 1e16, 0.3, -1e16]
    for k, (mid, begin, duration) in enumerate(
        [(3, 0, 100), (1, 10, 20), (2, 35, 10), (1, 50, 5), (2, 60, 30), (1, 95, 2)]
    ):
        event = line.events.add(metadata_id=mid, offset_ps=begin, duration_ps=duration)
        event.stats.add(metadata_id=DMA, double_value=dma[k])
    return xplane_pb2.XSpace(planes=[plane]).SerializeToString()


def test_two_metadata_ids_of_one_op_are_summed_together_in_line_order():
    data = _two_ids_of_one_op()
    stats = analyze_bytes(data, "h.xplane.pb")
    db = stats.all_db
    row = db.name.tolist().index("fusion.1")
    assert db.occurrences[row] == 5 and db.time_ps[row] == 20 + 10 + 5 + 30 + 2
    # Line order, as one op: ((((0.7 + 0.2) + 1e16) + 0.3) + -1e16) and 0.1's row apart.
    expected = 0.0
    for value in (0.7, 0.2, 1e16, 0.3, -1e16):
        expected += value
    assert db.dma_stall_ps[row] == expected
    assert db.self_time_ps[db.name.tolist().index("copy.2")] == 100 - 67
    with fs.pure_decoder():
        pure = render(analyze_bytes(data, "h.xplane.pb"), "json", ["h"])
    assert render(stats, "json", ["h"]) == pure
