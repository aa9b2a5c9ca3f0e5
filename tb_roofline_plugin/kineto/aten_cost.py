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


@dataclass(frozen=True)
class OpArgs:
    """The recorded arguments of one op execution (as in the trace, unparsed)."""

    dims: Sequence
    types: Sequence
    concrete: Sequence

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
            found = _DTYPES.get(str(name))
            if found and found[0] and found[0] != "int8":
                return found
        for name in self.types:
            found = _DTYPES.get(str(name))
            if found:
                return found
        return "", 4


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
    stride = _expand(args.ints(s_at), dims, 1)
    padding = _expand(args.ints(p_at), dims, 0)
    dilation = _expand(args.ints(d_at), dims, 1)
    kernel = weight[2:]
    out_spatial = [
        max((inp[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1, 0)
        for i in range(dims)
    ]
    dtype, size = args.dtype()
    bias = args.shape(2)
    out = inp[0] * weight[0] * math.prod(out_spatial)
    read = numel(inp) + numel(weight) + numel(bias)
    return _cost(_conv_forward_flops(inp, weight, out_spatial), read * size, out * size, dtype)


def conv_backward_cost(name: str, args: OpArgs) -> AtenCost:
    """``convolution_backward(grad_output, input, weight, ..., output_mask)``: a forward's
    FLOPs for the input gradient and again for the weight gradient, each when the mask asks."""
    grad_out, inp, weight = args.shape(0), args.shape(1), args.shape(2)
    if grad_out is None or inp is None or weight is None or len(weight) != len(inp):
        return _unknown("convolution_backward without grad_output, input and weight shapes")
    mask = args.bools(10) or [True, True, True]
    forward = _conv_forward_flops(inp, weight, grad_out[2:])
    flops = forward * (int(mask[0]) + int(len(mask) > 1 and mask[1]))
    dtype, size = args.dtype()
    read = (numel(grad_out) + numel(inp) + numel(weight)) * size
    written = (numel(inp) * mask[0] + numel(weight) * (len(mask) > 1 and mask[1])) * size
    return _cost(flops, read, written, dtype)


def _expand(values: list[int] | None, dims: int, default: int) -> list[int]:
    if not values:
        return [default] * dims
    return values * dims if len(values) == 1 else (values + [default] * dims)[:dims]


# --- Attention -----------------------------------------------------------------------------


def attention_cost(name: str, args: OpArgs) -> AtenCost:
    """Scaled dot-product attention: Q·Kᵀ and P·V, 2·B·H·L·S·(E + E_v) FLOPs forward; the
    backward (``*_backward``) does 2.5× that (five GEMMs of the same size against two).

    ``_flash_attention_forward``/``_efficient_attention_forward`` take (B, L, H, E); the
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
    forward = 2.0 * b * h * lq * s * (e + ev)
    dtype, size = args.dtype()
    read = (numel(q) + numel(k) + numel(v)) * size
    written = b * h * lq * ev * size
    if backward:
        return _cost(2.5 * forward, read + written, read, dtype)
    return _cost(forward, read, written, dtype)


# --- Elementwise, reductions, softmax, normalization -------------------------------------

# FLOPs per output element of elementwise ops that do more than one operation.
_ELEMENTWISE_FLOPS: dict[str, int] = {
    "addcmul": 3, "addcmul_": 3, "addcdiv": 3, "addcdiv_": 3, "lerp": 3, "lerp_": 3,
    "gelu": 8, "gelu_backward": 10, "silu": 4, "silu_backward": 6, "sigmoid": 4,
    "sigmoid_backward": 3, "tanh": 4, "tanh_backward": 3, "softplus": 4, "mish": 8,
    "elu": 4, "hardswish": 4, "add": 1, "add_": 1, "sub": 1, "sub_": 1,
}  # fmt: skip
_NO_FLOPS = {"copy_", "clone", "contiguous", "_to_copy", "to", "fill_", "zero_", "zeros_like",
             "ones_like", "full_like", "cat", "stack", "index_select", "gather", "scatter",
             "index", "index_put_", "repeat"}  # fmt: skip


def elementwise_cost(name: str, args: OpArgs) -> AtenCost:
    """One FLOP per output element (``_ELEMENTWISE_FLOPS`` for ops that do more; copies and
    fills none); every tensor input read once and the broadcast output written."""
    op = name.split("::")[-1]
    shapes = [s for s in (args.shape(i) for i in range(len(args.dims))) if s is not None]
    if not shapes:
        return _unknown(f"{op} without tensor shapes")
    dtype, size = args.dtype()
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
    element summed, one row written per bag."""
    op = name.split("::")[-1]
    weight, indices = args.shape(0), args.shape(1)
    if weight is None or indices is None or len(weight) != 2:
        return _unknown(f"{op} without weight and indices shapes")
    dtype, size = args.dtype()
    index_bytes = 8 * numel(indices)
    width = weight[1]
    if "bag" in op:
        offsets = args.shape(2)
        bags = max(numel(offsets) - 1, 1) if offsets is not None else 1
        gathered = numel(indices) * width
        return _cost(gathered, gathered * size + index_bytes, bags * width * size, dtype)
    rows = numel(indices) * width
    return _cost(0.0, rows * size + index_bytes, rows * size, dtype)


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
for _op in ("scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
            "_flash_attention_forward", "_efficient_attention_forward",
            "_scaled_dot_product_flash_attention_backward",
            "_scaled_dot_product_efficient_attention_backward",
            "_scaled_dot_product_cudnn_attention_backward",
            "_flash_attention_backward", "_efficient_attention_backward"):  # fmt: skip
    _EXACT[_op] = (ATTENTION, attention_cost)
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
for _op in ("embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only",
            "embedding_dense_backward", "_embedding_bag_backward"):  # fmt: skip
    _EXACT[_op] = (EMBEDDING, embedding_cost)
for _op in ("_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adam", "_fused_adamw"):
    _EXACT[_op] = (OPTIMIZER, fused_optimizer_cost)
for _op in _NO_FLOPS:
    _EXACT[_op] = (MEMORY_COPY, elementwise_cost)

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
    if op in _EXACT:
        return _EXACT[op]
    if op.startswith("_foreach_"):
        return OPTIMIZER, foreach_cost
    if _ELEMENTWISE_OPS.match(op):
        return ELEMENTWISE, elementwise_cost
    return OTHER, None


def category(name: str) -> str:
    return family(name)[0]


def op_cost(name: str, args: OpArgs, trace_flops: float = 0.0) -> AtenCost:
    """The cost of one execution; ``trace_flops`` (the ``flops`` arg of ``with_flops=True``)
    replaces the model's FLOPs when present."""
    _, cost_function = family(name)
    if cost_function is None:
        cost = _unknown("no cost model for this op")
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
