"""XLA:CPU self time is each op's share of its device's busy time: ops that run at the same
time share the device, so the self times never add up to more than the device's time.

Oracles: hand-computed shares; and, from the raw XSpace read here with ``xplane_pb2``, each
device's op flights (an op lasts until its flow-linked ``end:`` event) swept in plain Python:
every instant split equally among the ops running then.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tb_roofline_plugin.demo import CpuSpec, cpu_xspace, write_profile
from tb_roofline_plugin.ops.busy_shares import busy_shares, union_pieces
from tb_roofline_plugin.ops.op_metrics import IDLE_NAME
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import xplane_pb2

# Every shared XLA:CPU recording with XLA ops; those whose programs have no control flow get
# the per-op oracle (a container's own time needs its HLO nesting).
RECORDINGS = (
    "jax-cpu/jax_matmul",
    "jax-cpu/jax_mlp",
    "jax-cpu/jax_transformer",
    "tf-cpu/mlp_xla",
    "ptxla-cpu/mlp_server",
    "ptxla-cpu/mlp_direct",
    "new-producers/jax_sharded4_jit",
    "new-producers/jax_scan_lstm",
    "new-producers/tf_keras_fit/train",
)
WITH_CONTAINERS = {
    "ptxla-cpu/mlp_server",
    "ptxla-cpu/mlp_direct",
    "new-producers/jax_scan_lstm",
    "new-producers/tf_keras_fit/train",
}


# --- the rule, by hand ---------------------------------------------------------------------


def test_two_ops_running_together_share_the_time_they_overlap():
    # [0, 10) and [4, 14) on one device: 4 alone each, 6 shared (3 each): 7 and 7.
    shares = busy_shares(np.array([0, 4]), np.array([10, 14]), np.array([0, 0]))
    assert shares.tolist() == [7, 7]
    # On two devices nothing is shared.
    shares = busy_shares(np.array([0, 4]), np.array([10, 14]), np.array([0, 1]))
    assert shares.tolist() == [10, 10]


def test_a_container_does_not_run_while_its_nested_op_does():
    # Container C [0, 40) holds N [10, 30) (hidden piece [10, 30)); O [0, 20) runs beside.
    # [0,10): C, O share (5 each); [10,20): N, O (5 each); [20,30): N alone; [30,40): C alone.
    begin, end = np.array([0, 10, 0]), np.array([40, 30, 20])
    hidden = (np.array([0]), np.array([10]), np.array([30]))
    shares = busy_shares(begin, end, np.zeros(3, np.int64), hidden)
    assert shares.tolist() == [15, 15, 10]
    assert shares.sum() == 40  # the busy time: the union of the spans


def test_union_pieces_per_group():
    group = np.array([0, 0, 0, 1, 1])
    begin = np.array([0, 5, 20, 0, 6])
    end = np.array([10, 8, 30, 5, 9])
    pieces = union_pieces(group, begin, end)
    assert [a.tolist() for a in pieces] == [[0, 0, 1, 1], [0, 20, 0, 6], [10, 30, 5, 9]]
    # A later group's pieces are its own, whatever an earlier group's spans reach.
    pieces = union_pieces(np.array([0, 1, 1]), np.array([0, 10, 30]), np.array([100, 20, 40]))
    assert [a.tolist() for a in pieces] == [[0, 1, 1], [0, 10, 30], [100, 20, 40]]


# --- the oracle from the raw events ----------------------------------------------------------


def raw_flights(path: Path, event_ends: bool = False) -> list[tuple]:
    """(device, program id, instruction, begin, end of flight) of every XLA op event (and,
    with ``event_ends``, the end of the op event itself)."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    ops, flight_end = [], {}
    for line in plane.lines:
        for event in line.events:
            stats = {}
            for stat in event.stats:
                kind = stat.WhichOneof("value")
                value = getattr(stat, kind) if kind else None
                stats[names[stat.metadata_id]] = names.get(value) if kind == "ref_value" else value
            begin = line.timestamp_ns * 1000 + event.offset_ps
            end = begin + event.duration_ps
            name = plane.event_metadata[event.metadata_id].name
            if name.startswith("end: ") and "_c" in stats:
                flight_end[stats["_c"]] = max(flight_end.get(stats["_c"], end), end)
            if stats.get("hlo_op") and "program_id" in stats:
                op = str(stats["hlo_op"]).rsplit("::", 1)[-1]
                device = stats.get("device_ordinal", 0)
                ops.append((device, stats["program_id"], op, begin, end, stats.get("_p")))
    return [
        (d, p, n, b, max(e, flight_end.get(f, e)), *((e,) if event_ends else ()))
        for d, p, n, b, e, f in ops
    ]


