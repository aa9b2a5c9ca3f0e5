"""FLOPs and bytes of one aten op from its recorded shapes: one function per op family.

torch.profiler with ``record_shapes=True`` writes each op's ``Input Dims`` (one list per
argument), ``Input type`` (``float``, ``c10::BFloat16``, ``Scalar``, ``TensorList``...) and, in
newer versions, ``Concrete Inputs`` (scalars and int lists as text: ``"[1, 1]"``, ``"1"``).
Counts are per execution of the op; a FLOP is a multiply or an add (a multiply-add is 2).
Bytes are what the op must read and write at least once (inputs and output), the roofline's
"bytes accessed". Output shapes are not recorded, so they follow from the op's semantics.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from typing import Callable, Sequence

# Input type -> (roofline dtype, bytes per element). Integer types have no FLOP ceiling.
_DTYPES: dict[str, tuple[str, int]] = {
    "double": ("fp64", 8),
    "float": ("fp32", 4),
    "c10::Half": ("fp16", 2),
    "c10::BFloat16": ("bf16", 2),
    "c10::Float8_e4m3fn": ("fp8", 1),
    "c10::Float8_e5m2": ("fp8", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1),
    "c10::Float8_e5m2fnuz": ("fp8", 1),
    "signed char": ("int8", 1),
    "unsigned char": ("", 1),
    "bool": ("", 1),
    "short int": ("", 2),
    "int": ("", 4),
    "long int": ("", 8),
    "long": ("", 8),
}

# The same, keyed without case (``c10::bfloat16``, ``C10::Half`` and ``Float`` are met).
_DTYPES_BY_LOWER = {k.lower(): v for k, v in _DTYPES.items()}


def element_type(name: object) -> tuple[str, int] | None:
    """(roofline dtype, bytes per element) of a recorded ``Input type``; None if not a
    tensor element type."""
    return _DTYPES_BY_LOWER.get(str(name).strip().lower())


_NOT_TENSORS = {"Scalar", "ScalarList", "TensorList", "GenericList", "None", "Device"}

MATMUL = "matmul"
CONVOLUTION = "convolution"
ATTENTION = "attention"
ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
NORMALIZATION = "normalization"
EMBEDDING = "embedding"
COMMUNICATION = "communication (NCCL)"
MEMORY_COPY = "memory copy"
GATHER = "gather"
RECURRENT = "recurrent"
VIEW = "allocation and view"
OPTIMIZER = "optimizer"
OTHER = "other"


@dataclass(frozen=True)
class AtenCost:
    """One execution's cost; ``known`` is False when the shapes do not say (times only)."""

    flops: float = 0.0
    bytes_accessed: float = 0.0
    bytes_written: float = 0.0
    dtype: str = ""
    known: bool = False
    note: str = ""  # why the cost is unknown


Shape = tuple[int, ...]


@dataclass(frozen=True)
class ConvShapes:
    """(input, weight, grad_output) shapes of a trace's convolution backward ops.

    Traces before PyTorch 2.0 record no ``Concrete Inputs``, so a forward convolution's
    stride and padding, and the weight size of ``cudnn_convolution_backward_weight``, are
    not in its own arguments; a training step's full backward op
    (``cudnn_convolution_backward(self, grad_output, weight, ...)``) holds all three shapes,
    and its grad_output is the forward's output.
    """

    triples: frozenset[tuple[Shape, Shape, Shape]]

    def _only(self, found: set) -> Shape | None:
        return next(iter(found)) if len(found) == 1 else None  # ambiguous: not known

    def output(self, inp: Sequence[int], weight: Sequence[int]) -> Shape | None:
        found = {g for i, w, g in self.triples if i == tuple(inp) and w == tuple(weight)}
        return self._only(found)

    def weight(self, grad_out: Sequence[int], inp: Sequence[int]) -> Shape | None:
        found = {w for i, w, g in self.triples if i == tuple(inp) and g == tuple(grad_out)}
        return self._only(found)

    def input(self, grad_out: Sequence[int], weight: Sequence[int]) -> Shape | None:
        found = {i for i, w, g in self.triples if w == tuple(weight) and g == tuple(grad_out)}
        return self._only(found)


