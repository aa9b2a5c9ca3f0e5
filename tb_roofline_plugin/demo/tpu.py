"""Realistic, deterministic TPU- and GPU-shaped XSpace profiles, built from code.

Tests, the demo and the benchmarks need profiles that look like what libtpu and JAX's GPU
profiler write (`xspace.md`, `hlo-cost.md`) without shipping real captures.

TPU (`TpuSpec`, `tpu_xspace`): several TensorCore planes with capability stats, an `XLA Ops`
line whose ops carry their cost on the event metadata, a `Steps` line whose first step may
be cut by the profile window, ops outside every step, a `while` op with nested children, two
programs, and host planes that readers must skip.

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

import itertools
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..hlo.cost.engine import ModuleCosts
from ..protos import hlo_pb2, xplane_pb2
from . import xspace_builder
from .xspace_builder import U64, Ref, memory_breakdown

__all__ = [
    "CpuSpec",
    "GpuSpec",
    "TpuSpec",
    "cpu_xspace",
    "gpu_xspace",
    "tpu_xspace",
    "write_profile",
    "write_demo_logdir",
    "write_large_profile",
    "write_tiled_profile",
]

READ, WRITE = 1, 2  # MemoryAccessed.operation_type
HBM, CMEM, VMEM = 1, 2, 3  # MemoryAccessed.memory_space
NS = 1_000  # ps per ns
US = 1_000_000  # ps per µs

# Program ids are uint64 fingerprints in real files; the first one does not fit in an int64,
# so readers that forget to mask `& 0xFFFFFFFFFFFFFFFF` show up in tests.
TRAIN_PROGRAM_ID = 0xB2F5_6C1E_9A3D_4E07
METRICS_PROGRAM_ID = 0x1F0A_77C3_5D21_86B4
PROGRAMS = (("jit_train_step", TRAIN_PROGRAM_ID), ("jit_update_metrics", METRICS_PROGRAM_ID))

_INFERENCE_RUNS = 5  # program executions of an inference profile (steps == 0)
_PROFILE_START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z, fixed: no wall clock
_DEVICE_ORIGIN_PS = 1_250 * US  # first device event, relative to the profile start


@dataclass(frozen=True)
class TpuSpec:
    """What `tpu_xspace` generates. The defaults give a ~70 KB 4-core v5p training profile."""

    cores: int = 4  # `/device:TPU:N` planes
    steps: int = 5  # events on the Steps line; 0 = inference profile without a Steps line
    # The first step is cut by the profile window: it starts exactly at the plane's earliest
    # op. Otherwise the window opens during the previous step, whose tail lies before step 0.
    incomplete_first_step: bool = True
    ops_per_step: int = 24  # distinct HLO ops run each (complete) step, >= 12
    device: str = "v5p"  # "v4" (CMEM, megacore), "v5p" (megacore, merged VMEM), "v6e"
    host: str = "demo-host"
    seed: int = 0
    slow_op: str | None = None  # instruction name that runs 3x longer, for comparisons
    target_bytes: int = 0  # > 0: repeat steps until the serialized size is about this
    host_lines: int = 4  # `/host:CPU` threads of filler events

    def __post_init__(self) -> None:
        if self.cores < 1:
            raise ValueError(f"cores must be >= 1, got {self.cores}")
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")
        if self.ops_per_step < 12:
            raise ValueError(f"ops_per_step must be >= 12, got {self.ops_per_step}")
        if self.device not in _DEVICES:
            raise ValueError(f"device must be one of {sorted(_DEVICES)}, got {self.device!r}")
        if self.target_bytes < 0 or self.host_lines < 0:
            raise ValueError("target_bytes and host_lines must be >= 0")


@dataclass(frozen=True)
class _Device:
    """Per-TensorCore capability stats, as libtpu writes them on each `/device:TPU:N` plane."""

    type_string: str
    tflops: float
    hbm: float
    sram_rd: float
    sram_wr: float
    cmem_rd: float
    cmem_wr: float
    vmem_rd: float
    vmem_wr: float
    megacore: int
    merged_vmem: int

    @property
    def on_chip_space(self) -> int:
        """Where on-chip traffic goes in the breakdowns: CMEM on v4, VMEM where it is merged."""
        return CMEM if self.cmem_rd > 0 else VMEM


_DEVICES = {
    "v4": _Device("TPU v4", 275.0, 1228.8, 12000.0, 9000.0, 4500.0, 4500.0, 0.0, 0.0, 1, 0),
    "v5p": _Device("TPU v5p", 459.0, 2765.0, 17000.0, 12000.0, 0.0, 0.0, 17000.0, 12000.0, 1, 1),
    # The v6e values are those of the real `tpu_inference_2` sample.
    "v6e": _Device(
        "TPU v6 Lite", 918.0, 1637.993152512, 23296.01, 16128.03, 0.0, 0.0, 23296.01, 16128.03, 0, 1
    ),
}


@dataclass(frozen=True)
class _Op:
    """One HLO instruction with its per-occurrence cost and what bounds its duration."""

    program: int  # index into PROGRAMS
    name: str  # instruction name, the event metadata display_name
    category: str
    hlo: str  # full HLO text, the event metadata name
    flops: int
    model_flops: int
    bytes_accessed: int
    # Fractions of bytes_accessed: HBM read, HBM write, on-chip read, on-chip write.
    # None: no memory_access_breakdown stat at all (async copies).
    mix: tuple[float, float, float, float] | None
    efficiency: float = 0.75  # fraction of the binding roof reached: keeps rates below peaks
    floor_ns: float = 1_000.0  # minimum duration (host waits, async copy bookkeeping)
    link_gbps: float = 0.0  # collectives: interconnect bandwidth bound
    tf_op: str = ""
    children: tuple[str, ...] = ()  # ops nested in a `while` body
    trips: int = 0


def _shape(dtype: str, *dims: int) -> str:
    layout = ",".join(str(i) for i in reversed(range(len(dims))))
    return f"{dtype}[{','.join(map(str, dims))}]{{{layout}}}"


_T, _D, _F = 8192, 1024, 4096  # tokens per step (16 x 512), model width, MLP width
_BATCH, _SEQ, _HEADS, _HEAD_DIM = 16, 512, 16, 64
_TRAIN_OPS = "jit(train_step)/jit(main)/"
_MIX_MATMUL = (0.62, 0.2, 0.12, 0.06)
_MIX_LOOP = (0.6, 0.3, 0.07, 0.03)
_MIX_COPY = (0.5, 0.5, 0.0, 0.0)


def _matmul(program, name, category, m, k, n, *, bias=False, efficiency=0.78) -> _Op:
    """A dot lowered to a convolution/output fusion: 2mkn FLOPs, operands and result in bf16."""
    out, lhs, rhs = _shape("bf16", m, n), _shape("bf16", m, k), _shape("bf16", k, n)
    operands = f"{lhs} %param.0, {rhs} %param.1" + (
        f", {_shape('f32', n)} %param.2" if bias else ""
    )
    flops = 2 * m * k * n + (m * n if bias else 0)
    return _Op(
        program,
        name,
        category,
        f"%{name} = {out} fusion({operands}), kind=kOutput, calls=%fused_computation.{name[7:]}",
        flops=flops,
        model_flops=2 * m * k * n,
        bytes_accessed=2 * (m * k + k * n + m * n) + (4 * n if bias else 0),
        mix=_MIX_MATMUL,
        efficiency=efficiency,
        tf_op=_TRAIN_OPS + "dot_general",
    )


def _elementwise(program, name, m, n, *, inputs, flops_per_element, tf_op) -> _Op:
    """A kLoop fusion over bf16[m,n]: memory-bound, no model FLOPs."""
    shape = _shape("bf16", m, n)
    operands = ", ".join(f"{shape} %param.{i}" for i in range(inputs))
    return _Op(
        program,
        name,
        "loop fusion",
        f"%{name} = {shape} fusion({operands}), kind=kLoop, calls=%fused_computation.{name[7:]}",
        flops=flops_per_element * m * n,
        model_flops=0,
        bytes_accessed=2 * m * n * (inputs + 1),
        mix=_MIX_LOOP,
        efficiency=0.8,
        tf_op=_TRAIN_OPS + tf_op,
    )


def _transpose(program, name) -> _Op:
    src = _shape("bf16", _BATCH, _SEQ, _HEADS, _HEAD_DIM)
    dst = _shape("bf16", _BATCH, _HEADS, _SEQ, _HEAD_DIM)
    return _Op(
        program,
        name,
        "data formatting",
        f"%{name} = {dst} transpose({src} %fusion.4), dimensions={{0,2,1,3}}",
        flops=0,
        model_flops=0,
        bytes_accessed=2 * 2 * _T * _D,
        mix=_MIX_COPY,
        efficiency=0.6,
        tf_op=_TRAIN_OPS + "transpose",
    )


def _extra_op(index: int) -> _Op:
    """The index-th forward-pass op added when ops_per_step asks for more than the core set."""
    name = f"fusion.{20 + index}"
    kind = index % 6
    if kind == 0:
        return _elementwise(0, name, _T, _D, inputs=2, flops_per_element=8, tf_op="layer_norm")
    if kind == 1:
        return _matmul(0, name, "convolution fusion", _T, _F, _D)
    if kind == 2:
        return _elementwise(0, name, _T, _F, inputs=1, flops_per_element=10, tf_op="gelu")
    if kind == 3:
        return _matmul(0, name, "output fusion", _T, _D, _D, bias=True, efficiency=0.7)
    if kind == 4:
        return _transpose(0, f"transpose.{20 + index}")
    return _elementwise(0, name, _T, _D, inputs=2, flops_per_element=1, tf_op="add")


def _op_table(ops_per_step: int) -> tuple[list[_Op], list[list[str]]]:
    """The distinct ops of one step and each program's top-level execution order.

    The first 12 ops cover every category the analysis must handle; further ops are added in a
    fixed order (a metrics reduction, an optimizer update in the while body, then forward-pass
    layers), so ops_per_step only changes how many there are.
    """
    async_copy = f"{_shape('f32', 256, 1024)}, {_shape('f32', 256, 1024)}, u32[]"
    core = [
        _Op(
            0,
            "infeed.1",
            "infeed",
            f"%infeed.1 = (({_shape('s32', _BATCH, _SEQ)}, {_shape('s32', _BATCH, _SEQ)}), "
            "token[]) infeed(token[] %after-all.1)",
            flops=0,
            model_flops=0,
            bytes_accessed=2 * _BATCH * _SEQ * 4,
            mix=(0.0, 1.0, 0.0, 0.0),
            floor_ns=38_000,
            tf_op=_TRAIN_OPS + "infeed",
        ),
        _Op(
            0,
            "copy-start.2",
            "copy-start",
            f"%copy-start.2 = ({async_copy}) copy-start({_shape('f32', 256, 1024)} %param.3)",
            flops=0,
            model_flops=0,
            bytes_accessed=2 * 256 * 1024 * 4,
            mix=None,
            efficiency=0.7,
            tf_op=_TRAIN_OPS + "device_put",
        ),
        _matmul(0, "fusion.3", "convolution fusion", _T, _D, _F),
        _Op(
            0,
            "fusion.4",
            "custom fusion",
            f"%fusion.4 = {_shape('bf16', _BATCH, _SEQ, _HEADS, _HEAD_DIM)} fusion("
            + ", ".join(
                f"{_shape('bf16', _BATCH, _SEQ, _HEADS, _HEAD_DIM)} %param.{i}" for i in range(3)
            )
            + "), kind=kCustom, calls=%flash_attention.4",
            flops=4 * _BATCH * _SEQ * _SEQ * _D,
            model_flops=2 * _BATCH * _SEQ * _SEQ * _D,  # causal: half the work is useful
            bytes_accessed=4 * 2 * _T * _D,
            mix=(0.5, 0.2, 0.2, 0.1),
            efficiency=0.55,
            tf_op=_TRAIN_OPS + "flash_attention",
        ),
        _transpose(0, "transpose.6"),
        _Op(
            0,
            "copy.5",
            "copy",
            f"%copy.5 = bf16[1024,4096]{{0,1}} copy({_shape('bf16', _D, _F)} %param.4)",
            flops=0,
            model_flops=0,
            bytes_accessed=2 * 2 * _D * _F,
            mix=_MIX_COPY,
            tf_op=_TRAIN_OPS + "copy",
        ),
        _Op(
            0,
            "all-reduce.7",
            "all-reduce",
            f"%all-reduce.7 = {_shape('f32', _D, _F)} all-reduce({_shape('f32', _D, _F)} "
            "%fusion.10), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, "
            "to_apply=%add.clone",
            flops=_D * _F,
            model_flops=0,
            bytes_accessed=2 * 4 * _D * _F,
            mix=_MIX_COPY,
            link_gbps=180.0,
            tf_op=_TRAIN_OPS + "psum",
        ),
        _Op(
            0,
            "while.8",
            "while",
            f"%while.8 = (s32[], {_shape('bf16', _T, _D)}, {_shape('f32', 4, _D, _D)}) "
            f"while((s32[], {_shape('bf16', _T, _D)}, {_shape('f32', 4, _D, _D)}) %tuple.1), "
            "condition=%region_1.cond, body=%region_0.body",
            flops=0,  # filled in from the body below
            model_flops=0,
            bytes_accessed=0,
            mix=None,
            tf_op=_TRAIN_OPS + "while",
            children=("fusion.10",),
            trips=3,
        ),
        _matmul(0, "fusion.10", "output fusion", _T, 256, _D, bias=True, efficiency=0.7),
        _Op(
            0,
            "copy-done.2",
            "copy-done",
            f"%copy-done.2 = {_shape('f32', 256, 1024)} copy-done(({async_copy}) %copy-start.2)",
            flops=0,
            model_flops=0,
            bytes_accessed=2 * 256 * 1024 * 4,
            mix=None,
            efficiency=0.7,
            floor_ns=3_000,
            tf_op=_TRAIN_OPS + "device_put",
        ),
        _Op(
            0,
            "outfeed.11",
            "outfeed",
            f"%outfeed.11 = token[] outfeed((f32[], {_shape('f32', _BATCH)}) %tuple.5, "
            f"token[] %after-all.2), outfeed_shape=(f32[], {_shape('f32', _BATCH)})",
            flops=0,
            model_flops=0,
            bytes_accessed=4 + 4 * _BATCH,
            mix=(1.0, 0.0, 0.0, 0.0),
            floor_ns=6_000,
            tf_op=_TRAIN_OPS + "outfeed",
        ),
        # Program 2: bumps the metrics RNG state (no memory traffic at all) ...
        _Op(
            1,
            "fusion.1",
            "loop fusion",
            "%fusion.1 = u32[2]{0} fusion(), kind=kLoop, calls=%fused_computation.1",
            flops=2,
            model_flops=0,
            bytes_accessed=0,
            mix=(0.0, 0.0, 0.0, 0.0),  # a breakdown stat with no entries
            tf_op="jit(update_metrics)/jit(main)/random_bits",
        ),
    ]
    extras = [
        # ... and, from 13 ops on, reduces the logits into per-example metrics.
        _Op(
            1,
            "fusion.2",
            "loop fusion",
            f"%fusion.2 = {_shape('f32', _BATCH)} fusion({_shape('f32', _T, _D)} %param.0, "
            f"{_shape('s32', _BATCH, _SEQ)} %param.1), kind=kLoop, calls=%fused_computation.2",
            flops=2 * _T * _D,
            model_flops=_T * _D,
            bytes_accessed=4 * _T * _D + 4 * _BATCH * _SEQ + 4 * _BATCH,
            mix=(0.95, 0.0, 0.05, 0.0),
            efficiency=0.8,
            tf_op="jit(update_metrics)/jit(main)/reduce_sum",
        ),
        # The optimizer update of one layer, in the while body: f32 param, grad, m, v in,
        # param, m, v out.
        _Op(
            0,
            "fusion.9",
            "loop fusion",
            f"%fusion.9 = ({', '.join([_shape('f32', _D, _D)] * 3)}) fusion("
            + ", ".join(f"{_shape('f32', _D, _D)} %param.{i}" for i in range(4))
            + "), kind=kLoop, calls=%fused_computation.9",
            flops=12 * _D * _D,
            model_flops=0,
            bytes_accessed=7 * 4 * _D * _D,
            mix=_MIX_LOOP,
            efficiency=0.8,
            tf_op=_TRAIN_OPS + "adam_update",
        ),
    ]
    extras += [_extra_op(i) for i in range(max(0, ops_per_step - 12 - len(extras)))]
    chosen = extras[: ops_per_step - 12]
    names = {op.name for op in chosen}

    train = ["infeed.1", "copy-start.2", "fusion.3", "fusion.4", "transpose.6"]
    train += [op.name for op in chosen if op.program == 0 and op.name != "fusion.9"]
    train += ["copy.5", "all-reduce.7", "while.8", "copy-done.2", "outfeed.11"]
    metrics = ["fusion.1"] + (["fusion.2"] if "fusion.2" in names else [])
    ops = core + chosen
    by_name = {(op.program, op.name): op for op in ops}
    # The while body: the output fusion, then (from 14 ops on) the optimizer update.
    body = ("fusion.10",) + (("fusion.9",) if "fusion.9" in names else ())
    loop = by_name[(0, "while.8")]
    children = [by_name[(0, name)] for name in body]
    totals = [
        loop.trips * sum(getattr(c, f) for c in children) for f in ("flops", "bytes_accessed")
    ]
    mix = tuple(sum(c.bytes_accessed * c.mix[i] for c in children) / totals[1] for i in range(4))
    ops[ops.index(loop)] = replace(
        loop, flops=totals[0], bytes_accessed=totals[1], mix=mix, children=body
    )
    # Execution order inside each program; ops that only run in a while body are left out.
    order = {0: train, 1: metrics}
    ops.sort(key=lambda op: (op.program, _position(op, order, body)))
    return ops, [train, metrics]


def _position(op: _Op, order: dict[int, list[str]], body: tuple[str, ...]) -> float:
    names = order[op.program]
    if op.name in names:
        return names.index(op.name)
    return names.index("while.8") + (1 + body.index(op.name)) / 10


def _duration_ps(op: _Op, device: _Device) -> int:
    """Per-occurrence device time: the binding roof divided by the op's efficiency."""
    seconds = max(
        op.flops / (device.tflops * 1e12),
        op.bytes_accessed / (device.hbm * 1e9),
        op.bytes_accessed / (op.link_gbps * 1e9) if op.link_gbps else 0.0,
    )
    return max(int(seconds * 1e12 / op.efficiency), int(op.floor_ns * NS))


