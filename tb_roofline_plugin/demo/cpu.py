"""Realistic, deterministic XLA:CPU-shaped XSpace profiles, built from code.

CPU (`CpuSpec`, `cpu_xspace`): a JAX XLA:CPU profile without device planes: two optimized HLO
modules in `/host:metadata` (dots, loop/input fusions, a transposing copy) that the cost model
prices, op events named by their instruction on `tf_XLAPjRtCpuClient`/`tf_XLAEigen` threads
(independent ops running concurrently), each with an `end: <op>` event linked by flow id
among thread-pool filler (dots asynchronous: their op event is the dispatch, the op ends at
its end event), and `train` step roots on the `python` line (one run before the first).

Everything is derived from the spec and a seeded `numpy` generator, never from the clock, so
the same spec always gives the same bytes.

"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hlo.cost.engine import ModuleCosts
from ..protos import hlo_pb2, xplane_pb2
from . import xspace_builder
from .common import (
    F32,
    NS,
    PROFILE_START_NS,
    US,
    Computation,
    Sources,
    Uniform,
    array_shape,
    filler_line,
    steps_or_runs,
    tuple_shape,
)
from .xspace_builder import U64, Ref, StatValue

# --- CPU profiles ---------------------------------------------------------------------------
#
# A JAX training loop on XLA:CPU, as `docs/xspace.md` sections 6 and 7 describe it: no device
# planes, the optimized HLO modules in `/host:metadata` (priced by the cost model, as on
# GPU), op events named by their HLO instruction on `tf_XLAPjRtCpuClient` and `tf_XLAEigen`
# host threads (independent ops of one program run concurrently), each with a zero-length
# `end: <op>` event linked by flow id (dots are asynchronous thunks: the op event is the
# dispatch), thread-pool filler, and `train` step roots on `python`.

CPU_TRAIN_PROGRAM_ID, CPU_EVAL_PROGRAM_ID = 30, 34  # small ints, as JAX on CPU numbers them
_CPU_INFERENCE_RUNS = 4  # (train, eval) pairs run when steps == 0 (no step roots)
_CPU_LINE_TIMESTAMP_NS = 7_861  # shared by every `/host:CPU` line, as in the real samples
_CPU_ORIGIN_PS = 1_200 * US  # the first program execution, relative to the line timestamp
_CPU_OP_FLOOR_PS = 2 * US  # the shortest thunk: dispatch and thread-pool hand-off
_CPU_DISPATCH_PS = 30 * US  # an asynchronous thunk's op event: the hand-off only
_CPU_WIDTH, _CPU_MLP = 512, 2048  # the generated MLP block, f32


@dataclass(frozen=True)
class CpuSpec:
    """What `cpu_xspace` generates. The defaults give a ~17 KB 4-thread training profile."""

    steps: int = 4  # host step roots (`train` with `_r` = 1); 0 = no step roots
    threads: int = 4  # XLA threads: one `tf_XLAPjRtCpuClient`, the rest `tf_XLAEigen`
    host: str = "cpu-host"
    seed: int = 0
    slow_op: str | None = None  # instruction whose op events take 3x longer, for comparisons
    target_bytes: int = 0  # > 0: repeat steps until the serialized size is about this

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
        if min(self.steps, self.target_bytes) < 0:
            raise ValueError("steps and target_bytes must be >= 0")


@dataclass(frozen=True)
class _CpuProgram:
    """A program: its optimized module, and the waves of ops one execution runs.

    The ops of a wave are independent: the thunk executor runs them concurrently, on as many
    threads as there are (then in turn); a wave starts when the previous one is done.
    """

    module: hlo_pb2.HloModuleProto
    waves: tuple[tuple[str, ...], ...]
    function: str  # the jitted Python function, for `PjitFunction(<function>)`


def _cpu_module(name: str, program_id: int, tokens: int, train: bool) -> hlo_pb2.HloModuleProto:
    """One MLP block over `tokens` rows in f32, as XLA:CPU compiles it (plain `dot` thunks).

    Training: x·W_in, a transposing copy of W_in and an input scaling (concurrent), a tanh
    GELU, ·W_out, a residual add, then the loss reduction concurrent with a weight-gradient
    dot, and the update. Eval: the forward pass and the reduction, numbered after training's.
    """
    t, w, m = tokens, _CPU_WIDTH, _CPU_MLP
    fn = "train_step" if train else "eval_step"
    tag = "" if train else ".1"
    module = hlo_pb2.HloModuleProto(name=name, id=program_id)
    src = Sources(module, fn, 88 if train else 121)
    scalar = array_shape(F32)
    x_shape, h_shape, w_in_shape, w_out_shape = (
        array_shape(F32, t, w),
        array_shape(F32, t, m),
        array_shape(F32, w, m),
        array_shape(F32, m, w),
    )
    rows = array_shape(F32, t)

    reducer = Computation(module, f"region_add{tag}")
    a, b = reducer.parameter("Arg_0.1", scalar), reducer.parameter("Arg_1.1", scalar)
    reducer.finish(reducer.add("add.1", "add", scalar, a, b))

    def fused(fusion_name: str, *params):
        comp = Computation(module, f"fused_computation.{fusion_name}", fusion=True)
        number = comp.proto.id
        return comp, [comp.parameter(f"param_{i}.{number}", s) for i, s in enumerate(params)]

    def constant(c: Computation, shape):
        number = len(c.proto.instructions)
        value = c.add(f"constant.{c.proto.id}.{number}", "constant", scalar)
        return c.add(f"broadcast.{c.proto.id}.{number}", "broadcast", shape, value)

    bodies = {}
    gelu_name, add_name, reduce_name = (
        f"multiply_tanh_fusion{tag}",
        f"add_fusion{tag}",
        f"reduce_fusion{tag}",
    )
    c, (p0,) = fused(gelu_name, h_shape)  # x * (1 + tanh(k x))
    inner = c.add(f"multiply.{c.proto.id}", "multiply", h_shape, p0, constant(c, h_shape))
    tanh = c.add(f"tanh.{c.proto.id}", "tanh", h_shape, inner)
    gate = c.add(f"add.{c.proto.id}", "add", h_shape, tanh, constant(c, h_shape))
    bodies[gelu_name] = c.finish(c.add(f"multiply.{c.proto.id}.1", "multiply", h_shape, p0, gate))
    c, (p0, p1) = fused(add_name, x_shape, x_shape)
    bodies[add_name] = c.finish(c.add(f"add.{c.proto.id}", "add", x_shape, p0, p1))
    c, (p0,) = fused(reduce_name, x_shape)  # Σ x² per row
    square = c.add(f"multiply.{c.proto.id}", "multiply", x_shape, p0, p0)
    zero = c.add(f"constant.{c.proto.id}", "constant", scalar)
    bodies[reduce_name] = c.finish(
        c.add(f"reduce.{c.proto.id}", "reduce", rows, square, zero, dims=[1], calls=[reducer])
    )
    if train:
        c, (p0, p1) = fused("multiply_fusion", x_shape, array_shape(F32, w))
        gain = c.add(f"broadcast.{c.proto.id}", "broadcast", x_shape, p1, dims=[1])
        bodies["multiply_fusion"] = c.finish(
            c.add(f"multiply.{c.proto.id}", "multiply", x_shape, p0, gain)
        )
        c, (p0, p1, p2) = fused("subtract_multiply_fusion", w_out_shape, w_out_shape, scalar)
        rate = c.add(f"broadcast.{c.proto.id}", "broadcast", w_out_shape, p2)
        delta = c.add(f"multiply.{c.proto.id}", "multiply", w_out_shape, p1, rate)
        bodies["subtract_multiply_fusion"] = c.finish(
            c.add(f"subtract.{c.proto.id}", "subtract", w_out_shape, p0, delta)
        )

    entry = Computation(module, f"main.{40 if train else 50}")
    x = entry.parameter("x.1", x_shape)
    w_in = entry.parameter("w_in.1", w_in_shape)
    w_out = entry.parameter("w_out.1", w_out_shape)

    def fusion(fusion_name: str, kind: str, shape, *operands, source: tuple):
        primitive, line = source
        return entry.add(
            fusion_name,
            "fusion",
            shape,
            *operands,
            fusion_kind=kind,
            calls=[bodies[fusion_name]],
            metadata=src(primitive, "mlp", line),
        )

    def dot(number: int, shape, lhs, rhs, contracting: tuple[int, int], line: int):
        return entry.add(
            f"dot.{number}",
            "dot",
            shape,
            lhs,
            rhs,
            contracting=contracting,
            metadata=src("dot_general", "mlp", line),
        )

    first = 1 if train else 4
    hidden = dot(first, h_shape, x, w_in, (1, 0), 31)
    results = []
    if train:
        gain = entry.parameter("gain.1", array_shape(F32, w))
        lr = entry.parameter("lr.1", scalar)
        transposed = entry.add(
            "copy.1",
            "copy",
            array_shape(F32, w, m, minor_to_major=(0, 1)),
            w_in,
            metadata=src("transpose", "mlp", 29),
        )
        residual = fusion("multiply_fusion", "kLoop", x_shape, x, gain, source=("mul", 30))
        results.append(transposed)
    else:
        residual = x
    gelu = fusion(gelu_name, "kLoop", h_shape, hidden, source=("tanh", 32))
    down = dot(first + 1, x_shape, gelu, w_out, (1, 0), 33)
    out = fusion(add_name, "kLoop", x_shape, down, residual, source=("add", 34))
    norms = fusion(reduce_name, "kInput", rows, out, source=("reduce_sum", 36))
    results += [out, norms]
    if train:
        grad = dot(3, w_out_shape, gelu, out, (0, 0), 95)
        update = fusion(
            "subtract_multiply_fusion", "kLoop", w_out_shape, w_out, grad, lr, source=("sub", 97)
        )
        results.append(update)
    root = entry.add(
        f"tuple.{30 if train else 31}", "tuple", tuple_shape(*(r.shape for r in results)), *results
    )
    entry.finish(root)
    module.entry_computation_name = entry.proto.name
    module.entry_computation_id = entry.proto.id
    module.host_program_shape.CopyFrom(entry.proto.program_shape)
    return module


def _cpu_programs() -> list[_CpuProgram]:
    """The training program (128 rows a step) and the eval program (32 rows)."""
    train = _cpu_module("jit_train_step", CPU_TRAIN_PROGRAM_ID, 128, train=True)
    evaluate = _cpu_module("jit_eval_step", CPU_EVAL_PROGRAM_ID, 32, train=False)
    return [
        _CpuProgram(
            train,
            (
                ("dot.1", "copy.1", "multiply_fusion"),
                ("multiply_tanh_fusion",),
                ("dot.2",),
                ("add_fusion",),
                ("dot.3", "reduce_fusion"),
                ("subtract_multiply_fusion",),
            ),
            "train_step",
        ),
        _CpuProgram(
            evaluate,
            (("dot.4",), ("multiply_tanh_fusion.1",), ("dot.5",), ("add_fusion.1",))
            + (("reduce_fusion.1",),),
            "eval_step",
        ),
    ]


def _cpu_base_ps(costs: ModuleCosts, name: str) -> int:
    """One execution's time from the cost model: dots at 60-140 GFLOP/s (bigger GEMMs do
    better), copies at 6 GB/s, other ops at 14 GB/s, and never under the thunk floor."""
    cost = costs.cost(name)
    assert cost is not None  # every instruction of the generated modules has a cost
    if costs.is_matmul_or_convolution(name):
        gflops = 140.0 if cost.flops > 1e8 else 60.0
        seconds = max(cost.flops / (gflops * 1e9), cost.bytes_accessed / 20e9)
    else:
        bandwidth = 6e9 if name.startswith("copy") else 14e9
        seconds = cost.bytes_accessed / bandwidth
    return max(_CPU_OP_FLOOR_PS, int(seconds * 1e12))


@dataclass
class _CpuTimeline:
    """Events of `/host:CPU` (ps since the line timestamp)."""

    ops: list  # per XLA thread: (begin, duration, program, op index, run id)
    executes: list  # per XLA thread: (begin, duration) of `ThunkExecutor::Execute`
    roots: list  # step roots: (step number, begin, end)
    calls: list  # PjitFunction events on the python line: (program, begin, end)
    end_ps: int


def _cpu_timeline(
    spec: CpuSpec,
    programs: list[_CpuProgram],
    base_ps: list[list[int]],
    repeats: int,
    origin_ps: int,
) -> _CpuTimeline:
    """Each step root dispatches the training program, then the eval program; each program
    runs its waves on the XLA threads (the client thread starts every execution). One eval
    run before the first root (the window opened mid-run) belongs to no step."""
    uniform = Uniform(np.random.default_rng([spec.seed, 7_331]))
    rng = np.random.default_rng([spec.seed, 7_332])
    index = [{name: i for i, name in enumerate(_cpu_op_names(p))} for p in programs]
    slow = spec.slow_op
    ops: list[list] = [[] for _ in range(spec.threads)]
    executes: list[list] = [[] for _ in range(spec.threads)]
    roots, calls = [], []

    def execute(program: int, t: int) -> int:
        run_id = int(rng.integers(-(2**31), 2**31))
        spans: dict[int, list[int]] = {}
        for wave in programs[program].waves:
            first = 0 if len(wave) == 1 and uniform() < 0.5 else int(uniform(0, spec.threads))
            thread_free: dict[int, int] = {}
            for k, name in enumerate(wave):
                thread = (first + k) % spec.threads
                begin = thread_free.get(thread, t) + int(uniform(0.3, 2.0) * US)
                i = index[program][name]
                duration = int(base_ps[program][i] * uniform(0.97, 1.03))
                if name == slow:
                    duration *= 3
                ops[thread].append((begin, duration, program, i, run_id))
                thread_free[thread] = begin + duration
                span = spans.setdefault(thread, [begin, begin + duration])
                span[1] = begin + duration
            t = max(thread_free.values()) + int(uniform(1.0, 3.0) * US)
        for thread, (begin, end) in spans.items():
            executes[thread].append((begin - int(uniform(0.5, 1.5) * US), end - begin + 2 * US))
        return t

    t = origin_ps
    host = t - int(uniform(20, 40) * US)
    calls.append((1, host, host + int(uniform(8, 15) * US)))
    t = execute(1, t) + int(uniform(30, 80) * US)
    for step in range(repeats):
        begin = t
        host = t + int(uniform(5, 15) * US)
        for program in range(len(programs)):
            dispatch = host + int(uniform(15, 40) * US)  # PjitFunction returns once enqueued
            calls.append((program, host, dispatch))
            host = execute(program, dispatch + int(uniform(2, 5) * US))
        end = host + int(uniform(5, 15) * US)  # block_until_ready
        if spec.steps:
            roots.append((step, begin, end))
        t = end + int(uniform(20, 60) * US)
    return _CpuTimeline(ops, executes, roots, calls, t)


def _cpu_op_names(program: _CpuProgram) -> list[str]:
    return [name for wave in program.waves for name in wave]


def _cpu_host_plane(
    space: xplane_pb2.XSpace,
    spec: CpuSpec,
    programs: list[_CpuProgram],
    timeline: _CpuTimeline,
) -> None:
    """`/host:CPU`: step roots on `python`, the XLA threads, and a filler thread."""
    plane = xspace_builder.plane(space, "/host:CPU", plane_id=0, stats={"process_id": 6_347})
    python = plane.line("python", line_id=-1_377_767_843_779_519_668, timestamp_ns=7_861)
    python.display_name = "python"
    root_meta = plane.event_metadata("train")
    call_metas = [plane.event_metadata(f"PjitFunction({p.function})") for p in programs]
    wait_meta = plane.event_metadata("Wait for usage holds")
    events = [(begin, 0, step, end) for step, begin, end in timeline.roots]
    events += [(begin, 1, program, end) for program, begin, end in timeline.calls]
    for begin, kind, what, end in sorted(events):
        if kind == 0:
            plane.event(python, root_meta, begin, end - begin, {"_r": 1, "step_num": what})
        else:
            python.events.add(
                metadata_id=call_metas[what], offset_ps=begin, duration_ps=end - begin
            )
            python.events.add(metadata_id=wait_meta, offset_ps=begin + US, duration_ps=US // 2)
    python.duration_ps = timeline.end_ps

    # Per op: its metadata, the `end: <op>` metadata and its stats but the run id, built once.
    ordinal, source = plane.stat_id("device_ordinal"), plane.stat_id("_src")
    thunk_src = plane.stat_id("external/xla/xla/backends/cpu/runtime/thunk.cc")
    listener_src = plane.stat_id(
        "external/xla/xla/tsl/profiler/backends/cpu/threadpool_listener.cc"
    )
    run_id, long_name = plane.stat_id("run_id"), plane.stat_id("long_name")
    flow_out, flow_in = plane.stat_id("_p"), plane.stat_id("_c")
    op_metas, end_metas, templates = [], [], []
    for cpu_program in programs:
        metas, ends, stats = [], [], []
        for name in _cpu_op_names(cpu_program):
            metas.append(plane.event_metadata(name))
            ends.append(plane.event_metadata(f"end: {name}"))
            event = xplane_pb2.XEvent()
            values: dict[str, StatValue] = {
                "hlo_op": Ref(name),
                "hlo_module": Ref(cpu_program.module.name),
                "program_id": int(cpu_program.module.id),
            }
            plane.fill_stats(event.stats, values)
            stats.append(event.stats)
        op_metas.append(metas)
        end_metas.append(ends)
        templates.append(stats)
    execute_meta = plane.event_metadata("ThunkExecutor::Execute")
    record_meta = plane.event_metadata("ThreadpoolListener::Record")

    for thread in range(spec.threads):
        tid = 268_338_670_195_318_679 + 1_000_003 * thread
        thread_kind = "tf_XLAPjRtCpuClient" if thread == 0 else "tf_XLAEigen"
        line = plane.line(f"{thread_kind}/{tid}", line_id=tid, timestamp_ns=_CPU_LINE_TIMESTAMP_NS)
        line.display_name = line.name
        rows = [(begin, 0, duration, -1, -1, 0) for begin, duration in timeline.executes[thread]]
        rows += [(b, 1, d, p, i, r) for b, d, p, i, r in timeline.ops[thread]]
        rows.sort()
        add = line.events.add
        for k, (begin, kind_, duration, program, i, run) in enumerate(rows):
            if kind_ == 0:
                add(metadata_id=execute_meta, offset_ps=begin, duration_ps=duration)
                continue
            # Dots run as asynchronous thunks: the op event is the dispatch, the op ends at
            # its `end:` event, linked by flow id (`_p` on the op, `_c` on the end event).
            name = _cpu_op_names(programs[program])[i]
            event_ps = min(duration, _CPU_DISPATCH_PS) if name.startswith("dot") else duration
            flow = ((thread + 1) << 32) | k
            event = add(metadata_id=op_metas[program][i], offset_ps=begin, duration_ps=event_ps)
            event.stats.extend(templates[program][i])
            event.stats.add(metadata_id=run_id, int64_value=run)
            event.stats.add(metadata_id=ordinal, int64_value=0)
            event.stats.add(metadata_id=source, ref_value=thunk_src)
            event.stats.add(metadata_id=flow_out, int64_value=flow)
            record = add(metadata_id=record_meta, offset_ps=begin + 300 * NS)
            record.stats.add(metadata_id=source, ref_value=listener_src)
            if k % 8 == 1:
                record.stats.add(metadata_id=long_name, str_value=f"ThreadpoolListener #{k}#")
            end = add(metadata_id=end_metas[program][i], offset_ps=begin + duration)
            end.stats.add(metadata_id=flow_in, int64_value=flow)
        line.duration_ps = timeline.end_ps

    rng = np.random.default_rng([spec.seed, 9_999])
    count = sum(len(ops) for ops in timeline.ops) // 2 + 16
    line = plane.line("py_xla_callback/1565", line_id=1_565, timestamp_ns=_CPU_LINE_TIMESTAMP_NS)
    line.display_name = line.name
    filler_line(
        plane, line, ("MemoryAllocation", "MemoryDeallocation"), rng, count, timeline.end_ps
    )


def _cpu_build(
    spec: CpuSpec, repeats: int, origin_ps: int = _CPU_ORIGIN_PS
) -> tuple[xplane_pb2.XSpace, int]:
    """The profile of `repeats` steps (or runs), and the end of its last event (ps)."""
    programs = _cpu_programs()
    if spec.slow_op is not None and not any(spec.slow_op in _cpu_op_names(p) for p in programs):
        raise ValueError(f"slow_op {spec.slow_op!r} is not an instruction that runs")
    costs = [ModuleCosts(p.module) for p in programs]  # as the analysis prices the ops
    base_ps = [
        [_cpu_base_ps(c, name) for name in _cpu_op_names(p)] for c, p in zip(costs, programs)
    ]
    timeline = _cpu_timeline(spec, programs, base_ps, repeats, origin_ps)

    space = xplane_pb2.XSpace(hostnames=[spec.host])
    metadata = xspace_builder.plane(
        space,
        "/host:metadata",
        plane_id=0,
        stats={
            "jax_version": "0.10.2",
            "cpu_version": "cpu",
            "jaxlib_version": "0.10.2",
            "process_id": 6_347,
        },
    )
    for program in programs:
        module = program.module
        meta = metadata.plane.event_metadata[module.id]
        meta.id = module.id
        meta.name = f"{module.name}({module.id})"
        proto = hlo_pb2.HloProto(hlo_module=module).SerializeToString(deterministic=True)
        metadata.fill_stats(meta.stats, {"Hlo Proto": proto, "program_id": U64(module.id)})
    _cpu_host_plane(space, spec, programs, timeline)
    start = PROFILE_START_NS + 1_000 * spec.seed
    stop = start + (_CPU_LINE_TIMESTAMP_NS * NS + timeline.end_ps + 50 * US) // NS
    xspace_builder.plane(
        space,
        "Task Environment",
        plane_id=0,
        stats={"profile_start_time": U64(start), "profile_stop_time": U64(stop)},
    )
    return space, timeline.end_ps


def cpu_xspace(spec: CpuSpec = CpuSpec()) -> xplane_pb2.XSpace:
    """A CPU profile as JAX's profiler would write it on XLA:CPU; same spec, same bytes.

    With `target_bytes`, steps (or runs without step roots) are repeated until the
    serialized size is about that many bytes; `spec.steps` then only chooses between step
    roots (> 0) and none (0).
    """
    repeats = steps_or_runs(spec, _cpu_build, _CPU_INFERENCE_RUNS, _CPU_ORIGIN_PS)
    return _cpu_build(spec, repeats)[0]
