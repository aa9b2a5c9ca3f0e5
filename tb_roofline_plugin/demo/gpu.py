"""Realistic, deterministic GPU-shaped XSpace profiles, built from code (as JAX's GPU
profiler writes them, ``docs/xspace.md``, priced by ``docs/hlo-cost.md``): the timeline of
launches and kernels, the device, host and metadata planes. What runs, on which device, is
``gpu_model``.

GPU (`GpuSpec`, `gpu_xspace`): NVIDIA (H100-like) or AMD (MI300X-like) planes with capability
stats and kernel stream lines whose kernels carry `hlo_op`/`program_id` but no cost, two
optimized HLO modules in `/host:metadata` that the cost model prices (cuBLASLt and Triton
GEMMs, loop/input fusions, a copy, an all-reduce, an unknown custom call), runtime kernels
without an HLO op, an op run as two kernels, and host step roots whose launches reach the
kernels through correlation ids (kernels launched before the first step; optionally a last
step the profile cut short). Optionally XLA command buffers: each program's run of commands
is one graph launch (`cuGraphLaunch`/`hipGraphLaunch`) of many kernels with its one
correlation id, the modules have the `command_buffer` computation and its `call`, and the
kernels carry their own instruction or the launch's `call` (`GpuSpec.graph_launches`).

Everything is derived from the spec and a seeded `numpy` generator, never from the clock, so
the same spec always gives the same bytes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..protos import hlo_pb2, xplane_pb2
from . import xspace_builder
from .common import (
    NS,
    PROFILE_START_NS,
    US,
    Uniform,
    filler_line,
    steps_or_runs,
)
from .gpu_model import GPU_DEVICES, GpuDevice, GpuOp, Kernel, gpu_names, gpu_programs
from .xspace_builder import U64, Ref, StatValue

_GPU_LINE_TIMESTAMP_NS = 711_141  # shared by every stream line of a plane (docs/xspace.md §5)
_GPU_ORIGIN_PS = 1_500 * US  # the first launch, relative to the profile start
_GPU_INFERENCE_RUNS = 4  # (train, eval) pairs run when steps == 0 (no step roots)
_GRAPH_ANNOTATIONS = ("", "node", "launch")  # GpuSpec.graph_launches
# The roles XLA's command-buffer scheduling outlines into one graph: a run of at least
# `xla_gpu_graph_min_graph_size` (5) commands, cut by what is not a command. The training
# program's runtime memset cuts its run after the copy, leaving the all-reduce, update and
# cast below the minimum, launched one by one; the eval program's all-reduce and mean join.
_TRAIN_GRAPH_ROLES = ("scale", "attention", "gemm", "gelu", "triton", "residual", "norm", "copy")
_EVAL_GRAPH_ROLES = (*_TRAIN_GRAPH_ROLES, "all_reduce", "mean")
_GRAPH_KERNEL_GAP_PS = (200 * NS, 600 * NS)  # between the kernels of one graph: no launch


@dataclass(frozen=True)
class GpuSpec:
    """What `gpu_xspace` generates. The defaults give a ~40 KB 2-GPU H100 training profile."""

    gpus: int = 2  # `/device:GPU:N` planes with kernels
    idle_gpus: int = 0  # further GPU planes with capability stats only (no lines)
    steps: int = 4  # host step roots (`train` with `_r` = 1); 0 = no step roots
    vendor: str = "nvidia"  # "nvidia" (H100 SXM-like) or "amd" (MI300X-like)
    host: str = "gpu-host"
    seed: int = 0
    slow_op: str | None = None  # instruction whose kernels take 3x longer, for comparisons
    # Kernels with an hlo_op, per GPU, launched before the first step root: no step claims them.
    unclaimed_kernels: int = 2
    # The last step's final 2 launches (per GPU) have no kernel: the profile stopped.
    truncated_last_step: bool = False
    target_bytes: int = 0  # > 0: repeat steps until the serialized size is about this
    # XLA command buffers (CUDA/HIP graphs): "" = off, every kernel its own launch; otherwise
    # each program's run of commands is one `cuGraphLaunch`/`hipGraphLaunch` whose kernels
    # all carry its correlation id, and the optimized modules have a `command_buffer`
    # computation called by a `call`. "node": each graph kernel's hlo_op is its own
    # instruction (XProf's model); "launch": each carries the annotation active at the graph
    # launch, the command-buffer `call` (what XLA's CUPTI collector records today).
    graph_launches: str = ""

    def __post_init__(self) -> None:
        if self.graph_launches not in _GRAPH_ANNOTATIONS:
            raise ValueError(
                f"graph_launches must be one of {_GRAPH_ANNOTATIONS}, got {self.graph_launches!r}"
            )
        if self.gpus < 1:
            raise ValueError(f"gpus must be >= 1, got {self.gpus}")
        if min(self.idle_gpus, self.steps, self.unclaimed_kernels, self.target_bytes) < 0:
            raise ValueError("idle_gpus, steps, unclaimed_kernels and target_bytes must be >= 0")
        if self.vendor not in GPU_DEVICES:
            raise ValueError(f"vendor must be one of {sorted(GPU_DEVICES)}, got {self.vendor!r}")
        if self.truncated_last_step and self.steps == 0:
            raise ValueError("truncated_last_step needs steps >= 1")


@dataclass(frozen=True)
class _Launched:
    """A kernel of a program execution: which op, which of its kernels."""

    program: int
    op: GpuOp
    kernel: Kernel
    in_graph: bool = False  # launched by the program's graph launch, not on its own


@dataclass
class _GpuTimeline:
    """Host and device events of the whole profile (ps since the profile start)."""

    kernels: list  # per GPU: (launched index, begin, duration, correlation id)
    launches: list  # per GPU: (begin, duration, correlation id, graph program or -1)
    roots: list  # step roots: (step number, begin, end)
    calls: list  # PjitFunction events on the python line: (program, begin, end)
    end_ps: int


def _launch_groups(template: list[int], launched: list[_Launched]) -> list[list[int]]:
    """The launches of a template's kernels: one kernel each, or one graph launch for each
    run of consecutive kernels `in_graph` of one program."""
    groups: list[list[int]] = []
    for index in template:
        item = launched[index]
        last = launched[groups[-1][-1]] if groups else None
        if item.in_graph and last is not None and last.in_graph and last.program == item.program:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _gpu_timeline(
    spec: GpuSpec,
    templates: list[list[int]],
    launched: list[_Launched],
    base_ps: list[int],
    repeats: int,
    origin_ps: int,
) -> _GpuTimeline:
    """Launches on the host, each followed by its kernel(s) once the GPU is free.

    Each step root dispatches the training program, then the eval program, on every GPU (a
    launch thread per GPU), then waits for the GPUs to finish. Kernels run one at a time
    per GPU, each at least 4 µs after its launch began. A graph launch (consecutive kernels
    `in_graph`) is one host event and one correlation id for all its kernels, which follow
    each other closely.
    """
    uniform = Uniform(np.random.default_rng([spec.seed, 4_242]))
    slow = {i for i, item in enumerate(launched) if item.op.name and item.op.name == spec.slow_op}
    gpus = range(spec.gpus)
    kernels: list[list] = [[] for _ in gpus]
    launches: list[list] = [[] for _ in gpus]
    free = [origin_ps] * spec.gpus  # when each GPU has run everything launched so far
    correlation = itertools.count(1_001)

    def launch(gpu: int, template: list[int], host: int, kernels_kept: int) -> int:
        position = 0
        for group in _launch_groups(template, launched):
            duration = int(uniform(2.5, 6.0) * US)
            cid = next(correlation)
            first = launched[group[0]]
            launches[gpu].append((host, duration, cid, first.program if first.in_graph else -1))
            for offset, index in enumerate(group[: max(kernels_kept - position, 0)]):
                if offset == 0:
                    gap = uniform(0.3, 1.5) * US
                    begin = max(free[gpu] + int(gap), host + int(uniform(4, 9) * US))
                else:
                    begin = free[gpu] + int(uniform(*_GRAPH_KERNEL_GAP_PS))
                run = int(base_ps[index] * uniform(0.97, 1.03)) * (3 if index in slow else 1)
                kernels[gpu].append((index, begin, run, cid))
                free[gpu] = begin + run
            host += duration + int(uniform(0.5, 2.0) * US)
            position += len(group)
        return host

    t = origin_ps
    if spec.unclaimed_kernels:
        # The tail of an eval run dispatched before the first step (the window opened late).
        with_op = [i for i in templates[-1] if launched[i].op.name]
        runs = -(-spec.unclaimed_kernels // len(with_op))
        tail = (with_op * runs)[-spec.unclaimed_kernels :]
        ends = [launch(gpu, tail, t + int(uniform(0, 3) * US), len(tail)) for gpu in gpus]
        t = max(*ends, *free) + int(uniform(30, 80) * US)

    roots, calls = [], []
    for step in range(repeats):
        cut = spec.truncated_last_step and step == repeats - 1
        begin = t
        host = t + int(uniform(5, 15) * US)
        for program, template in enumerate(templates):
            kept = len(template) - 2 if cut and program == len(templates) - 1 else len(template)
            ends = [launch(gpu, template, host + int(uniform(3, 8) * US), kept) for gpu in gpus]
            end = max(ends) + int(uniform(1, 3) * US)
            calls.append((program, host, end))
            host = end + int(uniform(2, 6) * US)
        # block_until_ready: the step ends when the GPUs are done, unless the profile stopped.
        end = (host if cut else max(host, *free)) + int(uniform(5, 15) * US)
        if spec.steps:
            roots.append((step, begin, end))
        t = end + int(uniform(20, 60) * US)
    return _GpuTimeline(kernels, launches, roots, calls, max(t, *free))


def _gpu_metadata_plane(space: xplane_pb2.XSpace, modules: list[hlo_pb2.HloModuleProto]) -> None:
    """`/host:metadata`: one event metadata per program, keyed by its program id as on GPU."""
    plane = xspace_builder.plane(space, "/host:metadata", plane_id=0)
    for module in modules:
        meta = plane.plane.event_metadata[module.id]
        meta.id = module.id
        meta.name = f"{module.name}({module.id})"
        proto = hlo_pb2.HloProto(hlo_module=module).SerializeToString(deterministic=True)
        plane.fill_stats(meta.stats, {"Hlo Proto": proto, "program_id": int(module.id)})


def _graph_id(gpu: int, program: int) -> int:
    """CUPTI's graph id of a program's command buffer: one graph per program and GPU."""
    return 3 + 2 * gpu + program


def _gpu_device_plane(
    space: xplane_pb2.XSpace,
    device: GpuDevice,
    gpu: int,
    launched: list[_Launched],
    modules: list[hlo_pb2.HloModuleProto],
    kernels: list | None,
    graph_annotation: str = "",
) -> None:
    """`/device:GPU:<gpu>` with capability stats and, unless idle, two kernel stream lines.

    A graph kernel also carries `cuda_graph_id` (NVIDIA); with `graph_annotation` "launch"
    its `hlo_op` is the command-buffer call, the annotation active at the graph launch.
    """
    plane = xspace_builder.plane(space, f"/device:GPU:{gpu}", plane_id=gpu, stats=device.stats)
    if kernels is None:
        return
    streams = [
        plane.line(f"Stream #{sid}(Kernel)", line_id=sid, timestamp_ns=_GPU_LINE_TIMESTAMP_NS)
        for sid in (16 + 4 * gpu, 17 + 4 * gpu)
    ]
    correlation = plane.stat_id("correlation_id")
    # Every kernel of one launched item has the same stats but its correlation id: build
    # them once and copy them into each event.
    metas, stats = [], []
    for item in launched:
        metas.append(plane.event_metadata(item.kernel.name(device)))
        values: dict[str, StatValue] = {"kernel_details": Ref(item.kernel.details(device))}
        if item.op.name or item.in_graph:
            module = modules[item.program]
            op_name = item.op.name
            if item.in_graph and graph_annotation == "launch":
                op_name = gpu_names(item.program == 0)["call"]
            values |= {
                "tf_op": Ref("XlaModule:"),
                "hlo_op": Ref(op_name),
                "hlo_module": Ref(module.name),
                "program_id": int(module.id),
            }
        if item.in_graph and not device.amd:
            values["cuda_graph_id"] = U64(_graph_id(gpu, item.program))
        event = xplane_pb2.XEvent()
        plane.fill_stats(event.stats, values)
        stats.append(event.stats)
    base = _GPU_LINE_TIMESTAMP_NS * NS
    ends = [base, base]
    for index, begin, duration, cid in kernels:
        stream = launched[index].op.stream
        event = streams[stream].events.add(
            metadata_id=metas[index], offset_ps=begin - base, duration_ps=duration
        )
        event.stats.add(metadata_id=correlation, uint64_value=cid)
        event.stats.extend(stats[index])
        ends[stream] = max(ends[stream], begin + duration)
    for line, end in zip(streams, ends):
        line.duration_ps = end - base


_GPU_HOST_FILLER = (
    ("tf_data_private_threadpool", ("Iterator::Prefetch", "Iterator::Map", "ParseExample")),
    ("py_xla_callback", ("MemoryAllocation", "MemoryDeallocation")),
    ("grpc_global_timer", ("grpc::Poll", "grpc::Timer")),
)


def _gpu_host_plane(
    space: xplane_pb2.XSpace, spec: GpuSpec, device: GpuDevice, timeline: _GpuTimeline
) -> None:
    """`/host:CPU`: step roots on `python`, a launch thread per GPU, filler threads."""
    plane = xspace_builder.plane(space, "/host:CPU", plane_id=0)
    python = plane.line("python", line_id=1_085_180_131_661_504_713, timestamp_ns=28_560)
    python.display_name = "python"
    base = python.timestamp_ns * NS
    root_meta = plane.event_metadata("train")
    call_metas = [plane.event_metadata(f"PjitFunction({f})") for f in ("train_step", "eval_step")]
    events = [(begin, 0, step, end) for step, begin, end in timeline.roots]
    events += [(begin, 1, program, end) for program, begin, end in timeline.calls]
    for begin, kind, what, end in sorted(events):
        if kind == 0:
            stats = {"_r": 1, "step_num": what}
            plane.event(python, root_meta, begin - base, end - begin, stats)
        else:
            python.events.add(
                metadata_id=call_metas[what], offset_ps=begin - base, duration_ps=end - begin
            )
    python.duration_ps = timeline.end_ps - base

    launch_meta = plane.event_metadata(device.launch_api)
    correlation, device_id = plane.stat_id("correlation_id"), plane.stat_id("device_id")
    graph_metas: dict[int, int] = {}
    for gpu, launches in enumerate(timeline.launches):
        tid = 4_747_829_982_129_071_201 + 7_919 * gpu
        line = plane.line(f"tf_pjrt_thread_pool/{tid}", line_id=tid, timestamp_ns=707_851)
        line.display_name = line.name
        base = line.timestamp_ns * NS
        add = line.events.add
        for begin, duration, cid, graph in launches:
            meta = launch_meta
            if graph >= 0:  # XLA's CUPTI collector names a graph launch after its executable
                exec_id = 100 + _graph_id(gpu, graph)  # numbered apart from graphs
                if exec_id not in graph_metas:
                    name = device.graph_launch_api
                    graph_metas[exec_id] = plane.event_metadata(
                        name if device.amd else f"{name} (CudaGraph:{exec_id})"
                    )
                meta = graph_metas[exec_id]
            event = add(metadata_id=meta, offset_ps=begin - base, duration_ps=duration)
            event.stats.add(metadata_id=correlation, uint64_value=cid)
            event.stats.add(metadata_id=device_id, int64_value=gpu)
            if graph >= 0 and not device.amd:
                event.stats.add(metadata_id=plane.stat_id("cuda_graph_id"), uint64_value=exec_id)
        line.duration_ps = timeline.end_ps - base

    # 3 filler events per 4 launches: the host plane stays about as big as the GPU planes.
    rng = np.random.default_rng([spec.seed, 9_999])
    launches = sum(len(launches) for launches in timeline.launches)
    per_line = 3 * launches // (4 * len(_GPU_HOST_FILLER)) + 16
    for index, (thread, names) in enumerate(_GPU_HOST_FILLER):
        tid = 1_565 + 977 * index
        line = plane.line(f"{thread}/{tid}", line_id=tid, timestamp_ns=8_482 + 17 * index)
        line.display_name = line.name
        filler_line(plane, line, names, rng, per_line, timeline.end_ps - line.timestamp_ns * NS)


def _gpu_build(
    spec: GpuSpec, repeats: int, origin_ps: int = _GPU_ORIGIN_PS
) -> tuple[xplane_pb2.XSpace, int]:
    """The profile of `repeats` steps (or runs), and the end of its last event (ps)."""
    programs = gpu_programs(command_buffers=bool(spec.graph_launches))
    modules = [module for module, _ in programs]
    instructions = {op.name for _, ops in programs for op in ops if op.name}
    if spec.slow_op is not None and spec.slow_op not in instructions:
        raise ValueError(f"slow_op {spec.slow_op!r} is not an instruction that runs kernels")
    device = GPU_DEVICES[spec.vendor]
    launched: list[_Launched] = []
    templates: list[list[int]] = []
    for program, (_, ops) in enumerate(programs):
        template = []
        graph = set()
        if spec.graph_launches:
            roles = _TRAIN_GRAPH_ROLES if program == 0 else _EVAL_GRAPH_ROLES
            graph = {gpu_names(program == 0)[role] for role in roles}
        for op in ops:
            for kernel in op.kernels:
                template.append(len(launched))
                launched.append(_Launched(program, op, kernel, in_graph=op.name in graph))
        templates.append(template)
    base_ps = [int(item.op.base_ps(device, spec.gpus) * item.kernel.share) for item in launched]
    timeline = _gpu_timeline(spec, templates, launched, base_ps, repeats, origin_ps)

    space = xplane_pb2.XSpace(hostnames=[spec.host])
    _gpu_metadata_plane(space, modules)
    for gpu in range(spec.gpus + spec.idle_gpus):
        kernels = timeline.kernels[gpu] if gpu < spec.gpus else None
        _gpu_device_plane(space, device, gpu, launched, modules, kernels, spec.graph_launches)
    _gpu_host_plane(space, spec, device, timeline)
    start = PROFILE_START_NS + 1_000 * spec.seed
    stop = start + (timeline.end_ps + 50 * US) // NS
    xspace_builder.plane(
        space,
        "Task Environment",
        plane_id=0,
        stats={"profile_start_time": U64(start), "profile_stop_time": U64(stop)},
    )
    return space, timeline.end_ps


def gpu_xspace(spec: GpuSpec = GpuSpec()) -> xplane_pb2.XSpace:
    """A GPU profile as JAX's profiler would write it for `spec`; same spec, same bytes.

    With `target_bytes`, steps (or runs without step roots) are repeated until the
    serialized size is about that many bytes; `spec.steps` then only chooses between step
    roots (> 0) and none (0).
    """
    repeats = steps_or_runs(spec, _gpu_build, _GPU_INFERENCE_RUNS, _GPU_ORIGIN_PS)
    return _gpu_build(spec, repeats)[0]