def _breakdown(op: _Op, device: _Device) -> bytes | None:
    if op.mix is None:
        return None
    spaces = (HBM, HBM, device.on_chip_space, device.on_chip_space)
    entries = [
        (op_type, space, int(op.bytes_accessed * fraction))
        for fraction, space, op_type in zip(op.mix, spaces, (READ, WRITE, READ, WRITE))
    ]
    return memory_breakdown([e for e in entries if e[2] > 0])


class _Uniform:
    """Floats in [0, 1) from a numpy generator, drawn in fixed-size blocks for speed."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._block: list[float] = []
        self._next = 0

    def __call__(self, low: float = 0.0, high: float = 1.0) -> float:
        if self._next == len(self._block):
            self._block = self._rng.random(4096).tolist()
            self._next = 0
        value = self._block[self._next]
        self._next += 1
        return low + (high - low) * value


@dataclass
class _Timeline:
    """The device events of core 0 (ps, device time base); other cores are shifted copies."""

    ops: list  # (op index, begin, duration)
    modules: list  # (program index, begin, duration, run id)
    steps: list  # (step number, begin, duration)


def _blocks(spec: TpuSpec, repeats: int, schedule: list[list[str]]):
    """The executions of one core: (step number or None, [(program, top-level ops), ...])."""
    train, metrics = schedule
    full = [(0, train), (1, metrics)]
    if spec.steps == 0:
        return [(None, full)] * repeats
    blocks = []
    if spec.incomplete_first_step:
        # The window opens mid-step: the step's first captured op is the earliest event.
        blocks.append((0, [(0, train[len(train) // 3 :]), (1, metrics)]))
    else:
        # The window opens during the previous step: its tail lies before every step.
        blocks.append((None, [(0, train[2 * len(train) // 3 :]), (1, metrics)]))
        blocks.append((0, full))
    blocks += [(step, full) for step in range(1, repeats)]
    blocks.append((None, [(0, train[:3])]))  # the next step has begun when the window closes
    return blocks


def _timeline(
    spec: TpuSpec,
    blocks,
    ops: list[_Op],
    base_ps: list[int],
    uniform: _Uniform,
    start_ps: int,
) -> _Timeline:
    index = {(op.program, op.name): i for i, op in enumerate(ops)}
    slow = {i for i, op in enumerate(ops) if op.name == spec.slow_op}
    events: list = []
    t = start_ps

    def run(i: int, t: int) -> int:
        op = ops[i]
        if not op.children:
            duration = int(base_ps[i] * uniform(0.97, 1.03))
            if i in slow:
                duration *= 3
            events.append((i, t, duration))
            return t + duration
        slot = len(events)
        events.append(None)
        begin = t
        t += int(uniform(1.0, 1.5) * US)  # loop setup: children start well inside the while
        for _ in range(op.trips):
            for child in op.children:
                t = run(index[(op.program, child)], t) + int(uniform(100, 400) * NS)
        t += int(uniform(1.0, 1.5) * US)
        if i in slow:
            t += 2 * (t - begin)
        events[slot] = (i, begin, t - begin)
        return t

    modules, steps = [], []
    run_id = 1
    for step, executions in blocks:
        step_begin = t
        if step is not None and not (step == 0 and spec.incomplete_first_step):
            t += int(uniform(1.0, 3.0) * US)
        for program, names in executions:
            module_begin = t
            end = t
            for name in names:
                end = run(index[(program, name)], t)
                t = end + int(uniform(100, 400) * NS)
            modules.append((program, module_begin, end + 200 * NS - module_begin, run_id))
            run_id += 1
            t = end + int(uniform(2.0, 5.0) * US)
        if step is not None:
            steps.append((step, step_begin, t - step_begin))
            t += int(uniform(2.0, 6.0) * US)
    return _Timeline(events, modules, steps)


def _device_plane(
    space: xplane_pb2.XSpace,
    spec: TpuSpec,
    core: int,
    ops: list[_Op],
    timeline: _Timeline,
    shift: int,
    rng: np.random.Generator,
) -> int:
    """Adds `/device:TPU:<core>` and returns the end of its last event (ps).

    All cores run the same schedule (the collectives keep them in step), `shift` ps apart; each
    core's own noise shortens leaf ops by up to 1% without moving anything, so it never adds up.
    """
    device = _DEVICES[spec.device]
    plane = xspace_builder.plane(
        space,
        f"/device:TPU:{core}",
        plane_id=2 + 8 * core,
        stats={
            "device_type_string": device.type_string,
            "peak_teraflops_per_second": float(device.tflops),
            "peak_hbm_bw_gigabytes_per_second": float(device.hbm),
            "peak_sram_rd_bw_gigabytes_per_second": float(device.sram_rd),
            "peak_sram_wr_bw_gigabytes_per_second": float(device.sram_wr),
            "peak_cmem_rd_bw_gigabytes_per_second": float(device.cmem_rd),
            "peak_cmem_wr_bw_gigabytes_per_second": float(device.cmem_wr),
            "peak_vmem_rd_bw_gigabytes_per_second": float(device.vmem_rd),
            "peak_vmem_wr_bw_gigabytes_per_second": float(device.vmem_wr),
            "has_megacore": int(device.megacore),
            "has_merged_vmem": int(device.merged_vmem),
        },
    )

    # One metadata per distinct op, carrying its per-occurrence cost.
    op_ids = []
    symbols = [0, 0]
    for op in ops:
        mid = len(op_ids) + 1
        symbols[op.program] += 1
        line = 40 + 3 * mid
        stats = {
            "hlo_category": op.category,
            "program_id": U64(PROGRAMS[op.program][1]),
            "symbol_id": U64(symbols[op.program]),
            "flops": int(op.flops),
            "model_flops": int(op.model_flops),
            "bytes_accessed": int(op.bytes_accessed),
            "raw_bytes_accessed": int(op.bytes_accessed),
        }
        breakdown = _breakdown(op, device)
        if breakdown is not None:
            stats["memory_access_breakdown"] = breakdown
        stats["source"] = f"train.py:{line}"
        stats["source_stack"] = (
            f"train.py:{line}:{4 + mid % 9}\nmodel.py:{100 + 7 * mid}:12\nmain.py:31:5\n"
        )
        stats["tf_op"] = op.tf_op
        op_ids.append(plane.event_metadata(op.hlo, op.name, stats))
    module_ids = [
        plane.event_metadata(f"{name}({program_id})", name) for name, program_id in PROGRAMS
    ]

    last_end = 0
    if timeline.steps:
        steps_line = plane.plane.lines.add(id=1, name="Steps", timestamp_ns=0)
        step_num = plane.stat_id("step_num")
        for number, begin, duration in timeline.steps:
            meta_id = plane.event_metadata(str(number))
            event = steps_line.events.add(
                metadata_id=meta_id, offset_ps=begin + shift, duration_ps=duration
            )
            event.stats.add(metadata_id=step_num, int64_value=number)
            last_end = max(last_end, begin + shift + duration)

    modules_line = plane.plane.lines.add(id=2, name="XLA Modules", timestamp_ns=0)
    run_id, queue_id = plane.stat_id("run_id"), plane.stat_id("queue_id")
    add = modules_line.events.add
    for program, begin, duration, run in timeline.modules:
        event = add(metadata_id=module_ids[program], offset_ps=begin + shift, duration_ps=duration)
        event.stats.add(metadata_id=run_id, int64_value=run)
        event.stats.add(metadata_id=queue_id, int64_value=0)
        last_end = max(last_end, begin + shift + duration)

    # Op events: libtpu's host-side offset/duration start a few hundred ns after the device
    # begin and end a little before the device end; the analysis uses the device values.
    ops_line = plane.plane.lines.add(id=3, name="XLA Ops", timestamp_ns=0)
    offset_id, duration_id = plane.stat_id("device_offset_ps"), plane.stat_id("device_duration_ps")
    if timeline.ops:
        index, begin, duration = np.array(timeline.ops, dtype=np.int64).T
        count = len(index)
        leaf = np.array([not op.children for op in ops])[index]
        duration = duration - (duration * rng.uniform(0.0, 0.01, count)).astype(np.int64) * leaf
        begin = begin + shift
        late = rng.integers(200, 600, count) * NS
        early = rng.integers(0, 200, count) * NS
        columns = (
            np.array(op_ids)[index],
            begin + late,
            duration - late - early,
            begin,
            duration,
        )
        add = ops_line.events.add
        for mid, offset, host_duration, device_begin, device_duration in zip(
            *(column.tolist() for column in columns)
        ):
            event = add(metadata_id=mid, offset_ps=offset, duration_ps=host_duration)
            event.stats.add(metadata_id=offset_id, uint64_value=device_begin)
            event.stats.add(metadata_id=duration_id, uint64_value=device_duration)
        last_end = max(last_end, int((begin + duration).max()))
    for line in plane.plane.lines:
        line.duration_ps = last_end
    plane.plane.lines.add(id=4, name="Overlay", timestamp_ns=0, duration_ps=last_end)
    return last_end


_HOST_THREADS = (
    ("python", ("PjitFunction(train_step)", "jax.numpy.asarray", "np.asarray")),
    ("tf_Compute", ("TpuExecute", "ExecuteOnLocalDevices", "TransferLiteralToDevice")),
    ("tpu_runtime", ("TpuProgram::Execute", "WaitForDeviceCompletion", "OutfeedDequeue")),
    ("tf_data_private_threadpool", ("Iterator::Prefetch", "Iterator::Map", "ParseExample")),
    ("grpc_global_timer", ("grpc::Poll", "grpc::Timer")),
)


def _filler_line(
    plane: xspace_builder.PlaneBuilder,
    line: xplane_pb2.XLine,
    names: tuple[str, ...],
    rng: np.random.Generator,
    count: int,
    span_ps: int,
) -> None:
    """`count` host events named from `names` at random times in [0, span_ps) on `line`.

    Each event ends before the next begins; every event has a `_src` ref, every eighth a
    `long_name`. Readers that only need steps and launches must skip these.
    """
    long_name, source = plane.stat_id("long_name"), plane.stat_id("_src")
    metas = [plane.event_metadata(name) for name in names]
    refs = [plane.stat_id(f"{src}.py:{100 + 11 * k}") for k, src in enumerate(("jax", "xla"))]
    begins = np.sort(rng.integers(0, span_ps, count))
    gaps = np.diff(np.append(begins, span_ps))
    durations = (gaps * rng.uniform(0.1, 0.9, count)).astype(np.int64)
    which = rng.integers(0, len(names), count)
    add = line.events.add
    rows = zip(begins.tolist(), durations.tolist(), which.tolist())
    for k, (begin, duration, w) in enumerate(rows):
        event = add(metadata_id=metas[w], offset_ps=begin, duration_ps=duration)
        event.stats.add(metadata_id=source, ref_value=refs[k % 2])
        if k % 8 == 0:
            event.stats.add(metadata_id=long_name, str_value=f"{names[w]} #{k}#")


def _host_plane(space: xplane_pb2.XSpace, spec: TpuSpec, repeats: int, span_ps: int) -> None:
    """`/host:CPU` with filler threads: readers of TPU profiles must skip all of it."""
    plane = xspace_builder.plane(space, "/host:CPU", plane_id=1)
    rng = np.random.default_rng([spec.seed, 9_999])
    # Enough events that the host plane keeps its share of the file as the profile grows.
    per_line = 8 * repeats * max(1, spec.cores) // max(1, spec.host_lines) + 24
    for index in range(spec.host_lines):
        thread, names = _HOST_THREADS[index % len(_HOST_THREADS)]
        tid = 1234 + 977 * index
        line_name = thread if thread == "python" else f"{thread}/{tid}"
        line = plane.plane.lines.add(
            id=tid if index % 2 == 0 else -(2**63) + tid,
            name=line_name,
            display_name=line_name,
            timestamp_ns=8_482 + 17 * index,
        )
        _filler_line(plane, line, names, rng, per_line, span_ps)


def _build(spec: TpuSpec, repeats: int, origin_ps: int = _DEVICE_ORIGIN_PS) -> xplane_pb2.XSpace:
    ops, schedule = _op_table(spec.ops_per_step)
    if spec.slow_op is not None and spec.slow_op not in {op.name for op in ops}:
        raise ValueError(f"slow_op {spec.slow_op!r} is not one of the generated ops")
    device = _DEVICES[spec.device]
    base_ps = [_duration_ps(op, device) for op in ops]
    blocks = _blocks(spec, repeats, schedule)

    space = xplane_pb2.XSpace(hostnames=[spec.host])
    span = 0
    timeline = _timeline(
        spec, blocks, ops, base_ps, _Uniform(np.random.default_rng(spec.seed)), origin_ps
    )
    for core in range(spec.cores):
        rng = np.random.default_rng([spec.seed, 1 + core])
        shift = (core * 1_700 + int(rng.integers(0, 800))) * NS  # cores start a few µs apart
        span = max(span, _device_plane(space, spec, core, ops, timeline, shift, rng))
    span += 50 * US
    _host_plane(space, spec, repeats, span)
    space.planes.add(id=0, name="/host:metadata")
    start = _PROFILE_START_NS + 1_000 * spec.seed
    xspace_builder.plane(
        space,
        "Task Environment",
        plane_id=1_000,
        stats={"profile_start_time": U64(start), "profile_stop_time": U64(start + span // NS)},
    )
    return space


def _repeats_for(spec: TpuSpec) -> int:
    """Steps (or inference runs) that make the serialized profile about spec.target_bytes."""
    default = spec.steps if spec.steps > 0 else _INFERENCE_RUNS
    if spec.target_bytes <= 0:
        return default
    small, large = 4, 8
    probe = _build(spec, small)
    size_small = probe.ByteSize()
    per_repeat = (_build(spec, large).ByteSize() - size_small) / (large - small)
    repeats = max(1, round(small + (spec.target_bytes - size_small) / per_repeat))
    # Offsets grow with the profile, and so do their varints: measure again near its middle.
    span = probe.planes[0].lines[-1].duration_ps - _DEVICE_ORIGIN_PS
    origin = _DEVICE_ORIGIN_PS + span * repeats // (2 * small)
    size_small = _build(spec, small, origin).ByteSize()
    per_repeat = (_build(spec, large, origin).ByteSize() - size_small) / (large - small)
    return max(1, round(small + (spec.target_bytes - size_small) / per_repeat))


def tpu_xspace(spec: TpuSpec = TpuSpec()) -> xplane_pb2.XSpace:
    """A TPU profile as libtpu would write it for `spec`; identical specs give identical bytes.

    With `target_bytes`, steps (or inference runs) are repeated until the serialized size is
    about that many bytes; `spec.steps` is then ignored except for choosing training (> 0) or
    inference (0).
    """
    return _build(spec, _repeats_for(spec))


# --- GPU profiles ---------------------------------------------------------------------------
#
# A JAX data-parallel training loop on NVIDIA (CUPTI) or AMD (ROCm tracer) GPUs, as
# `xspace.md` sections 3, 5 and 7 describe it: kernels on `/device:GPU:N` stream lines carry
# `hlo_op`/`program_id` but no cost, the optimized HLO modules are in `/host:metadata`
# (`hlo-cost.md` sections 1, 2 and 4), and steps are host step roots whose launches reach the
# kernels through correlation ids.

GPU_TRAIN_PROGRAM_ID, GPU_EVAL_PROGRAM_ID = 12, 13  # small ints, int64 stats as on real GPUs
_GPU_LINE_TIMESTAMP_NS = 711_141  # shared by every stream line of a plane (xspace.md §5)
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

_PT = hlo_pb2.PrimitiveType
_BF16, _F32, _S8, _TUPLE = (_PT.Value(name) for name in ("BF16", "F32", "S8", "TUPLE"))
_CUBLAS_CONFIG = (
    b'{"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],'
    b'"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}'
)
_TRITON_CONFIG = b'{"fusion_backend_config":{"kind":"__triton_gemm"}}'
_CUBLAS_WORKSPACE = 33_554_432  # elements of the s8 workspace that cuBLASLt returns
_SEQ, _WIDTH, _MLP, _HEADS = 512, 1024, 4096, 16  # the generated transformer block


def _array(dtype: int, *dims: int, minor_to_major: tuple[int, ...] | None = None):
    """An array shape with a layout (without one, XLA's cost analysis sizes it 0 bytes)."""
    shape = hlo_pb2.ShapeProto(element_type=dtype, dimensions=dims)
    shape.layout.SetInParent()
    order = minor_to_major if minor_to_major is not None else range(len(dims) - 1, -1, -1)
    shape.layout.minor_to_major.extend(order)
    return shape


def _tuple(*shapes: hlo_pb2.ShapeProto) -> hlo_pb2.ShapeProto:
    return hlo_pb2.ShapeProto(element_type=_TUPLE, tuple_shapes=shapes)


class _Sources:
    """A module's `stack_frame_index` (1-based ids) and the OpMetadata pointing into it."""

    def __init__(self, module: hlo_pb2.HloModuleProto, function: str, caller_line: int):
        self._index = module.stack_frame_index
        self._ids: dict[tuple[str, str], int] = {}
        self._function = function
        outer = self._frame("train.py", "<module>", 212, 4, 0)
        self._caller = self._frame("train.py", "main", caller_line, 18, outer)

    def _id(self, kind: str, value: str, values) -> int:
        key = (kind, value)
        if key not in self._ids:
            values.append(value)
            self._ids[key] = len(values)
        return self._ids[key]

    def _frame(self, file: str, function: str, line: int, column: int, parent: int) -> int:
        index = self._index
        index.file_locations.add(
            file_name_id=self._id("file", file, index.file_names),
            function_name_id=self._id("function", function, index.function_names),
            line=line,
            column=column,
        )
        index.stack_frames.add(file_location_id=len(index.file_locations), parent_frame_id=parent)
        return len(index.stack_frames)

    def __call__(self, primitive: str, function: str, line: int) -> hlo_pb2.OpMetadata:
        """Metadata of an op written at model.py:`line` in `function`, called from main."""
        return hlo_pb2.OpMetadata(
            op_name=f"jit({self._function})/jit(main)/{primitive}",
            source_file="model.py",
            source_line=line,
            stack_frame_id=self._frame("model.py", function, line, 12, self._caller),
        )


class _Computation:
    """An HLO computation being written; instruction ids are (computation id << 32) | n."""

    def __init__(self, module: hlo_pb2.HloModuleProto, name: str, fusion: bool = False):
        comp_id = len(module.computations) + 1
        self.proto = module.computations.add(name=name, id=comp_id, is_fusion_computation=fusion)
        self.parameters: list[hlo_pb2.HloInstructionProto] = []

    def add(self, name: str, opcode: str, shape, *operands, calls=(), dims=(), **fields):
        """Appends an instruction; ``fields`` are HloInstructionProto fields, and
        ``contracting=(lhs, rhs)`` sets the dot dimension numbers."""
        instr = self.proto.instructions.add(
            name=name, opcode=opcode, id=(self.proto.id << 32) | len(self.proto.instructions)
        )
        instr.shape.CopyFrom(shape)
        instr.operand_ids.extend(op.id for op in operands)
        instr.called_computation_ids.extend(c.proto.id for c in calls)
        instr.dimensions.extend(dims)
        contracting = fields.pop("contracting", None)
        if contracting is not None:
            instr.dot_dimension_numbers.lhs_contracting_dimensions.append(contracting[0])
            instr.dot_dimension_numbers.rhs_contracting_dimensions.append(contracting[1])
        metadata = fields.pop("metadata", None)
        if metadata is not None:
            instr.metadata.CopyFrom(metadata)
        for key, value in fields.items():
            setattr(instr, key, value)
        return instr

    def parameter(self, name: str, shape):
        param = self.add(name, "parameter", shape, parameter_number=len(self.parameters))
        param.metadata.op_name = name.split(".")[0]
        self.parameters.append(param)
        return param

    def finish(self, root) -> _Computation:
        self.proto.root_id = root.id
        program = self.proto.program_shape
        for param in self.parameters:
            program.parameters.add().CopyFrom(param.shape)
            program.parameter_names.append(param.name)
        program.result.CopyFrom(root.shape)
        return self


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
    src = _Sources(module, step_fn, 95 if train else 131)
    scalar, tokens = _array(_F32), _array(_F32, t)
    x_shape, h_shape, weight = _array(_BF16, t, w), _array(_BF16, t, m), _array(_F32, w, m)
    f32_x, f32_h = _array(_F32, t, w), _array(_F32, t, m)
    qkv_shape = _array(_BF16, batch, _SEQ, _HEADS, w // _HEADS)

    # Callees first: the reducer, then the fused computations, then the entry.
    reducer = _Computation(module, names["reducer"])
    a, b = reducer.parameter("Arg_0.1", scalar), reducer.parameter("Arg_1.1", scalar)
    reducer.finish(reducer.add("add.1", "add", scalar, a, b))
    bodies: dict[str, _Computation] = {}

    def fused(role: str, *params: hlo_pb2.ShapeProto):
        comp = _Computation(module, f"fused_computation.{names[role]}", fusion=True)
        bodies[role] = comp
        number = comp.proto.id  # instruction names are unique in the whole module
        return comp, [comp.parameter(f"param_{i}.{number}", s) for i, s in enumerate(params)]

    def constant(c: _Computation, number: int, shape: hlo_pb2.ShapeProto):
        """A scalar constant broadcast to `shape` (0 bytes to XLA's cost: it is a scalar)."""
        value = c.add(f"constant.{number}", "constant", scalar)
        return c.add(f"broadcast.{number + 10}", "broadcast", shape, value)

    c, (p0, p1) = fused("scale", x_shape, _array(_F32, w))
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

    c, (p0, p1) = fused("triton", h_shape, _array(_BF16, m, w))
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
        c.finish(c.add("convert.6", "convert", _array(_BF16, w, m), p0))
    else:
        c, (p0,) = fused("mean", tokens)
        c.finish(c.add("multiply.6", "multiply", tokens, p0, constant(c, 4, tokens)))

    entry_params = (
        ("x.1", x_shape),
        ("scale.1", _array(_F32, w)),
        *((f"{p}.1", qkv_shape) for p in "qkv"),
        ("w_in.1", _array(_BF16, w, m)),
        ("w_out.1", _array(_BF16, m, w)),
    )

    def fusion(comp: _Computation, role: str, kind: str, shape, *operands, source, **fields):
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

    def block(comp: _Computation, x, gain, q, k, v, w_in, w_out) -> list:
        """The transformer block's instructions in `comp`: [out, attended, norms, transposed]."""
        scaled = fusion(comp, "scale", "kLoop", x_shape, x, gain, source=("mul", 41))
        attention = comp.add(
            names["attention"],
            "custom-call",
            _tuple(qkv_shape, _array(_F32, batch, _HEADS, _SEQ)),
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
            _tuple(h_shape, _array(_S8, _CUBLAS_WORKSPACE)),
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
            _array(_BF16, w, m, minor_to_major=(0, 1)),
            w_in,
            metadata=src("transpose", "mlp", 58),
        )
        return [out, attended, norms, transposed]

    def all_reduce(comp: _Computation, reduced, line: int):
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

    def mean(comp: _Computation, summed):
        return fusion(comp, "mean", "kLoop", tokens, summed, source=("div", 138))

    if command_buffer:
        # XLA's command-buffer scheduling: the block (and, in eval, the all-reduce and mean)
        # moves into a `command_buffer` computation whose parameters are what it reads,
        # called from the entry by one `call`; its results come back as a tuple.
        graph = _Computation(module, names["graph_computation"])
        inputs = [
            graph.parameter(f"p.{i}" if i else "p", s) for i, (_, s) in enumerate(entry_params)
        ]
        inside = block(graph, *inputs)
        if not train:
            inside.append(mean(graph, all_reduce(graph, inside[2], 137)))
        graph.finish(
            graph.add(names["graph_root"], "tuple", _tuple(*(r.shape for r in inside)), *inside)
        )
    entry = _Computation(module, names["entry"])
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
        cast = _array(_BF16, w, m)
        results += [
            new,
            fusion(entry, "cast", "kLoop", cast, new, source=("convert_element_type", 105)),
        ]
    elif not command_buffer:
        results.append(mean(entry, all_reduce(entry, results[2], 137)))
    root = entry.add(names["root"], "tuple", _tuple(*(r.shape for r in results)), *results)
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
    uniform = _Uniform(np.random.default_rng([spec.seed, 4_242]))
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
        _filler_line(plane, line, names, rng, per_line, timeline.end_ps - line.timestamp_ns * NS)


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
    start = _PROFILE_START_NS + 1_000 * spec.seed
    stop = start + (timeline.end_ps + 50 * US) // NS
    xspace_builder.plane(
        space,
        "Task Environment",
        plane_id=0,
        stats={"profile_start_time": U64(start), "profile_stop_time": U64(stop)},
    )
    return space, timeline.end_ps


def _repeats_for_size(build, target_bytes: int, origin_ps: int) -> int:
    """Repeats that make ``build(repeats, origin)``'s profile about ``target_bytes``.

    Two small builds give the size per repeat; offsets (and their varints) grow with the
    profile, so the estimate is taken again with the origin near the big profile's middle.
    """
    small, large = 4, 8
    probe, end = build(small)
    size_small = probe.ByteSize()
    per_repeat = (build(large)[0].ByteSize() - size_small) / (large - small)
    repeats = max(1, round(small + (target_bytes - size_small) / per_repeat))
    origin = origin_ps + (end - origin_ps) * repeats // (2 * small)
    size_small = build(small, origin)[0].ByteSize()
    per_repeat = (build(large, origin)[0].ByteSize() - size_small) / (large - small)
    return max(1, round(small + (target_bytes - size_small) / per_repeat))


def _steps_or_runs(spec, build, inference_runs: int, origin_ps: int) -> int:
    """Steps (or runs) of a GPU or CPU ``spec`` that make the serialized profile about
    ``spec.target_bytes`` (``build(spec, n, origin)`` makes one of ``n``)."""
    if spec.target_bytes <= 0:
        return spec.steps if spec.steps > 0 else inference_runs
    return _repeats_for_size(
        lambda n, *origin: build(spec, n, *origin), spec.target_bytes, origin_ps
    )


def gpu_xspace(spec: GpuSpec = GpuSpec()) -> xplane_pb2.XSpace:
    """A GPU profile as JAX's profiler would write it for `spec`; same spec, same bytes.

    With `target_bytes`, steps (or runs without step roots) are repeated until the
    serialized size is about that many bytes; `spec.steps` then only chooses between step
    roots (> 0) and none (0).
    """
    repeats = _steps_or_runs(spec, _gpu_build, _GPU_INFERENCE_RUNS, _GPU_ORIGIN_PS)
    return _gpu_build(spec, repeats)[0]


# --- CPU profiles ---------------------------------------------------------------------------
#
# A JAX training loop on XLA:CPU, as `xspace.md` sections 6 and 7 describe it: no device
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
    src = _Sources(module, fn, 88 if train else 121)
    scalar = _array(_F32)
    x_shape, h_shape, w_in_shape, w_out_shape = (
        _array(_F32, t, w),
        _array(_F32, t, m),
        _array(_F32, w, m),
        _array(_F32, m, w),
    )
    rows = _array(_F32, t)

    reducer = _Computation(module, f"region_add{tag}")
    a, b = reducer.parameter("Arg_0.1", scalar), reducer.parameter("Arg_1.1", scalar)
    reducer.finish(reducer.add("add.1", "add", scalar, a, b))

    def fused(fusion_name: str, *params):
        comp = _Computation(module, f"fused_computation.{fusion_name}", fusion=True)
        number = comp.proto.id
        return comp, [comp.parameter(f"param_{i}.{number}", s) for i, s in enumerate(params)]

    def constant(c: _Computation, shape):
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
        c, (p0, p1) = fused("multiply_fusion", x_shape, _array(_F32, w))
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

    entry = _Computation(module, f"main.{40 if train else 50}")
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
        gain = entry.parameter("gain.1", _array(_F32, w))
        lr = entry.parameter("lr.1", scalar)
        transposed = entry.add(
            "copy.1",
            "copy",
            _array(_F32, w, m, minor_to_major=(0, 1)),
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
        f"tuple.{30 if train else 31}", "tuple", _tuple(*(r.shape for r in results)), *results
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
    uniform = _Uniform(np.random.default_rng([spec.seed, 7_331]))
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
            thread_free = {}
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
    for program in programs:
        metas, ends, stats = [], [], []
        for name in _cpu_op_names(program):
            metas.append(plane.event_metadata(name))
            ends.append(plane.event_metadata(f"end: {name}"))
            event = xplane_pb2.XEvent()
            values = {
                "hlo_op": Ref(name),
                "hlo_module": Ref(program.module.name),
                "program_id": int(program.module.id),
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
        kind = "tf_XLAPjRtCpuClient" if thread == 0 else "tf_XLAEigen"
        line = plane.line(f"{kind}/{tid}", line_id=tid, timestamp_ns=_CPU_LINE_TIMESTAMP_NS)
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
    _filler_line(
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
    start = _PROFILE_START_NS + 1_000 * spec.seed
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
    repeats = _steps_or_runs(spec, _cpu_build, _CPU_INFERENCE_RUNS, _CPU_ORIGIN_PS)
    return _cpu_build(spec, repeats)[0]


def write_profile(path: str | os.PathLike, xspace: xplane_pb2.XSpace) -> Path:
    """Writes `xspace` to `path` (parents created); map entries are sorted so bytes are stable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(xspace.SerializeToString(deterministic=True))
    return path


_DEMO_RUN_DIR = "2026_01_01_00_00_00"  # a date-like profile run name, as the profiler makes
# The demo's runs: TPU training (two hosts, steps), TPU inference, GPU training (steps).
DEMO_RUNS = ("train_v5p", "inference_v6e", "train_gpu")


def write_demo_logdir(
    logdir: str | os.PathLike,
    *,
    runs: tuple[str, ...] = DEMO_RUNS,
    hosts: tuple[str, ...] = ("host0", "host1"),
) -> list[Path]:
    """Writes a small logdir with the layouts TensorBoard users have; returns the files.

    `<logdir>/<run>/plugins/profile/<date>/<host>.xplane.pb` for each run: runs named
    `inference*` are one host without steps, the others are training runs on every host. The
    device is the `v4`/`v5p`/`v6e` in the run name (default v5p); a run with a `gpu` part in
    its name (`train_gpu`, as in `DEMO_RUNS`; `train_gpu_amd` for AMD) is a GPU training run
    with host step roots on every host, with a `graphs` part one whose programs run as XLA
    command buffers (graph launches, kernels annotated with the launch's `call`). A v4
    training profile also goes straight under `<logdir>/plugins/profile/<date>/` (the logdir
    itself as a run).
    Every host gets its own seed.
    """
    logdir = Path(logdir)
    written = []
    seed = 0
    for run in runs:
        parts = run.split("_")
        device = next((d for d in ("v4", "v5p", "v6e") if d in parts), "v5p")
        inference = run.startswith("inference")
        for host in hosts[:1] if inference else hosts:
            seed += 1
            path = logdir / run / "plugins" / "profile" / _DEMO_RUN_DIR / f"{host}.xplane.pb"
            if "gpu" in parts:
                vendor = "amd" if "amd" in parts else "nvidia"
                graphs = "launch" if "graphs" in parts else ""
                spec = GpuSpec(vendor=vendor, steps=4, host=host, seed=seed, graph_launches=graphs)
                space = gpu_xspace(spec)
            else:
                steps = 0 if inference else 5
                space = tpu_xspace(TpuSpec(device=device, steps=steps, host=host, seed=seed))
            written.append(write_profile(path, space))
    spec = TpuSpec(device="v4", cores=2, host=hosts[0] if hosts else "host0", seed=seed + 1)
    path = logdir / "plugins" / "profile" / _DEMO_RUN_DIR / f"{spec.host}.xplane.pb"
    written.append(write_profile(path, tpu_xspace(spec)))
    return written


# --- Large profiles ---------------------------------------------------------------------------
#
# Building a 1 GB profile as one XSpace takes about ten times that in memory. A large profile
# is instead a small one (the template) whose complete middle steps are written again and
# again, each copy one window later, with step numbers, correlation ids and run ids moved on,
# straight to the file at the wire level: an XLine's `events` can be written piecewise, so
# only the template is ever in memory.

_PLANES_TAG, _LINES_TAG = b"\x0a", b"\x1a"  # XSpace.planes = 1, XPlane.lines = 3, both LEN
_STEP_LINES = ("Steps", "python")  # where step events are: TPU `Steps`, GPU/CPU step roots
# Stats that move with each copy, and by what: the window (ps), its steps, or a value span.
_MOVING_STATS = {
    "device_offset_ps": "time",
    "step_num": "step",
    "correlation_id": "correlation",
    "run_id": "run",
}


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _stat_value(stat: xplane_pb2.XStat) -> int:
    return stat.int64_value if stat.WhichOneof("value") == "int64_value" else stat.uint64_value


def _step_begins(plane: xplane_pb2.XPlane) -> dict[int, int]:
    """{step number: absolute begin (ps)} of the step events on the plane's step lines."""
    ids = {k for k, m in plane.stat_metadata.items() if m.name == "step_num"}
    begins: dict[int, int] = {}
    for line in plane.lines:
        if line.name in _STEP_LINES and ids:
            base = line.timestamp_ns * NS
            for event in line.events:
                for stat in event.stats:
                    if stat.metadata_id in ids:
                        begins[_stat_value(stat)] = base + event.offset_ps
    return begins


class _Segment:
    """Events of one line that move together, with the stats that move with them."""

    def __init__(self, line: xplane_pb2.XLine, plane: xplane_pb2.XPlane, steps: bool) -> None:
        """`steps`: the events are a TPU `Steps` line's, named after their step number."""
        self.line = line
        self.events = list(line.events)
        kinds = {
            k: _MOVING_STATS[m.name]
            for k, m in plane.stat_metadata.items()
            if m.name in _MOVING_STATS
        }
        self.stats: dict[tuple[str, str], list] = {}
        self.ranges: dict[str, list[int]] = {}
        self.step_events: list[tuple[xplane_pb2.XEvent, int]] = []
        names = {k: m.name for k, m in plane.event_metadata.items()}
        for event in self.events:
            for stat in event.stats:
                kind = kinds.get(stat.metadata_id)
                if kind is None:
                    continue
                field = stat.WhichOneof("value")
                if field not in ("int64_value", "uint64_value"):
                    continue
                self.stats.setdefault((kind, field), []).append(stat)
                value = getattr(stat, field)
                low, high = self.ranges.setdefault(kind, [value, value])
                self.ranges[kind] = [min(low, value), max(high, value)]
                if kind == "step" and steps and names.get(event.metadata_id) == str(value):
                    self.step_events.append((event, value))

    def move(self, times: int, deltas: dict[str, int], step_meta=None) -> None:
        """Moves every event `times` windows on (negative: back)."""
        shift = times * deltas["time"]
        if shift:
            for event in self.events:
                event.offset_ps += shift
        for (kind, field), stats in self.stats.items():
            delta = times * deltas[kind]
            if field == "int64_value":
                for stat in stats:
                    stat.int64_value += delta
            else:
                for stat in stats:
                    stat.uint64_value += delta
        if step_meta is not None:
            step = times * deltas["step"]
            for event, number in self.step_events:
                event.metadata_id = step_meta(number + step)
            self.step_events = [(event, number + step) for event, number in self.step_events]


class _TiledLine:
    """One line as three parts: events before the window, in it (repeated), and after it."""

    def __init__(self, line: xplane_pb2.XLine, plane: xplane_pb2.XPlane, start: int, period: int):
        """Splits `line`'s events at the window [start, start + period) (absolute ps)."""
        begin = start - line.timestamp_ns * NS
        end = begin + period
        before, inside, after = xplane_pb2.XLine(), xplane_pb2.XLine(), xplane_pb2.XLine()
        overlong = []  # (index, duration) of window events that end after it (host filler)
        for event in line.events:
            offset = event.offset_ps
            if offset < begin:
                before.events.append(event)
            elif offset < end:
                if offset + event.duration_ps > end:
                    overlong.append((len(inside.events), event.duration_ps))
                inside.events.append(event)
            else:
                after.events.append(event)
        self.front = xplane_pb2.XLine(
            id=line.id, name=line.name, timestamp_ns=line.timestamp_ns
        ).SerializeToString()
        self.back = xplane_pb2.XLine(
            duration_ps=line.duration_ps, display_id=line.display_id, display_name=line.display_name
        )
        line.ClearField("events")
        self.before = before.SerializeToString()
        steps = line.name == "Steps"
        self.inside = _Segment(inside, plane, steps)
        self.after = _Segment(after, plane, steps)
        self.cut = [(self.inside.events[i], duration, end) for i, duration in overlong]

    def window(self, last: bool) -> bytes:
        """The window's events; those that end after it are cut at its end but in the last
        copy, so that no copy overlaps the next one."""
        for event, duration, end in self.cut:
            event.duration_ps = duration if last else end - event.offset_ps
        return self.inside.line.SerializeToString()


class _Tiler:
    """A template profile split at a window of complete steps, written with that window
    repeated: copies of the window follow each other, then what came after it."""

    def __init__(self, space: xplane_pb2.XSpace) -> None:
        self.space = space
        begins = [_step_begins(plane) for plane in space.planes]
        first = next((b for b in begins if len(b) >= 3), None)
        if first is None:
            raise ValueError("a tiled profile needs a template with at least 3 steps")
        numbers = sorted(first)
        # The window: from the first complete step (the first may be cut) to the last one,
        # which stays after the copies (the profile may have cut it short).
        self.period = first[numbers[-1]] - first[numbers[1]]
        self.planes = []
        for plane, own in zip(space.planes, begins):
            own = own if len(own) >= 3 else first
            start = own[sorted(own)[1]]
            self.planes.append(
                [_TiledLine(line, plane, start, self.period) for line in plane.lines]
            )
            plane.ClearField("lines")
        spans = {"step": numbers[-1] - numbers[1]}
        for kind in ("correlation", "run"):
            ranges = [
                segment.ranges[kind]
                for lines in self.planes
                for line in lines
                for segment in (line.inside, line.after)
                if kind in segment.ranges
            ]
            spans[kind] = max(r[1] for r in ranges) - min(r[0] for r in ranges) + 1 if ranges else 0
        self.deltas = {"time": self.period, **spans}
        self.fixed = space.ByteSize() + sum(
            len(line.before) + line.after.line.ByteSize() + len(line.front) + 16
            for lines in self.planes
            for line in lines
        )

    def window_bytes(self, times: int) -> int:
        """Bytes of the window's events when moved `times` windows on."""
        segments = [line.inside for lines in self.planes for line in lines]
        for segment in segments:
            segment.move(times, self.deltas)
        size = sum(segment.line.ByteSize() for segment in segments)
        for segment in segments:
            segment.move(-times, self.deltas)
        return size

    def copies_for(self, target_bytes: int) -> int:
        """Copies of the window that make the file about `target_bytes`."""
        first = self.window_bytes(0)
        copies = max(1, round((target_bytes - self.fixed) / first))
        # Offsets grow, and so do their varints: average the first and the last copy.
        per_copy = (first + self.window_bytes(copies - 1)) / 2
        return max(1, round((target_bytes - self.fixed) / per_copy))

    def write(self, path: Path, copies: int) -> None:
        """Writes the profile with the window `copies` times (1: the template itself)."""
        with open(path, "wb") as out, tempfile.TemporaryFile(dir=path.parent) as spool:
            for plane, lines in zip(self.space.planes, self.planes):
                self._write_plane(out, spool, plane, lines, copies)
            tail = xplane_pb2.XSpace()
            tail.CopyFrom(self.space)
            tail.ClearField("planes")
            out.write(tail.SerializeToString(deterministic=True))

    def _write_plane(self, out, spool, plane: xplane_pb2.XPlane, lines, copies: int) -> None:
        spool.seek(0)
        spool.truncate()
        names = {m.name: k for k, m in plane.event_metadata.items()}
        next_id = [max(plane.event_metadata, default=0) + 1]

        def step_meta(number: int) -> int:
            """The id of the event metadata named after step `number` (added when new)."""
            mid = names.get(str(number))
            if mid is None:
                mid = names[str(number)] = next_id[0]
                next_id[0] += 1
                plane.event_metadata[mid].CopyFrom(
                    xplane_pb2.XEventMetadata(id=mid, name=str(number))
                )
            return mid

        later = (copies - 1) * self.period
        records = []
        for line in lines:
            size = spool.write(line.before)
            for copy in range(copies):
                if copy:
                    line.inside.move(1, self.deltas, step_meta)
                size += spool.write(line.window(last=copy == copies - 1))
            line.inside.move(1 - copies, self.deltas, step_meta)  # back to the template
            line.after.move(copies - 1, self.deltas, step_meta)
            size += spool.write(line.after.line.SerializeToString())
            line.after.move(1 - copies, self.deltas, step_meta)
            back = xplane_pb2.XLine()
            back.CopyFrom(line.back)
            if back.duration_ps:
                back.duration_ps += later
            back = back.SerializeToString()
            records.append((line.front, size, back))
        front = xplane_pb2.XPlane(id=plane.id, name=plane.name).SerializeToString()
        rest = xplane_pb2.XPlane()
        rest.CopyFrom(plane)
        rest.ClearField("id")
        rest.ClearField("name")
        stop = {k for k, m in plane.stat_metadata.items() if m.name == "profile_stop_time"}
        for stat in rest.stats:
            if stat.metadata_id in stop:
                stat.uint64_value += later // NS
        back = rest.SerializeToString(deterministic=True)
        body = 0
        heads = []
        for line_front, size, line_back in records:
            length = len(line_front) + size + len(line_back)
            head = _LINES_TAG + _varint(length) + line_front
            heads.append(head)
            body += len(head) + size + len(line_back)
        out.write(_PLANES_TAG + _varint(len(front) + body + len(back)) + front)
        spool.seek(0)
        for head, (_, size, line_back) in zip(heads, records):
            out.write(head)
            while size:
                chunk = spool.read(min(size, 1 << 24))
                out.write(chunk)
                size -= len(chunk)
            out.write(line_back)
        out.write(back)


def write_tiled_profile(path: str | os.PathLike, space: xplane_pb2.XSpace, copies: int) -> Path:
    """Writes `space` with its complete steps but the first and the last written `copies` times.

    Each copy comes one window (those steps' span) after the previous one, with its step
    numbers, correlation ids and run ids moved on so they stay unique; the last step follows
    the copies. `space` needs at least 3 steps, and is used up (its lines are cleared). The
    file is written under a temporary name and renamed once complete.
    """
    if copies < 1:
        raise ValueError(f"copies must be >= 1, got {copies}")
    return _write_tiled(path, _Tiler(space), copies)


def _write_tiled(path: str | os.PathLike, tiler: _Tiler, copies: int) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        tiler.write(partial, copies)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return path


def write_large_profile(
    path: str | os.PathLike,
    spec: TpuSpec | GpuSpec | CpuSpec,
    target_bytes: int,
    template_bytes: int = 40_000_000,
) -> Path:
    """Writes a profile of about `target_bytes` for `spec` in the memory of a small one.

    The template is `spec`'s profile of about `template_bytes` (at least 3 steps); its middle
    steps are repeated as `write_tiled_profile` does until the file is about `target_bytes`.
    """
    build = {TpuSpec: tpu_xspace, GpuSpec: gpu_xspace, CpuSpec: cpu_xspace}[type(spec)]
    tiler = _Tiler(build(replace(spec, target_bytes=min(template_bytes, target_bytes))))
    return _write_tiled(path, tiler, tiler.copies_for(target_bytes))
