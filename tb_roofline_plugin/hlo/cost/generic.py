"""XLA's generic ``HloCostAnalysis`` rules (``docs/hlo-cost.md`` §3): the opcode families,
the dot and convolution FLOP formulas, and the per-opcode rules as methods that
``engine.ModuleCosts`` inherits (it supplies ``_operand``, ``_default``,
``_computation_cost``, ...)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ...protos import hlo_pb2
from .context import CostContext
from .costs import CostSum
from .shapes import element_count, first_element, leaf_bytes, leaves, shape_bytes

FMA_FLOPS = 2  # XLA's kFmaFlops: one multiply-add is two FLOPs

# --- opcode families (docs/hlo-cost.md §3) -------------------------------------------------

# Bytes accessed 0 (and 0 FLOPs): pure bookkeeping, no data moves.
ZERO_COST = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "bitcast",
        "domain",
        "after-all",
        "add-dependency",
    }
)
# Counted as transcendentals (1 per output element), not FLOPs.
TRANSCENDENTAL = frozenset(
    {
        "exponential",
        "log",
        "logistic",
        "power",
        "sqrt",
        "cbrt",
        "rsqrt",
        "tanh",
        "sine",
        "cosine",
        "exponential-minus-one",
        "log-plus-one",
        "atan2",
        "erf",
        "tan",
    }
)
# Elementwise ops that cost 1 FLOP per output element.
ELEMENTWISE_FLOP = frozenset(
    {
        # unary
        "abs",
        "bitcast-convert",
        "ceil",
        "count-leading-zeros",
        "convert",
        "floor",
        "imag",
        "is-finite",
        "not",
        "negate",
        "popcnt",
        "real",
        "reduce-precision",
        "round-nearest-afz",
        "round-nearest-even",
        "sign",
        # binary
        "add",
        "subtract",
        "multiply",
        "divide",
        "maximum",
        "minimum",
        "remainder",
        "and",
        "or",
        "xor",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "complex",
        "compare",
        "stochastic-convert",
        # ternary
        "select",
        "clamp",
    }
)
# XLA's HloInstruction::IsElementwise() opcodes (for the category); copy is elementwise
# too but is categorised as data formatting first. Constants and rng count as
# elementwise in XLA as well.
ELEMENTWISE_CATEGORY = TRANSCENDENTAL | ELEMENTWISE_FLOP | {"copy", "constant", "rng"}
DATA_FORMATTING = frozenset(
    {"transpose", "copy", "copy-start", "copy-done", "bitcast", "reshape", "dynamic-reshape"}
)
ALL_REDUCE = frozenset({"all-reduce", "all-reduce-start"})
FUSION_CATEGORY = {
    "kLoop": "loop fusion",
    "kInput": "input fusion",
    "kOutput": "output fusion",
    "kCustom": "custom fusion",
}

# --- formulas ------------------------------------------------------------------------


def dot_flops(
    lhs: hlo_pb2.ShapeProto, out: hlo_pb2.ShapeProto, contracting: Iterable[int]
) -> float:
    """2 × #output × Π lhs contracting dims (XLA GetDotFlops)."""
    width = 1
    for d in contracting:
        width *= lhs.dimensions[d]
    return float(FMA_FLOPS * element_count(out) * width)


MAX_WINDOW = 1 << 24  # no real convolution has a wider window; guards the counting arrays


