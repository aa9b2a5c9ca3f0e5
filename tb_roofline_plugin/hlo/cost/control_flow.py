"""The whole work of control-flow instructions (``while``, ``call``, ``conditional``,
``async-start``): what their nested computations do, loops counted by their trip count.

XLA's ``HloCostAnalysis`` costs a ``while`` as one iteration of its body and condition
(``docs/hlo-cost.md`` §3), since it does not use the trip count. A profile times the
whole loop, so a ``while`` row costed that way shows one iteration's FLOPs over every
iteration's time. ``work`` counts the loop as XLA's ``known_trip_count`` backend config
says (``{"known_trip_count": {"n": "24"}}``, written by XLA's while-loop analysis), and
without one as XLA does (one iteration; ``unknown_trip_loop`` names such a loop's body and
condition, whose executions in a profile tell how many ran). ``nested`` names the
instructions a container runs (its computations, recursively through nested containers):
on XLA:CPU each runs as an op event of its own, inside the container's span but often on
another thread.
"""

from __future__ import annotations

from ...protos import hlo_pb2
from .context import CostContext
from .costs import CostSum, InstructionCost
from .library_calls import backend_config_json

# Opcodes whose work is that of the computations they call (not fusions: fused
# instructions never run as ops of their own).
CONTROL_FLOW = frozenset({"while", "call", "conditional", "async-start"})
PRED = hlo_pb2.PrimitiveType.Value("PRED")  # a loop condition's result


def known_trip_count(instr: hlo_pb2.HloInstructionProto) -> int | None:
    """XLA's ``known_trip_count`` of a while instruction, None when not known."""
    count = backend_config_json(instr).get("known_trip_count")
    value = count.get("n") if isinstance(count, dict) else None
    try:
        trips = int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return trips if trips is not None and trips >= 0 else None


class ControlFlowCosts(CostContext):
    """Mixin of ``ModuleCosts``: trip-weighted work and the nested instructions."""

    _by_name: dict[str, hlo_pb2.HloInstructionProto]
    _in_progress: set[int]
    _works: dict[int, CostSum]  # instruction id -> its whole work (containers only)

    def cost(self, name: str) -> InstructionCost | None:
        raise NotImplementedError

    def work(self, name: str) -> InstructionCost | None:
        """``cost`` of the named instruction, but a container's is its whole nested work
        (``_work_of``); None if absent."""
        cost = self.cost(name)
        instr = self._by_name.get(name)
        if cost is None or instr is None or instr.opcode not in CONTROL_FLOW:
            return cost
        acc = self._work_of(instr)
        return InstructionCost(
            flops=acc.flops,
            transcendentals=acc.transcendentals,
            bytes_accessed=acc.bytes_accessed,
            bytes_written=acc.bytes_written,
            dtype=cost.dtype,
            unknown=cost.unknown or bool(acc.unknown_targets),
            note=cost.note,
        )

    def _work_of(self, instr: hlo_pb2.HloInstructionProto) -> CostSum:
        """One execution's whole work: a container's nested work, loops times their trips."""
        works = self._works
        acc = works.get(instr.id)
        if acc is not None:
            return acc
        if instr.opcode not in CONTROL_FLOW or instr.id in self._in_progress:
            return self._instruction_cost(instr)
        self._in_progress.add(instr.id)
        try:
            called = [self._called(instr, i) for i in range(len(instr.called_computation_ids))]
            parts = [self._computation_work(c) for c in called if c is not None]
            acc = CostSum()
            if instr.opcode == "conditional" and parts:
                acc.flops = max(p.flops for p in parts)
                acc.transcendentals = max(p.transcendentals for p in parts)
                acc.bytes_accessed = max(p.bytes_accessed for p in parts)
                acc.bytes_written = max(p.bytes_written for p in parts)
                for p in parts:
                    acc.unknown_targets |= p.unknown_targets
            elif instr.opcode == "conditional":
                acc = self._instruction_cost(instr)
            else:
                trips = known_trip_count(instr) if instr.opcode == "while" else 1
                for part in parts:
                    acc.add(part, float(trips if trips is not None else 1))
        finally:
            self._in_progress.discard(instr.id)
        works[instr.id] = acc
        return acc

    def _computation_work(self, comp: hlo_pb2.HloComputationProto) -> CostSum:
        total = CostSum()
        for instr in comp.instructions:
            total.add(self._work_of(instr))
        return total

    def is_container(self, name: str) -> bool:
        """Whether the named instruction is a control-flow container (``CONTROL_FLOW``)."""
        instr = self._by_name.get(name)
        return instr is not None and instr.opcode in CONTROL_FLOW

    def children(self, name: str) -> list[str]:
        """The instructions of a container's own computations (body and condition,
        branches, callee); [] for any other instruction."""
        instr = self._by_name.get(name)
        if instr is None or instr.opcode not in CONTROL_FLOW:
            return []
        out: list[str] = []
        for i in range(len(instr.called_computation_ids)):
            comp = self._called(instr, i)
            if comp is not None:
                out.extend(c.name for c in comp.instructions)
        return out

    def unknown_trip_loop(self, name: str) -> tuple[list[str], list[str]] | None:
        """The instructions of the body and of the condition of a ``while`` whose trip
        count XLA does not know (``work`` counts it once); None for any other instruction.
        XLA lists a while's body before its condition; the condition is the one whose root
        is a PRED scalar, should a producer list them the other way."""
        instr = self._by_name.get(name)
        if instr is None or instr.opcode != "while" or known_trip_count(instr) is not None:
            return None
        body, condition = (self._called(instr, i) for i in (0, 1))
        if self._is_predicate(body) and not self._is_predicate(condition):
            body, condition = condition, body
        body_names, condition_names = (
            [i.name for i in c.instructions] if c is not None else [] for c in (body, condition)
        )
        return body_names, condition_names

    def _is_predicate(self, comp: hlo_pb2.HloComputationProto | None) -> bool:
        """Whether a computation returns one PRED (a loop condition)."""
        root = self._root(comp) if comp is not None else None
        return root is not None and root.shape.element_type == PRED and not root.shape.dimensions

    def nested(self, name: str) -> set[str]:
        """Every instruction a container runs: its children, theirs, and so on."""
        found: set[str] = set()
        pending = self.children(name)
        while pending:
            child = pending.pop()
            if child not in found:
                found.add(child)
                pending.extend(self.children(child))
        return found
