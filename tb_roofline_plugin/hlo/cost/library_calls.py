"""GPU library calls (``docs/hlo-cost.md`` §5): cuBLAS/cuBLASLt/hipBLASLt GEMM and
cuDNN/MIOpen convolution custom calls, costed from their ``backend_config``, and Triton GEMM
fusions; rules as methods that ``engine.ModuleCosts`` inherits."""

from __future__ import annotations

import json

from ...protos import hlo_pb2
from .context import CostContext
from .costs import CostSum
from .generic import conv_flops, dot_flops
from .shapes import first_element, leaf_bytes, shape_bytes

# --- GPU custom calls (docs/hlo-cost.md §5) -----------------------------------------------

# IsCublasGemm: legacy cuBLAS and cuBLASLt; ROCm (hipBLASLt) reuses these target names.
GEMM_TARGETS = frozenset({"__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8"})
CONV_TARGET_PREFIX = "__cudnn$conv"  # cuDNN and MIOpen: convForward, convBackwardInput, ...
TRITON_GEMM_KINDS = frozenset({"__triton_nested_gemm_fusion", "__triton_gemm"})


# --- backend_config ------------------------------------------------------------------


def backend_config_json(instr: hlo_pb2.HloInstructionProto) -> dict:
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


def gemm_contracting_dims(config: dict) -> list[int] | None:
    """lhs contracting dimensions from ``gemm_backend_config.dot_dimension_numbers``."""
    dnums = _get(config, "gemm_backend_config", "dot_dimension_numbers")
    if not isinstance(dnums, dict):
        return None
    return _int_list(dnums.get("lhs_contracting_dimensions"))


def fusion_backend_kind(instr: hlo_pb2.HloInstructionProto) -> str:
    """``fusion_backend_config.kind`` (GPU) or ``fusion_config.kind`` (XLA:CPU), else ""."""
    config = backend_config_json(instr)
    for path in (("fusion_backend_config", "kind"), ("fusion_config", "kind")):
        kind = _get(config, *path)
        if isinstance(kind, str):
            return kind
    return ""


class LibraryCallCosts(CostContext):
    """The custom-call and Triton GEMM rules, mixed into ``engine.ModuleCosts``."""

    # --- custom calls (docs/hlo-cost.md §5) ---

    def _custom_call_kind(self, instr) -> str | None:
        """ "gemm", "conv" or None (unknown) for a custom-call instruction."""
        target = instr.custom_call_target
        if target.startswith(CONV_TARGET_PREFIX) and len(instr.operand_ids) >= 2:
            return "conv"
        if target in GEMM_TARGETS:
            return "gemm"
        lowered = target.lower()
        if ("gemm" in lowered or "matmul" in lowered) and gemm_contracting_dims(
            backend_config_json(instr)
        ):
            return "gemm"  # e.g. a hipBLASLt/cuBLASLt variant carrying a gemm_backend_config
        return None

    def _custom_call_cost(self, instr) -> CostSum:
        """GEMM and convolution custom calls get the dot/convolution FLOPs; others are unknown.

        GEMM bytes are Σ size(operands) + size(result = tuple element 0): lhs + rhs +
        result as in XProf, plus any extra input (bias vector, C matrix with beta != 0,
        f8 scales), since those are read too; the workspace (last element) is not.
        Convolution bytes are likewise inputs + tuple element 0 (no scratch buffer).
        """
        kind = self._custom_call_kind(instr)
        target = instr.custom_call_target
        result = first_element(instr.shape)
        inputs = sum(shape_bytes(s) for s in self._operand_shapes(instr))
        if kind == "gemm" and instr.operand_ids:
            lhs = self._operand(instr, 0).shape
            dims = gemm_contracting_dims(backend_config_json(instr))
            if dims is not None and all(0 <= d < len(lhs.dimensions) for d in dims):
                out = shape_bytes(result)
                self._notes[instr.id] = "cuBLAS GEMM from backend_config"
                return CostSum(
                    flops=dot_flops(lhs, result, dims),
                    bytes_accessed=inputs + out,
                    bytes_written=out,
                )
            self._notes[instr.id] = f"GEMM custom call {target} with unparseable backend_config"
        elif kind == "conv":
            out = shape_bytes(result)
            self._notes[instr.id] = "cuDNN convolution"
            flops = conv_flops(
                instr, self._operand(instr, 0).shape, self._operand(instr, 1).shape, result
            )
            return CostSum(flops=flops, bytes_accessed=inputs + out, bytes_written=out)
        # Unknown: 0 FLOPs, bytes = operands + outputs with tuple leaves counted.
        out = leaf_bytes(instr.shape)
        read = sum(leaf_bytes(s) for s in self._operand_shapes(instr))
        acc = CostSum(bytes_accessed=read + out, bytes_written=out, unknown_targets={target})
        self._notes.setdefault(instr.id, f"unknown custom call {target}")
        return acc

    def _triton_gemm_fusion_cost(self, instr, comp) -> CostSum:
        """A Triton GEMM fusion: the fused FLOPs (the dot, plus any fused epilogue at the
        generic rates), bytes = inputs + output (its nested parameter-only block fusions
        would otherwise hide the operand reads)."""
        inner = self._computation_cost(comp)
        out = leaf_bytes(instr.shape)
        read = sum(shape_bytes(s) for s in self._operand_shapes(instr))
        self._notes[instr.id] = "Triton GEMM fusion"
        acc = CostSum(bytes_accessed=read + out, bytes_written=out)
        acc.add(inner, with_bytes=False)
        return acc