def swept_shares(spans: list[tuple[int, int]]) -> list[float]:
    """Each span's share: every instant split equally among the spans holding it."""
    marks = sorted({t for span in spans for t in span})
    starting, ending = defaultdict(list), defaultdict(list)
    for i, (b, e) in enumerate(spans):
        starting[b].append(i)
        ending[e].append(i)
    shares = [0.0] * len(spans)
    running: set[int] = set()
    for t, next_t in zip(marks, marks[1:] + [None]):
        running.difference_update(ending[t])
        running.update(i for i in starting[t] if spans[i][1] > t)
        if next_t is not None and running:
            for i in running:
                shares[i] += (next_t - t) / len(running)
    return shares


def union_ps(spans: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for b, e in sorted(spans):
        if reach is None or b > reach:
            total, reach = total + e - b, e
        elif e > reach:
            total, reach = total + e - reach, e
    return total


def _path(shared_data: Path, folder: str) -> Path:
    (path,) = (shared_data / folder).glob("plugins/profile/*/*.xplane.pb")
    return path


def _self_time_checks(path: Path, per_op_oracle: bool) -> None:
    stats = analyze_file(path)
    db = stats.all_db
    ops = db.name != IDLE_NAME
    self_ps = int(db.self_time_ps[ops].sum())
    flights = raw_flights(path)
    by_device = defaultdict(list)
    for device, program, name, begin, end in flights:
        by_device[device].append((program, name, begin, end))
    busy_ps = sum(union_ps([(b, e) for *_, b, e in spans]) for spans in by_device.values())
    assert self_ps <= busy_ps <= db.total_time_ps, path
    if not per_op_oracle:
        return
    assert self_ps == pytest.approx(busy_ps, abs=len(flights))  # each share rounded down
    oracle: dict[tuple[int, str], float] = defaultdict(float)
    for spans in by_device.values():
        for (program, name, _, _), share in zip(
            spans, swept_shares([(b, e) for *_, b, e in spans])
        ):
            oracle[(program, name)] += share
    ours = {
        (int(p), str(n)): int(s)
        for p, n, s, o in zip(db.program_id, db.name, db.self_time_ps, db.occurrences)
        if o > 0
    }
    assert ours.keys() == oracle.keys()
    for key, share in oracle.items():
        assert ours[key] == pytest.approx(share, abs=len(flights)), key


@pytest.mark.parametrize("folder", RECORDINGS)
def test_self_times_are_shares_of_each_devices_busy_time(shared_data, folder):
    _self_time_checks(_path(shared_data, folder), folder not in WITH_CONTAINERS)


def test_sharded_ops_overlap_mostly_while_asynchronous_ops_are_in_flight(shared_data):
    """Why the op times of jax_sharded4_jit add up to more than its devices' time: on each
    device its op events alone barely overlap (two threads at once); their flights (to the
    ``end:`` events) do."""
    flights = raw_flights(_path(shared_data, "new-producers/jax_sharded4_jit"), event_ends=True)
    summed_ps = sum(e - b for _, _, _, b, e, _ in flights)
    busy_ps = events_ps = events_busy_ps = 0
    for device in range(4):
        mine = [f for f in flights if f[0] == device]
        busy_ps += union_ps([(b, e) for _, _, _, b, e, _ in mine])
        events_ps += sum(x - b for _, _, _, b, _, x in mine)
        events_busy_ps += union_ps([(b, x) for _, _, _, b, _, x in mine])
    assert summed_ps / 1e6 == pytest.approx(673_615.533, abs=1e-3)
    assert busy_ps / 1e6 == pytest.approx(529_167.84, abs=0.01)
    assert (events_ps - events_busy_ps) / 1e6 == pytest.approx(537.4, abs=0.1)
    assert (summed_ps - busy_ps) - (events_ps - events_busy_ps) > 143_000 * 1e6
    stats = analyze_file(_path(shared_data, "new-producers/jax_sharded4_jit"))
    ops = stats.all_db.name != IDLE_NAME
    assert stats.all_db.self_time_ps[ops].sum() / 1e6 == pytest.approx(busy_ps / 1e6, abs=0.01)
    # The rest of the devices' time is IDLE.
    idle = stats.all_db.self_time_ps[~ops].sum()
    assert idle + stats.all_db.self_time_ps[ops].sum() == stats.all_db.total_time_ps


def test_generated_cpu_profile_self_times(tmp_path):
    """The demo's XLA:CPU profile: ops of one wave run concurrently on four threads."""
    path = write_profile(tmp_path / "cpu.xplane.pb", cpu_xspace(CpuSpec(steps=3)))
    _self_time_checks(path, per_op_oracle=True)


def test_freshly_recorded_jax_programs_self_times(tmp_path):
    pytest.importorskip("jax")
    from jax_programs import record

    for name in ("attention", "mlp_step"):
        path, _, _ = record(tmp_path / name, name, steps=2)
        _self_time_checks(path, per_op_oracle=True)


def test_generated_call_profile_self_times(tmp_path):
    from test_loops_and_devices import _call_profile

    _self_time_checks(_call_profile(tmp_path / "call.xplane.pb"), per_op_oracle=False)