def _valid_positions(
    in_size: int,
    kernel: int,
    out: int,
    stride: int,
    pad_low: int,
    window_dilation: int,
    base_dilation: int,
) -> int:
    """(kernel index, output index) pairs that hit a real input element in one dimension.

    u = o·stride − pad_low + k·window_dilation must be a multiple of base_dilation and
    0 ≤ u / base_dilation < in_size (XLA GetConvolutionFlops).
    """
    if kernel <= 0 or out <= 0 or in_size <= 0:
        return 0
    if kernel > MAX_WINDOW or out > MAX_WINDOW * 1000:
        raise ValueError(f"convolution window {kernel} x output {out} is out of range")
    stride = max(stride, 1)
    window_dilation = max(window_dilation, 1)
    base_dilation = max(base_dilation, 1)
    k = np.arange(kernel, dtype=np.int64)
    offset = k * window_dilation - pad_low  # u = o·stride + offset
    if base_dilation == 1:
        # 0 ≤ o·stride + offset ≤ in_size − 1, 0 ≤ o < out: an interval of o per k.
        lo = np.maximum(-(offset // stride), 0)  # ceil(-offset / stride)
        hi = np.minimum((in_size - 1 - offset) // stride, out - 1)
        return int(np.maximum(hi - lo + 1, 0).sum())
    total = 0
    o = np.arange(out, dtype=np.int64) * stride
    step = max(1, 4_000_000 // out)
    for start in range(0, kernel, step):
        u = o[None, :] + offset[start : start + step, None]
        ok = (u % base_dilation == 0) & (u >= 0) & (u < in_size * base_dilation)
        total += int(ok.sum())
    return total


def conv_flops(
    instr: hlo_pb2.HloInstructionProto,
    lhs: hlo_pb2.ShapeProto,
    rhs: hlo_pb2.ShapeProto,
    out: hlo_pb2.ShapeProto,
) -> float:
    """2 × (in_f / feature_groups) × out_f × (batch / batch_groups) × Π valid positions."""
    dn = instr.convolution_dimension_numbers
    in_features = lhs.dimensions[dn.input_feature_dimension]
    out_features = out.dimensions[dn.output_feature_dimension]
    batch = lhs.dimensions[dn.input_batch_dimension]
    feature_groups = max(instr.feature_group_count, 1)
    batch_groups = max(instr.batch_group_count, 1)
    positions = 1
    for i, wd in enumerate(instr.window.dimensions):
        positions *= _valid_positions(
            in_size=lhs.dimensions[dn.input_spatial_dimensions[i]],
            kernel=rhs.dimensions[dn.kernel_spatial_dimensions[i]],
            out=out.dimensions[dn.output_spatial_dimensions[i]],
            stride=wd.stride,
            pad_low=wd.padding_low,
            window_dilation=wd.window_dilation,
            base_dilation=wd.base_dilation,
        )
    fmas = (in_features // feature_groups) * out_features * (batch // batch_groups) * positions
    return float(FMA_FLOPS * fmas)


def _log2_ceil(n: int) -> int:
    return (n - 1).bit_length() if n > 1 else 0


class GenericOpCosts(CostContext):
    """The generic per-opcode rules, mixed into ``engine.ModuleCosts``."""

    # --- handlers (docs/hlo-cost.md §3) ---

    def _dot_cost(self, instr) -> CostSum:
        acc = self._default(instr)
        lhs = self._operand(instr, 0).shape
        acc.flops = dot_flops(
            lhs, instr.shape, instr.dot_dimension_numbers.lhs_contracting_dimensions
        )
        return acc

    def _convolution_cost(self, instr) -> CostSum:
        acc = self._default(instr)
        acc.flops = conv_flops(
            instr, self._operand(instr, 0).shape, self._operand(instr, 1).shape, instr.shape
        )
        return acc

    def _apply_times(self, instr, times: float, index: int = 0) -> CostSum:
        """Default bytes plus ``times`` × the FLOPs of called computation ``index``."""
        acc = self._default(instr)
        acc.add(self._computation_cost(self._called(instr, index)), times, with_bytes=False)
        return acc

    def _reduce_cost(self, instr) -> CostSum:
        count = element_count(self._operand(instr, 0).shape) - element_count(
            first_element(instr.shape)
        )
        return self._apply_times(instr, count)

    def _reduce_window_cost(self, instr) -> CostSum:
        out = first_element(instr.shape)
        dims = instr.window.dimensions
        window = math.prod(d.size for d in dims)
        count = (window - 1) * element_count(out)
        reduced = [i for i, d in enumerate(dims) if d.size != 1]
        if len(reduced) == 1 and reduced[0] < len(out.dimensions):
            # "reduce + broadcast back": one full-width window padded symmetrically.
            d = reduced[0]
            wd, size = dims[d], out.dimensions[d]
            others_unpadded = all(
                w.padding_low == 0 and w.padding_high == 0 for i, w in enumerate(dims) if i != d
            )
            if (
                others_unpadded
                and wd.padding_low == wd.padding_high == size - 1
                and wd.size == 2 * wd.padding_low + 1
                and size > 0
            ):
                count = element_count(out) // size + (size - 1)
        return self._apply_times(instr, count)

    def _map_cost(self, instr) -> CostSum:
        return self._apply_times(instr, element_count(instr.shape))

    def _select_and_scatter_cost(self, instr) -> CostSum:
        source = element_count(self._operand(instr, 1).shape)
        window = math.prod(d.size for d in instr.window.dimensions)
        acc = self._default(instr)
        acc.add(self._computation_cost(self._called(instr, 0)), source * (window - 1), False)
        acc.add(self._computation_cost(self._called(instr, 1)), source, False)
        return acc

    def _slice_cost(self, instr) -> CostSum:
        out = shape_bytes(instr.shape)
        return CostSum(bytes_accessed=2 * out, bytes_written=out)

    def _dynamic_slice_cost(self, instr) -> CostSum:
        out = shape_bytes(instr.shape)
        index = shape_bytes(self._operand(instr, 1).shape) if len(instr.operand_ids) > 1 else 0.0
        return CostSum(bytes_accessed=2 * out + index, bytes_written=out)

    def _dynamic_update_slice_cost(self, instr) -> CostSum:
        update = shape_bytes(self._operand(instr, 1).shape)
        index = shape_bytes(self._operand(instr, 2).shape) if len(instr.operand_ids) > 2 else 0.0
        return CostSum(bytes_accessed=2 * update + index, bytes_written=update)

    def _gather_cost(self, instr) -> CostSum:
        out = shape_bytes(instr.shape)
        return CostSum(
            bytes_accessed=2 * out + shape_bytes(self._operand(instr, 1).shape), bytes_written=out
        )

    def _scatter_cost(self, instr) -> CostSum:
        n = len(instr.operand_ids) // 2  # operands: n inputs, indices, n updates
        updates = [self._operand(instr, n + 1 + i).shape for i in range(n)]
        update_bytes = sum(shape_bytes(s) for s in updates)
        acc = CostSum(
            bytes_accessed=3 * update_bytes + shape_bytes(self._operand(instr, n).shape),
            bytes_written=update_bytes,
        )
        count = element_count(updates[0]) if updates else 0
        acc.add(self._computation_cost(self._called(instr)), count, with_bytes=False)
        return acc

    def _all_reduce_cost(self, instr) -> CostSum:
        out = leaf_bytes(instr.shape)
        read = sum(shape_bytes(s) for s in self._operand_shapes(instr))
        flops = float(sum(element_count(s) for s in leaves(instr.shape)))
        return CostSum(flops=flops, bytes_accessed=out + read, bytes_written=out)

    def _sort_cost(self, instr) -> CostSum:
        acc = self._default(instr)
        n = element_count(self._operand(instr, 0).shape)
        acc.flops = float(n * _log2_ceil(n))
        return acc

    def _fft_cost(self, instr) -> CostSum:
        acc = self._default(instr)
        factors = 1
        for length in instr.fft_length:
            factors *= max(int(length), 1).bit_length() - 1  # floor(log2)
        acc.flops = float(
            FMA_FLOPS * 4 * factors * element_count(first_element(self._operand(instr, 0).shape))
        )
        return acc

    def _rng_cost(self, instr) -> CostSum:
        acc = self._default(instr)
        acc.transcendentals = float(element_count(instr.shape))
        return acc

    def _triangular_solve_cost(self, instr) -> CostSum:
        a, b = self._operand(instr, 0).shape, self._operand(instr, 1).shape
        out = shape_bytes(instr.shape)
        flops = FMA_FLOPS * (a.dimensions[-1] if a.dimensions else 1) * element_count(b)
        return CostSum(
            flops=float(flops),
            bytes_accessed=out + shape_bytes(a) / 2 + shape_bytes(b),
            bytes_written=out,
        )

    def _cholesky_cost(self, instr) -> CostSum:
        a = self._operand(instr, 0).shape
        half = shape_bytes(a) / 2
        flops = (a.dimensions[-1] if a.dimensions else 1) * element_count(a) // 3
        return CostSum(flops=float(flops), bytes_accessed=2 * half, bytes_written=half)

    def _call_cost(self, instr) -> CostSum:
        """call / async-start: the properties (bytes included) of the called computation."""
        acc = CostSum()
        acc.add(self._computation_cost(self._called(instr)))
        return acc

    def _while_cost(self, instr) -> CostSum:
        """One iteration: body + condition (the trip count is not known statically)."""
        acc = CostSum()
        for i in range(len(instr.called_computation_ids)):
            acc.add(self._computation_cost(self._called(instr, i)))
        return acc

    def _conditional_cost(self, instr) -> CostSum:
        """Per property, the maximum over the branches."""
        branches = [
            self._computation_cost(self._called(instr, i))
            for i in range(len(instr.called_computation_ids))
        ]
        if not branches:
            return self._default(instr)
        acc = CostSum(
            flops=max(b.flops for b in branches),
            transcendentals=max(b.transcendentals for b in branches),
            bytes_accessed=max(b.bytes_accessed for b in branches),
            bytes_written=max(b.bytes_written for b in branches),
        )
        for b in branches:
            acc.unknown_targets |= b.unknown_targets
        return acc
