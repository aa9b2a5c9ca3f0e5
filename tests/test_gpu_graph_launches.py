"""GPU profiles with graph launches (XLA command buffers): many kernels, one correlation id.

Each expectation is computed here from the generated events themselves: a step's launches
are the host events inside its root, a launch's kernels those with its correlation id, and
an op runs once per launch that runs it (the demo runs no op twice in one launch), costed by
``ModuleCosts`` from the profile's own HLO modules.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from xspace_stats import named_stats

from tb_roofline_plugin.demo import GpuSpec, gpu_xspace, write_demo_logdir, write_profile
from tb_roofline_plugin.hlo.modules import program_modules
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import hlo_pb2, xplane_pb2
from tb_roofline_plugin.xspace.profile_reader import read_profile

GPUS = 2
TRAIN_CALL, EVAL_CALL = "call.20", "call.30"  # the command-buffer calls of the two programs


def _events(space: xplane_pb2.XSpace) -> tuple[list[dict], list[dict], list[tuple]]:
    """(kernels, launches, step roots) with absolute times and stats by name."""
    kernels, launches, roots = [], [], []
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                begin = line.timestamp_ns * 1000 + event.offset_ps
                row = {
                    "plane": plane.name,
                    "line": line.name,
                    "name": plane.event_metadata[event.metadata_id].name,
                    "begin": begin,
                    "end": begin + event.duration_ps,
                    **{k: v for k, (_, v) in named_stats(plane, event.stats).items()},
                }
                if plane.name.startswith("/device:GPU:"):
                    kernels.append(row)
                elif plane.name == "/host:CPU" and "correlation_id" in row:
                    launches.append(row)
                elif plane.name == "/host:CPU" and "_r" in row:
                    roots.append((row["step_num"], row["begin"], row["end"]))
    return kernels, launches, sorted(roots)


def _write(tmp_path_factory, spec: GpuSpec):
    folder = tmp_path_factory.mktemp("graphs")
    return write_profile(folder / f"{spec.host}.xplane.pb", gpu_xspace(spec))


@pytest.fixture(scope="module")
def node_path(tmp_path_factory):
    return _write(tmp_path_factory, GpuSpec(graph_launches="node"))


@pytest.fixture(scope="module")
def launch_path(tmp_path_factory):
    return _write(tmp_path_factory, GpuSpec(graph_launches="launch"))


def _space(path) -> xplane_pb2.XSpace:
    return xplane_pb2.XSpace.FromString(path.read_bytes())


def _costs(path) -> dict[str, float]:
    """FLOPs of one execution of every op the kernels name, from the profile's modules."""
    modules, problems = program_modules(read_profile(path))
    assert not problems
    kernels, _, _ = _events(_space(path))
    names = {(k["program_id"], k["hlo_op"]) for k in kernels if "hlo_op" in k}
    return {name: modules[program].cost(name).flops for program, name in names}


def _expected(kernels: list[dict], costs: dict[str, float]) -> tuple[Counter, Counter, float]:
    """Per op: kernels and their time; the FLOPs of one execution per (launch, op)."""
    count, time_ps = Counter(), Counter()
    executions = set()
    for k in kernels:
        if "hlo_op" in k:
            count[k["hlo_op"]] += 1
            time_ps[k["hlo_op"]] += k["end"] - k["begin"]
            executions.add((k["correlation_id"], k["hlo_op"]))
    return count, time_ps, sum(costs[op] for _, op in executions)


def _per_step(path) -> list[tuple[int, list[dict]]]:
    """(step number, kernels) of each step root: the kernels of the launches inside it."""
    kernels, launches, roots = _events(_space(path))
    by_launch = defaultdict(list)
    for k in kernels:
        by_launch[k["correlation_id"]].append(k)
    inside = [(num, [la["correlation_id"] for la in launches if b <= la["begin"] < e])
              for num, b, e in roots]  # fmt: skip
    return [(num, [k for cid in ids for k in by_launch[cid]]) for num, ids in inside]


def _ops(db) -> dict[str, tuple[int, int]]:
    return {
        str(n): (int(o), int(t))
        for n, o, t in zip(db.name, db.occurrences, db.time_ps)
        if n != "IDLE"
    }


