"""What the GPU demo runs and on what: the devices (H100-like, MI300X-like, with their
capability stats), the two programs' optimized HLO modules (a transformer block priced by the
cost model: cuBLASLt and Triton GEMMs, loop/input fusions, a copy, an all-reduce, an unknown
custom call, optionally XLA command buffers) and the ops and kernels each program launches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..protos import hlo_pb2
from .common import (
    BF16,
    F32,
    S8,
    US,
    Computation,
    Sources,
    array_shape,
    tuple_shape,
)
from .xspace_builder import U64

# --- GPU profiles ---------------------------------------------------------------------------
#
# A JAX data-parallel training loop on NVIDIA (CUPTI) or AMD (ROCm tracer) GPUs, as
# `docs/xspace.md` sections 3, 5 and 7 describe it: kernels on `/device:GPU:N` stream lines carry
# `hlo_op`/`program_id` but no cost, the optimized HLO modules are in `/host:metadata`
# (`docs/hlo-cost.md` sections 1, 2 and 4), and steps are host step roots whose launches reach the
# kernels through correlation ids.

GPU_TRAIN_PROGRAM_ID, GPU_EVAL_PROGRAM_ID = 12, 13  # small ints, int64 stats as on real GPUs
_GPU_KERNEL_FLOOR_PS = 2 * US  # the shortest kernel: launch, ramp-up, drain
_ALL_REDUCE_LATENCY_PS = 8 * US


@dataclass(frozen=True)
class GpuDevice:
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


GPU_DEVICES = {
    "nvidia": GpuDevice(  # H100 SXM
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
    "amd": GpuDevice(  # MI300X, with the stats of the shared ROCm samples
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
class Kernel:
    """One kernel of an op: its NVIDIA and AMD names, share of the op's time, launch shape."""

    nvidia: str
    amd: str
    share: float
    grid: int
    block: int
    regs: int = 32
    shared_bytes: int = 0
    occupancy: float = 100.0

    def name(self, device: GpuDevice) -> str:
        return self.amd if device.amd else self.nvidia

    def details(self, device: GpuDevice) -> str:
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


def _emitted(instruction: str, elements: int, *, share: float = 1.0, suffix: str = "") -> Kernel:
    """A kernel XLA emits for a fusion or copy, named after it (dots become underscores)."""
    name = instruction.replace(".", "_") + suffix
    return Kernel(name, f"{name}.kd", share, grid=max(1, -(-elements // 1024)), block=256)


@dataclass(frozen=True)
class GpuOp:
    """A top-level instruction (or a runtime copy without one) and the kernels it runs as.

    `flops` and `bytes_accessed` are the work of one execution, by hand: the same as the cost
    model's (XLA's rules) except for the fused attention, an unknown custom call to the cost
    model, whose real FLOPs time its kernel. They time the kernels, at no more than
    `compute_efficiency` of the matrix peak and `memory_efficiency` of HBM bandwidth.
    """

    name: str  # instruction name; "" for a runtime kernel without an HLO op
    flops: float
    bytes_accessed: float
    kernels: tuple[Kernel, ...]
    stream: int = 0  # 0: the compute stream; 1: the stream for copies and collectives
    compute_efficiency: float = 0.7
    memory_efficiency: float = 0.8
    reduced_bytes: float = 0.0  # all-reduce: the buffer reduced across GPUs

    def base_ps(self, device: GpuDevice, gpus: int) -> int:
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


def _runtime_op(nvidia: str, amd: str, num_bytes: int, grid: int) -> GpuOp:
    """A copy/fill kernel of the runtime: no hlo_op, on the second stream."""
    return GpuOp("", 0.0, num_bytes, (Kernel(nvidia, amd, 1.0, grid, 512),), stream=1)


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
_ALL_REDUCE_KERNEL = Kernel(
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_Generic_4", 1.0, 24, 512, regs=96
)


def gpu_names(train: bool) -> dict[str, str]:
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
    names = gpu_names(train)
    n = 0 if train else 10  # instruction numbers, as in `gpu_names`
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


def _gpu_ops(batch: int, train: bool) -> list[GpuOp]:
    """What one execution of a program runs, in order, with each op's work (see `GpuOp`)."""
    names = gpu_names(train)
    t, w, m = batch * _SEQ, _WIDTH, _MLP
    gemm = Kernel(*_GEMM_KERNELS[train], 1.0, -(-t // 128) * -(-m // 256), 384, regs=168)
    triton = replace(_emitted(names["triton"], 0), grid=-(-t // 128) * (w // 128), regs=128)
    attention = Kernel(*_ATTENTION_KERNEL, 1.0, batch * _HEADS * _SEQ // 64, 384, regs=168)
    norm_kernels: tuple[Kernel, ...]
    if train:  # a two-pass row reduction: two kernels per execution
        norm_kernels = (
            _emitted(names["norm"], t * w, share=0.7),
            _emitted(names["norm"], t, share=0.3, suffix="_1"),
        )
    else:
        norm_kernels = (_emitted(names["norm"], t * w),)

    def elementwise(role: str, flops: int, num_bytes: int, elements: int, **timing) -> GpuOp:
        return GpuOp(names[role], flops, num_bytes, (_emitted(names[role], elements),), **timing)

    ops = [
        _runtime_op("memcpy32_post", "__amd_rocclr_copyBuffer.kd", 8 * t, 1),
        elementwise("scale", 3 * t * w, 4 * t * w + 4 * w, t * w),
        # FLOPs of QKᵀ and PV (the cost model sees none); bytes: q, k, v, output, softmax stats.
        GpuOp(
            names["attention"],
            4 * batch * _SEQ * _SEQ * w,
            8 * t * w + 4 * t * _HEADS,
            (attention,),
            compute_efficiency=0.5,
        ),
        GpuOp(names["gemm"], 2 * t * w * m, 2 * (t * w + w * m + t * m), (gemm,)),
        elementwise("gelu", 5 * t * m, 4 * t * m, t * m),
        GpuOp(
            names["triton"],
            2 * t * m * w,
            2 * (t * m + m * w + t * w),
            (triton,),
            compute_efficiency=0.6,
        ),
        elementwise("residual", t * w, 6 * t * w, t * w),
        GpuOp(
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
        GpuOp(
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
) -> tuple[hlo_pb2.HloModuleProto, list[GpuOp]]:
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


def gpu_programs(
    command_buffers: bool = False,
) -> list[tuple[hlo_pb2.HloModuleProto, list[GpuOp]]]:
    """(module, ops) of the training program (16 sequences a step) and the eval program (4)."""
    return [
        _gpu_program("jit_train_step", GPU_TRAIN_PROGRAM_ID, 16, train=True,
                     command_buffer=command_buffers),
        _gpu_program("jit_eval_step", GPU_EVAL_PROGRAM_ID, 4, train=False,
                     command_buffer=command_buffers),
    ]  # fmt: skip
