"""Realistic, deterministic GPU-shaped XSpace profiles, built from code (as JAX's GPU
profiler writes them, ``docs/xspace.md``, priced by ``docs/hlo-cost.md``).

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
from dataclasses import dataclass, replace

import numpy as np

from ..protos import hlo_pb2, xplane_pb2
from . import xspace_builder
from .common import (
    BF16,
    F32,
    NS,
    PROFILE_START_NS,
    S8,
    US,
    Computation,
    Sources,
    Uniform,
    array_shape,
    filler_line,
    steps_or_runs,
    tuple_shape,
)
from .xspace_builder import U64, Ref

# --- GPU profiles ---------------------------------------------------------------------------
#
# A JAX data-parallel training loop on NVIDIA (CUPTI) or AMD (ROCm tracer) GPUs, as
# `docs/xspace.md` sections 3, 5 and 7 describe it: kernels on `/device:GPU:N` stream lines carry
# `hlo_op`/`program_id` but no cost, the optimized HLO modules are in `/host:metadata`
# (`docs/hlo-cost.md` sections 1, 2 and 4), and steps are host step roots whose launches reach the
# kernels through correlation ids.

GPU_TRAIN_PROGRAM_ID, GPU_EVAL_PROGRAM_ID = 12, 13  # small ints, int64 stats as on real GPUs
_GPU_LINE_TIMESTAMP_NS = 711_141  # shared by every stream line of a plane (docs/xspace.md §5)
_GPU_ORIGIN_PS = 1_500 * US  # the first launch, relative to the profile start
_GPU_INFERENCE_RUNS = 4  # (train, eval) pairs run when steps == 0 (no step roots)
_GPU_KERNEL_FLOOR_PS = 2 * US  # the shortest kernel: launch, ramp-up, drain
_ALL_REDUCE_LATENCY_PS = 8 * US
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
        if self.vendor not in _GPU_DEVICES:
            raise ValueError(f"vendor must be one of {sorted(_GPU_DEVICES)}, got {self.vendor!r}")
        if self.truncated_last_step and self.steps == 0:
            raise ValueError("truncated_last_step needs steps >= 1")


@dataclass(frozen=True)
class _GpuDevice:
    """Capability stats of a GPU plane, and the rates the generated kernels are timed by."""

    vendor: str  # the `device_vendor` stat
    clock_khz: int
    cores: int  # SMs (NVIDIA) / CUs (AMD)
    memory_bandwidth: int  # bytes/s, as the collectors compute it
    memory_size: int  # bytes
    compute_cap: tuple[int, int]
    matrix_tflops: float  # dense bf16 tensor throughput (datasheet) that kernels approach
    link_gbps: float  # all-reduce bus bandwidth per GPU (NVLink / Infinity Fabric)
    launch_api: str  # the host API event of a kernel launch
    graph_launch_api: str  # ... and of a graph launch
    amd: bool

    @property
    def stats(self) -> dict:
        major, minor = self.compute_cap
        return {
            "device_vendor": self.vendor,
            "clock_rate": self.clock_khz,
            "core_count": self.cores,
            "memory_bandwidth": U64(self.memory_bandwidth),
            "memory_size": U64(self.memory_size),
            "compute_cap_major": major,
            "compute_cap_minor": minor,
        }


_GPU_DEVICES = {
    "nvidia": _GpuDevice(  # H100 SXM
        vendor="Nvidia",
        clock_khz=1_980_000,
        cores=132,
        memory_bandwidth=3_350_000_000_000,
        memory_size=85_899_345_920,
        compute_cap=(9, 0),
        matrix_tflops=989.0,
        link_gbps=370.0,
        launch_api="cuLaunchKernel",
        graph_launch_api="cuGraphLaunch",
        amd=False,
    ),
    "amd": _GpuDevice(  # MI300X, with the stats of the shared ROCm samples
        vendor="AMD",
        clock_khz=2_100_000,
        cores=304,
        memory_bandwidth=2_662_400_000_000,
        memory_size=206_141_652_992,
        compute_cap=(9, 4),
        matrix_tflops=1307.0,
        link_gbps=300.0,
        launch_api="hipModuleLaunchKernel",
        graph_launch_api="hipGraphLaunch",
        amd=True,
    ),
}
_CUBLAS_CONFIG = (
    b'{"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],'
    b'"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}'
)
_TRITON_CONFIG = b'{"fusion_backend_config":{"kind":"__triton_gemm"}}'
_CUBLAS_WORKSPACE = 33_554_432  # elements of the s8 workspace that cuBLASLt returns
_SEQ, _WIDTH, _MLP, _HEADS = 512, 1024, 4096, 16  # the generated transformer block


@dataclass(frozen=True)
class _Kernel:
    """One kernel of an op: its NVIDIA and AMD names, share of the op's time, launch shape."""

    nvidia: str
    amd: str
    share: float
    grid: int
    block: int
    regs: int = 32
    shared_bytes: int = 0
    occupancy: float = 100.0

    def name(self, device: _GpuDevice) -> str:
        return self.amd if device.amd else self.nvidia

    def details(self, device: _GpuDevice) -> str:
        """The `kernel_details` stat as CUPTI / the ROCm tracer write it."""
        if device.amd:
            return (
                f" grid:{self.grid},1,1 block:{self.block},1,1 private_mem:0 "
                f"group_mem:{self.shared_bytes} occ_pct:0"
            )
        return (
            f"regs:{self.regs} static_shared:0 dynamic_shared:{self.shared_bytes} "
            f"grid:{self.grid},1,1 block:{self.block},1,1 occ_pct:{self.occupancy:.1f}"
        )


