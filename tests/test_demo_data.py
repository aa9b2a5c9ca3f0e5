"""The generated TPU profiles follow docs/xspace.md: read back from disk, stats found by name."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace, write_demo_logdir, write_profile
from tb_roofline_plugin.protos import op_metrics_pb2, xplane_pb2

HBM, CMEM, VMEM = 1, 2, 3
REQUIRED_CATEGORIES = {
    "convolution fusion",
    "loop fusion",
    "output fusion",
    "custom fusion",
    "all-reduce",
    "infeed",
    "outfeed",
    "copy",
    "data formatting",
    "copy-start",
    "copy-done",
    "while",
}


def _stats(plane: xplane_pb2.XPlane, stats) -> dict:
    """{name: (value field, value)}, names resolved through the plane's stat_metadata."""
    out = {}
    for stat in stats:
        kind = stat.WhichOneof("value")
        out[plane.stat_metadata[stat.metadata_id].name] = (kind, getattr(stat, kind))
    return out


def _values(plane, stats) -> dict:
    return {name: value for name, (_, value) in _stats(plane, stats).items()}


def _read(tmp_path, spec: TpuSpec) -> xplane_pb2.XSpace:
    path = write_profile(tmp_path / "sub" / "dir" / "host.xplane.pb", tpu_xspace(spec))
    return xplane_pb2.XSpace.FromString(path.read_bytes())


def _tpu_planes(space):
    return [p for p in space.planes if p.name.startswith("/device:TPU:")]


def _line(plane, name):
    (line,) = [line for line in plane.lines if line.name == name]
    return line


def _op_events(plane):
    """(metadata id, device begin, device duration) of every XLA Ops event."""
    out = []
    for event in _line(plane, "XLA Ops").events:
        stats = _values(plane, event.stats)
        out.append((event.metadata_id, stats["device_offset_ps"], stats["device_duration_ps"]))
    return out


@pytest.fixture(scope="module")
def default_space(tmp_path_factory):
    return _read(tmp_path_factory.mktemp("default"), TpuSpec())


def test_planes_hostnames_and_metadata_maps(default_space):
    names = [p.name for p in default_space.planes]
    assert list(default_space.hostnames) == ["demo-host"]
    assert names[:4] == [f"/device:TPU:{n}" for n in range(4)]
    assert set(names[4:]) == {"/host:CPU", "/host:metadata", "Task Environment"}
    assert [p.id for p in _tpu_planes(default_space)] == [2, 10, 18, 26]
    for plane in default_space.planes:
        for mapping in (plane.event_metadata, plane.stat_metadata):
            assert all(key == value.id for key, value in mapping.items())
            assert not mapping or min(mapping) == 1
    (metadata,) = [p for p in default_space.planes if p.name == "/host:metadata"]
    assert len(metadata.lines) == 0


@pytest.mark.parametrize(
    "device, type_string, tflops, hbm, megacore, merged, has_cmem",
    [
        ("v4", "TPU v4", 275.0, 1228.8, 1, 0, True),
        ("v5p", "TPU v5p", 459.0, 2765.0, 1, 1, False),
        ("v6e", "TPU v6 Lite", 918.0, 1637.993152512, 0, 1, False),
    ],
)
def test_capability_stats_by_name(
    tmp_path, device, type_string, tflops, hbm, megacore, merged, has_cmem
):
    space = _read(tmp_path, TpuSpec(device=device, cores=2, steps=2))
    for plane in _tpu_planes(space):
        stats = _stats(plane, plane.stats)
        assert stats["device_type_string"] == ("str_value", type_string)
        assert stats["peak_teraflops_per_second"] == ("double_value", tflops)
        assert stats["peak_hbm_bw_gigabytes_per_second"] == ("double_value", hbm)
        assert stats["has_megacore"] == ("int64_value", megacore)
        assert stats["has_merged_vmem"] == ("int64_value", merged)
        for name in ("sram", "cmem", "vmem"):
            for rw in ("rd", "wr"):
                kind, _ = stats[f"peak_{name}_{rw}_bw_gigabytes_per_second"]
                assert kind == "double_value"
        cmem = stats["peak_cmem_rd_bw_gigabytes_per_second"][1]
        vmem = stats["peak_vmem_wr_bw_gigabytes_per_second"][1]
        assert (cmem > 0, vmem > 0) == (has_cmem, not has_cmem)


