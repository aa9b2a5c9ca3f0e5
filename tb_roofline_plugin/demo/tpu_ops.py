"""The TPU demo's op table: ``TpuOp`` and the ops of one training step (``CORE_OPS``,
then ``OPTIONAL_OPS`` and generated forward-pass layers as ``ops_per_step`` asks), with
each program's execution order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class TpuOp:
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


def _matmul(program, name, category, m, k, n, *, bias=False, efficiency=0.78) -> TpuOp:
    """A dot lowered to a convolution/output fusion: 2mkn FLOPs, operands and result in bf16."""
    out, lhs, rhs = _shape("bf16", m, n), _shape("bf16", m, k), _shape("bf16", k, n)
    operands = f"{lhs} %param.0, {rhs} %param.1" + (
        f", {_shape('f32', n)} %param.2" if bias else ""
    )
    flops = 2 * m * k * n + (m * n if bias else 0)
    return TpuOp(
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


def _elementwise(program, name, m, n, *, inputs, flops_per_element, tf_op) -> TpuOp:
    """A kLoop fusion over bf16[m,n]: memory-bound, no model FLOPs."""
    shape = _shape("bf16", m, n)
    operands = ", ".join(f"{shape} %param.{i}" for i in range(inputs))
    return TpuOp(
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


def _transpose(program, name) -> TpuOp:
    src = _shape("bf16", _BATCH, _SEQ, _HEADS, _HEAD_DIM)
    dst = _shape("bf16", _BATCH, _HEADS, _SEQ, _HEAD_DIM)
    return TpuOp(
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


def _extra_op(index: int) -> TpuOp:
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


_ASYNC_COPY = f"{_shape('f32', 256, 1024)}, {_shape('f32', 256, 1024)}, u32[]"
# The first 12 ops: every category the analysis must handle.
CORE_OPS = (
    TpuOp(
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
    TpuOp(
        0,
        "copy-start.2",
        "copy-start",
        f"%copy-start.2 = ({_ASYNC_COPY}) copy-start({_shape('f32', 256, 1024)} %param.3)",
        flops=0,
        model_flops=0,
        bytes_accessed=2 * 256 * 1024 * 4,
        mix=None,
        efficiency=0.7,
        tf_op=_TRAIN_OPS + "device_put",
    ),
    _matmul(0, "fusion.3", "convolution fusion", _T, _D, _F),
    TpuOp(
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
    TpuOp(
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
    TpuOp(
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
    TpuOp(
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
    TpuOp(
        0,
        "copy-done.2",
        "copy-done",
        f"%copy-done.2 = {_shape('f32', 256, 1024)} copy-done(({_ASYNC_COPY}) %copy-start.2)",
        flops=0,
        model_flops=0,
        bytes_accessed=2 * 256 * 1024 * 4,
        mix=None,
        efficiency=0.7,
        floor_ns=3_000,
        tf_op=_TRAIN_OPS + "device_put",
    ),
    TpuOp(
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
    TpuOp(
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
)
# Added in this order from 13 ops on, before generated forward-pass layers.
OPTIONAL_OPS = (
    # ... and, from 13 ops on, reduces the logits into per-example metrics.
    TpuOp(
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
    TpuOp(
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
)


def op_table(ops_per_step: int) -> tuple[list[TpuOp], list[list[str]]]:
    """The distinct ops of one step and each program's top-level execution order.

    The first 12 ops cover every category the analysis must handle; further ops are added in a
    fixed order (a metrics reduction, an optimizer update in the while body, then forward-pass
    layers), so ops_per_step only changes how many there are.
    """
    extras = list(OPTIONAL_OPS)
    extras += [_extra_op(i) for i in range(max(0, ops_per_step - 12 - len(extras)))]
    chosen = extras[: ops_per_step - 12]
    names = {op.name for op in chosen}

    train = ["infeed.1", "copy-start.2", "fusion.3", "fusion.4", "transpose.6"]
    train += [op.name for op in chosen if op.program == 0 and op.name != "fusion.9"]
    train += ["copy.5", "all-reduce.7", "while.8", "copy-done.2", "outfeed.11"]
    metrics = ["fusion.1"] + (["fusion.2"] if "fusion.2" in names else [])
    ops = list(CORE_OPS) + chosen
    by_name = {(op.program, op.name): op for op in ops}
    # The while body: the output fusion, then (from 14 ops on) the optimizer update.
    body = ("fusion.10",) + (("fusion.9",) if "fusion.9" in names else ())
    loop = by_name[(0, "while.8")]
    children = [by_name[(0, name)] for name in body]
    totals = [
        loop.trips * sum(getattr(c, f) for c in children) for f in ("flops", "bytes_accessed")
    ]
    mixes = [c.mix for c in children if c.mix is not None]
    assert len(mixes) == len(children)  # the loop body's ops all carry a memory mix
    mix = tuple(
        sum((c.bytes_accessed * m[i] for c, m in zip(children, mixes)), 0.0) / totals[1]
        for i in range(4)
    )
    ops[ops.index(loop)] = replace(
        loop, flops=totals[0], bytes_accessed=totals[1], mix=mix, children=body
    )
    # Execution order inside each program; ops that only run in a while body are left out.
    order = {0: train, 1: metrics}
    ops.sort(key=lambda op: (op.program, _position(op, order, body)))
    return ops, [train, metrics]


def _position(op: TpuOp, order: dict[int, list[str]], body: tuple[str, ...]) -> float:
    names = order[op.program]
    if op.name in names:
        return names.index(op.name)
    return names.index("while.8") + (1 + body.index(op.name)) / 10
