"""Realistic, deterministic TPU-shaped XSpace profiles, built from code.

Tests, the demo and the benchmarks need TPU profiles that look like what libtpu writes
(`xspace.md` sections 1-4 and 7) without shipping real captures: several TensorCore planes
with capability stats, an `XLA Ops` line whose ops carry their cost on the event metadata,
a `Steps` line whose first step may be cut by the profile window, ops outside every step,
a `while` op with nested children, two programs, and host planes that readers must skip.
Everything is derived from a `TpuSpec` and a seeded `numpy` generator, never from the clock,
so the same spec always gives the same bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from . import xspace_builder
from .protos import xplane_pb2
from .xspace_builder import U64, memory_breakdown

__all__ = ["TpuSpec", "tpu_xspace", "write_profile", "write_demo_logdir"]

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


def write_profile(path: str | os.PathLike, xspace: xplane_pb2.XSpace) -> Path:
    """Writes `xspace` to `path` (parents created); map entries are sorted so bytes are stable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(xspace.SerializeToString(deterministic=True))
    return path


_DEMO_RUN_DIR = "2026_01_01_00_00_00"  # a date-like profile run name, as the profiler makes


def write_demo_logdir(
    logdir: str | os.PathLike,
    *,
    runs: tuple[str, ...] = ("train_v5p", "inference_v6e"),
    hosts: tuple[str, ...] = ("host0", "host1"),
) -> list[Path]:
    """Writes a small logdir with the layouts TensorBoard users have; returns the files.

    `<logdir>/<run>/plugins/profile/<date>/<host>.xplane.pb` for each run: runs named
    `inference*` are one host without steps, the others are training runs on every host. The
    device is the `v4`/`v5p`/`v6e` in the run name (default v5p). A v4 training profile also
    goes straight under `<logdir>/plugins/profile/<date>/` (the logdir itself as a run).
    Every host gets its own seed.
    """
    logdir = Path(logdir)
    written = []
    seed = 0
    for run in runs:
        device = next((d for d in ("v4", "v5p", "v6e") if d in run.split("_")), "v5p")
        inference = run.startswith("inference")
        for host in hosts[:1] if inference else hosts:
            seed += 1
            spec = TpuSpec(device=device, steps=0 if inference else 5, host=host, seed=seed)
            path = logdir / run / "plugins" / "profile" / _DEMO_RUN_DIR / f"{host}.xplane.pb"
            written.append(write_profile(path, tpu_xspace(spec)))
    spec = TpuSpec(device="v4", cores=2, host=hosts[0] if hosts else "host0", seed=seed + 1)
    path = logdir / "plugins" / "profile" / _DEMO_RUN_DIR / f"{spec.host}.xplane.pb"
    written.append(write_profile(path, tpu_xspace(spec)))
    return written