@pytest.mark.parametrize("device, on_chip", [("v4", CMEM), ("v5p", VMEM), ("v6e", VMEM)])
def test_op_metadata_carries_cost_by_name(tmp_path, device, on_chip):
    space = _read(tmp_path, TpuSpec(device=device, cores=1, steps=2))
    (plane,) = _tpu_planes(space)
    ops_ids = {event.metadata_id for event in _line(plane, "XLA Ops").events}
    assert len(ops_ids) == 24
    categories, programs, spaces = set(), defaultdict(set), set()
    no_breakdown = []
    for mid in ops_ids:
        meta = plane.event_metadata[mid]
        stats = _stats(plane, meta.stats)
        assert meta.name.startswith(f"%{meta.display_name} = ")
        assert stats["program_id"][0] == stats["symbol_id"][0] == "uint64_value"
        for name in ("flops", "model_flops", "bytes_accessed"):
            assert stats[name][0] == "int64_value"
        for name in ("hlo_category", "source", "source_stack", "tf_op"):
            assert stats[name][0] == "str_value"
        assert stats["source"][1].startswith("train.py:")
        assert stats["source_stack"][1].endswith("\n")
        program, symbol = stats["program_id"][1], stats["symbol_id"][1]
        assert symbol >= 1 and symbol not in programs[program]
        programs[program].add(symbol)
        categories.add(stats["hlo_category"][1])
        if "memory_access_breakdown" not in stats:
            no_breakdown.append(stats["hlo_category"][1])
            continue
        kind, raw = stats["memory_access_breakdown"]
        assert kind == "bytes_value"
        entries = op_metrics_pb2.MemoryAccessBreakdown.FromString(raw).memory_accessed
        hbm = sum(e.bytes_accessed for e in entries if e.memory_space == HBM)
        assert hbm <= stats["bytes_accessed"][1]
        assert {e.operation_type for e in entries} <= {1, 2}
        spaces |= {e.memory_space for e in entries}
    assert categories >= REQUIRED_CATEGORIES
    assert sorted(no_breakdown) == ["copy-done", "copy-start"]
    assert spaces == {HBM, on_chip}
    assert len(programs) == 2 and max(programs) >= 2**63  # a fingerprint beyond int64
    values = [_values(plane, plane.event_metadata[mid].stats) for mid in ops_ids]
    assert any(v["flops"] == 0 < v["bytes_accessed"] for v in values)
    assert any(v["bytes_accessed"] == 0 < v["flops"] for v in values)
    assert any(v["model_flops"] == 0 < v["flops"] for v in values)
    assert any(0 < v["model_flops"] != v["flops"] for v in values)


def test_every_op_event_has_device_times(default_space):
    for plane in _tpu_planes(default_space):
        line = _line(plane, "XLA Ops")
        assert line.timestamp_ns == 0 and len(line.events) > 24 * 4
        for event in line.events:
            stats = _stats(plane, event.stats)
            kind, begin = stats["device_offset_ps"]
            assert kind == "uint64_value"
            assert stats["device_duration_ps"][0] == "uint64_value"
            late = event.offset_ps - begin
            assert 200_000 <= late <= 600_000  # the device begins a few hundred ns earlier
            assert event.duration_ps < stats["device_duration_ps"][1]


