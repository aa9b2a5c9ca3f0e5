"""Fusions (``docs/hlo-cost.md`` §4): the fused computation's FLOPs, and bytes by XLA's
fusion rule (outputs plus what each parameter is really read for); rules as methods that
``engine.ModuleCosts`` inherits."""

from __future__ import annotations

from collections.abc import Iterator

from .context import CostContext
from .costs import CostSum
from .library_calls import TRITON_GEMM_KINDS, fusion_backend_kind
from .shapes import element_count, is_array, is_tuple, leaf_bytes, shape_bytes


class FusionCosts(CostContext):
    """The fusion rule, mixed into ``engine.ModuleCosts``."""

    # --- fusions ---

    def _fusion_cost(self, instr) -> CostSum:
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
            kind = fusion_backend_kind(instr)
            if kind in TRITON_GEMM_KINDS:
                return self._triton_gemm_fusion_cost(instr, comp)
            for inner_instr in comp.instructions:
                if inner_instr.opcode in ("gather", "scatter"):
                    self._notes[instr.id] = f"custom fusion costed as its {inner_instr.opcode}"
                    acc = CostSum()
                    acc.add(self._instruction_cost(inner_instr))
                    return acc
        acc = CostSum()
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
        if not is_tuple(shape):
            return shape_bytes(shape)
        total = 0.0
        tuple_root = root if root is not None and root.opcode == "tuple" else None
        for i, element in enumerate(shape.tuple_shapes):
            if tuple_root is not None and i < len(tuple_root.operand_ids) and is_array(element):
                dus = update_bytes(self._operand(tuple_root, i))
                if dus is not None:
                    total += dus
                    continue
            total += leaf_bytes(element)
        return total

    def _parameter_bytes(self, param) -> float:
        """Read bytes of a fusion parameter; tuple parameters are read leaf by leaf via GTEs."""
        if not is_tuple(param.shape):
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
        if is_tuple(shape):
            for i, s in enumerate(shape.tuple_shapes):
                yield from FusionCosts._leaf_indices(s, prefix + (i,))
        elif is_array(shape):
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
