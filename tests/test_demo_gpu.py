"""The generated GPU profiles follow docs/xspace.md §3, §5 and §7 and docs/hlo-cost.md §1-2 and §4.

Profiles are written to disk and read back; stats are found by name. The HLO modules are
checked through the project's own readers (``program_modules``, ``ModuleCosts``) and the
whole profile through ``analyze_file``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from xspace_stats import named_stats

from tb_roofline_plugin.demo import (
    DEMO_RUNS,
    GpuSpec,
    gpu_xspace,
    write_demo_logdir,
    write_profile,
)
from tb_roofline_plugin.hlo.cost.engine import shape_bytes
from tb_roofline_plugin.hlo.modules import program_modules
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.platforms.gpu import aggregate, assign_ops, read_kernels
from tb_roofline_plugin.protos import hlo_pb2, xplane_pb2
from tb_roofline_plugin.xspace.profile_reader import read_profile

TRAIN, EVAL = 12, 13
CAPABILITY_STATS = {
    "nvidia": {
        "device_vendor": ("str_value", "Nvidia"),
        "clock_rate": ("int64_value", 1_980_000),
        "core_count": ("int64_value", 132),
        "memory_bandwidth": ("uint64_value", 3_350_000_000_000),
        "compute_cap_major": ("int64_value", 9),
        "compute_cap_minor": ("int64_value", 0),
    },
    "amd": {
        "device_vendor": ("str_value", "AMD"),
        "clock_rate": ("int64_value", 2_100_000),
        "core_count": ("int64_value", 304),
        "memory_bandwidth": ("uint64_value", 2_662_400_000_000),
        "compute_cap_major": ("int64_value", 9),
        "compute_cap_minor": ("int64_value", 4),
    },
}


def _values(plane, stats) -> dict:
    return {name: value for name, (_, value) in named_stats(plane, stats).items()}


def _plane(space, name):
    (plane,) = [p for p in space.planes if p.name == name]
    return plane


def _gpu_planes(space):
    return [p for p in space.planes if p.name.startswith("/device:GPU:")]


def _kernels(space) -> list[dict]:
    """Every kernel: gpu, line, name, begin, end and its event stats (absolute ps)."""
    out = []
    for gpu, plane in enumerate(_gpu_planes(space)):
        for line in plane.lines:
            for event in line.events:
                begin = line.timestamp_ns * 1000 + event.offset_ps
                out.append(
                    {
                        "gpu": gpu,
                        "line": line.name,
                        "name": plane.event_metadata[event.metadata_id].name,
                        "begin": begin,
                        "end": begin + event.duration_ps,
                        **_values(plane, event.stats),
                    }
                )
    return out


def _host_events(space) -> tuple[list[tuple], list[dict]]:
    """(step roots as (step_num, begin, end), launches with their stats) of `/host:CPU`."""
    host = _plane(space, "/host:CPU")
    roots, launches = [], []
    for line in host.lines:
        for event in line.events:
            begin = line.timestamp_ns * 1000 + event.offset_ps
            stats = named_stats(host, event.stats)
            if "_r" in stats:
                assert host.event_metadata[event.metadata_id].name == "train"
                assert stats["_r"] == ("int64_value", 1)
                assert stats["step_num"][0] == "int64_value"
                roots.append((stats["step_num"][1], begin, begin + event.duration_ps))
            if "correlation_id" in stats:
                launches.append(
                    {
                        "line": line.name,
                        "name": host.event_metadata[event.metadata_id].name,
                        "begin": begin,
                        "stats": stats,
                    }
                )
    return sorted(roots), launches


def _write(tmp_path, spec: GpuSpec, name: str = "host.xplane.pb"):
    return write_profile(tmp_path / name, gpu_xspace(spec))


def _read(path) -> xplane_pb2.XSpace:
    return xplane_pb2.XSpace.FromString(path.read_bytes())


@pytest.fixture(scope="module")
def default_path(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("gpu"), GpuSpec())


@pytest.fixture(scope="module")
def default_space(default_path):
    return _read(default_path)


@pytest.fixture(scope="module")
def amd_path(tmp_path_factory):
    spec = GpuSpec(vendor="amd", idle_gpus=2, truncated_last_step=True, unclaimed_kernels=3)
    return _write(tmp_path_factory.mktemp("amd"), spec)


def test_planes_hostnames_and_capability_stats(default_space, amd_path):
    assert list(default_space.hostnames) == ["gpu-host"]
    assert [p.name for p in default_space.planes] == [
        "/host:metadata",
        "/device:GPU:0",
        "/device:GPU:1",
        "/host:CPU",
        "Task Environment",
    ]
    for vendor, space in (("nvidia", default_space), ("amd", _read(amd_path))):
        planes = _gpu_planes(space)
        assert [p.name for p in planes] == [f"/device:GPU:{n}" for n in range(len(planes))]
        for plane in planes:
            stats = named_stats(plane, plane.stats)
            for name, expected in CAPABILITY_STATS[vendor].items():
                assert stats[name] == expected, (vendor, name)
            assert stats["memory_size"][0] == "uint64_value" and stats["memory_size"][1] > 2**34
        assert len(planes) == (2 if vendor == "nvidia" else 4)
        assert [len(p.lines) for p in planes] == [2, 2] + [0] * (len(planes) - 2)
        for plane in space.planes:  # metadata maps are keyed by their ids
            for mapping in (plane.event_metadata, plane.stat_metadata):
                assert all(key == value.id for key, value in mapping.items())
    task = _plane(default_space, "Task Environment")
    env = named_stats(task, task.stats)
    start, stop = env["profile_start_time"], env["profile_stop_time"]
    assert start[0] == stop[0] == "uint64_value" and 0 < stop[1] - start[1] < 10**9


def test_stream_lines_and_kernel_stats(default_space):
    for plane in _gpu_planes(default_space):
        assert all(line.name.startswith("Stream #") for line in plane.lines)
        assert all(line.name.endswith("(Kernel)") for line in plane.lines)
        assert len({line.timestamp_ns for line in plane.lines}) == 1
        # Kernels of one GPU run one at a time, in line order.
        spans = []
        for line in plane.lines:
            base = line.timestamp_ns * 1000
            spans += [(base + e.offset_ps, base + e.offset_ps + e.duration_ps) for e in line.events]
            offsets = [e.offset_ps for e in line.events]
            assert offsets == sorted(offsets) and min(offsets) >= 0
        spans.sort()
        assert all(end <= next_begin for (_, end), (next_begin, _) in zip(spans, spans[1:]))
        for line in plane.lines:
            for event in line.events:
                stats = named_stats(plane, event.stats)
                assert stats["correlation_id"][0] == "uint64_value"
                assert stats["kernel_details"][0] == "ref_value"
                assert "grid:" in stats["kernel_details"][1]
                if "hlo_op" in stats:
                    assert {k for k, (kind, _) in stats.items() if kind == "ref_value"} == {
                        "kernel_details",
                        "tf_op",
                        "hlo_op",
                        "hlo_module",
                    }
                    assert stats["tf_op"][1] == "XlaModule:"
                    assert stats["program_id"][0] == "int64_value"
                    assert stats["program_id"][1] in (TRAIN, EVAL)
                else:  # runtime copies: no op, no framework op
                    assert set(stats) == {"correlation_id", "kernel_details"}
    kernels = _kernels(default_space)
    runtime = [k for k in kernels if "hlo_op" not in k]
    assert {k["name"] for k in runtime} == {"memcpy32_post", "memset32_aligned1D"}
    assert len(runtime) == 2 * 4 * 3  # GPUs x steps x runtime kernels per step
    # Durations are µs to ms.
    durations = [k["end"] - k["begin"] for k in kernels]
    assert 1_000_000 <= min(durations) and max(durations) < 1_000_000_000


def test_every_kernel_resolves_to_an_entry_instruction(default_path, default_space):
    modules, problems = program_modules(read_profile(default_path))
    assert problems == [] and sorted(modules) == [TRAIN, EVAL]
    assert {m.name for m in modules.values()} == {"jit_train_step", "jit_eval_step"}
    metadata = _plane(default_space, "/host:metadata")
    names = {m.name for m in metadata.event_metadata.values()}
    assert names == {"jit_train_step(12)", "jit_eval_step(13)"}
    for meta in metadata.event_metadata.values():
        assert named_stats(metadata, meta.stats)["program_id"] == ("int64_value", meta.id)
    ops = defaultdict(set)
    for kernel in _kernels(default_space):
        if "hlo_op" not in kernel:
            continue
        module = modules[kernel["program_id"]]
        assert kernel["hlo_module"] == module.name
        name = kernel["hlo_op"].rsplit("::", 1)[-1]
        assert name in module.entry_instruction_names()
        cost = module.cost(name)
        assert cost is not None and (cost.flops > 0 or cost.bytes_accessed > 0), name
        ops[kernel["program_id"]].add(name)
    assert len(ops[TRAIN]) == 11 and len(ops[EVAL]) == 10
    categories = {modules[p].category(n) for p, names in ops.items() for n in names}
    assert categories == {
        "custom-call",
        "custom fusion",
        "loop fusion",
        "input fusion",
        "data formatting",
        "all-reduce",
    }
    for module in modules.values():
        unknown = [
            n for n in module.entry_instruction_names() if (c := module.cost(n)) and c.unknown
        ]
        assert [module.cost(n).note for n in unknown] == [
            "unknown custom call te_fused_attn_fwd_ffi"
        ]
        file, line, stack = module.source(unknown[0])
        assert (file, line) == ("model.py", 23)
        assert stack.splitlines()[0] == "model.py:23:12" and len(stack.splitlines()) == 3


def _instructions(module: hlo_pb2.HloModuleProto):
    return [i for c in module.computations for i in c.instructions]


def _hlo_modules(space) -> dict[int, hlo_pb2.HloModuleProto]:
    metadata = _plane(space, "/host:metadata")
    return {
        meta.id: hlo_pb2.HloProto.FromString(_values(metadata, meta.stats)["Hlo Proto"]).hlo_module
        for meta in metadata.event_metadata.values()
    }


def _array_shapes(shape):
    if shape.element_type == hlo_pb2.TUPLE:
        for element in shape.tuple_shapes:
            yield from _array_shapes(element)
    else:
        yield shape


def test_hlo_modules_are_well_formed(default_space):
    for program_id, module in _hlo_modules(default_space).items():
        assert module.id == program_id
        computations = {c.id: c for c in module.computations}
        assert module.computations[-1].id == module.entry_computation_id
        assert module.computations[-1].name == module.entry_computation_name
        instructions = _instructions(module)
        ids = [i.id for i in instructions]
        assert len(set(ids)) == len(ids)
        assert len({i.name for i in instructions}) == len(instructions)
        seen_computations = set()
        for comp in module.computations:
            seen = set()
            for instr in comp.instructions:
                assert all(o in seen for o in instr.operand_ids), instr.name  # operands first
                assert all(c in seen_computations for c in instr.called_computation_ids)
                seen.add(instr.id)
                for shape in _array_shapes(instr.shape):  # every array has a layout
                    assert shape.HasField("layout"), instr.name
                    assert sorted(shape.layout.minor_to_major) == list(range(len(shape.dimensions)))
            assert comp.root_id in seen
            seen_computations.add(comp.id)
        assert set(computations) == seen_computations
        frames = module.stack_frame_index.stack_frames
        for instr in computations[module.entry_computation_id].instructions:
            if instr.opcode in ("fusion", "custom-call", "copy", "all-reduce"):
                assert instr.metadata.source_file == "model.py" and instr.metadata.source_line > 0
                assert 0 < instr.metadata.stack_frame_id <= len(frames)


def test_gemm_costs_are_2mnk(default_path, default_space):
    modules, _ = program_modules(read_profile(default_path))
    for program_id, module in _hlo_modules(default_space).items():
        by_id = {i.id: i for i in _instructions(module)}
        costs = modules[program_id]
        (gemm,) = [i for i in _instructions(module) if i.custom_call_target == "__cublas$lt$matmul"]
        lhs, rhs = (by_id[o].shape for o in gemm.operand_ids)
        result, workspace = gemm.shape.tuple_shapes
        (m, k), (k2, n) = lhs.dimensions, rhs.dimensions
        assert k == k2 and list(result.dimensions) == [m, n]
        assert workspace.element_type == hlo_pb2.S8
        cost = costs.cost(gemm.name)
        assert cost.flops == 2 * m * n * k
        assert cost.bytes_accessed == sum(shape_bytes(s) for s in (lhs, rhs, result))
        (triton,) = [i for i in _instructions(module) if i.fusion_kind == "kCustom"]
        assert b"__triton_gemm" in triton.backend_config
        (dot,) = [i for i in _instructions(module) if i.opcode == "dot"]
        (m, k), (_, n) = (by_id[o].shape.dimensions for o in dot.operand_ids)
        assert costs.cost(triton.name).flops == 2 * m * n * k
        assert costs.is_matmul_or_convolution(gemm.name) and costs.is_matmul_or_convolution(
            triton.name
        )


def test_one_op_runs_as_two_kernels_per_execution(default_path):
    profile = read_profile(default_path)
    modules, _ = program_modules(profile)
    for plane in [p for p in profile.planes if p.name.startswith("/device:GPU:")]:
        kernels = read_kernels([plane])
        op, table = assign_ops(kernels, modules)
        db = aggregate(kernels, op, table, np.zeros(len(op), np.int64), np.array([1])).rows
        per_exec = {
            name: modules[pid].cost(name).flops for pid, name in zip(db.program_id, db.name)
        }
        executions = {
            name: round(flops / per_exec[name]) if per_exec[name] else None
            for name, flops in zip(db.name, db.flops)
        }
        multi = [
            (int(pid), name)
            for pid, name, occ in zip(db.program_id, db.name, db.occurrences)
            if executions[name] is not None and occ != executions[name]
        ]
        assert multi == [(TRAIN, "input_reduce_fusion")]
        row = list(db.name).index("input_reduce_fusion")
        assert db.occurrences[row] == 8 and executions["input_reduce_fusion"] == 4
        names = {
            kernels.kernel_names[k]
            for k, o in zip(kernels.kernel, kernels.hlo_op)
            if kernels.hlo_ops[o] == "input_reduce_fusion"
        }
        assert names == {"input_reduce_fusion", "input_reduce_fusion_1"}


def test_launches_link_to_kernels_inside_their_steps(default_space):
    roots, launches = _host_events(default_space)
    assert [r[0] for r in roots] == [0, 1, 2, 3]
    assert all(b < e for _, b, e in roots)
    assert all(e1 < b2 for (_, _, e1), (_, b2, _) in zip(roots, roots[1:]))
    kernels = {k["correlation_id"]: k for k in _kernels(default_space)}
    assert len(launches) == len(kernels)
    for launch in launches:
        stats = launch["stats"]
        assert launch["name"] == "cuLaunchKernel"
        assert launch["line"].startswith("tf_pjrt_thread_pool/")
        assert stats["correlation_id"][0] == "uint64_value"
        assert stats["device_id"][0] == "int64_value"
        kernel = kernels[stats["correlation_id"][1]]
        assert kernel["gpu"] == stats["device_id"][1]
        assert kernel["begin"] >= launch["begin"]  # the device runs it after the launch
        # Every kernel of a step runs inside the step root (it waits for the GPUs).
        inside = [r for r in roots if r[1] <= launch["begin"] < r[2]]
        if inside:
            assert inside[0][1] <= kernel["begin"] and kernel["end"] <= inside[0][2]


def test_unclaimed_kernels_lie_outside_every_step(amd_path):
    space = _read(amd_path)
    roots, launches = _host_events(space)
    kernels = {k["correlation_id"]: k for k in _kernels(space)}
    outside = [
        launch for launch in launches if not any(b <= launch["begin"] < e for _, b, e in roots)
    ]
    assert len(outside) == 3 * 2  # unclaimed_kernels per GPU
    first_step = roots[0][1]
    for launch in outside:
        kernel = kernels[launch["stats"]["correlation_id"][1]]
        assert "hlo_op" in kernel and kernel["program_id"] == EVAL
        assert kernel["end"] < first_step
        assert not any(b <= kernel["begin"] < e or b < kernel["end"] <= e for _, b, e in roots)


def test_truncated_last_step_has_launches_without_kernels(amd_path):
    space = _read(amd_path)
    roots, launches = _host_events(space)
    assert [r[0] for r in roots] == [0, 1, 2, 3]
    kernel_ids = {k["correlation_id"] for k in _kernels(space)}
    missing = [
        launch for launch in launches if launch["stats"]["correlation_id"][1] not in kernel_ids
    ]
    assert len(missing) == 2 * 2  # the final 2 launches of each of the 2 GPUs
    assert {launch["name"] for launch in launches} == {"hipModuleLaunchKernel"}
    last_step = roots[-1]
    for launch in missing:
        assert last_step[1] <= launch["begin"] < last_step[2]
        same_line = [other["begin"] for other in launches if other["line"] == launch["line"]]
        assert launch["begin"] in sorted(same_line)[-2:]
    assert all(
        k["name"].endswith(".kd") or k["name"].startswith(("Cijk", "fmha", "nccl"))
        for k in _kernels(space)
    )


def test_analysis_reads_the_profile(default_path, amd_path):
    stats = analyze_file(default_path)
    assert stats.run_env.hardware_type == "GPU"
    assert stats.run_env.device_core_count == 2 and stats.run_env.active_core_count == 2
    assert "Hopper" in stats.run_env.device_type
    db = stats.all_db
    ops = [i for i in range(len(db)) if db.name[i] != "IDLE"]
    assert len(ops) == 21
    assert sum(db.flops[i] > 0 for i in ops) == 17  # all but the copies and the attention
    assert all(db.bytes_accessed[i] > 0 for i in ops)
    peak_flops = stats.perf_env.peak_tera_flops_per_second * 1e12
    peak_bytes = stats.perf_env.peak_bws_gbps[0] * 1e9
    for i in ops:  # every op runs below the device's peaks
        seconds = db.time_ps[i] / 1e12
        assert db.flops[i] / seconds < 0.9 * peak_flops, db.name[i]
        assert db.bytes_accessed[i] / seconds < 0.9 * peak_bytes, db.name[i]
    assert [(s.step_num, s.complete) for s in stats.steps] == [(n, True) for n in range(4)]
    assert stats.unattributed is not None and set(stats.unattributed.name) == {
        "memcpy32_post",
        "memset32_aligned1D",
    }
    amd = analyze_file(amd_path)
    assert amd.run_env.hardware_type == "GPU" and "AMD" in amd.run_env.device_type
    assert amd.run_env.device_core_count == 4 and amd.run_env.active_core_count == 2
    assert [(s.step_num, s.complete) for s in amd.steps] == [
        (0, True),
        (1, True),
        (2, True),
        (3, False),
    ]


def test_no_step_roots_without_steps(tmp_path):
    space = _read(_write(tmp_path, GpuSpec(steps=0, gpus=1, unclaimed_kernels=0)))
    roots, launches = _host_events(space)
    assert roots == [] and len(launches) == len(_kernels(space)) == 4 * 25
    assert analyze_file(tmp_path / "host.xplane.pb").steps == []


def test_same_spec_same_bytes_and_seeds_differ(tmp_path):
    first = _write(tmp_path, GpuSpec(seed=3), "a.xplane.pb").read_bytes()
    second = _write(tmp_path, GpuSpec(seed=3), "b.xplane.pb").read_bytes()
    other = _write(tmp_path, GpuSpec(seed=4), "c.xplane.pb").read_bytes()
    assert first == second and first != other


def _time_by_op(space) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for kernel in _kernels(space):
        totals[kernel.get("hlo_op", kernel["name"])] += kernel["end"] - kernel["begin"]
    return totals


@pytest.mark.parametrize("op", ["input_reduce_fusion", "custom-call.15"])
def test_slow_op_takes_three_times_longer(op):
    base = _time_by_op(gpu_xspace(GpuSpec()))
    slow = _time_by_op(gpu_xspace(GpuSpec(slow_op=op)))
    assert slow[op] == 3 * base[op]
    assert {k: v for k, v in slow.items() if k != op} == {k: v for k, v in base.items() if k != op}


def test_target_bytes_sets_the_size():
    spec = GpuSpec(target_bytes=1_500_000)
    space = gpu_xspace(spec)
    size = len(space.SerializeToString(deterministic=True))
    assert 0.8 * spec.target_bytes < size < 1.2 * spec.target_bytes
    roots, _ = _host_events(space)
    assert len(roots) > 100
    sizes = {p.name: p.ByteSize() for p in space.planes}
    gpu = sizes["/device:GPU:0"] + sizes["/device:GPU:1"]
    assert 0.7 * gpu < sizes["/host:CPU"] < 1.3 * gpu  # the host plane keeps its share


def test_invalid_specs_are_refused():
    for kwargs, message in (
        ({"gpus": 0}, "gpus"),
        ({"vendor": "intel"}, "vendor"),
        ({"steps": 0, "truncated_last_step": True}, "truncated_last_step"),
        ({"unclaimed_kernels": -1}, "unclaimed_kernels"),
    ):
        with pytest.raises(ValueError, match=message):
            GpuSpec(**kwargs)
    with pytest.raises(ValueError, match="slow_op"):
        gpu_xspace(GpuSpec(slow_op="get-tuple-element.6"))  # no kernel of its own


def test_demo_logdir_gpu_run(tmp_path):
    assert "train_gpu" in DEMO_RUNS
    written = write_demo_logdir(tmp_path, runs=("train_gpu", "train_gpu_amd"))
    relative = sorted(str(p.relative_to(tmp_path)) for p in written)
    run = "2026_01_01_00_00_00"
    assert relative == [
        f"plugins/profile/{run}/host0.xplane.pb",
        *(
            f"{name}/plugins/profile/{run}/host{i}.xplane.pb"
            for name in ("train_gpu", "train_gpu_amd")
            for i in (0, 1)
        ),
    ]
    hosts = {}
    for path in written[:4]:
        stats = analyze_file(path)
        assert stats.run_env.hardware_type == "GPU" and len(stats.steps) == 4
        hosts[str(path.relative_to(tmp_path))] = path.read_bytes()
        assert list(_read(path).hostnames) == [path.name.split(".")[0]]
    assert len(set(hosts.values())) == 4  # every host has its own seed
    assert len(written) == 5