def test_rates_stay_below_the_peaks(default_space):
    plane = _tpu_planes(default_space)[0]
    peaks = _values(plane, plane.stats)
    for mid, _, duration in _op_events(plane):
        stats = _values(plane, plane.event_metadata[mid].stats)
        seconds = duration / 1e12
        assert stats["flops"] / seconds < peaks["peak_teraflops_per_second"] * 1e12
        assert stats["bytes_accessed"] / seconds < peaks["peak_hbm_bw_gigabytes_per_second"] * 1e9


def test_while_contains_its_children(default_space):
    plane = _tpu_planes(default_space)[0]
    events = _op_events(plane)
    loops = [e for e in events if plane.event_metadata[e[0]].display_name == "while.8"]
    assert len(loops) == 5  # one per step: the cut first step has lost only earlier ops
    for _, begin, duration in loops:
        inside = [e for e in events if begin < e[1] and e[1] + e[2] < begin + duration]
        assert len(inside) == 6  # 3 trips of the 2-op body
    # Top-level events never overlap: only the while has events nested in it.
    top = [e for e in events if not any(w[1] < e[1] < w[1] + w[2] for w in loops)]
    top.sort(key=lambda e: e[1])
    assert all(a[1] + a[2] <= b[1] for a, b in zip(top, top[1:]))


def test_steps_line_and_time_outside_steps(default_space):
    numbers = []
    for plane in _tpu_planes(default_space):
        line = _line(plane, "Steps")
        assert line.timestamp_ns == 0 and len(line.events) == 5
        steps = []
        for event in line.events:
            number = _stats(plane, event.stats)["step_num"]
            assert number[0] == "int64_value"
            assert plane.event_metadata[event.metadata_id].name == str(number[1])
            steps.append((event.offset_ps, event.offset_ps + event.duration_ps))
        assert all(a[1] < b[0] for a, b in zip(steps, steps[1:]))  # small gaps between steps
        numbers.append([int(plane.event_metadata[e.metadata_id].name) for e in line.events])
        outside = 0
        for _, begin, duration in _op_events(plane):
            owner = [s for s in steps if s[0] <= begin < s[1]]
            if owner:
                assert begin + duration < owner[0][1]
                assert begin > owner[0][0] or owner[0] == steps[0]
            else:
                outside += 1
        assert outside > 0
        modules = _line(plane, "XLA Modules")
        assert plane.event_metadata[modules.events[0].metadata_id].name.startswith(
            "jit_train_step("
        )
    assert numbers == [list(range(5))] * 4


@pytest.mark.parametrize("incomplete", [True, False])
def test_incomplete_first_step_rule(tmp_path, incomplete):
    space = _read(tmp_path, TpuSpec(incomplete_first_step=incomplete, cores=2))
    starts = []
    for plane in _tpu_planes(space):
        first_step = _line(plane, "Steps").events[0].offset_ps
        first_op = min(begin for _, begin, _ in _op_events(plane))
        assert (first_step == first_op) is incomplete
        if not incomplete:
            assert first_op < first_step
        earliest = min(e.offset_ps for line in plane.lines for e in line.events)
        assert (earliest >= first_step) is incomplete
        starts.append(first_step)
    assert 0 < starts[1] - starts[0] < 10_000_000  # cores are a few µs apart


def test_inference_profile_has_no_steps_line(tmp_path):
    space = _read(tmp_path, TpuSpec(steps=0, device="v6e", cores=1))
    (plane,) = _tpu_planes(space)
    assert [line.name for line in plane.lines] == ["XLA Modules", "XLA Ops", "Overlay"]
    assert len(_line(plane, "XLA Modules").events) == 10  # 5 runs of the 2 programs