@dataclass(frozen=True)
class OpArgs:
    """The recorded arguments of one op execution (as in the trace, unparsed)."""

    dims: Sequence
    types: Sequence
    concrete: Sequence
    conv: ConvShapes | None = None  # the trace's convolution shapes (``conv_shapes``)

    def shape(self, i: int) -> list[int] | None:
        """Argument ``i``'s shape when it is a tensor (a list of ints), else None."""
        if i >= len(self.dims):
            return None
        dims = self.dims[i]
        if not isinstance(dims, list) or any(not isinstance(d, int) for d in dims):
            return None
        kind = str(self.types[i]) if i < len(self.types) else ""
        if kind in _NOT_TENSORS or (not dims and not kind):
            return None
        return dims

    def tensor_lists(self) -> list[list[list[int]]]:
        """Arguments that are lists of tensors (``_foreach_*``): their shapes."""
        out = []
        for i, dims in enumerate(self.dims):
            is_list = i < len(self.types) and self.types[i] == "TensorList"
            if is_list and isinstance(dims, list) and all(isinstance(d, list) for d in dims):
                out.append(dims)
        return out

    def ints(self, i: int) -> list[int] | None:
        """Argument ``i`` from ``Concrete Inputs`` as a list of ints (``"[1, 1]"``, ``"2"``)."""
        if i >= len(self.concrete) or not self.concrete[i]:
            return None
        try:
            value = ast.literal_eval(str(self.concrete[i]))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return [value]
        if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
            return list(value)
        return None

    def bools(self, i: int) -> list[bool] | None:
        if i >= len(self.concrete) or not self.concrete[i]:
            return None
        text = str(self.concrete[i]).replace("True", "1").replace("False", "0")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(value, (list, tuple)):
            return [bool(v) for v in value]
        return None

    def dtype(self) -> tuple[str, int]:
        """The first floating input type's (roofline dtype, element bytes); ("", 4) if none."""
        for name in self.types:
            found = element_type(name)
            if found and found[0] and found[0] != "int8":
                return found
        for name in self.types:
            found = element_type(name)
            if found:
                return found
        return "", 4

    def element_bytes(self, i: int, default: int) -> int:
        """Bytes per element of argument ``i`` by its own type (indices: 8 for ``long int``)."""
        found = element_type(self.types[i]) if i < len(self.types) else None
        return found[1] if found else default

    def tensor_bytes(self, i: int, default: int) -> int:
        """Bytes of tensor argument ``i`` (0 if it is not a tensor)."""
        shape = self.shape(i)
        return numel(shape) * self.element_bytes(i, default) if shape is not None else 0

    def flag(self, i: int) -> bool | None:
        """Argument ``i`` from ``Concrete Inputs`` as a bool (``"True"``, ``"1"``), else None."""
        if i >= len(self.concrete):
            return None
        text = str(self.concrete[i]).strip()
        return {"True": True, "False": False, "1": True, "0": False}.get(text)


def numel(shape: Sequence[int] | None) -> int:
    return math.prod(shape) if shape is not None else 0