def _emitted(instruction: str, elements: int, *, share: float = 1.0, suffix: str = "") -> _Kernel:
    """A kernel XLA emits for a fusion or copy, named after it (dots become underscores)."""
    name = instruction.replace(".", "_") + suffix
    return _Kernel(name, f"{name}.kd", share, grid=max(1, -(-elements // 1024)), block=256)


@dataclass(frozen=True)
class _GpuOp:
    """A top-level instruction (or a runtime copy without one) and the kernels it runs as.

    `flops` and `bytes_accessed` are the work of one execution, by hand: the same as the cost
    model's (XLA's rules) except for the fused attention, an unknown custom call to the cost
    model, whose real FLOPs time its kernel. They time the kernels, at no more than
    `compute_efficiency` of the matrix peak and `memory_efficiency` of HBM bandwidth.
    """

    name: str  # instruction name; "" for a runtime kernel without an HLO op
    flops: float
    bytes_accessed: float
    kernels: tuple[_Kernel, ...]
    stream: int = 0  # 0: the compute stream; 1: the stream for copies and collectives
    compute_efficiency: float = 0.7
    memory_efficiency: float = 0.8
    reduced_bytes: float = 0.0  # all-reduce: the buffer reduced across GPUs

    def base_ps(self, device: _GpuDevice, gpus: int) -> int:
        compute = self.flops / (device.matrix_tflops * 1e12 * self.compute_efficiency)
        memory = self.bytes_accessed / (device.memory_bandwidth * self.memory_efficiency)
        seconds = max(compute, memory)
        floor = _GPU_KERNEL_FLOOR_PS * len(self.kernels)
        if self.reduced_bytes:  # a ring all-reduce moves 2(n-1)/n of the buffer per GPU
            n = max(gpus, 2)
            link = 2 * (n - 1) / n * self.reduced_bytes / (device.link_gbps * 1e9)
            floor += _ALL_REDUCE_LATENCY_PS
            seconds = max(seconds, link)
        return floor + int(seconds * 1e12)


def _runtime_op(nvidia: str, amd: str, num_bytes: int, grid: int) -> _GpuOp:
    """A copy/fill kernel of the runtime: no hlo_op, on the second stream."""
    return _GpuOp("", 0.0, num_bytes, (_Kernel(nvidia, amd, 1.0, grid, 512),), stream=1)


# Library kernels (NVIDIA, AMD). The cuBLASLt/hipBLASLt tile depends on the GEMM's size.
_GEMM_KERNELS = {
    True: (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
        "execute_segment_k_off_kernel__5x_cublas",
        "Cijk_Ailk_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1_SN_1LDSB1_APM1_ABV0_ACED0_AF0EM1",
    ),
    False: (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
        "execute_segment_k_off_kernel__5x_cublas",
        "Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1",
    ),
}
_ATTENTION_KERNEL = (
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
    "fmha_fwd_hd64_bf16_batch_b128x64x32_r3",
)
_ALL_REDUCE_KERNEL = _Kernel(
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_Generic_4", 1.0, 24, 512, regs=96
)


def _gpu_names(train: bool) -> dict[str, str]:
    """Instruction names by role. The eval module numbers its instructions differently (as
    XLA numbers the second instruction of a kind), so no name is in both modules."""
    tag, n = ("", 0) if train else (".2", 10)
    return {
        "reducer": f"region_add.{n + 1}",
        "scale": f"loop_convert_fusion{tag}",
        "attention": f"custom-call.{n + 3}",
        "attention_out": f"get-tuple-element.{n + 4}",
        "gemm": f"custom-call.{n + 5}",
        "gemm_out": f"get-tuple-element.{n + 6}",
        "gelu": f"loop_tanh_fusion{tag}",
        "triton": f"gemm_fusion_dot.{n + 7}",
        "residual": f"loop_add_fusion{tag}",
        "norm": f"input_reduce_fusion{tag}",
        "copy": f"copy.{n + 9}",
        "all_reduce": f"all-reduce.{n + 10}",
        "update": "loop_subtract_fusion",  # training only
        "cast": "loop_convert_fusion.1",  # training only
        "mean": f"loop_multiply_fusion{tag}",  # eval only
        "root": f"tuple.{n + 30}",
        "entry": f"main.{n + 40}",
        "call": f"call.{n + 20}",  # command buffers only: the call of `command_buffer`
        "graph_root": f"tuple.{n + 31}",
        "graph_computation": "command_buffer",
    }


def _gpu_module(
    name: str, program_id: int, batch: int, train: bool, command_buffer: bool = False
) -> hlo_pb2.HloModuleProto:
    """The optimized HLO module of one program (see `_gpu_program`)."""
    names = _gpu_names(train)
    n = 0 if train else 10  # instruction numbers, as in `_gpu_names`
    t, w, m = batch * _SEQ, _WIDTH, _MLP
    step_fn = "train_step" if train else "eval_step"
    module = hlo_pb2.HloModuleProto(name=name, id=program_id)
    src = Sources(module, step_fn, 95 if train else 131)
    scalar, tokens = array_shape(F32), array_shape(F32, t)
    x_shape, h_shape, weight = (
        array_shape(BF16, t, w),
        array_shape(BF16, t, m),
        array_shape(F32, w, m),
    )
    f32_x, f32_h = array_shape(F32, t, w), array_shape(F32, t, m)
    qkv_shape = array_shape(BF16, batch, _SEQ, _HEADS, w // _HEADS)

    # Callees first: the reducer, then the fused computations, then the entry.
    reducer = Computation(module, names["reducer"])
    a, b = reducer.parameter("Arg_0.1", scalar), reducer.parameter("Arg_1.1", scalar)
    reducer.finish(reducer.add("add.1", "add", scalar, a, b))
    bodies: dict[str, Computation] = {}

    def fused(role: str, *params: hlo_pb2.ShapeProto):
        comp = Computation(module, f"fused_computation.{names[role]}", fusion=True)
        bodies[role] = comp
        number = comp.proto.id  # instruction names are unique in the whole module
        return comp, [comp.parameter(f"param_{i}.{number}", s) for i, s in enumerate(params)]

    def constant(c: Computation, number: int, shape: hlo_pb2.ShapeProto):
        """A scalar constant broadcast to `shape` (0 bytes to XLA's cost: it is a scalar)."""
        value = c.add(f"constant.{number}", "constant", scalar)
        return c.add(f"broadcast.{number + 10}", "broadcast", shape, value)

    c, (p0, p1) = fused("scale", x_shape, array_shape(F32, w))
    wide = c.add("convert.1", "convert", f32_x, p0)
    gain = c.add("broadcast.1", "broadcast", f32_x, p1, dims=[1])
    scaled = c.add("multiply.1", "multiply", f32_x, wide, gain)
    c.finish(c.add("convert.2", "convert", x_shape, scaled))

    c, (p0,) = fused("gelu", h_shape)  # x * (1 + tanh(k x)), in f32
    wide = c.add("convert.3", "convert", f32_h, p0)
    inner = c.add("multiply.2", "multiply", f32_h, wide, constant(c, 1, f32_h))
    tanh = c.add("tanh.1", "tanh", f32_h, inner)
    gate = c.add("add.2", "add", f32_h, tanh, constant(c, 2, f32_h))
    gated = c.add("multiply.3", "multiply", f32_h, wide, gate)
    c.finish(c.add("convert.4", "convert", h_shape, gated))

    c, (p0, p1) = fused("triton", h_shape, array_shape(BF16, m, w))
    c.finish(c.add("dot.1", "dot", x_shape, p0, p1, contracting=(1, 0)))

    c, (p0, p1) = fused("residual", x_shape, x_shape)
    c.finish(c.add("add.3", "add", x_shape, p0, p1))

    c, (p0,) = fused("norm", x_shape)  # Σ x² per token, in f32
    wide = c.add("convert.5", "convert", f32_x, p0)
    square = c.add("multiply.4", "multiply", f32_x, wide, wide)
    zero = c.add("constant.3", "constant", scalar)
    c.finish(c.add("reduce.1", "reduce", tokens, square, zero, dims=[1], calls=[reducer]))

    if train:
        c, (p0, p1, p2) = fused("update", weight, weight, scalar)  # w - lr * grad
        rate = c.add("broadcast.4", "broadcast", weight, p2)
        delta = c.add("multiply.5", "multiply", weight, p1, rate)
        c.finish(c.add("subtract.1", "subtract", weight, p0, delta))
        c, (p0,) = fused("cast", weight)
        c.finish(c.add("convert.6", "convert", array_shape(BF16, w, m), p0))
    else:
        c, (p0,) = fused("mean", tokens)
        c.finish(c.add("multiply.6", "multiply", tokens, p0, constant(c, 4, tokens)))

    entry_params = (
        ("x.1", x_shape),
        ("scale.1", array_shape(F32, w)),
        *((f"{p}.1", qkv_shape) for p in "qkv"),
        ("w_in.1", array_shape(BF16, w, m)),
        ("w_out.1", array_shape(BF16, m, w)),
    )

    def fusion(comp: Computation, role: str, kind: str, shape, *operands, source, **fields):
        primitive, line = source
        return comp.add(
            names[role],
            "fusion",
            shape,
            *operands,
            fusion_kind=kind,
            calls=[bodies[role]],
            metadata=src(primitive, "mlp" if line < 80 else step_fn, line),
            **fields,
        )

    def block(comp: Computation, x, gain, q, k, v, w_in, w_out) -> list:
        """The transformer block's instructions in `comp`: [out, attended, norms, transposed]."""
        scaled = fusion(comp, "scale", "kLoop", x_shape, x, gain, source=("mul", 41))
        attention = comp.add(
            names["attention"],
            "custom-call",
            tuple_shape(qkv_shape, array_shape(F32, batch, _HEADS, _SEQ)),
            q,
            k,
            v,
            custom_call_target="te_fused_attn_fwd_ffi",
            metadata=src("te_fused_attn_fwd", "attention", 23),
        )
        attended = comp.add(
            names["attention_out"], "get-tuple-element", qkv_shape, attention, tuple_index=0
        )
        gemm = comp.add(
            names["gemm"],
            "custom-call",
            tuple_shape(h_shape, array_shape(S8, _CUBLAS_WORKSPACE)),
            scaled,
            w_in,
            custom_call_target="__cublas$lt$matmul",
            backend_config=_CUBLAS_CONFIG,
            metadata=src("dot_general", "mlp", 44),
        )
        hidden = comp.add(names["gemm_out"], "get-tuple-element", h_shape, gemm, tuple_index=0)
        gelu = fusion(comp, "gelu", "kLoop", h_shape, hidden, source=("tanh", 45))
        down = fusion(
            comp,
            "triton",
            "kCustom",
            x_shape,
            gelu,
            w_out,
            source=("dot_general", 46),
            backend_config=_TRITON_CONFIG,
        )
        out = fusion(comp, "residual", "kLoop", x_shape, down, x, source=("add", 47))
        norms = fusion(comp, "norm", "kInput", tokens, out, source=("reduce_sum", 52))
        transposed = comp.add(
            names["copy"],
            "copy",
            array_shape(BF16, w, m, minor_to_major=(0, 1)),
            w_in,
            metadata=src("transpose", "mlp", 58),
        )
        return [out, attended, norms, transposed]

    def all_reduce(comp: Computation, reduced, line: int):
        return comp.add(
            names["all_reduce"],
            "all-reduce",
            reduced.shape,
            reduced,
            calls=[reducer],
            channel_id=1,
            use_global_device_ids=True,
            metadata=src("psum", step_fn, line),
        )

    def mean(comp: Computation, summed):
        return fusion(comp, "mean", "kLoop", tokens, summed, source=("div", 138))

    if command_buffer:
        # XLA's command-buffer scheduling: the block (and, in eval, the all-reduce and mean)
        # moves into a `command_buffer` computation whose parameters are what it reads,
        # called from the entry by one `call`; its results come back as a tuple.
        graph = Computation(module, names["graph_computation"])
        inputs = [
            graph.parameter(f"p.{i}" if i else "p", s) for i, (_, s) in enumerate(entry_params)
        ]
        inside = block(graph, *inputs)
        if not train:
            inside.append(mean(graph, all_reduce(graph, inside[2], 137)))
        graph.finish(
            graph.add(
                names["graph_root"], "tuple", tuple_shape(*(r.shape for r in inside)), *inside
            )
        )
    entry = Computation(module, names["entry"])
    params = [entry.parameter(name, shape) for name, shape in entry_params]
    if command_buffer:
        call = entry.add(
            names["call"],
            "call",
            graph.proto.instructions[-1].shape,
            *params,
            calls=[graph],
            metadata=hlo_pb2.OpMetadata(op_name=f"jit({step_fn})/{names['call']}"),
        )
        results = [
            entry.add(f"get-tuple-element.{n + 21 + i}", "get-tuple-element", r.shape, call,
                      tuple_index=i)
            for i, r in enumerate(inside)
        ]  # fmt: skip
    else:
        results = block(entry, *params)
    if train:
        grad = entry.parameter("grad.1", weight)
        master = entry.parameter("w_master.1", weight)
        lr = entry.parameter("lr.1", scalar)
        summed = all_reduce(entry, grad, 101)
        new = fusion(entry, "update", "kLoop", weight, master, summed, lr, source=("sub", 104))
        cast = array_shape(BF16, w, m)
        results += [
            new,
            fusion(entry, "cast", "kLoop", cast, new, source=("convert_element_type", 105)),
        ]
    elif not command_buffer:
        results.append(mean(entry, all_reduce(entry, results[2], 137)))
    root = entry.add(names["root"], "tuple", tuple_shape(*(r.shape for r in results)), *results)
    entry.finish(root)
    module.entry_computation_name = entry.proto.name
    module.entry_computation_id = entry.proto.id
    module.host_program_shape.CopyFrom(entry.proto.program_shape)
    return module


def _gpu_ops(batch: int, train: bool) -> list[_GpuOp]:
    """What one execution of a program runs, in order, with each op's work (see `_GpuOp`)."""
    names = _gpu_names(train)
    t, w, m = batch * _SEQ, _WIDTH, _MLP
    gemm = _Kernel(*_GEMM_KERNELS[train], 1.0, -(-t // 128) * -(-m // 256), 384, regs=168)
    triton = replace(_emitted(names["triton"], 0), grid=-(-t // 128) * (w // 128), regs=128)
    attention = _Kernel(*_ATTENTION_KERNEL, 1.0, batch * _HEADS * _SEQ // 64, 384, regs=168)
    if train:  # a two-pass row reduction: two kernels per execution
        norm_kernels = (
            _emitted(names["norm"], t * w, share=0.7),
            _emitted(names["norm"], t, share=0.3, suffix="_1"),
        )
    else:
        norm_kernels = (_emitted(names["norm"], t * w),)

    def elementwise(role: str, flops: int, num_bytes: int, elements: int, **timing) -> _GpuOp:
        return _GpuOp(names[role], flops, num_bytes, (_emitted(names[role], elements),), **timing)

    ops = [
        _runtime_op("memcpy32_post", "__amd_rocclr_copyBuffer.kd", 8 * t, 1),
        elementwise("scale", 3 * t * w, 4 * t * w + 4 * w, t * w),
        # FLOPs of QKᵀ and PV (the cost model sees none); bytes: q, k, v, output, softmax stats.
        _GpuOp(
            names["attention"],
            4 * batch * _SEQ * _SEQ * w,
            8 * t * w + 4 * t * _HEADS,
            (attention,),
            compute_efficiency=0.5,
        ),
        _GpuOp(names["gemm"], 2 * t * w * m, 2 * (t * w + w * m + t * m), (gemm,)),
        elementwise("gelu", 5 * t * m, 4 * t * m, t * m),
        _GpuOp(
            names["triton"],
            2 * t * m * w,
            2 * (t * m + m * w + t * w),
            (triton,),
            compute_efficiency=0.6,
        ),
        elementwise("residual", t * w, 6 * t * w, t * w),
        _GpuOp(
            names["norm"], 3 * t * w - t, 2 * t * w + 4 * t, norm_kernels, memory_efficiency=0.75
        ),
        elementwise("copy", 0, 4 * w * m, w * m, memory_efficiency=0.6),
    ]
    if train:
        reduced = 4 * w * m
        fill = _runtime_op("memset32_aligned1D", "__amd_rocclr_fillBufferAligned.kd", 1 << 22, 64)
        ops.append(fill)
    else:
        reduced = 4 * t
    ops.append(
        _GpuOp(
            names["all_reduce"],
            reduced // 4,
            2 * reduced,
            (_ALL_REDUCE_KERNEL,),
            stream=1,
            reduced_bytes=reduced,
        )
    )
    if train:
        ops.append(elementwise("update", 2 * w * m, 12 * w * m + 4, w * m))
        ops.append(elementwise("cast", w * m, 6 * w * m, w * m))
    else:
        ops.append(elementwise("mean", t, 8 * t, t))
    return ops


def _gpu_program(
    name: str, program_id: int, batch: int, *, train: bool, command_buffer: bool = False
) -> tuple[hlo_pb2.HloModuleProto, list[_GpuOp]]:
    """The optimized HLO module of one program and what it runs, in execution order.

    One transformer block over `batch` sequences of 512 tokens (width 1024, MLP 4096, 16
    heads): an input-scaling loop fusion, fused attention (a TransformerEngine custom call
    whose cost is unknown), a cuBLASLt GEMM, a tanh GELU loop fusion, a Triton GEMM fusion,
    a residual add, a row reduction (input fusion), a transposing copy and an all-reduce.
    The training program all-reduces the f32 gradient of the MLP weight and applies it
    (subtract and convert fusions), and its reduction runs as two kernels; the eval program
    all-reduces its per-token sums and scales them. Runtime copy/fill kernels without an
    HLO op run on the second stream. With `command_buffer`, the module has XLA's
    `command_buffer` computation and its `call` (see `_TRAIN_GRAPH_ROLES`).
    """
    module = _gpu_module(name, program_id, batch, train, command_buffer)
    return module, _gpu_ops(batch, train)


def _gpu_programs(
    command_buffers: bool = False,
) -> list[tuple[hlo_pb2.HloModuleProto, list[_GpuOp]]]:
    """(module, ops) of the training program (16 sequences a step) and the eval program (4)."""
    return [
        _gpu_program("jit_train_step", GPU_TRAIN_PROGRAM_ID, 16, train=True,
                     command_buffer=command_buffers),
        _gpu_program("jit_eval_step", GPU_EVAL_PROGRAM_ID, 4, train=False,
                     command_buffer=command_buffers),
    ]  # fmt: skip


@dataclass(frozen=True)
class _Launched:
    """A kernel of a program execution: which op, which of its kernels."""

    program: int
    op: _GpuOp
    kernel: _Kernel
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
    device: _GpuDevice,
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
        values = {"kernel_details": Ref(item.kernel.details(device))}
        if item.op.name or item.in_graph:
            module = modules[item.program]
            op_name = item.op.name
            if item.in_graph and graph_annotation == "launch":
                op_name = _gpu_names(item.program == 0)["call"]
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
    space: xplane_pb2.XSpace, spec: GpuSpec, device: _GpuDevice, timeline: _GpuTimeline
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
    programs = _gpu_programs(command_buffers=bool(spec.graph_launches))
    modules = [module for module, _ in programs]
    instructions = {op.name for _, ops in programs for op in ops if op.name}
    if spec.slow_op is not None and spec.slow_op not in instructions:
        raise ValueError(f"slow_op {spec.slow_op!r} is not an instruction that runs kernels")
    device = _GPU_DEVICES[spec.vendor]
    launched: list[_Launched] = []
    templates: list[list[int]] = []
    for program, (_, ops) in enumerate(programs):
        template = []
        graph = set()
        if spec.graph_launches:
            roles = _TRAIN_GRAPH_ROLES if program == 0 else _EVAL_GRAPH_ROLES
            graph = {_gpu_names(program == 0)[role] for role in roles}
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