@pytest.mark.parametrize("annotation", ["node", "launch"])
def test_graph_launches_are_one_host_event_for_many_kernels(annotation, node_path, launch_path):
    path = node_path if annotation == "node" else launch_path
    kernels, launches, _ = _events(_space(path))
    per_launch = Counter(k["correlation_id"] for k in kernels)
    graphs = [la for la in launches if la["name"].startswith("cuGraphLaunch (CudaGraph:")]
    plain = [la for la in launches if la["name"] == "cuLaunchKernel"]
    assert len(graphs) + len(plain) == len(launches)
    # Per step and GPU: one graph launch per program; train 9 kernels (the row reduction
    # runs as two), eval 10 (its all-reduce and mean joined the command buffer).
    assert len(graphs) == 4 * GPUS * 2 + GPUS  # + the eval tail launched before step 0
    sizes = Counter(per_launch[la["correlation_id"]] for la in graphs)
    assert sizes == {9: 4 * GPUS, 10: 4 * GPUS, 2: GPUS}
    assert all(per_launch[la["correlation_id"]] == 1 for la in plain)
    graph_kernels = [k for k in kernels if per_launch[k["correlation_id"]] > 1]
    exec_ids = {la["correlation_id"]: la["cuda_graph_id"] for la in graphs}
    # One graph per program and GPU: its kernels share the graph's id, its launches the
    # executable's, each named in the launch event as XLA's collector does.
    assert all(la["name"].endswith(f"(CudaGraph:{la['cuda_graph_id']})") for la in graphs)
    pairs = {(k["cuda_graph_id"], exec_ids[k["correlation_id"]]) for k in graph_kernels}
    assert len(pairs) == len({g for g, _ in pairs}) == 2 * GPUS
    assert {k["line"] for k in graph_kernels if k["name"].startswith("ncclDevKernel")} == {
        "Stream #17(Kernel)",
        "Stream #21(Kernel)",
    }  # the eval graph spans both streams
    ops = {k["hlo_op"] for k in graph_kernels}
    if annotation == "launch":
        assert ops == {TRAIN_CALL, EVAL_CALL}
    else:
        assert TRAIN_CALL not in ops and "input_reduce_fusion" in ops and "all-reduce.20" in ops


def test_command_buffer_computation_and_call_are_in_the_modules(launch_path):
    modules, _ = program_modules(read_profile(launch_path))
    space = _space(launch_path)
    (meta,) = [p for p in space.planes if p.name == "/host:metadata"]
    for program, call in ((12, TRAIN_CALL), (13, EVAL_CALL)):
        proto = next(
            hlo_pb2.HloProto.FromString(s.bytes_value).hlo_module
            for m in meta.event_metadata.values()
            for s in m.stats
            if meta.stat_metadata[s.metadata_id].name == "Hlo Proto" and m.id == program
        )
        graph = next(c for c in proto.computations if c.name == "command_buffer")
        entry = next(c for c in proto.computations if c.id == proto.entry_computation_id)
        (instr,) = [i for i in entry.instructions if i.name == call]
        assert instr.opcode == "call" and list(instr.called_computation_ids) == [graph.id]
        inner = [i.name for i in graph.instructions if i.opcode in ("fusion", "custom-call")]
        # A call costs its computation: the sum of the commands in it.
        costs = modules[program]
        assert costs.cost(call).flops == pytest.approx(sum(costs.cost(n).flops for n in inner))
        assert costs.category(call) == "call"


@pytest.mark.parametrize("annotation", ["node", "launch"])
def test_every_graph_kernel_is_joined_to_its_hlo_op(annotation, node_path, launch_path):
    path = node_path if annotation == "node" else launch_path
    kernels, _, _ = _events(_space(path))
    count, time_ps, flops = _expected(kernels, _costs(path))
    stats = analyze_file(path)
    ops = _ops(stats.all_db)
    assert ops == {op: (count[op], time_ps[op]) for op in count}
    # Only the runtime copies and fills, which have no HLO op, are left out of op rows.
    runtime = Counter(k["name"] for k in kernels if "hlo_op" not in k)
    unattributed = stats.unattributed
    assert dict(zip(unattributed.name, unattributed.occurrences.tolist())) == runtime
    # Total: every (launch, op) once, however many kernels and streams it took.
    assert float(stats.all_db.flops.sum()) == pytest.approx(flops, rel=1e-12)