def test_host_planes(default_space):
    (cpu,) = [p for p in default_space.planes if p.name == "/host:CPU"]
    assert [line.name for line in cpu.lines][:2] == ["python", "tf_Compute/2211"]
    assert len(cpu.lines) == 4 and all(len(line.events) > 50 for line in cpu.lines)
    ref = cpu.lines[0].events[0].stats[0]
    assert cpu.stat_metadata[ref.metadata_id].name == "_src"
    assert cpu.stat_metadata[ref.ref_value].name.endswith(".py:100")
    (env,) = [p for p in default_space.planes if p.name == "Task Environment"]
    stats = _stats(env, env.stats)
    assert stats["profile_start_time"][0] == "uint64_value"
    assert 0 < stats["profile_stop_time"][1] - stats["profile_start_time"][1] < 10**9


def test_same_spec_same_bytes_and_seeds_differ(tmp_path):
    first = write_profile(tmp_path / "a.xplane.pb", tpu_xspace(TpuSpec(seed=3))).read_bytes()
    second = write_profile(tmp_path / "b.xplane.pb", tpu_xspace(TpuSpec(seed=3))).read_bytes()
    assert first == second
    assert tpu_xspace(TpuSpec(seed=4)).SerializeToString(deterministic=True) != first


def test_slow_op_takes_three_times_longer():
    def totals(spec):
        plane = _tpu_planes(tpu_xspace(spec))[0]
        out = defaultdict(int)
        for mid, _, duration in _op_events(plane):
            out[plane.event_metadata[mid].display_name] += duration
        return out

    base, slow = totals(TpuSpec()), totals(TpuSpec(slow_op="fusion.3"))
    assert slow["fusion.3"] == pytest.approx(3 * base["fusion.3"], rel=1e-6)
    assert slow["fusion.4"] == base["fusion.4"]
    with pytest.raises(ValueError, match="slow_op"):
        tpu_xspace(TpuSpec(slow_op="no-such-op"))


def test_target_bytes_sets_the_size():
    spec = TpuSpec(target_bytes=1_500_000, cores=2)
    size = len(tpu_xspace(spec).SerializeToString())
    assert 0.8 * spec.target_bytes < size < 1.2 * spec.target_bytes
    steps = _line(_tpu_planes(tpu_xspace(spec))[0], "Steps").events
    assert len(steps) > 50


def test_invalid_specs_are_refused():
    with pytest.raises(ValueError, match="ops_per_step"):
        TpuSpec(ops_per_step=11)
    with pytest.raises(ValueError, match="device"):
        TpuSpec(device="v9")


def test_demo_logdir_layout(tmp_path):
    written = write_demo_logdir(tmp_path)
    relative = sorted(str(p.relative_to(tmp_path)) for p in written)
    run = "2026_01_01_00_00_00"
    assert relative == [
        f"inference_v6e/plugins/profile/{run}/host0.xplane.pb",
        f"plugins/profile/{run}/host0.xplane.pb",
        "torch_gpu/worker0.1767225600000.pt.trace.json.gz",
        "torch_gpu/worker1.1767225600000.pt.trace.json.gz",
        f"train_gpu/plugins/profile/{run}/host0.xplane.pb",
        f"train_gpu/plugins/profile/{run}/host1.xplane.pb",
        f"train_v5p/plugins/profile/{run}/host0.xplane.pb",
        f"train_v5p/plugins/profile/{run}/host1.xplane.pb",
    ]
    spaces = {
        str(p.relative_to(tmp_path)): xplane_pb2.XSpace.FromString(p.read_bytes())
        for p in written
        if p.name.endswith(".xplane.pb")
    }
    train0, train1 = (spaces[f"train_v5p/plugins/profile/{run}/host{i}.xplane.pb"] for i in (0, 1))
    assert list(train1.hostnames) == ["host1"]
    assert train0.SerializeToString() != train1.SerializeToString()  # different seeds
    inference = spaces[f"inference_v6e/plugins/profile/{run}/host0.xplane.pb"]
    assert all("Steps" not in [line.name for line in p.lines] for p in _tpu_planes(inference))
    device = _values(_tpu_planes(inference)[0], _tpu_planes(inference)[0].stats)
    assert device["device_type_string"] == "TPU v6 Lite"
