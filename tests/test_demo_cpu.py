"""The generated CPU profiles follow docs/xspace.md §6 and §7 (JAX on XLA:CPU).

Profiles are written to disk and read back; stats are found by name. Op costs come from
the project's own readers (``program_modules``, ``ModuleCosts``) and the whole profile is
checked through ``analyze_file``.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from xspace_stats import named_stats

from tb_roofline_plugin.demo import CpuSpec, cpu_xspace, write_profile
from tb_roofline_plugin.hlo.modules import program_modules
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import xplane_pb2
from tb_roofline_plugin.xspace.profile_reader import read_profile

TRAIN, EVAL = 30, 34
XLA_THREADS = ("tf_XLAPjRtCpuClient/", "tf_XLAEigen/")
OP_STATS = {
    "hlo_op": "ref_value",
    "hlo_module": "ref_value",
    "program_id": "int64_value",
    "run_id": "int64_value",
    "device_ordinal": "int64_value",
    "_src": "ref_value",
    "_p": "int64_value",
}


def _plane(space, name):
    (plane,) = [p for p in space.planes if p.name == name]
    return plane


def _events(space) -> list[dict]:
    """Every `/host:CPU` event: line, name, begin, end, stats (absolute ps)."""
    host = _plane(space, "/host:CPU")
    out = []
    for line in host.lines:
        for event in line.events:
            begin = line.timestamp_ns * 1000 + event.offset_ps
            out.append(
                {
                    "line": line.name,
                    "name": host.event_metadata[event.metadata_id].name,
                    "begin": begin,
                    "end": begin + event.duration_ps,
                    "stats": named_stats(host, event.stats),
                }
            )
    return out


def _ops(space) -> list[dict]:
    """Op events, each ending at its flow-linked `end:` event (``event_end``: its own end)."""
    events = _events(space)
    end_of = {e["stats"]["_c"][1]: e["end"] for e in events if "_c" in e["stats"]}
    ops = [e for e in events if "hlo_op" in e["stats"]]
    return [{**op, "event_end": op["end"], "end": end_of[op["stats"]["_p"][1]]} for op in ops]


def _roots(space) -> list[tuple[int, int, int]]:
    return sorted(
        (e["stats"]["step_num"][1], e["begin"], e["end"])
        for e in _events(space)
        if "_r" in e["stats"]
    )


def _op_time(space) -> dict[str, int]:
    times: dict[str, int] = defaultdict(int)
    for op in _ops(space):
        times[op["name"]] += op["end"] - op["begin"]
    return times


@pytest.fixture(scope="module")
def default_path(tmp_path_factory):
    return write_profile(tmp_path_factory.mktemp("cpu") / "cpu-host.xplane.pb", cpu_xspace())


@pytest.fixture(scope="module")
def default_space(default_path):
    return xplane_pb2.XSpace.FromString(default_path.read_bytes())


def test_decodes_and_round_trips(default_path, default_space):
    assert list(default_space.hostnames) == ["cpu-host"]
    assert default_space.SerializeToString(deterministic=True) == default_path.read_bytes()
    assert 5_000 < default_path.stat().st_size < 200_000


def test_planes_and_metadata(default_path, default_space):
    assert [p.name for p in default_space.planes] == [
        "/host:metadata",
        "/host:CPU",
        "Task Environment",
    ]
    for plane in default_space.planes:  # metadata maps are keyed by their ids
        for mapping in (plane.event_metadata, plane.stat_metadata):
            assert all(key == value.id for key, value in mapping.items())
    meta = _plane(default_space, "/host:metadata")
    plane_stats = named_stats(meta, meta.stats)
    for name in ("jax_version", "jaxlib_version", "cpu_version"):
        assert plane_stats[name][0] == "str_value" and plane_stats[name][1]
    programs = {}
    for event_meta in meta.event_metadata.values():
        stats = named_stats(meta, event_meta.stats)
        assert stats["Hlo Proto"][0] == "bytes_value" and len(stats["Hlo Proto"][1]) > 100
        assert stats["program_id"][0] == "uint64_value"
        programs[event_meta.name] = stats["program_id"][1]
    assert programs == {f"jit_train_step({TRAIN})": TRAIN, f"jit_eval_step({EVAL})": EVAL}
    modules, problems = program_modules(read_profile(default_path))
    assert problems == [] and set(modules) == {TRAIN, EVAL}
    task = _plane(default_space, "Task Environment")
    env = named_stats(task, task.stats)
    start, stop = env["profile_start_time"], env["profile_stop_time"]
    assert start[0] == stop[0] == "uint64_value" and 0 < stop[1] - start[1] < 10**9


def test_host_lines_op_events_and_filler(default_space):
    host = _plane(default_space, "/host:CPU")
    names = [line.name for line in host.lines]
    assert names[0] == "python"
    xla = [n for n in names if n.startswith(XLA_THREADS)]
    assert len(xla) == 4 and xla[0].startswith("tf_XLAPjRtCpuClient/")
    assert all(n.startswith("tf_XLAEigen/") for n in xla[1:])
    for line in host.lines:
        offsets = [e.offset_ps for e in line.events]
        assert offsets == sorted(offsets) and min(offsets) >= 0
    events = _events(default_space)
    python = [e for e in events if e["line"] == "python"]
    assert any(e["name"] == "PjitFunction(train_step)" for e in python)
    assert any(e["name"] == "PjitFunction(eval_step)" for e in python)
    for root in (e for e in python if "_r" in e["stats"]):
        assert root["name"] == "train"
        assert root["stats"]["_r"] == ("int64_value", 1)
        assert root["stats"]["step_num"][0] == "int64_value"

    ops = _ops(default_space)
    assert ops and all(op["line"] in xla for op in ops)
    ends = {(e["line"], e["name"], e["begin"]) for e in events if e["name"].startswith("end: ")}
    assert len(ends) == len(ops)
    assert all(e["begin"] == e["end"] for e in events if e["name"].startswith("end: "))
    for op in ops:
        kinds = {name: kind for name, (kind, _) in op["stats"].items()}
        assert kinds == OP_STATS
        assert op["stats"]["hlo_op"][1] == op["name"]
        program = op["stats"]["program_id"][1]
        module = {TRAIN: "jit_train_step", EVAL: "jit_eval_step"}[program]
        assert op["stats"]["hlo_module"][1] == module
        assert (op["line"], f"end: {op['name']}", op["end"]) in ends
        assert op["end"] - op["begin"] >= 2_000_000  # no thunk under 2 µs
        if op["name"].startswith("dot"):  # asynchronous: the event is the dispatch only
            assert op["event_end"] - op["begin"] == min(op["end"] - op["begin"], 30_000_000)
        else:
            assert op["event_end"] == op["end"]
    assert any(op["event_end"] < op["end"] for op in ops)  # dots dispatched, then in flight
    fillers = [e for e in events if e["name"].startswith(("ThreadpoolListener", "ThunkExecutor"))]
    assert len(fillers) >= len(ops)
    assert any(kind == "str_value" for e in events for kind, _ in e["stats"].values())


def test_ops_of_a_step_run_concurrently(default_space):
    ops = _ops(default_space)
    for _, begin, end in _roots(default_space):
        inside = [op for op in ops if begin <= op["begin"] < end]
        assert len({op["line"] for op in inside}) >= 2
        # Most ops running at once: between 2 and the 4 threads.
        points = sorted([(op["begin"], 1) for op in inside] + [(op["end"], -1) for op in inside])
        running = peak = 0
        for _, delta in points:
            running += delta
            peak = max(peak, running)
        assert 2 <= peak <= 4


def test_analysis_steps_flops_and_rates(default_path, default_space):
    stats = analyze_file(default_path)
    assert stats.run_env.hardware_type == "CPU"
    assert stats.unattributed is None
    db = stats.all_db
    assert db.flops.sum() > 0
    assert len(stats.steps) == CpuSpec().steps
    modules, _ = program_modules(read_profile(default_path))
    ops = _ops(default_space)
    roots = _roots(default_space)
    assert [r[0] for r in roots] == [0, 1, 2, 3]
    claimed = 0
    for step, (num, begin, end) in zip(stats.steps, roots):
        assert step.step_num == num and step.duration_ps == end - begin
        inside = [op for op in ops if begin <= op["begin"] < end]
        claimed += len(inside)
        expected = sum(
            modules[op["stats"]["program_id"][1]].cost(op["name"]).flops for op in inside
        )
        assert expected > 0
        assert step.db.flops.sum() == pytest.approx(expected, rel=1e-9)
        assert step.db.occurrences.sum() == len(inside)
    assert 0 < claimed < len(ops)  # an eval run before the first step belongs to no step
    assert db.occurrences.sum() == len(ops)
    # Realistic CPU rates: GEMMs at 50-200 GFLOP/s, other ops at 5-20 GB/s.
    for i, name in enumerate(db.name):
        if db.occurrences[i] == 0:
            continue
        seconds = db.time_ps[i] / 1e12
        assert seconds > 0 and db.bytes_accessed[i] > 0
        if name.startswith("dot."):
            assert 50e9 <= db.flops[i] / seconds <= 200e9, name
        else:
            assert 5e9 <= db.bytes_accessed[i] / seconds <= 20e9, name


def test_same_spec_same_bytes():
    one = cpu_xspace(CpuSpec(seed=3)).SerializeToString(deterministic=True)
    assert one == cpu_xspace(CpuSpec(seed=3)).SerializeToString(deterministic=True)
    assert one != cpu_xspace(CpuSpec(seed=4)).SerializeToString(deterministic=True)


def test_slow_op_triples_its_time(default_space):
    slow = cpu_xspace(CpuSpec(slow_op="dot.2"))
    before, after = _op_time(default_space), _op_time(slow)
    assert set(before) == set(after)
    assert after["dot.2"] == 3 * before["dot.2"]
    assert all(after[name] == before[name] for name in before if name != "dot.2")
    with pytest.raises(ValueError, match="slow_op"):
        cpu_xspace(CpuSpec(slow_op="dot.99"))


def test_other_shapes_and_validation():
    space = cpu_xspace(CpuSpec(steps=0, threads=2))
    assert _roots(space) == []
    host = _plane(space, "/host:CPU")
    assert sum(line.name.startswith(XLA_THREADS) for line in host.lines) == 2
    for bad in ({"threads": 0}, {"steps": -1}, {"target_bytes": -1}):
        with pytest.raises(ValueError):
            CpuSpec(**bad)


def test_target_bytes_sets_the_size():
    target = 2_000_000
    space = cpu_xspace(CpuSpec(target_bytes=target))
    assert 0.8 * target <= space.ByteSize() <= 1.2 * target
    host = _plane(space, "/host:CPU")
    python = next(line for line in host.lines if line.name == "python")
    train = next(k for k, meta in host.event_metadata.items() if meta.name == "train")
    assert sum(event.metadata_id == train for event in python.events) > 100