def _broadcast(shapes: list[list[int]]) -> list[int]:
    """numpy broadcasting of shapes (mismatches take the larger size)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        for k, size in enumerate(shape):
            slot = rank - len(shape) + k
            out[slot] = max(out[slot], size)
    return out


def _cost(flops: float, read: float, written: float, dtype: str) -> AtenCost:
    return AtenCost(float(flops), float(read + written), float(written), dtype, known=True)


def _unknown(why: str) -> AtenCost:
    return AtenCost(note=why)


# --- GEMMs ---------------------------------------------------------------------------------


def _gemm(m: int, n: int, k: int, batch: int, extra_read: int, args: OpArgs) -> AtenCost:
    dtype, size = args.dtype()
    read = batch * (m * k + k * n) + extra_read
    return _cost(2.0 * batch * m * n * k, read * size, batch * m * n * size, dtype)


def gemm_cost(name: str, args: OpArgs) -> AtenCost:
    """mm, addmm, bmm, baddbmm, addbmm, matmul, linear: 2·M·N·K per batch (a bias add is
    not counted, as in torch.profiler's formulas), operands read once, output written."""
    op = name.split("::")[-1]
    shapes = [args.shape(i) for i in range(len(args.dims))]
    if op in ("mm", "_scaled_mm", "_int_mm"):
        a, b, bias = shapes[0] if shapes else None, _at(shapes, 1), None
    elif op in ("addmm", "baddbmm", "addbmm", "_addmm_activation"):
        bias, a, b = shapes[0] if shapes else None, _at(shapes, 1), _at(shapes, 2)
    elif op == "linear":
        a, weight, bias = shapes[0] if shapes else None, _at(shapes, 1), _at(shapes, 2)
        if a is None or weight is None or len(weight) != 2 or not a:
            return _unknown("linear without input and weight shapes")
        return _gemm(math.prod(a[:-1]), weight[0], weight[1], 1, numel(bias), args)
    else:  # bmm, matmul
        a, b, bias = shapes[0] if shapes else None, _at(shapes, 1), None
    if a is None or b is None or not a or not b:
        return _unknown(f"{op} without operand shapes")
    if len(a) == 1:
        a = [1, a[0]]
    if len(b) == 1:
        b = [b[0], 1]
    m, k, n = a[-2], a[-1], b[-1]
    batch_shape = _broadcast([a[:-2], b[:-2]])
    batch = math.prod(batch_shape)
    if op == "addbmm":  # sums the batch into one M x N output
        dtype, size = args.dtype()
        read = batch * (m * k + k * n) + numel(bias)
        return _cost(2.0 * batch * m * n * k, read * size, m * n * size, dtype)
    # Operands read once each: a broadcast operand is not re-read per batch.
    dtype, size = args.dtype()
    read = numel(a) + numel(b) + numel(bias)
    return _cost(2.0 * batch * m * n * k, read * size, batch * m * n * size, dtype)


def _at(shapes: list, i: int):
    return shapes[i] if i < len(shapes) else None


# --- Convolutions --------------------------------------------------------------------------

# Argument positions of (stride, padding, dilation, groups) per op schema.
_OLD_CUDNN_ARGS = (4, 3, 5, 6)
_CONV_ARGS: dict[str, tuple[int, int, int, int]] = {
    "conv1d": (3, 4, 5, 6),
    "conv2d": (3, 4, 5, 6),
    "conv3d": (3, 4, 5, 6),
    "convolution": (3, 4, 5, 8),
    "_convolution": (3, 4, 5, 8),
    # (self, weight, padding, stride, dilation, groups, ...) since PyTorch 1.11; before, a
    # bias came third, as in miopen's and mkldnn's (``_OLD_CUDNN_ARGS``).
    "cudnn_convolution": (3, 2, 4, 5),
    "miopen_convolution": (4, 3, 5, 6),
    "mkldnn_convolution": (4, 3, 5, 6),  # (self, weight, bias, padding, stride, dilation, groups)
    "_nnpack_spatial_convolution": (4, 3, -1, -1),
    "_slow_conv2d_forward": (4, 5, -1, -1),
}


def _conv_forward_flops(inp: list[int], weight: list[int], out_spatial: list[int]) -> float:
    """2 · N · C_out · prod(out spatial) · (C_in / groups) · prod(kernel)."""
    return 2.0 * inp[0] * weight[0] * math.prod(out_spatial) * weight[1] * math.prod(weight[2:])


def conv_cost(name: str, args: OpArgs) -> AtenCost:
    """Forward convolutions: output size from stride, padding and dilation
    (``Concrete Inputs``; 1, 0, 1 when absent)."""
    op = name.split("::")[-1]
    inp, weight = args.shape(0), args.shape(1)
    if inp is None or weight is None or len(inp) < 3 or len(weight) != len(inp):
        return _unknown(f"{op} without input and weight shapes")
    dims = len(inp) - 2
    s_at, p_at, d_at, _ = _CONV_ARGS.get(op, (3, 4, 5, 6))
    third = str(args.types[2]) if len(args.types) > 2 else ""
    if op == "cudnn_convolution" and third not in ("ScalarList", "GenericList"):
        s_at, p_at, d_at, _ = _OLD_CUDNN_ARGS  # a bias (tensor or None) third: old schema
    kernel = weight[2:]
    if args.ints(s_at) is None and args.ints(p_at) is None:
        # Not recorded (PyTorch < 2.0): the output is the backward pass's grad_output.
        known = args.conv.output(inp, weight) if args.conv else None
        if known is None or len(known) != len(inp):
            return _unknown(NO_STRIDES)
        out_spatial = list(known[2:])
    else:
        stride = _expand(args.ints(s_at), dims, 1)
        padding = _expand(args.ints(p_at), dims, 0)
        dilation = _expand(args.ints(d_at), dims, 1)
        out_spatial = [
            max(
                (inp[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1,
                0,
            )
            for i in range(dims)
        ]
    dtype, size = args.dtype()
    bias = args.shape(2)
    out = inp[0] * weight[0] * math.prod(out_spatial)
    read = numel(inp) + numel(weight) + numel(bias)
    return _cost(_conv_forward_flops(inp, weight, out_spatial), read * size, out * size, dtype)


def conv_backward_cost(name: str, args: OpArgs) -> AtenCost:
    """``convolution_backward(grad_output, input, weight, ..., output_mask)``: each output the
    mask asks for (``[grad_input, grad_weight, grad_bias]``, the last bool list; all three
    when absent) costs its GEMM-equivalent, a forward's FLOPs (grad_bias: a sum over
    grad_output). grad_output is read; the weight for grad_input, the input for grad_weight."""
    grad_out, inp, weight = args.shape(0), args.shape(1), args.shape(2)
    if name.split("::")[-1] in SELF_FIRST_BACKWARD:
        grad_out, inp = inp, grad_out
    if grad_out is None or inp is None or weight is None or len(weight) != len(inp):
        return _unknown("convolution_backward without grad_output, input and weight shapes")
    lists = [
        i for i, text in enumerate(args.concrete) if "True" in str(text) or "False" in str(text)
    ]
    masks = [m for m in (args.bools(i) for i in lists) if m]
    mask = (masks[-1] + [False] * 3)[:3] if masks else [True, True, True]
    forward = _conv_forward_flops(inp, weight, grad_out[2:])
    flops = forward * mask[0] + forward * mask[1] + numel(grad_out) * mask[2]
    dtype, size = args.dtype()
    read = numel(grad_out) + numel(weight) * mask[0] + numel(inp) * mask[1]
    written = numel(inp) * mask[0] + numel(weight) * mask[1] + weight[0] * mask[2]
    return _cost(flops, read * size, written * size, dtype)


# Before PyTorch 1.11 the backward ops took (self, grad_output, weight, ...).
SELF_FIRST_BACKWARD = ("cudnn_convolution_backward", "mkldnn_convolution_backward")
NO_STRIDES = (
    "stride and padding not recorded (traces before PyTorch 2.0) and no backward op with "
    "the output's shape"
)


def conv_backward_part_cost(name: str, args: OpArgs) -> AtenCost:
    """PyTorch < 1.11's halves of a cuDNN convolution's backward, each a forward's FLOPs:
    ``cudnn_convolution_backward_input(input_size, grad_output, weight, ...)`` and
    ``cudnn_convolution_backward_weight(weight_size, grad_output, self, ...)``. The size
    argument is an int list (``Concrete Inputs`` when recorded, else the trace's full
    backward op gives it)."""
    grad_out, other = args.shape(1), args.shape(2)
    if grad_out is None or other is None or len(grad_out) != len(other) or len(grad_out) < 3:
        return _unknown(f"{name.split('::')[-1]} without grad_output and its other tensor")
    size: Sequence[int] | None = args.ints(0)
    dtype, item = args.dtype()
    if name.endswith("_input"):
        weight: Sequence[int] = other
        inp = size or (args.conv.input(grad_out, other) if args.conv else None)
        written = numel(inp) if inp is not None and len(inp) == len(grad_out) else 0
        read = numel(grad_out) + numel(other)
    else:
        found = size or (args.conv.weight(grad_out, other) if args.conv else None)
        if found is None or len(found) != len(grad_out):
            return _unknown("cudnn_convolution_backward_weight without the weight's size")
        weight = found
        read, written = numel(grad_out) + numel(other), numel(weight)
    flops = _conv_forward_flops(list(grad_out), list(weight), list(grad_out[2:]))
    return _cost(flops, read * item, written * item, dtype)


def conv_shapes(signatures: Sequence[tuple[str, OpArgs]]) -> ConvShapes:
    """The (input, weight, grad_output) shapes of the full convolution backward ops among
    a trace's distinct (name, arguments)."""
    triples = set()
    for name, args in signatures:
        grad_out, inp, weight = args.shape(0), args.shape(1), args.shape(2)
        if name.split("::")[-1] in SELF_FIRST_BACKWARD:
            grad_out, inp = inp, grad_out
        if grad_out and inp and weight and len(grad_out) == len(inp) == len(weight):
            triples.add((tuple(inp), tuple(weight), tuple(grad_out)))
    return ConvShapes(frozenset(triples))


def _expand(values: list[int] | None, dims: int, default: int) -> list[int]:
    if not values:
        return [default] * dims
    return values * dims if len(values) == 1 else (values + [default] * dims)[:dims]


# --- Attention -----------------------------------------------------------------------------


# Position of ``is_causal`` (or of ``custom_mask_type``, causal when not 0) per op schema.
_CAUSAL_ARG: dict[str, int] = {
    "scaled_dot_product_attention": 5,
    "_scaled_dot_product_attention_math": 5,
    "_scaled_dot_product_flash_attention": 4,
    "_scaled_dot_product_flash_attention_for_cpu": 4,
    "_scaled_dot_product_efficient_attention": 6,
    "_scaled_dot_product_cudnn_attention": 6,
    "_flash_attention_forward": 8,
    "_efficient_attention_forward": 9,
    "_scaled_dot_product_flash_attention_backward": 11,
    "_scaled_dot_product_flash_attention_for_cpu_backward": 7,
    "_scaled_dot_product_efficient_attention_backward": 11,
    "_scaled_dot_product_cudnn_attention_backward": 14,
    "_flash_attention_backward": 11,
    "_efficient_attention_backward": 14,
}


def is_causal(op: str, args: OpArgs) -> bool:
    at = _CAUSAL_ARG.get(op, -1)
    if "_efficient_attention_" in op and not op.startswith("_scaled"):
        mask_type = args.ints(at)
        return bool(mask_type and mask_type[0] != 0)
    return bool(args.flag(at))


def attention_cost(name: str, args: OpArgs) -> AtenCost:
    """Scaled dot-product attention: Q·Kᵀ and P·V, 2·B·H·L·S·(E + E_v) FLOPs forward, half
    of that when causal (``is_causal``: the fused kernels skip the masked half); the
    backward (``*_backward``) does 2.5× its forward (five GEMMs of the same size against two)
    and reads grad_out and out besides Q, K, V, writing their gradients.

    ``_flash_attention_*``/``_efficient_attention_*`` take (B, L, H, E); the
    ``scaled_dot_product_*`` ops take (B, H, L, E).
    """
    op = name.split("::")[-1]
    backward = "backward" in op
    base = 1 if backward else 0  # the backward ops take grad_out first
    q, k, v = args.shape(base), args.shape(base + 1), args.shape(base + 2)
    if q is None or k is None or v is None or len(q) != 4 or len(k) != 4 or len(v) != 4:
        return _unknown(f"{op} without 4-d query, key and value shapes")
    if op.startswith("_flash_attention") or op.startswith("_efficient_attention"):
        b, lq, h, e = q
        s, ev = k[1], v[3]
    else:
        b, h, lq, e = q
        s, ev = k[2], v[3]
    forward = 2.0 * b * h * lq * s * (e + ev) * (0.5 if is_causal(op, args) else 1.0)
    dtype, size = args.dtype()
    qkv = (numel(q) + numel(k) + numel(v)) * size
    out = b * h * lq * ev * size
    if backward:
        return _cost(2.5 * forward, qkv + 2 * out, qkv, dtype)
    return _cost(forward, qkv, out, dtype)


# --- Recurrent layers ----------------------------------------------------------------------

# mkldnn's rnn modes (RNN_RELU, RNN_TANH, LSTM, GRU) -> gates per step.
_RNN_GATES = {0: 1, 1: 1, 2: 4, 3: 3}


def lstm_cost(name: str, args: OpArgs) -> AtenCost:
    """``lstm/gru/rnn_tanh/rnn_relu(input, hx, params, ...)``: every 2-d weight [R, C] of
    ``params`` is a GEMM against each of the T·B rows, 2·T·B·R·C FLOPs (the same count as
    ``rnn_cost`` per layer); input, params and states read, the output written."""
    inp, lists = args.shape(0), args.tensor_lists()
    if inp is None or len(inp) != 3 or len(lists) < 2:
        return _unknown(f"{name.split('::')[-1]} without input and parameter shapes")
    states, params = lists[0], lists[-1]
    rows = inp[0] * inp[1]
    flops = sum(2.0 * rows * w[0] * w[1] for w in params if len(w) == 2)
    hidden = states[0][-1] if states and states[0] else 0
    dtype, size = args.dtype()
    read = numel(inp) + sum(numel(w) for w in params) + sum(numel(h) for h in states)
    return _cost(flops, read * size, rows * hidden * size, dtype)


def rnn_cost(name: str, args: OpArgs) -> AtenCost:
    """``mkldnn_rnn_layer(input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode,
    hidden_size, ...)``: one layer over T steps of B rows, G gates (LSTM 4, GRU 3, RNN 1, from
    ``mode``): 2·T·B·G·H·(I + H) FLOPs (the gate GEMMs; the gates' element-wise math is
    small); input, weights and states read, output and states written. The backward
    (``mkldnn_rnn_layer_backward(input, w_ih, w_hh, b_ih, b_hh, hx, cx, output, hy, cy,
    grad_output, grad_hy, grad_cy, reverse, mode, hidden_size, ...)``) does 2× the forward
    (the input and the weight gradients), reads every tensor argument and writes the
    gradients of the input, the weights and the states."""
    op = name.split("::")[-1]
    backward = "backward" in op
    inp, w_ih, w_hh = args.shape(0), args.shape(1), args.shape(2)
    if inp is None or w_ih is None or w_hh is None or len(inp) != 3 or len(w_hh) != 2:
        return _unknown(f"{op} without input and weight shapes")
    mode_at, hidden_at = (14, 15) if backward else (9, 10)
    hidden = (args.ints(hidden_at) or [w_hh[1]])[0]
    mode = args.ints(mode_at)
    gates = _RNN_GATES.get(mode[0], 1) if mode else max(w_hh[0] // max(hidden, 1), 1)
    steps_rows, width = inp[0] * inp[1], inp[2]
    forward = 2.0 * steps_rows * gates * hidden * (width + hidden)
    dtype, size = args.dtype()
    tensors = [i for i in range(len(args.dims)) if args.shape(i) is not None]
    weights = sum(args.tensor_bytes(i, size) for i in range(1, 5))
    states = sum(args.tensor_bytes(i, size) for i in (5, 6))
    if backward:
        read = sum(args.tensor_bytes(i, size) for i in tensors)
        return _cost(2.0 * forward, read, numel(inp) * size + weights + states, dtype)
    read = args.tensor_bytes(0, size) + weights + states
    return _cost(forward, read, steps_rows * hidden * size + states, dtype)


# --- Elementwise, reductions, softmax, normalization -------------------------------------

# FLOPs per output element of elementwise ops that do more than one operation.
_ELEMENTWISE_FLOPS: dict[str, int] = {
    "addcmul": 3, "addcmul_": 3, "addcdiv": 3, "addcdiv_": 3, "lerp": 3, "lerp_": 3,
    "gelu": 8, "gelu_backward": 10, "silu": 4, "silu_backward": 6, "sigmoid": 4,
    "sigmoid_backward": 3, "tanh": 4, "tanh_backward": 3, "softplus": 4, "mish": 8,
    "elu": 4, "hardswish": 4, "add": 1, "add_": 1, "sub": 1, "sub_": 1,
}  # fmt: skip
_NO_FLOPS = {"copy_", "clone", "contiguous", "_to_copy", "to", "fill_", "zero_", "zeros_like",
             "ones_like", "full_like", "cat", "stack", "scatter", "index_put_",
             "repeat"}  # fmt: skip
_GATHERS = ("index_select", "gather", "index", "take_along_dim")
# Ops that allocate or re-view memory: no FLOPs, no bytes moved; their time is their own.
_VIEWS = ("empty", "empty_like", "empty_strided", "resize_", "as_strided", "as_strided_", "view",
          "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "squeeze",
          "unsqueeze", "slice", "select", "narrow", "flatten", "unflatten", "detach", "detach_",
          "alias", "resolve_conj", "resolve_neg", "split", "chunk", "unbind", "split_with_sizes",
          "lift_fresh", "_reshape_alias", "numpy_T", "unfold", "zeros", "ones",
          "full")  # fmt: skip
# Arguments of the functional schema: a tensor recorded past them is an ``out=`` tensor,
# written, not read (so is the last tensor of an op named ``*.out``/``*_out``).
_FUNCTIONAL_ARGS: dict[str, int] = {
    "add": 3, "sub": 3, "mul": 2, "div": 3, "where": 3, "clamp": 3, "clamp_min": 2,
    "clamp_max": 2, "addcmul": 4, "addcdiv": 4, "lerp": 3, "pow": 2, "maximum": 2,
    "minimum": 2, "relu": 1, "exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "neg": 1, "abs": 1,
    "sigmoid": 1, "tanh": 1, "silu": 1, "gelu": 2, "reciprocal": 1, "sin": 1, "cos": 1,
    "erf": 1, "masked_fill": 3, "silu_backward": 2, "gelu_backward": 3, "tanh_backward": 2,
    "sigmoid_backward": 2, "threshold_backward": 3, "copy_": 3, "fill_": 2,
}  # fmt: skip


def _read_shapes(name: str, args: OpArgs) -> list[list[int]]:
    """Shapes of the tensor arguments an op reads: ``out=`` tensors left out."""
    op = name.split("::")[-1]
    bare = op.removesuffix(".out").removesuffix("_out")
    count = len(args.dims)
    last_out = bare != op
    limit = _FUNCTIONAL_ARGS.get(bare, count)
    tensors = [i for i in range(count) if args.shape(i) is not None]
    if last_out and tensors:
        tensors = tensors[:-1]
    return [args.shape(i) for i in tensors if i < limit]  # type: ignore[misc]


def elementwise_cost(name: str, args: OpArgs) -> AtenCost:
    """One FLOP per output element (``_ELEMENTWISE_FLOPS`` for ops that do more; copies and
    fills none); every tensor input read once (an ``out=`` tensor is written, not read) and
    the broadcast output written."""
    op = name.split("::")[-1]
    shapes = _read_shapes(name, args)
    if not shapes:
        return _unknown(f"{op} without tensor shapes")
    dtype, size = args.dtype()
    op = op.removesuffix(".out").removesuffix("_out")
    if op in ("cat", "stack"):
        lists = args.tensor_lists()
        tensors = lists[0] if lists else shapes
        total = sum(numel(s) for s in tensors)
        return _cost(0.0, total * size, total * size, dtype)
    out = numel(_broadcast(shapes))
    per = 0 if op in _NO_FLOPS else _ELEMENTWISE_FLOPS.get(op, 1)
    read = sum(numel(s) for s in shapes)
    if op in ("fill_", "zero_"):
        read = 0
    elif op == "copy_":  # copy_(self, src): self is overwritten, not read
        read -= numel(shapes[0]) if len(shapes) > 1 else 0
    return _cost(per * out, read * size, out * size, dtype)


def reduction_cost(name: str, args: OpArgs) -> AtenCost:
    """One FLOP per input element; the input read (the small output is not counted)."""
    inp = args.shape(0)
    if inp is None:
        return _unknown(f"{name.split('::')[-1]} without an input shape")
    dtype, size = args.dtype()
    return _cost(numel(inp), numel(inp) * size, 0, dtype)


def softmax_cost(name: str, args: OpArgs) -> AtenCost:
    """Softmax and log-softmax: 5 FLOPs per element (max, subtract, exp, sum, divide), the
    input read and the output written; the backward reads two tensors."""
    op = name.split("::")[-1]
    inp = args.shape(0)
    if inp is None:
        return _unknown(f"{op} without an input shape")
    dtype, size = args.dtype()
    n = numel(inp)
    reads = 2 if "backward" in op else 1
    return _cost(5 * n, reads * n * size, n * size, dtype)


def norm_cost(name: str, args: OpArgs) -> AtenCost:
    """Layer, batch, group and RMS norms: 5 FLOPs per element forward (mean, variance,
    normalise, scale, shift), 8 backward; input and parameters read, output written."""
    op = name.split("::")[-1]
    backward = "backward" in op
    inp = args.shape(0)
    if inp is None:
        return _unknown(f"{op} without an input shape")
    dtype, size = args.dtype()
    n = numel(inp)
    params = sum(numel(args.shape(i)) for i in range(1, len(args.dims)) if args.shape(i))
    if backward:  # grad_out and input (both of the input's size) and the parameters
        return _cost(8 * n, (n + params) * size, n * size, dtype)
    return _cost(5 * n, (n + params) * size, n * size, dtype)


# --- Embeddings, optimizer -----------------------------------------------------------------


def embedding_cost(name: str, args: OpArgs) -> AtenCost:
    """``embedding(weight, indices)``: one row of D read and written per index;
    ``embedding_bag(weight, indices, offsets, ...)``: one row read per index, a FLOP per
    element summed, one row written per bag; ``embedding_dense_backward(grad, indices,
    num_weights, ...)``: the gradient rows and indices read, each row added into a zeroed
    ``num_weights`` × D table. Indices are read at their own width (8 bytes for ``long``)."""
    op = name.split("::")[-1]
    if op in ("embedding_dense_backward", "embedding_backward"):
        return _embedding_backward(args)
    weight, indices = args.shape(0), args.shape(1)
    if weight is None or indices is None or len(weight) != 2:
        return _unknown(f"{op} without weight and indices shapes")
    dtype, size = args.dtype()
    index_bytes = args.tensor_bytes(1, 8)
    width = weight[1]
    if "bag" in op:
        offsets = args.shape(2)
        bags = max(numel(offsets) - 1, 1) if offsets is not None else 1
        gathered = numel(indices) * width
        return _cost(gathered, gathered * size + index_bytes, bags * width * size, dtype)
    rows = numel(indices) * width
    return _cost(0.0, rows * size + index_bytes, rows * size, dtype)


def _embedding_backward(args: OpArgs) -> AtenCost:
    grad, indices, tables = args.shape(0), args.shape(1), args.ints(2)
    if grad is None or indices is None or not grad or not tables:
        return _unknown("embedding_dense_backward without grad, indices and num_weights")
    dtype, size = args.dtype()
    n = numel(grad)
    table = tables[0] * grad[-1]
    return _cost(n, n * size + args.tensor_bytes(1, 8), table * size, dtype)


def gather_cost(name: str, args: OpArgs) -> AtenCost:
    """Gathers read the rows they pick and the indices and write the output, never the
    whole source: ``index_select(self, dim, index)`` (the output is ``self`` with ``dim``
    cut to len(index)), ``gather(self, dim, index)`` and ``take_along_dim(self, indices,
    dim)`` (the output has the indices' shape), ``index(self, indices)`` (the broadcast
    indices' shape, then ``self``'s remaining dims)."""
    op = name.split("::")[-1]
    source = args.shape(0)
    if source is None:
        return _unknown(f"{op} without a source shape")
    dtype, size = args.dtype()
    if op == "index_select":
        index, dims = args.shape(2), args.ints(1)
        if index is None or not source:
            return _unknown("index_select without source and index shapes")
        dim = (dims or [0])[0] % len(source)
        out, index_at = numel(source) // max(source[dim], 1) * numel(index), 2
    elif op in ("gather", "take_along_dim"):
        index_at = 2 if op == "gather" else 1
        index = args.shape(index_at)
        if index is None:
            return _unknown(f"{op} without an index shape")
        out = numel(index)
    else:  # index(self, indices: a list of index tensors)
        lists = args.tensor_lists() or [[s] for s in (args.shape(1),) if s is not None]
        if not lists or not lists[0]:
            return _unknown("index without index shapes")
        picked = lists[0]
        out = numel(_broadcast(picked)) * numel(source[len(picked) :])
        index_bytes = 8 * sum(numel(s) for s in picked)
        return _cost(0.0, out * size + index_bytes, out * size, dtype)
    index_bytes = args.tensor_bytes(index_at, 8)
    return _cost(0.0, out * size + index_bytes, out * size, dtype)


_FOREACH_FLOPS = {"add": 1, "sub": 1, "mul": 1, "div": 1, "addcmul": 3, "addcdiv": 3,
                  "lerp": 3, "sqrt": 1, "neg": 0, "zero": 0, "copy": 0, "norm": 2,
                  "maximum": 1, "minimum": 1, "exp": 1, "sign": 1}  # fmt: skip


def foreach_cost(name: str, args: OpArgs) -> AtenCost:
    """``_foreach_<op>[_](list, ...)``: the element-wise op over every tensor of the lists;
    each list read once, the first written (in place or a new list)."""
    op = name.split("::")[-1]
    base = op.removeprefix("_foreach_").rstrip("_")
    lists = args.tensor_lists()
    if not lists:
        return _unknown(f"{op} without tensor-list shapes")
    dtype, size = args.dtype()
    if not dtype:
        dtype, size = "fp32", 4  # tensor lists carry no element type in the trace
    n = sum(numel(s) for s in lists[0])
    read = sum(sum(numel(s) for s in tensors) for tensors in lists)
    return _cost(_FOREACH_FLOPS.get(base, 1) * n, read * size, n * size, dtype)


def fused_optimizer_cost(name: str, args: OpArgs) -> AtenCost:
    """``_fused_adam[w]_`` / ``_fused_sgd_``: per parameter element about 10 (Adam) or 2
    (SGD) FLOPs; every state list read and the parameters and states written."""
    lists = args.tensor_lists()
    if not lists:
        return _unknown(f"{name.split('::')[-1]} without tensor-list shapes")
    dtype, size = args.dtype()
    if not dtype:
        dtype, size = "fp32", 4
    n = sum(numel(s) for s in lists[0])
    per = 10 if "adam" in name else 2
    read = sum(sum(numel(s) for s in tensors) for tensors in lists)
    written = n * max(len(lists) - 2, 1)  # params and states, not grads or steps
    return _cost(per * n, read * size, written * size, dtype)


def view_cost(name: str, args: OpArgs) -> AtenCost:
    """Allocations and views: no FLOPs and no bytes, a known cost (their time is their own)."""
    return _cost(0.0, 0.0, 0.0, args.dtype()[0])


def no_cost(name: str, args: OpArgs) -> AtenCost:
    return _unknown("collective communication, no FLOPs or memory traffic modelled")


# --- Families: op name -> (category, cost function) ----------------------------------------

CostFunction = Callable[[str, OpArgs], AtenCost]

_EXACT: dict[str, tuple[str, CostFunction]] = {}
for _op in ("mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "_addmm_activation",
            "_scaled_mm", "_int_mm"):  # fmt: skip
    _EXACT[_op] = (MATMUL, gemm_cost)
for _op in _CONV_ARGS:
    _EXACT[_op] = (CONVOLUTION, conv_cost)
for _op in ("convolution_backward", "cudnn_convolution_backward", "mkldnn_convolution_backward"):
    _EXACT[_op] = (CONVOLUTION, conv_backward_cost)
for _op in ("cudnn_convolution_backward_input", "cudnn_convolution_backward_weight"):
    _EXACT[_op] = (CONVOLUTION, conv_backward_part_cost)
for _op in ("sum", "mean", "amax", "amin", "max", "min", "norm", "linalg_vector_norm", "prod",
            "var", "std", "argmax", "argmin", "all", "any", "cumsum", "logsumexp",
            "nll_loss_forward", "nll_loss", "nll_loss_nd", "_adaptive_avg_pool2d",
            "adaptive_avg_pool2d", "max_pool2d_with_indices", "avg_pool2d"):  # fmt: skip
    _EXACT[_op] = (REDUCTION, reduction_cost)
for _op in ("softmax", "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data",
            "_log_softmax_backward_data"):  # fmt: skip
    _EXACT[_op] = (ELEMENTWISE, softmax_cost)
for _op in ("layer_norm", "native_layer_norm", "native_layer_norm_backward", "batch_norm",
            "native_batch_norm", "native_batch_norm_backward", "_batch_norm_impl_index",
            "cudnn_batch_norm", "cudnn_batch_norm_backward", "miopen_batch_norm",
            "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "group_norm",
            "native_group_norm", "native_group_norm_backward", "rms_norm", "_fused_rms_norm",
            "instance_norm"):  # fmt: skip
    _EXACT[_op] = (NORMALIZATION, norm_cost)
for _op in _CAUSAL_ARG:
    _EXACT[_op] = (ATTENTION, attention_cost)
for _op in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward"):
    _EXACT[_op] = (RECURRENT, rnn_cost)
for _op in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
    _EXACT[_op] = (RECURRENT, lstm_cost)
_EXACT["cross_entropy_loss"] = (REDUCTION, reduction_cost)
for _op in _GATHERS:
    _EXACT[_op] = (GATHER, gather_cost)
for _op in _VIEWS + ("contiguous",):
    _EXACT[_op] = (VIEW, view_cost)
for _op in ("embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only",
            "embedding_dense_backward", "embedding_backward",
            "_embedding_bag_backward"):  # fmt: skip
    _EXACT[_op] = (EMBEDDING, embedding_cost)
for _op in ("_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adam", "_fused_adamw"):
    _EXACT[_op] = (OPTIMIZER, fused_optimizer_cost)
for _op in _NO_FLOPS - {"contiguous"}:
    _EXACT[_op] = (MEMORY_COPY, elementwise_cost)

# The categories of inner ops that do an op's work for it (``aten::linear`` -> its
# ``aten::addmm``; the math path of attention -> its ``bmm``s; a ``_foreach_*`` fallback ->
# its per-tensor ops): an op with such an op inside it is a composite, whose cost is theirs.
_TAKES_OVER: dict[str, frozenset[str]] = {
    ATTENTION: frozenset({ATTENTION, MATMUL}),
    EMBEDDING: frozenset({EMBEDDING, GATHER}),
    OPTIMIZER: frozenset({OPTIMIZER, ELEMENTWISE, REDUCTION}),
    VIEW: frozenset(),
}


def takes_over(outer: str, inner: str) -> bool:
    """Whether an op of category ``inner`` inside an op of category ``outer`` does its work."""
    return inner in _TAKES_OVER.get(outer, frozenset({outer}))


_COMMUNICATION = re.compile(
    r"record_param_comms|^c10d::|^nccl:|^rccl|allreduce|all_reduce|"
    r"all_to_all|alltoall|allgather|all_gather|reduce_scatter|broadcast_"
)
_ELEMENTWISE_OPS = re.compile(
    r"^(add|sub|mul|div|neg|abs|exp|log|log1p|sqrt|rsqrt|pow|relu|relu_|clamp|clamp_min|"
    r"clamp_max|threshold|threshold_backward|gelu|gelu_backward|silu|silu_backward|sigmoid|"
    r"sigmoid_backward|tanh|tanh_backward|hardtanh|leaky_relu|elu|softplus|mish|hardswish|"
    r"dropout|native_dropout|native_dropout_backward|addcmul|addcdiv|lerp|reciprocal|sign|"
    r"square|sin|cos|erf|floor|ceil|round|maximum|minimum|eq|ne|lt|le|gt|ge|logical_\w+|"
    r"bitwise_\w+|masked_fill|fmod|remainder|true_divide|rsub|sgn|mse_loss|"
    r"mse_loss_backward|smooth_l1_loss|binary_cross_entropy\w*|where|nan_to_num)_?$"
)


def family(name: str) -> tuple[str, CostFunction | None]:
    """The op's category and cost function (None: no cost model, times only)."""
    op = name.split("::")[-1]
    if _COMMUNICATION.search(name):
        return COMMUNICATION, no_cost
    lowered = name.lower()
    if "embedding" in lowered or "lookup" in lowered or "pooledembs" in lowered:
        # fbgemm's table-batched lookups and their autograd nodes: inputs are packed
        # tensors whose shapes do not say rows and widths, so times only.
        return (EMBEDDING, _EXACT[op][1]) if op in _EXACT else (EMBEDDING, None)
    if "::" not in name:
        return OTHER, None  # autograd nodes, user scopes
    op = op.split(".")[0]  # an overload (``mm.out``) costs as its op
    if op.endswith("_out") and (op[:-4] in _EXACT or _ELEMENTWISE_OPS.match(op[:-4])):
        op = op[:-4]
    if op in _EXACT:
        return _EXACT[op]
    if op.startswith("_foreach_"):
        return OPTIMIZER, foreach_cost
    if _ELEMENTWISE_OPS.match(op):
        return ELEMENTWISE, elementwise_cost
    return OTHER, None


def category(name: str) -> str:
    return family(name)[0]


NO_MODEL = "no cost model for this op"


def op_cost(name: str, args: OpArgs, trace_flops: float = 0.0) -> AtenCost:
    """The cost of one execution; ``trace_flops`` (the ``flops`` arg of ``with_flops=True``)
    replaces the model's FLOPs when present."""
    _, cost_function = family(name)
    if cost_function is None:
        cost = _unknown(NO_MODEL)
    elif cost_function is no_cost:
        cost = no_cost(name, args)
    elif not args.dims:
        cost = _unknown("no shapes recorded (profile with record_shapes=True)")
    else:
        try:
            cost = cost_function(name, args)
        except (TypeError, ValueError, IndexError, OverflowError):
            cost = _unknown("recorded shapes do not fit the op's schema")
    if trace_flops > 0:
        return AtenCost(
            trace_flops,
            cost.bytes_accessed,
            cost.bytes_written,
            cost.dtype or args.dtype()[0],
            known=True,
            note=cost.note,
        )
    return cost
