"""Per-instruction FLOPs and bytes of an HLO module, following XLA's ``HloCostAnalysis``.

GPU and CPU profiles carry no FLOP or byte counts, so the roofline needs a cost model
computed from the optimized HLO modules stored in ``/host:metadata``. This package is a
pure-Python port of the *rules* documented in ``docs/hlo-cost.md``; this module is its
engine: ``ModuleCosts`` looks instructions up, sends each opcode to its rule
(``_COST_RULES``: methods of ``GenericOpCosts``, ``LibraryCallCosts`` and ``FusionCosts``,
from ``generic``, ``library_calls`` and ``fusions``) and keeps every result. The rules:

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

import math
from collections.abc import Callable

from ...protos import hlo_pb2
from .control_flow import ControlFlowCosts
from .costs import CostSum, InstructionCost
from .fusions import FusionCosts
from .generic import (
    DATA_FORMATTING,
    ELEMENTWISE_CATEGORY,
    ELEMENTWISE_FLOP,
    FUSION_CATEGORY,
    TRANSCENDENTAL,
    ZERO_COST,
    GenericOpCosts,
)
from .library_calls import LibraryCallCosts
from .shapes import (
    dtype_name,
    element_count,
    is_array,
    leaf_bytes,
    leaves,
    roofline_dtype,
    shape_bytes,
)

__all__ = [
    "InstructionCost",
    "ModuleCosts",
    "dtype_name",
    "element_count",
    "shape_bytes",
]

_EMPTY_INSTRUCTION = hlo_pb2.HloInstructionProto()


class ModuleCosts(GenericOpCosts, LibraryCallCosts, FusionCosts, ControlFlowCosts):
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
        self._costs: dict[int, CostSum] = {}
        self._notes: dict[int, str] = {}
        self._computation_costs: dict[int, CostSum] = {}
        self._public: dict[int, InstructionCost] = {}
        self._in_progress: set[int] = set()
        self._works: dict[int, CostSum] = {}

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

    def _called(
        self, instr: hlo_pb2.HloInstructionProto, i: int = 0
    ) -> hlo_pb2.HloComputationProto | None:
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

    def _parameter(
        self, comp: hlo_pb2.HloComputationProto, number: int
    ) -> hlo_pb2.HloInstructionProto | None:
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

    def instruction(self, name: str) -> hlo_pb2.HloInstructionProto | None:
        """The named instruction (any computation; the entry's on a clash), None if absent."""
        return self._by_name.get(name)

    def operands(self, instr: hlo_pb2.HloInstructionProto) -> list[hlo_pb2.HloInstructionProto]:
        """An instruction's operands, in order (dangling ids left out)."""
        found = self._instructions
        return [found[o] for o in instr.operand_ids if o in found]

    def computation_instructions(self, computation_id: int) -> list[hlo_pb2.HloInstructionProto]:
        """The instructions of a computation, its root first (none for an unknown id)."""
        comp = self._computations.get(computation_id)
        if comp is None:
            return []
        root = self._root(comp)
        return [root, *(i for i in comp.instructions if i is not root)] if root else []

    def computation_name(self, computation_id: int) -> str:
        comp = self._computations.get(computation_id)
        return comp.name if comp is not None else str(computation_id)

    def dtype(self, name: str) -> str:
        """The roofline dtype of the named instruction (as its cost has it), "" if absent."""
        instr = self._by_name.get(name)
        return self._dtype(instr) if instr is not None else ""

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
            return FUSION_CATEGORY.get(instr.fusion_kind, "fusion")
        if op == "convolution":
            dims = instr.window.dimensions
            category = "convolution"
            if any(d.base_dilation > 1 for d in dims):
                category += " base-dilated"
            if any(d.window_dilation > 1 for d in dims):
                category += " window-dilated"
            return category
        if op in DATA_FORMATTING:
            return "data formatting"
        if op in ELEMENTWISE_CATEGORY or (op == "map" and self._map_is_elementwise(instr)):
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

    def op_name(self, name: str) -> str:
        """The named instruction's ``metadata.op_name``: the framework's name stack down to
        the op (JAX ``jit(f)/jvp(block)/dot_general``, TensorFlow's node name), or ""."""
        instr = self._by_name.get(name)
        return instr.metadata.op_name if instr is not None else ""

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
        if lhs is not None and is_array(lhs):
            return roofline_dtype(dtype_name(lhs.element_type))
        best: hlo_pb2.ShapeProto | None = None
        best_bytes = -1.0
        for shape in self._operand_shapes(instr):
            for leaf in leaves(shape):
                size = shape_bytes(leaf)
                if size > best_bytes:
                    best, best_bytes = leaf, size
        return roofline_dtype(dtype_name(best.element_type)) if best is not None else ""

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

    def _computation_cost(self, comp: hlo_pb2.HloComputationProto | None) -> CostSum:
        """Σ of the costs of every instruction of a computation (ProcessSubcomputation)."""
        if comp is None:
            return CostSum()
        total = self._computation_costs.get(comp.id)
        if total is None:
            total = CostSum()
            for instr in comp.instructions:
                total.add(self._instruction_cost(instr))
            self._computation_costs[comp.id] = total
        return total

    def _instruction_cost(self, instr: hlo_pb2.HloInstructionProto) -> CostSum:
        acc = self._costs.get(instr.id)
        if acc is not None:
            return acc
        if instr.id in self._in_progress:  # a malformed, recursive module: cost 0
            return CostSum()
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

    def _default(self, instr: hlo_pb2.HloInstructionProto) -> CostSum:
        """XLA Preprocess: output + Σ size(operands); the output part is written.

        The output counts its array leaves (a tuple-shaped result such as a variadic
        reduce or sort writes its elements, not just an index table), while a tuple
        operand counts only its index table, as jaxlib's HloCostAnalysis does.
        """
        out = leaf_bytes(instr.shape)
        read = sum(shape_bytes(s) for s in self._operand_shapes(instr))
        return CostSum(bytes_accessed=out + read, bytes_written=out)

    def _compute(self, instr: hlo_pb2.HloInstructionProto) -> CostSum:
        op = instr.opcode
        if op in ZERO_COST:
            return CostSum()
        if op == "transpose" and self._transpose_is_bitcast(instr):
            return CostSum()
        if op == "tuple":
            size = shape_bytes(instr.shape)
            return CostSum(bytes_accessed=size, bytes_written=size)
        rule = _COST_RULES.get(op)
        if rule is not None:
            return rule(self, instr)
        acc = self._default(instr)
        if op in ELEMENTWISE_FLOP:
            acc.flops = float(element_count(instr.shape))
        elif op in TRANSCENDENTAL:
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


_COST_RULES: dict[str, Callable[[ModuleCosts, hlo_pb2.HloInstructionProto], CostSum]] = {
    "dot": ModuleCosts._dot_cost,
    "convolution": ModuleCosts._convolution_cost,
    "reduce": ModuleCosts._reduce_cost,
    "reduce-window": ModuleCosts._reduce_window_cost,
    "map": ModuleCosts._map_cost,
    "select-and-scatter": ModuleCosts._select_and_scatter_cost,
    "slice": ModuleCosts._slice_cost,
    "dynamic-slice": ModuleCosts._dynamic_slice_cost,
    "dynamic-update-slice": ModuleCosts._dynamic_update_slice_cost,
    "gather": ModuleCosts._gather_cost,
    "scatter": ModuleCosts._scatter_cost,
    "all-reduce": ModuleCosts._all_reduce_cost,
    "all-reduce-start": ModuleCosts._all_reduce_cost,
    "sort": ModuleCosts._sort_cost,
    "fft": ModuleCosts._fft_cost,
    "rng": ModuleCosts._rng_cost,
    "rng-bit-generator": ModuleCosts._rng_cost,
    "triangular-solve": ModuleCosts._triangular_solve_cost,
    "cholesky": ModuleCosts._cholesky_cost,
    "call": ModuleCosts._call_cost,
    "async-start": ModuleCosts._call_cost,
    "while": ModuleCosts._while_cost,
    "conditional": ModuleCosts._conditional_cost,
    "custom-call": ModuleCosts._custom_call_cost,
    "fusion": ModuleCosts._fusion_cost,
}
