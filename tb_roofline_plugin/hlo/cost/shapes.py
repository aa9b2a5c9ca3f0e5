"""Shapes and dtypes of HLO values, and their bytes as XLA's cost analysis counts them
(``docs/hlo-cost.md`` §2): element sizes, tuples as index tables, packed sub-byte types."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

from ...protos import hlo_pb2

POINTER_SIZE = 8  # bytes of one tuple index-table entry (ShapeUtil::ByteSizeOf pointer size)

_PT = hlo_pb2.PrimitiveType
TUPLE = _PT.Value("TUPLE")
TOKEN = _PT.Value("TOKEN")
OPAQUE = _PT.Value("OPAQUE_TYPE")
BUFFER = _PT.Value("BUFFER")
INVALID = _PT.Value("PRIMITIVE_TYPE_INVALID")

# Unpacked bytes per element (docs/hlo-cost.md §2). Sub-byte types take 1 byte unless the
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

# XLA element types -> the roofline's dtype names: those of the peaks tables (``DTYPES``) and
# of PyTorch traces, so an op reads the same from either producer. Every f8 variant is fp8;
# types without a FLOP ceiling of their own (s32, pred, u8, c64, ...) keep XLA's name.
_ROOFLINE_DTYPES = {"f64": "fp64", "f32": "fp32", "bf16": "bf16", "f16": "fp16", "s8": "int8"}


def roofline_dtype(xla_name: str) -> str:
    """The roofline's name (``fp32``, ``bf16``, ``fp8``, ...) of a lower-case XLA type name."""
    if xla_name.startswith("f8"):
        return "fp8"
    return _ROOFLINE_DTYPES.get(xla_name, xla_name)


# --- shapes --------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def dtype_name(element_type: int) -> str:
    """Lower-case XLA name of a PrimitiveType number ("bf16", "f8e4m3fn", "pred", ...)."""
    special = _SPECIAL_NAMES.get(element_type)
    if special is not None:
        return special
    try:
        return _PT.Name(element_type).lower()
    except ValueError:
        return f"type{element_type}"


def element_bytes(xla_name: str) -> int:
    """Unpacked bytes per element of a lower-case XLA type name ("bf16": 2); 0 for names
    that are not array types (token, tuple) or unknown."""
    try:
        return _ELEMENT_BYTES.get(_PT.Value(xla_name.upper()), 0)
    except ValueError:
        return 0


def is_tuple(shape: hlo_pb2.ShapeProto) -> bool:
    return shape.element_type == TUPLE


def is_array(shape: hlo_pb2.ShapeProto) -> bool:
    return shape.element_type in _ELEMENT_BYTES


def _has_layout(shape: hlo_pb2.ShapeProto) -> bool:
    """LayoutUtil::HasLayout: arrays need one; a tuple needs all leaves; others never."""
    if is_tuple(shape):
        return all(_has_layout(s) for s in shape.tuple_shapes)
    if is_array(shape):
        return shape.HasField("layout")
    return True


def element_count(shape: hlo_pb2.ShapeProto) -> int:
    """Number of elements of an array (1 for a scalar); for a tuple, the sum over its leaves."""
    if is_tuple(shape):
        return sum(element_count(s) for s in shape.tuple_shapes)
    if not is_array(shape):
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
    if is_tuple(shape):
        return float(POINTER_SIZE * len(shape.tuple_shapes))
    if is_array(shape):
        return _array_bytes(shape)
    if shape.element_type == OPAQUE:
        return float(POINTER_SIZE)
    if shape.element_type == BUFFER and shape.tuple_shapes:
        return shape_bytes(shape.tuple_shapes[0])
    return 0.0  # token, invalid


def leaves(shape: hlo_pb2.ShapeProto) -> Iterator[hlo_pb2.ShapeProto]:
    """Array leaves of a (possibly nested) tuple shape, in order."""
    if is_tuple(shape):
        for s in shape.tuple_shapes:
            yield from leaves(s)
    elif is_array(shape):
        yield shape


def leaf_bytes(shape: hlo_pb2.ShapeProto) -> float:
    """Bytes of all array leaves (for outputs and the unknown-custom-call rule)."""
    return sum(shape_bytes(s) for s in leaves(shape))


def first_element(shape: hlo_pb2.ShapeProto) -> hlo_pb2.ShapeProto:
    """Tuple element 0 (the real result of GEMM/conv custom calls), else the shape itself."""
    return shape.tuple_shapes[0] if is_tuple(shape) and shape.tuple_shapes else shape
