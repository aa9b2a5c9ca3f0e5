"""Per-instruction FLOPs and bytes of an HLO module, following XLA's ``HloCostAnalysis``.

GPU and CPU profiles carry no FLOP or byte counts, so the roofline needs a cost model
computed from the optimized HLO modules stored in ``/host:metadata``. This module is a
pure-Python port of the *rules* documented in ``docs/hlo-cost.md``:

* §3, XLA's generic ``HloCostAnalysis`` (what JAX's CPU ``cost_analysis()`` reports);
* §5, the GPU custom-call rules that XProf uses for cuBLAS/cuBLASLt/hipBLASLt GEMMs,
  cuDNN/MIOpen convolutions and Triton GEMM fusions;
* §8 "ours (default)": elementwise ops cost 1 FLOP per element (transcendentals are
  counted separately), ``__cublas$gemm`` is costed as a GEMM, and ``backend_config``
  JSON is parsed tolerantly.

Where the text of ``docs/hlo-cost.md`` is terser than XLA, the behaviour of jaxlib
0.10.2's own ``HloCostAnalysis`` (the documented arbiter) was followed, and checked on
hand-written modules and on every module of the shared profiles:

* the default rule counts a tuple-shaped *output* by its array leaves (variadic
  reduce, sort, rng-bit-generator, ...), a tuple *operand* by its index table;
* the reduce-window "reduce + broadcast" shortcut applies only when no other window
  dimension is padded;
* a fused parameter consumed by a nested fusion is judged by the nested fusion's own
  users (so a nested fusion that is the fusion root reads nothing);
* fused constants of more than one element are read once each.

Everything is computed in float64 (XLA keeps float32 properties, so its large totals
carry rounding that ours do not). FLOPs exclude transcendentals, as in XLA.

Units: ``flops`` and ``transcendentals`` are operation counts per execution of the
instruction; ``bytes_accessed`` and ``bytes_written`` are bytes per execution.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ...protos import hlo_pb2

__all__ = [
    "InstructionCost",
    "ModuleCosts",
    "dtype_name",
    "element_count",
    "shape_bytes",
]

FMA_FLOPS = 2  # XLA's kFmaFlops: one multiply-add is two FLOPs
POINTER_SIZE = 8  # bytes of one tuple index-table entry (ShapeUtil::ByteSizeOf pointer size)

_PT = hlo_pb2.PrimitiveType
TUPLE = _PT.Value("TUPLE")
TOKEN = _PT.Value("TOKEN")
OPAQUE = _PT.Value("OPAQUE_TYPE")
BUFFER = _PT.Value("BUFFER")
INVALID = _PT.Value("PRIMITIVE_TYPE_INVALID")

# Unpacked bytes per element (hlo-cost.md §2). Sub-byte types take 1 byte unless the
# layout says they are packed (element_size_in_bits).
_ELEMENT_BYTES: dict[int, int] = {
    _PT.Value(name): size
    for name, size in {
        "PRED": 1,
        "S8": 1,
        "S16": 2,
        "S32": 4,
        "S64": 8,
        "U8": 1,
        "U16": 2,
        "U32": 4,
        "U64": 8,
        "F16": 2,
        "F32": 4,
        "F64": 8,
        "C64": 8,
        "BF16": 2,
        "C128": 16,
        "F8E5M2": 1,
        "F8E4M3FN": 1,
        "S4": 1,
        "U4": 1,
        "F8E4M3B11FNUZ": 1,
        "F8E5M2FNUZ": 1,
        "F8E4M3FNUZ": 1,
        "S2": 1,
        "U2": 1,
        "F8E4M3": 1,
        "F8E3M4": 1,
        "S1": 1,
        "U1": 1,
        "F4E2M1FN": 1,
        "F8E8M0FNU": 1,
    }.items()
}
_SPECIAL_NAMES = {INVALID: "invalid", OPAQUE: "opaque"}

# --- opcode families (hlo-cost.md §3) -------------------------------------------------

# Bytes accessed 0 (and 0 FLOPs): pure bookkeeping, no data moves.
_ZERO_COST = frozenset(
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
_TRANSCENDENTAL = frozenset(
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
_ELEMENTWISE_FLOP = frozenset(
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
_ELEMENTWISE_CATEGORY = _TRANSCENDENTAL | _ELEMENTWISE_FLOP | {"copy", "constant", "rng"}
_DATA_FORMATTING = frozenset(
    {"transpose", "copy", "copy-start", "copy-done", "bitcast", "reshape", "dynamic-reshape"}
)
_ALL_REDUCE = frozenset({"all-reduce", "all-reduce-start"})
_FUSION_CATEGORY = {
    "kLoop": "loop fusion",
    "kInput": "input fusion",
    "kOutput": "output fusion",
    "kCustom": "custom fusion",
}

# --- GPU custom calls (hlo-cost.md §5) -----------------------------------------------

# IsCublasGemm: legacy cuBLAS and cuBLASLt; ROCm (hipBLASLt) reuses these target names.
GEMM_TARGETS = frozenset({"__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"})
CONV_TARGET_PREFIX = "__cudnn$conv"  # cuDNN and MIOpen: convForward, convBackwardInput, ...
TRITON_GEMM_KINDS = frozenset({"__triton_nested_gemm_fusion", "__triton_gemm"})

_EMPTY_INSTRUCTION = hlo_pb2.HloInstructionProto()


# --- public data ---------------------------------------------------------------------


@dataclass(frozen=True)
class InstructionCost:
    """Cost of one execution of one HLO instruction (XLA's HloCostAnalysis properties).

    ``bytes_written`` is the output part of ``bytes_accessed`` so that callers can split
    HBM traffic into READ (``bytes_accessed - bytes_written``) and WRITE.
    """

    flops: (
        float  # FLOPs, transcendentals excluded (XLA generic rules; 1 per element for elementwise)
    )
    transcendentals: float  # transcendental operations (exp, log, tanh, ...)
    bytes_accessed: float  # bytes read + written under XLA's "bytes accessed" rules
    bytes_written: float  # bytes of the output part of bytes_accessed
    dtype: str  # dominant input dtype, lower-case XLA name ("bf16", "f32", ...); "" if none
    unknown: bool = False  # cost unknown (unrecognised custom call): flops 0, default bytes
    note: str = ""  # short provenance, e.g. "cuBLAS GEMM from backend_config"

    @property
    def bytes_read(self) -> float:
        """Bytes read (accessed minus written), never negative."""
        return max(self.bytes_accessed - self.bytes_written, 0.0)


# --- shapes --------------------------------------------------------------------------


def dtype_name(element_type: int) -> str:
    """Lower-case XLA name of a PrimitiveType number ("bf16", "f8e4m3fn", "pred", ...)."""
    special = _SPECIAL_NAMES.get(element_type)
    if special is not None:
        return special
    try:
        return _PT.Name(element_type).lower()
    except ValueError:
        return f"type{element_type}"


def _is_tuple(shape: hlo_pb2.ShapeProto) -> bool:
    return shape.element_type == TUPLE


def _is_array(shape: hlo_pb2.ShapeProto) -> bool:
    return shape.element_type in _ELEMENT_BYTES


def _has_layout(shape: hlo_pb2.ShapeProto) -> bool:
    """LayoutUtil::HasLayout: arrays need one; a tuple needs all leaves; others never."""
    if _is_tuple(shape):
        return all(_has_layout(s) for s in shape.tuple_shapes)
    if _is_array(shape):
        return shape.HasField("layout")
    return True


def element_count(shape: hlo_pb2.ShapeProto) -> int:
    """Number of elements of an array (1 for a scalar); for a tuple, the sum over its leaves."""
    if _is_tuple(shape):
        return sum(element_count(s) for s in shape.tuple_shapes)
    if not _is_array(shape):
        return 0
    return math.prod(shape.dimensions)


def _array_bytes(shape: hlo_pb2.ShapeProto) -> float:
    n = math.prod(shape.dimensions)
    bits = shape.layout.element_size_in_bits
    if bits > 0:  # packed (sub-byte) elements
        return float(-(-(n * bits) // 8))
    return float(n * _ELEMENT_BYTES[shape.element_type])


def shape_bytes(shape: hlo_pb2.ShapeProto) -> float:
    """Bytes of a shape as XLA's cost analysis sizes it (``GetShapeSize`` / ``ByteSizeOf``).

    A shape without a layout is 0 bytes (XLA cannot size it); a tuple is only its index
    table (8 bytes per element, not the leaves); a token is 0; an opaque value is one
    pointer; packed sub-byte arrays use ``layout.element_size_in_bits``.
    """
    if not _has_layout(shape):
        return 0.0
    if _is_tuple(shape):
        return float(POINTER_SIZE * len(shape.tuple_shapes))
    if _is_array(shape):
        return _array_bytes(shape)
    if shape.element_type == OPAQUE:
        return float(POINTER_SIZE)
    if shape.element_type == BUFFER and shape.tuple_shapes:
        return shape_bytes(shape.tuple_shapes[0])
    return 0.0  # token, invalid


def _leaves(shape: hlo_pb2.ShapeProto) -> Iterator[hlo_pb2.ShapeProto]:
    """Array leaves of a (possibly nested) tuple shape, in order."""
    if _is_tuple(shape):
        for s in shape.tuple_shapes:
            yield from _leaves(s)
    elif _is_array(shape):
        yield shape


def _leaf_bytes(shape: hlo_pb2.ShapeProto) -> float:
    """Bytes of all array leaves (for outputs and the unknown-custom-call rule)."""
    return sum(shape_bytes(s) for s in _leaves(shape))


def _first_element(shape: hlo_pb2.ShapeProto) -> hlo_pb2.ShapeProto:
    """Tuple element 0 (the real result of GEMM/conv custom calls), else the shape itself."""
    return shape.tuple_shapes[0] if _is_tuple(shape) and shape.tuple_shapes else shape


# --- backend_config ------------------------------------------------------------------


def _backend_config(instr: hlo_pb2.HloInstructionProto) -> dict:
    """backend_config JSON as a dict; {} when absent or not a JSON object (never raises)."""
    raw = instr.backend_config
    if not raw:
        return {}
    try:
        value = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _get(obj: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _int_list(value: object) -> list[int] | None:
    """A JSON list of decimal strings or integers (proto3 JSON int64s), else None."""
    if value is None:
        return []
    if not isinstance(value, list):
        return None
    try:
        return [int(v) for v in value]
    except (TypeError, ValueError):
        return None


def _gemm_contracting_dims(config: dict) -> list[int] | None:
    """lhs contracting dimensions from ``gemm_backend_config.dot_dimension_numbers``."""
    dnums = _get(config, "gemm_backend_config", "dot_dimension_numbers")
    if not isinstance(dnums, dict):
        return None
    return _int_list(dnums.get("lhs_contracting_dimensions"))


def _fusion_backend_kind(instr: hlo_pb2.HloInstructionProto) -> str:
    """``fusion_backend_config.kind`` (GPU) or ``fusion_config.kind`` (XLA:CPU), else ""."""
    config = _backend_config(instr)
    for path in (("fusion_backend_config", "kind"), ("fusion_config", "kind")):
        kind = _get(config, *path)
        if isinstance(kind, str):
            return kind
    return ""


# --- formulas ------------------------------------------------------------------------


def _dot_flops(
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


def _conv_flops(
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


# --- the analysis --------------------------------------------------------------------


@dataclass
class _Acc:
    """Mutable sum of costs (a computation's total, or one instruction being built)."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0
    bytes_written: float = 0.0
    unknown_targets: set[str] = field(default_factory=set)

    def add(self, other: _Acc, times: float = 1.0, with_bytes: bool = True) -> None:
        self.flops += other.flops * times
        self.transcendentals += other.transcendentals * times
        if with_bytes:
            self.bytes_accessed += other.bytes_accessed * times
            self.bytes_written += other.bytes_written * times
        self.unknown_targets |= other.unknown_targets


class ModuleCosts:
    """Costs, categories and source info of the instructions of one HloModuleProto.

    Instructions are looked up by name (names are unique within a module). Costs are
    computed on first use and memoized, per instruction and per called computation.
    """

    def __init__(self, module: hlo_pb2.HloModuleProto):
        self._module = module
        self.name: str = module.name
        self._computations: dict[int, hlo_pb2.HloComputationProto] = {}
        self._instructions: dict[int, hlo_pb2.HloInstructionProto] = {}
        self._by_name: dict[str, hlo_pb2.HloInstructionProto] = {}
        self._computation_of: dict[int, int] = {}  # instruction id -> computation id
        for comp in module.computations:
            self._computations[comp.id] = comp
            for instr in comp.instructions:
                self._instructions[instr.id] = instr
                self._computation_of[instr.id] = comp.id
                self._by_name.setdefault(instr.name, instr)
        self._entry = self._find_entry()
        if self._entry is not None:  # entry instructions win a (malformed) name clash
            for instr in self._entry.instructions:
                self._by_name[instr.name] = instr
        self._users: dict[int, dict[int, list[hlo_pb2.HloInstructionProto]]] = {}
        self._params: dict[int, dict[int, hlo_pb2.HloInstructionProto]] = {}
        self._costs: dict[int, _Acc] = {}
        self._notes: dict[int, str] = {}
        self._computation_costs: dict[int, _Acc] = {}
        self._public: dict[int, InstructionCost] = {}
        self._in_progress: set[int] = set()

    # -- lookup --

    def _find_entry(self) -> hlo_pb2.HloComputationProto | None:
        m = self._module
        if m.entry_computation_id in self._computations:
            return self._computations[m.entry_computation_id]
        for comp in m.computations:
            if comp.name == m.entry_computation_name:
                return comp
        return m.computations[-1] if m.computations else None  # callees come first

    def entry_instruction_names(self) -> list[str]:
        """Top-level instructions of the entry computation, in order (one per kernel/thunk)."""
        return [i.name for i in self._entry.instructions] if self._entry is not None else []

    def _operand(self, instr: hlo_pb2.HloInstructionProto, i: int) -> hlo_pb2.HloInstructionProto:
        """Operand i (an empty instruction for a dangling id; IndexError if there is none)."""
        return self._instructions.get(instr.operand_ids[i], _EMPTY_INSTRUCTION)

    def _operand_shapes(self, instr: hlo_pb2.HloInstructionProto) -> list[hlo_pb2.ShapeProto]:
        return [self._instructions[o].shape for o in instr.operand_ids if o in self._instructions]

    def _called(self, instr: hlo_pb2.HloInstructionProto, i: int = 0):
        ids = instr.called_computation_ids
        return self._computations.get(ids[i]) if len(ids) > i else None

    def _users_of(self, instr: hlo_pb2.HloInstructionProto) -> list[hlo_pb2.HloInstructionProto]:
        """Distinct users of an instruction within its computation, in instruction order."""
        comp_id = self._computation_of[instr.id]
        users = self._users.get(comp_id)
        if users is None:
            users = {}
            for user in self._computations[comp_id].instructions:
                for op in dict.fromkeys(user.operand_ids):
                    users.setdefault(op, []).append(user)
            self._users[comp_id] = users
        return users.get(instr.id, [])

    def _parameter(self, comp: hlo_pb2.HloComputationProto, number: int):
        params = self._params.get(comp.id)
        if params is None:
            params = {i.parameter_number: i for i in comp.instructions if i.opcode == "parameter"}
            self._params[comp.id] = params
        return params.get(number)

    def _root(self, comp: hlo_pb2.HloComputationProto) -> hlo_pb2.HloInstructionProto | None:
        root = self._instructions.get(comp.root_id)
        if root is None and comp.instructions:
            root = comp.instructions[-1]
        return root

    # -- public API --

    def is_matmul_or_convolution(self, name: str) -> bool:
        """A dot or convolution, a GEMM/convolution custom call, or a fusion holding one.

        These are the ops whose FLOPs every cost model (XLA's, XProf's, ours) agrees on.
        """
        instr = self._by_name.get(name)
        pending = [instr] if instr is not None else []
        seen: set[int] = set()
        while pending:
            current = pending.pop()
            if current.opcode in ("dot", "convolution"):
                return True
            if current.opcode == "custom-call" and self._custom_call_kind(current):
                return True
            if current.opcode == "fusion":
                for comp_id in current.called_computation_ids:
                    if comp_id not in seen and comp_id in self._computations:
                        seen.add(comp_id)
                        pending.extend(self._computations[comp_id].instructions)
        return False

    def cost(self, name: str) -> InstructionCost | None:
        """Cost of one execution of the named instruction (any computation); None if absent."""
        instr = self._by_name.get(name)
        if instr is None:
            return None
        public = self._public.get(instr.id)
        if public is None:
            try:
                public = self._public_cost(instr)
            except (OverflowError, ValueError) as exc:  # shapes or windows no real module has
                public = InstructionCost(0.0, 0.0, 0.0, 0.0, "", True, f"cost out of range: {exc}")
            self._public[instr.id] = public
        return public

    def _public_cost(self, instr: hlo_pb2.HloInstructionProto) -> InstructionCost:
        acc = self._instruction_cost(instr)
        note = self._notes.get(instr.id, "")
        if acc.unknown_targets and not note:
            note = "unknown custom call " + ", ".join(sorted(acc.unknown_targets))
        cost = InstructionCost(
            flops=acc.flops,
            transcendentals=acc.transcendentals,
            bytes_accessed=acc.bytes_accessed,
            bytes_written=acc.bytes_written,
            dtype=self._dtype(instr),
            unknown=bool(acc.unknown_targets),
            note=note,
        )
        values = (cost.flops, cost.transcendentals, cost.bytes_accessed, cost.bytes_written)
        if not all(math.isfinite(v) for v in values):
            raise OverflowError("a shape or count too large for float64")
        return cost

    def category(self, name: str) -> str:
        """XLA's ``HloInstruction::ToCategory()`` of the named instruction ("" if absent)."""
        instr = self._by_name.get(name)
        if instr is None:
            return ""
        op = instr.opcode
        if op == "fusion":
            return _FUSION_CATEGORY.get(instr.fusion_kind, "fusion")
        if op == "convolution":
            dims = instr.window.dimensions
            category = "convolution"
            if any(d.base_dilation > 1 for d in dims):
                category += " base-dilated"
            if any(d.window_dilation > 1 for d in dims):
                category += " window-dilated"
            return category
        if op in _DATA_FORMATTING:
            return "data formatting"
        if op in _ELEMENTWISE_CATEGORY or (op == "map" and self._map_is_elementwise(instr)):
            return "non-fusion elementwise"
        return op

    def _map_is_elementwise(self, instr: hlo_pb2.HloInstructionProto) -> bool:
        dims = list(instr.dimensions)
        return not dims or dims == list(range(len(instr.shape.dimensions)))

    def source(self, name: str) -> tuple[str, int, str]:
        """(file, line or -1, stack) of the named instruction, from its OpMetadata.

        The stack is one ``file:line:column`` line per frame (each ending in a newline),
        walking ``stack_frame_index`` from ``metadata.stack_frame_id`` through the parents.
        """
        instr = self._by_name.get(name)
        if instr is None:
            return "", -1, ""
        md = instr.metadata
        line = md.source_line if md.source_line > 0 else -1
        return md.source_file, line, self._stack_text(md.stack_frame_id)

    def _stack_text(self, frame_id: int) -> str:
        index = self._module.stack_frame_index
        lines: list[str] = []
        seen: set[int] = set()
        while 0 < frame_id <= len(index.stack_frames) and frame_id not in seen:
            seen.add(frame_id)
            frame = index.stack_frames[frame_id - 1]
            loc_id = frame.file_location_id
            if 0 < loc_id <= len(index.file_locations):
                loc = index.file_locations[loc_id - 1]
                file_id = loc.file_name_id
                file = index.file_names[file_id - 1] if 0 < file_id <= len(index.file_names) else ""
                lines.append(f"{file}:{loc.line}:{loc.column}\n")
            frame_id = frame.parent_frame_id
        return "".join(lines)

    @property
    def unknown_custom_calls(self) -> set[str]:
        """custom_call_target strings that got unknown cost anywhere in the module."""
        found: set[str] = set()
        for instr in self._instructions.values():
            if instr.opcode == "custom-call":
                found |= self._instruction_cost(instr).unknown_targets
        return found

    # -- dtype --

    def _dtype(self, instr: hlo_pb2.HloInstructionProto) -> str:
        """lhs dtype for dot/conv-like instructions, else the largest array operand's dtype."""
        lhs = None
        op = instr.opcode
        if op in ("dot", "convolution") or (
            op == "custom-call" and self._custom_call_kind(instr) is not None
        ):
            lhs = self._operand(instr, 0).shape if instr.operand_ids else None
        elif op == "fusion":
            contraction = self._find_contraction(self._called(instr))
            if contraction is not None and contraction.operand_ids:
                lhs = self._operand(contraction, 0).shape
        if lhs is not None and _is_array(lhs):
            return dtype_name(lhs.element_type)
        best: hlo_pb2.ShapeProto | None = None
        best_bytes = -1.0
        for shape in self._operand_shapes(instr):
            for leaf in _leaves(shape):
                size = shape_bytes(leaf)
                if size > best_bytes:
                    best, best_bytes = leaf, size
        return dtype_name(best.element_type) if best is not None else ""

    def _find_contraction(self, comp, depth: int = 0):
        """First dot/convolution in a fused computation, searching nested fusions too."""
        if comp is None or depth > 16:
            return None
        nested = []
        for instr in comp.instructions:
            if instr.opcode in ("dot", "convolution"):
                return instr
            if instr.opcode == "fusion":
                nested.append(instr)
        for instr in nested:
            found = self._find_contraction(self._called(instr), depth + 1)
            if found is not None:
                return found
        return None

    # -- costs --

    def _computation_cost(self, comp: hlo_pb2.HloComputationProto | None) -> _Acc:
        """Σ of the costs of every instruction of a computation (ProcessSubcomputation)."""
        if comp is None:
            return _Acc()
        total = self._computation_costs.get(comp.id)
        if total is None:
            total = _Acc()
            for instr in comp.instructions:
                total.add(self._instruction_cost(instr))
            self._computation_costs[comp.id] = total
        return total

    def _instruction_cost(self, instr: hlo_pb2.HloInstructionProto) -> _Acc:
        acc = self._costs.get(instr.id)
        if acc is not None:
            return acc
        if instr.id in self._in_progress:  # a malformed, recursive module: cost 0
            return _Acc()
        self._in_progress.add(instr.id)
        try:
            acc = self._compute(instr)
        except (IndexError, KeyError, ValueError, ZeroDivisionError) as exc:
            # A malformed instruction (bad dimension numbers, dangling operand id, ...)
            # must not break the module: fall back to XLA's default bytes.
            acc = self._default(instr)
            self._notes[instr.id] = (
                f"malformed {instr.opcode} ({type(exc).__name__}); default bytes"
            )
        finally:
            self._in_progress.discard(instr.id)
        self._costs[instr.id] = acc
        return acc

    def _default(self, instr: hlo_pb2.HloInstructionProto) -> _Acc:
        """XLA Preprocess: output + Σ size(operands); the output part is written.

        The output counts its array leaves (a tuple-shaped result such as a variadic
        reduce or sort writes its elements, not just an index table), while a tuple
        operand counts only its index table, as jaxlib's HloCostAnalysis does.
        """
        out = _leaf_bytes(instr.shape)
        read = sum(shape_bytes(s) for s in self._operand_shapes(instr))
        return _Acc(bytes_accessed=out + read, bytes_written=out)

    def _compute(self, instr: hlo_pb2.HloInstructionProto) -> _Acc:
        op = instr.opcode
        if op in _ZERO_COST:
            return _Acc()
        if op == "transpose" and self._transpose_is_bitcast(instr):
            return _Acc()
        if op == "tuple":
            size = shape_bytes(instr.shape)
            return _Acc(bytes_accessed=size, bytes_written=size)
        handler = _HANDLERS.get(op)
        if handler is not None:
            return handler(self, instr)
        acc = self._default(instr)
        if op in _ELEMENTWISE_FLOP:
            acc.flops = float(element_count(instr.shape))
        elif op in _TRANSCENDENTAL:
            acc.transcendentals = float(element_count(instr.shape))
        return acc

    def _transpose_is_bitcast(self, instr: hlo_pb2.HloInstructionProto) -> bool:
        """ShapeUtil::TransposeIsBitcast: the permutation only relabels the physical layout."""
        if not instr.operand_ids:
            return False
        src, dst = self._operand(instr, 0).shape, instr.shape
        if not (src.HasField("layout") and dst.HasField("layout")):
            return False
        perm = list(instr.dimensions)
        dst_order, src_order = list(dst.layout.minor_to_major), list(src.layout.minor_to_major)
        if len(dst_order) != len(perm) or any(not 0 <= d < len(perm) for d in dst_order):
            return False
        return [perm[d] for d in dst_order] == src_order

    # --- handlers (hlo-cost.md §3) ---

    def _h_dot(self, instr) -> _Acc:
        acc = self._default(instr)
        lhs = self._operand(instr, 0).shape
        acc.flops = _dot_flops(
            lhs, instr.shape, instr.dot_dimension_numbers.lhs_contracting_dimensions
        )
        return acc

    def _h_convolution(self, instr) -> _Acc:
        acc = self._default(instr)
        acc.flops = _conv_flops(
            instr, self._operand(instr, 0).shape, self._operand(instr, 1).shape, instr.shape
        )
        return acc

    def _apply_times(self, instr, times: float, index: int = 0) -> _Acc:
        """Default bytes plus ``times`` × the FLOPs of called computation ``index``."""
        acc = self._default(instr)
        acc.add(self._computation_cost(self._called(instr, index)), times, with_bytes=False)
        return acc

    def _h_reduce(self, instr) -> _Acc:
        count = element_count(self._operand(instr, 0).shape) - element_count(
            _first_element(instr.shape)
        )
        return self._apply_times(instr, count)

    def _h_reduce_window(self, instr) -> _Acc:
        out = _first_element(instr.shape)
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

    def _h_map(self, instr) -> _Acc:
        return self._apply_times(instr, element_count(instr.shape))

    def _h_select_and_scatter(self, instr) -> _Acc:
        source = element_count(self._operand(instr, 1).shape)
        window = math.prod(d.size for d in instr.window.dimensions)
        acc = self._default(instr)
        acc.add(self._computation_cost(self._called(instr, 0)), source * (window - 1), False)
        acc.add(self._computation_cost(self._called(instr, 1)), source, False)
        return acc

    def _h_slice(self, instr) -> _Acc:
        out = shape_bytes(instr.shape)
        return _Acc(bytes_accessed=2 * out, bytes_written=out)

    def _h_dynamic_slice(self, instr) -> _Acc:
        out = shape_bytes(instr.shape)
        index = shape_bytes(self._operand(instr, 1).shape) if len(instr.operand_ids) > 1 else 0.0
        return _Acc(bytes_accessed=2 * out + index, bytes_written=out)

    def _h_dynamic_update_slice(self, instr) -> _Acc:
        update = shape_bytes(self._operand(instr, 1).shape)
        index = shape_bytes(self._operand(instr, 2).shape) if len(instr.operand_ids) > 2 else 0.0
        return _Acc(bytes_accessed=2 * update + index, bytes_written=update)

    def _h_gather(self, instr) -> _Acc:
        out = shape_bytes(instr.shape)
        return _Acc(
            bytes_accessed=2 * out + shape_bytes(self._operand(instr, 1).shape), bytes_written=out
        )

    def _h_scatter(self, instr) -> _Acc:
        n = len(instr.operand_ids) // 2  # operands: n inputs, indices, n updates
        updates = [self._operand(instr, n + 1 + i).shape for i in range(n)]
        update_bytes = sum(shape_bytes(s) for s in updates)
        acc = _Acc(
            bytes_accessed=3 * update_bytes + shape_bytes(self._operand(instr, n).shape),
            bytes_written=update_bytes,
        )
        count = element_count(updates[0]) if updates else 0
        acc.add(self._computation_cost(self._called(instr)), count, with_bytes=False)
        return acc

    def _h_all_reduce(self, instr) -> _Acc:
        out = _leaf_bytes(instr.shape)
        read = sum(shape_bytes(s) for s in self._operand_shapes(instr))
        flops = float(sum(element_count(s) for s in _leaves(instr.shape)))
        return _Acc(flops=flops, bytes_accessed=out + read, bytes_written=out)

    def _h_sort(self, instr) -> _Acc:
        acc = self._default(instr)
        n = element_count(self._operand(instr, 0).shape)
        acc.flops = float(n * _log2_ceil(n))
        return acc

    def _h_fft(self, instr) -> _Acc:
        acc = self._default(instr)
        factors = 1
        for length in instr.fft_length:
            factors *= max(int(length), 1).bit_length() - 1  # floor(log2)
        acc.flops = float(
            FMA_FLOPS * 4 * factors * element_count(_first_element(self._operand(instr, 0).shape))
        )
        return acc

    def _h_rng(self, instr) -> _Acc:
        acc = self._default(instr)
        acc.transcendentals = float(element_count(instr.shape))
        return acc

    def _h_triangular_solve(self, instr) -> _Acc:
        a, b = self._operand(instr, 0).shape, self._operand(instr, 1).shape
        out = shape_bytes(instr.shape)
        flops = FMA_FLOPS * (a.dimensions[-1] if a.dimensions else 1) * element_count(b)
        return _Acc(
            flops=float(flops),
            bytes_accessed=out + shape_bytes(a) / 2 + shape_bytes(b),
            bytes_written=out,
        )

    def _h_cholesky(self, instr) -> _Acc:
        a = self._operand(instr, 0).shape
        half = shape_bytes(a) / 2
        flops = (a.dimensions[-1] if a.dimensions else 1) * element_count(a) // 3
        return _Acc(flops=float(flops), bytes_accessed=2 * half, bytes_written=half)

    def _h_call(self, instr) -> _Acc:
        """call / async-start: the properties (bytes included) of the called computation."""
        acc = _Acc()
        acc.add(self._computation_cost(self._called(instr)))
        return acc

    def _h_while(self, instr) -> _Acc:
        """One iteration: body + condition (the trip count is not known statically)."""
        acc = _Acc()
        for i in range(len(instr.called_computation_ids)):
            acc.add(self._computation_cost(self._called(instr, i)))
        return acc

    def _h_conditional(self, instr) -> _Acc:
        """Per property, the maximum over the branches."""
        branches = [
            self._computation_cost(self._called(instr, i))
            for i in range(len(instr.called_computation_ids))
        ]
        if not branches:
            return self._default(instr)
        acc = _Acc(
            flops=max(b.flops for b in branches),
            transcendentals=max(b.transcendentals for b in branches),
            bytes_accessed=max(b.bytes_accessed for b in branches),
            bytes_written=max(b.bytes_written for b in branches),
        )
        for b in branches:
            acc.unknown_targets |= b.unknown_targets
        return acc

    # --- custom calls (hlo-cost.md §5) ---

    def _custom_call_kind(self, instr) -> str | None:
        """ "gemm", "conv" or None (unknown) for a custom-call instruction."""
        target = instr.custom_call_target
        if target.startswith(CONV_TARGET_PREFIX) and len(instr.operand_ids) >= 2:
            return "conv"
        if target in GEMM_TARGETS:
            return "gemm"
        lowered = target.lower()
        if ("gemm" in lowered or "matmul" in lowered) and _gemm_contracting_dims(
            _backend_config(instr)
        ):
            return "gemm"  # e.g. a hipBLASLt/cuBLASLt variant carrying a gemm_backend_config
        return None

    def _h_custom_call(self, instr) -> _Acc:
        """GEMM and convolution custom calls get the dot/convolution FLOPs; others are unknown.

        GEMM bytes are Σ size(operands) + size(result = tuple element 0): lhs + rhs +
        result as in XProf, plus any extra input (bias vector, C matrix with beta != 0,
        f8 scales), since those are read too; the workspace (last element) is not.
        Convolution bytes are likewise inputs + tuple element 0 (no scratch buffer).
        """
        kind = self._custom_call_kind(instr)
        target = instr.custom_call_target
        result = _first_element(instr.shape)
        inputs = sum(shape_bytes(s) for s in self._operand_shapes(instr))
        if kind == "gemm" and instr.operand_ids:
            lhs = self._operand(instr, 0).shape
            dims = _gemm_contracting_dims(_backend_config(instr))
            if dims is not None and all(0 <= d < len(lhs.dimensions) for d in dims):
                out = shape_bytes(result)
                self._notes[instr.id] = "cuBLAS GEMM from backend_config"
                return _Acc(
                    flops=_dot_flops(lhs, result, dims),
                    bytes_accessed=inputs + out,
                    bytes_written=out,
                )
            self._notes[instr.id] = f"GEMM custom call {target} with unparseable backend_config"
        elif kind == "conv":
            out = shape_bytes(result)
            self._notes[instr.id] = "cuDNN convolution"
            flops = _conv_flops(
                instr, self._operand(instr, 0).shape, self._operand(instr, 1).shape, result
            )
            return _Acc(flops=flops, bytes_accessed=inputs + out, bytes_written=out)
        # Unknown: 0 FLOPs, bytes = operands + outputs with tuple leaves counted.
        out = _leaf_bytes(instr.shape)
        read = sum(_leaf_bytes(s) for s in self._operand_shapes(instr))
        acc = _Acc(bytes_accessed=read + out, bytes_written=out, unknown_targets={target})
        self._notes.setdefault(instr.id, f"unknown custom call {target}")
        return acc

    # --- fusions ---

    def _h_fusion(self, instr) -> _Acc:
        """Σ fused FLOPs; bytes by the fusion rule (outputs + parameter reads).

        Triton GEMM fusions take the same FLOPs (the dot, plus any fused epilogue at the
        generic rates) but bytes = inputs + output, since their nested parameter-only
        block fusions would otherwise hide the operand reads. Custom fusions that hold a
        gather or scatter cost as that instruction (XLA).
        """
        comp = self._called(instr)
        if comp is None:
            return self._default(instr)
        if instr.fusion_kind == "kCustom":
            kind = _fusion_backend_kind(instr)
            if kind in TRITON_GEMM_KINDS:
                inner = self._computation_cost(comp)
                out = _leaf_bytes(instr.shape)
                read = sum(shape_bytes(s) for s in self._operand_shapes(instr))
                self._notes[instr.id] = "Triton GEMM fusion"
                acc = _Acc(bytes_accessed=read + out, bytes_written=out)
                acc.add(inner, with_bytes=False)
                return acc
            for inner_instr in comp.instructions:
                if inner_instr.opcode in ("gather", "scatter"):
                    self._notes[instr.id] = f"custom fusion costed as its {inner_instr.opcode}"
                    acc = _Acc()
                    acc.add(self._instruction_cost(inner_instr))
                    return acc
        acc = _Acc()
        acc.add(self._computation_cost(comp), with_bytes=False)
        out = self._fusion_output_bytes(comp, instr.shape)
        acc.bytes_written = out
        acc.bytes_accessed = out
        for number in range(len(instr.operand_ids)):
            param = self._parameter(comp, number)
            if param is not None:
                acc.bytes_accessed += self._parameter_bytes(param)
        acc.bytes_accessed += self._large_constant_bytes(comp)
        return acc

    def _fusion_output_bytes(self, comp, shape) -> float:
        """Array leaves of the output; a dynamic-update-slice output writes only its update."""
        root = self._root(comp)

        def update_bytes(node) -> float | None:
            if (
                node is not None
                and node.opcode == "dynamic-update-slice"
                and len(node.operand_ids) > 1
            ):
                return shape_bytes(self._operand(node, 1).shape)
            return None

        dus = update_bytes(root)
        if dus is not None:
            return dus
        if not _is_tuple(shape):
            return shape_bytes(shape)
        total = 0.0
        root_is_tuple = root is not None and root.opcode == "tuple"
        for i, element in enumerate(shape.tuple_shapes):
            if root_is_tuple and i < len(root.operand_ids) and _is_array(element):
                dus = update_bytes(self._operand(root, i))
                if dus is not None:
                    total += dus
                    continue
            total += _leaf_bytes(element)
        return total

    def _parameter_bytes(self, param) -> float:
        """Read bytes of a fusion parameter; tuple parameters are read leaf by leaf via GTEs."""
        if not _is_tuple(param.shape):
            return self._read_bytes(param)
        total = 0.0
        for index in self._leaf_indices(param.shape):
            node = param
            for i in index:
                node = next(
                    (
                        u
                        for u in self._users_of(node)
                        if u.opcode == "get-tuple-element" and u.tuple_index == i
                    ),
                    node,
                )
            total += self._read_bytes(node)
        return total

    @staticmethod
    def _leaf_indices(shape, prefix: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
        if _is_tuple(shape):
            for i, s in enumerate(shape.tuple_shapes):
                yield from ModuleCosts._leaf_indices(s, prefix + (i,))
        elif _is_array(shape):
            yield prefix

    def _read_bytes(self, node, depth: int = 0) -> float:
        """FusionParameterReadBytes: what the users of a fused parameter read from memory.

        Slices read only their output; broadcast/reshape read the parameter once each;
        every other user shares one full read; an aliased dynamic-update-slice operand
        is not read. A nested fusion is judged by how *its* users consume its output:
        when the nested parameter feeds the nested root directly (operand 0), a slice,
        dynamic-slice or dynamic-update-slice of the nested output reads like one of
        the parameter; otherwise the nested parameter's own reads count, once. (So a
        nested fusion that is the outer root reads nothing, exactly as jaxlib's
        HloCostAnalysis reports.)
        """
        size = shape_bytes(node.shape)
        total = 0.0
        shared = [False]  # one full read shared by all "other" users
        for user in self._users_of(node):
            op = user.opcode
            if op == "fusion":
                total += self._nested_fusion_read_bytes(node, user, depth)
            elif op in ("slice", "dynamic-slice", "dynamic-update-slice"):
                total += self._slicing_read_bytes(node, user, size, shared)
            elif op in ("broadcast", "reshape"):
                total += size
            elif not shared[0]:
                shared[0] = True
                total += size
        return total

    def _slicing_read_bytes(self, node, user, size: float, shared: list[bool]) -> float:
        """Bytes that a slice / dynamic-slice / dynamic-update-slice ``user`` reads of ``node``."""
        is_operand0 = bool(user.operand_ids) and user.operand_ids[0] == node.id
        if user.opcode == "slice":
            return shape_bytes(user.shape)
        if user.opcode == "dynamic-slice" and is_operand0:
            return shape_bytes(user.shape)
        if user.opcode == "dynamic-update-slice" and is_operand0:
            return 0.0  # aliased with the output: not read
        if shared[0]:
            return 0.0
        shared[0] = True
        return size  # an index (or the update) is read once, shared with other users

    def _nested_fusion_read_bytes(self, node, fusion, depth: int) -> float:
        """Read bytes of ``node`` through the nested fusion instruction ``fusion``."""
        nested = self._called(fusion)
        if nested is None or depth > 32:
            return 0.0
        root = self._root(nested)
        fusion_size = shape_bytes(fusion.shape)
        total = 0.0
        for idx, operand in enumerate(fusion.operand_ids):
            if operand != node.id:
                continue
            param = self._parameter(nested, idx)
            simple = (
                param is not None
                and root is not None
                and bool(root.operand_ids)
                and root.operand_ids[0] == param.id
            )
            shared = [False]
            for fusion_user in self._users_of(fusion):
                if simple and fusion_user.opcode in (
                    "slice",
                    "dynamic-slice",
                    "dynamic-update-slice",
                ):
                    total += self._slicing_read_bytes(fusion, fusion_user, fusion_size, shared)
                elif not shared[0]:
                    shared[0] = True
                    if param is not None:
                        total += self._read_bytes(param, depth + 1)
        return total

    def _large_constant_bytes(self, comp) -> float:
        """Constants of more than one element fused into the computation are read once each.

        (XLA: constants above ``immediate_constant_max_elements()`` = 1 add their size ×
        min(utilization, 1); utilization is 1 under the generic rules.)
        """
        return sum(
            shape_bytes(i.shape)
            for i in comp.instructions
            if i.opcode == "constant" and element_count(i.shape) > 1
        )


_HANDLERS = {
    "dot": ModuleCosts._h_dot,
    "convolution": ModuleCosts._h_convolution,
    "reduce": ModuleCosts._h_reduce,
    "reduce-window": ModuleCosts._h_reduce_window,
    "map": ModuleCosts._h_map,
    "select-and-scatter": ModuleCosts._h_select_and_scatter,
    "slice": ModuleCosts._h_slice,
    "dynamic-slice": ModuleCosts._h_dynamic_slice,
    "dynamic-update-slice": ModuleCosts._h_dynamic_update_slice,
    "gather": ModuleCosts._h_gather,
    "scatter": ModuleCosts._h_scatter,
    "all-reduce": ModuleCosts._h_all_reduce,
    "all-reduce-start": ModuleCosts._h_all_reduce,
    "sort": ModuleCosts._h_sort,
    "fft": ModuleCosts._h_fft,
    "rng": ModuleCosts._h_rng,
    "rng-bit-generator": ModuleCosts._h_rng,
    "triangular-solve": ModuleCosts._h_triangular_solve,
    "cholesky": ModuleCosts._h_cholesky,
    "call": ModuleCosts._h_call,
    "async-start": ModuleCosts._h_call,
    "while": ModuleCosts._h_while,
    "conditional": ModuleCosts._h_conditional,
    "custom-call": ModuleCosts._h_custom_call,
    "fusion": ModuleCosts._h_fusion,
}