@pytest.mark.parametrize("annotation", ["node", "launch"])
def test_graph_kernels_belong_to_the_step_of_their_launch(annotation, node_path, launch_path):
    path = node_path if annotation == "node" else launch_path
    costs = _costs(path)
    stats = analyze_file(path)
    steps = _per_step(path)
    assert [s.step_num for s in stats.steps] == [num for num, _ in steps] == [0, 1, 2, 3]
    assert [s.complete for s in stats.steps] == [True] * 4
    for step, (_, kernels) in zip(stats.steps, steps):
        count, time_ps, flops = _expected(kernels, costs)
        assert _ops(step.db) == {op: (count[op], time_ps[op]) for op in count}
        # Program FLOPs of a step: one execution of each op per launch that ran it.
        assert float(step.db.flops.sum()) == pytest.approx(flops, rel=1e-12)
    # Only the eval tail launched before step 0 (one launch per GPU, 2 kernels) is outside.
    claimed = sum(len(kernels) for _, kernels in steps)
    everything, _, _ = _events(_space(path))
    assert len(everything) - claimed == 2 * GPUS
    assert any(n.startswith(f"{2 * GPUS} kernels (") for n in stats.notes)


def test_both_annotations_give_the_same_program_flops(tmp_path_factory):
    """A command-buffer call costs its commands: per step and in total, the Program is the
    same whether graph kernels name their own instruction or the call."""
    results = []
    for annotation in ("node", "launch"):
        spec = GpuSpec(graph_launches=annotation, unclaimed_kernels=0, host=annotation)
        stats = analyze_file(_write(tmp_path_factory, spec))
        per_step = [float(s.db.flops.sum()) for s in stats.steps]
        results.append((float(stats.all_db.flops.sum()), per_step, stats.all_db.total_time_ps))
    (node_total, node_steps, node_time), (call_total, call_steps, call_time) = results
    assert call_total == pytest.approx(node_total, rel=1e-12)
    assert call_steps == pytest.approx(node_steps, rel=1e-12)
    assert call_time == node_time  # the same kernels, named differently


def _drop_kernels(space: xplane_pb2.XSpace, drop) -> xplane_pb2.XSpace:
    """A copy of `space` without the GPU kernel events for which `drop(row)` is true."""
    out = xplane_pb2.XSpace()
    out.CopyFrom(space)
    for plane in out.planes:
        if not plane.name.startswith("/device:GPU:"):
            continue
        for line in plane.lines:
            kept = []
            for event in line.events:
                begin = line.timestamp_ns * 1000 + event.offset_ps
                stats = {k: v for k, (_, v) in named_stats(plane, event.stats).items()}
                if not drop({"plane": plane.name, "begin": begin, **stats}):
                    kept.append(event)
            del line.events[:]
            line.events.extend(kept)
    return out


def test_a_graph_launch_the_profile_stopped_in_makes_its_step_incomplete(tmp_path):
    # The eval graph is each step's last launch; the profile stops during the last one.
    spec = GpuSpec(graph_launches="node", truncated_last_step=True)
    path = write_profile(tmp_path / "h.xplane.pb", gpu_xspace(spec))
    kernels, launches, roots = _events(_space(path))
    last_root = roots[-1]
    per_launch = Counter(k["correlation_id"] for k in kernels)
    graphs = [la for la in launches if la["name"].startswith("cuGraphLaunch")]
    last = [max((la for la in graphs if la["device_id"] == gpu), key=lambda la: la["begin"])
            for gpu in range(GPUS)]  # fmt: skip
    # Each GPU ran only 8 of its eval graph's 10 kernels; every launch in the step ran some.
    assert [per_launch[la["correlation_id"]] for la in last] == [8] * GPUS
    in_step = [la for la in launches if last_root[1] <= la["begin"] < last_root[2]]
    assert all(per_launch[la["correlation_id"]] for la in in_step)
    stats = analyze_file(path)
    assert [s.complete for s in stats.steps] == [True, True, True, False]
    assert len(stats.complete_steps) == 3


