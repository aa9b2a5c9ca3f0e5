"""What the cost rules of every op family read from the module being costed.

The rules live in one class per op family (``generic``, ``library_calls``, ``fusions``);
``engine.ModuleCosts`` joins them and implements these lookups over its module. Declaring
them here lets each family be read, and type-checked, on its own.
"""

from __future__ import annotations

from ...protos import hlo_pb2
from .costs import CostSum


class CostContext:
    """The module's lookups and the shared cost entry points (``ModuleCosts`` defines them)."""

    _notes: dict[int, str]  # instruction id -> how its cost was found, for the UI

    def _operand(self, instr: hlo_pb2.HloInstructionProto, i: int) -> hlo_pb2.HloInstructionProto:
        raise NotImplementedError

    def _operand_shapes(self, instr: hlo_pb2.HloInstructionProto) -> list[hlo_pb2.ShapeProto]:
        raise NotImplementedError

    def _called(
        self, instr: hlo_pb2.HloInstructionProto, i: int = 0
    ) -> hlo_pb2.HloComputationProto | None:
        raise NotImplementedError

    def _users_of(self, instr: hlo_pb2.HloInstructionProto) -> list[hlo_pb2.HloInstructionProto]:
        raise NotImplementedError

    def _parameter(
        self, comp: hlo_pb2.HloComputationProto, number: int
    ) -> hlo_pb2.HloInstructionProto | None:
        raise NotImplementedError

    def _root(self, comp: hlo_pb2.HloComputationProto) -> hlo_pb2.HloInstructionProto | None:
        raise NotImplementedError

    def _computation_cost(self, comp: hlo_pb2.HloComputationProto | None) -> CostSum:
        raise NotImplementedError

    def _instruction_cost(self, instr: hlo_pb2.HloInstructionProto) -> CostSum:
        raise NotImplementedError

    def _default(self, instr: hlo_pb2.HloInstructionProto) -> CostSum:
        raise NotImplementedError

    def _triton_gemm_fusion_cost(
        self, instr: hlo_pb2.HloInstructionProto, comp: hlo_pb2.HloComputationProto
    ) -> CostSum:
        raise NotImplementedError