def test_a_graph_launch_with_fewer_kernels_before_the_end_is_no_cut(tmp_path):
    """Graphs with loops or conditions run a varying number of kernels per launch: only a
    GPU's latest launch can have been cut by the end of the profile."""
    path = write_profile(tmp_path / "full.xplane.pb", gpu_xspace(GpuSpec(graph_launches="node")))
    space = _space(path)
    kernels, _, roots = _events(space)
    step1 = roots[1]
    # Step 1's training graph on GPU 0 runs without its copy kernel.
    (dropped,) = [
        k for k in kernels
        if k["plane"] == "/device:GPU:0" and k.get("hlo_op") == "copy.9"
        and step1[1] <= k["begin"] < step1[2]
    ]  # fmt: skip
    fewer = _drop_kernels(space, lambda k: k["begin"] == dropped["begin"])
    stats = analyze_file(write_profile(tmp_path / "fewer.xplane.pb", fewer))
    assert [s.complete for s in stats.steps] == [True] * 4
    # On GPU 0, the latest launch losing its last kernel is a cut.
    last = max(k["correlation_id"] for k in kernels if k["plane"] == "/device:GPU:0")
    tail = max(k["begin"] for k in kernels if k["correlation_id"] == last)
    cut = _drop_kernels(space, lambda k: k["correlation_id"] == last and k["begin"] == tail)
    stats = analyze_file(write_profile(tmp_path / "cut.xplane.pb", cut))
    assert [s.complete for s in stats.steps] == [True, True, True, False]


def test_a_graph_running_one_kernel_twice_is_one_execution_of_its_call(tmp_path):
    """With the launch's annotation on every kernel, a kernel name may come back inside one
    graph (several GEMMs of one library kernel): still one execution of the call."""
    space = gpu_xspace(GpuSpec(graph_launches="launch"))
    for plane in space.planes:
        if plane.name.startswith("/device:GPU:"):
            by_name = {m.name: key for key, m in plane.event_metadata.items()}
            for line in plane.lines:
                for event in line.events:  # the GELU kernel takes the scale kernel's name
                    if event.metadata_id == by_name["loop_tanh_fusion"]:
                        event.metadata_id = by_name["loop_convert_fusion"]
    path = write_profile(tmp_path / "h.xplane.pb", space)
    kernels, _, _ = _events(space)
    _, _, flops = _expected(kernels, _costs(path))
    stats = analyze_file(path)
    assert float(stats.all_db.flops.sum()) == pytest.approx(flops, rel=1e-12)
    ops = _ops(stats.all_db)
    assert ops[TRAIN_CALL][0] == sum(1 for k in kernels if k.get("hlo_op") == TRAIN_CALL)


def test_amd_graph_launches_are_hip_graph_launches(tmp_path):
    spec = GpuSpec(vendor="amd", graph_launches="node", truncated_last_step=True)
    path = write_profile(tmp_path / "h.xplane.pb", gpu_xspace(spec))
    kernels, launches, _ = _events(_space(path))
    names = Counter(la["name"] for la in launches)
    assert set(names) == {"hipModuleLaunchKernel", "hipGraphLaunch"}
    assert names["hipGraphLaunch"] == 4 * GPUS * 2 + GPUS
    assert not any("cuda_graph_id" in k for k in kernels)
    stats = analyze_file(path)
    assert [s.complete for s in stats.steps] == [True, True, True, False]
    count, time_ps, flops = _expected(kernels, _costs(path))
    assert _ops(stats.all_db) == {op: (count[op], time_ps[op]) for op in count}
    assert float(stats.all_db.flops.sum()) == pytest.approx(flops, rel=1e-12)


def test_graph_launches_default_off_and_demo_run_name(tmp_path):
    with pytest.raises(ValueError, match="graph_launches"):
        GpuSpec(graph_launches="yes")
    kernels, launches, _ = _events(gpu_xspace(GpuSpec()))
    assert {la["name"] for la in launches} == {"cuLaunchKernel"}
    assert len({k["correlation_id"] for k in kernels}) == len(kernels)
    (path, *_) = write_demo_logdir(tmp_path, runs=("train_gpu_graphs",), hosts=("h0",))
    _, launches, _ = _events(_space(path))
    assert any(la["name"].startswith("cuGraphLaunch") for la in launches)
    assert TRAIN_CALL in _ops(analyze_file(path).all_db)
