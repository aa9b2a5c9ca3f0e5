"""What a reader of XLA's HLO dumps knows an instruction by: its shapes and one line of its text.

``%fusion.3 = bf16[8,1024] fusion(bf16[8,512] %p0, ...), kind=kLoop, calls=%fused.3``, printed
from the HloInstructionProto (GPU and CPU profiles) or taken from the text a TPU op's event
metadata carries (its name). Layouts are left out (``bf16[8,1024]{1,0}`` reads
``bf16[8,1024]``) and every text is cut at ``TEXT_CHARS``. An op's shapes read operands first:
``bf16[8,512], bf16[512,1024] → bf16[8,1024]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..protos import hlo_pb2
from .cost.engine import ModuleCosts
from .cost.shapes import TOKEN, TUPLE, dtype_name, element_bytes, roofline_dtype

TEXT_CHARS = 160  # an op's HLO line and its shapes, at most (then an ellipsis)
ELLIPSIS = "…"
ARROW = " → "  # between an op's operand shapes and its result shape


class OpText(NamedTuple):
    """How an op reads to its author: shapes, HLO line and the framework op it came from."""

    shapes: str = ""
    hlo_text: str = ""
    framework_op: str = ""  # JAX/TF op_name (``jit(f)/jit(main)/dot_general``), ...
    code_line: str = ""  # file:line where the op's own metadata has none (a fusion's fused ops')


def shortened(text: str, limit: int = TEXT_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters (the last one an ellipsis)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def shape_text(shape: hlo_pb2.ShapeProto) -> str:
    """``bf16[8,1024]``, ``(f32[2], u32[])``, ``token[]``: XLA's shape without its layout."""
    if shape.element_type == TUPLE:
        return "(" + ", ".join(shape_text(s) for s in shape.tuple_shapes) + ")"
    if shape.element_type == TOKEN:
        return "token[]"
    return f"{dtype_name(shape.element_type)}[{','.join(map(str, shape.dimensions))}]"


def shapes_text(operands: Sequence[str], result: str) -> str:
    """An op's shapes, operands first: ``bf16[8,512], bf16[512,1024] → bf16[8,1024]``."""
    return shortened(", ".join(operands) + ARROW + result if operands else result)


def _braced(values) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def _attributes(instr: hlo_pb2.HloInstructionProto, computation: Callable[[int], str]) -> list[str]:
    """The attributes XLA prints after the operands that tell ops apart (a selection)."""
    op = instr.opcode
    out: list[str] = []
    if op == "fusion" and instr.fusion_kind:
        out.append(f"kind={instr.fusion_kind}")
    if op == "custom-call" and instr.custom_call_target:
        out.append(f'custom_call_target="{instr.custom_call_target}"')
    if op == "dot":
        dims = instr.dot_dimension_numbers
        for side in ("lhs", "rhs"):
            batch = getattr(dims, f"{side}_batch_dimensions")
            if batch:
                out.append(f"{side}_batch_dims={_braced(batch)}")
        for side in ("lhs", "rhs"):
            contracting = getattr(dims, f"{side}_contracting_dimensions")
            out.append(f"{side}_contracting_dims={_braced(contracting)}")
    if op == "convolution" and instr.window.dimensions:
        sizes = "x".join(str(d.size) for d in instr.window.dimensions)
        out.append(f"window={{size={sizes}}}")
        if instr.feature_group_count > 1:
            out.append(f"feature_group_count={instr.feature_group_count}")
    if op == "get-tuple-element":
        out.append(f"index={instr.tuple_index}")
    if op == "compare" and instr.comparison_direction:
        out.append(f"direction={instr.comparison_direction}")
    if op == "slice" and instr.slice_dimensions:
        ranges = ", ".join(f"[{s.start}:{s.limit}]" for s in instr.slice_dimensions)
        out.append(f"slice={{{ranges}}}")
    if instr.dimensions and op not in ("parameter", "constant"):
        out.append(f"dimensions={_braced(instr.dimensions)}")
    called = [computation(i) for i in instr.called_computation_ids]
    if op == "while" and len(called) == 2:
        out += [f"condition=%{called[0]}", f"body=%{called[1]}"]
    elif called and op in ("fusion", "call", "async-start", "custom-call"):
        out.append("calls=" + ", ".join(f"%{c}" for c in called))
    elif called:
        out.append("to_apply=" + ", ".join(f"%{c}" for c in called))
    return out


def instruction_text(
    instr: hlo_pb2.HloInstructionProto,
    operands: Sequence[hlo_pb2.HloInstructionProto],
    computation: Callable[[int], str],
    shapes: tuple[Sequence[str], str] | None = None,
) -> str:
    """The instruction's line as XLA prints it (without layouts, metadata or backend config),
    shortened; ``computation(id)`` names a called computation; ``shapes``: the operands' and
    the result's shape texts when already made."""
    operand_shapes, result = shapes or ([shape_text(o.shape) for o in operands], None)
    if instr.opcode == "parameter":
        inside = str(instr.parameter_number)
    elif instr.opcode == "constant":
        inside = "..."
    else:
        inside = ", ".join(f"{s} %{o.name}" for s, o in zip(operand_shapes, operands))
    text = f"%{instr.name} = {result or shape_text(instr.shape)} {instr.opcode}({inside})"
    attributes = _attributes(instr, computation)
    return shortened(", ".join([text, *attributes]))


def source_line(file_name: str, line: int, stack: str) -> str:
    """``file:line`` of an op's metadata: its file and line, else the innermost frame of its
    stack (``file:line:column`` lines, innermost first: JAX 0.10 writes only the stack)."""
    if file_name:
        return f"{file_name}:{line}" if line > 0 else file_name
    frame = stack.split("\n", 1)[0]
    head, sep, column = frame.rpartition(":")
    return head if sep and column.isdigit() and ":" in head else frame


MAX_FUSION_DEPTH = 16  # nested fusions searched for the op's origin, at most


def _origin(module: ModuleCosts, instr: hlo_pb2.HloInstructionProto):
    """The instruction whose metadata says what made ``instr``: itself when it has an
    ``op_name``, else (a fusion XLA left without metadata) the first fused instruction that
    has one, nested fusions searched; None when none has."""
    pending, seen = [instr], set[int]()
    while pending:
        current = pending.pop(0)
        if current.metadata.op_name:
            return current
        for computation_id in current.called_computation_ids:
            if computation_id not in seen and len(seen) < MAX_FUSION_DEPTH:
                seen.add(computation_id)
                pending += module.computation_instructions(computation_id)
    return None


def op_text(module: ModuleCosts, name: str) -> OpText | None:
    """The named instruction's shapes, line, framework op (its metadata ``op_name``, else its
    fused instructions') and, when its own metadata has no source, the source line of the
    fused instruction that has the op_name; None when the module has no such instruction."""
    instr = module.instruction(name)
    if instr is None:
        return None
    operands = module.operands(instr)
    origin = _origin(module, instr) if instr.opcode == "fusion" else instr
    code_line = ""
    if origin is not None and origin is not instr and not source_line(*module.source(name)):
        code_line = source_line(*module.source(origin.name))
    operand_shapes, result = [shape_text(o.shape) for o in operands], shape_text(instr.shape)
    return OpText(
        shapes=shapes_text(operand_shapes, result),
        hlo_text=instruction_text(
            instr, operands, module.computation_name, (operand_shapes, result)
        ),
        framework_op=origin.metadata.op_name if origin is not None else "",
        code_line=code_line,
    )


# --- text a profile carries (TPU event metadata) ------------------------------------------------

_LAYOUT = re.compile(r"\]\{[^{}]*\}")  # the layout after a shape's dimensions
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\]")
_OPENING, _CLOSING = "([{", ")]}"


def without_layouts(text: str) -> str:
    """HLO text with its shapes' layouts (``{3,2,1,0:T(8,128)}``) left out."""
    return _LAYOUT.sub("]", text)


def _closing(text: str, start: int) -> int:
    """The position of the bracket closing the one at ``start`` (-1: none)."""
    depth = 0
    for at in range(start, len(text)):
        if text[at] in _OPENING:
            depth += 1
        elif text[at] in _CLOSING:
            depth -= 1
            if depth == 0:
                return at
    return -1


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside any bracket."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(text):
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:at].strip())
            start = at + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


class ParsedLine(NamedTuple):
    """The parts of one HLO line (layouts left out) an op is known by."""

    opcode: str
    operands: list[str]  # operand shapes
    result: str


def parsed_line(text: str) -> ParsedLine | None:
    """``%name = SHAPE opcode(SHAPE %a, SHAPE %b), ...`` in parts; None for other text."""
    text = without_layouts(text)
    _, equals, rest = text.partition(" = ")
    if not equals:
        return None
    rest = rest.lstrip()
    if rest.startswith("("):
        end = _closing(rest, 0)
        if end < 0:
            return None
        result, rest = rest[: end + 1], rest[end + 1 :].lstrip()
    else:
        result, _, rest = rest.partition(" ")
    opcode, paren, after = rest.partition("(")
    if not paren or not opcode or " " in opcode.strip():
        return None
    end = _closing("(" + after, 0)
    inside = after[: end - 1] if end > 0 else after
    operands = [part.rsplit(" %", 1)[0] for part in _top_level(inside) if " %" in part]
    return ParsedLine(opcode.strip(), operands, result)


def _arrays(shape: str) -> list[tuple[str, int]]:
    """(XLA type name, bytes) of each array of a shape's text (tokens are not arrays)."""
    out = []
    for name, dims in _ARRAY.findall(shape):
        size = element_bytes(name)
        if size:
            count = 1
            for d in dims.split(","):
                count *= int(d) if d else 1
            out.append((name, count * size))
    return out


CONTRACTIONS = ("dot", "convolution", "custom-call")


def line_dtype(line: ParsedLine) -> str:
    """The roofline dtype of an op from its text, by the cost model's rule (``ModuleCosts``):
    a contraction's lhs, else the largest array operand ("" when none). A fusion's
    contraction is inside it and not in its line: by its largest operand."""
    arrays = [_arrays(shape) for shape in line.operands]
    if line.opcode in CONTRACTIONS and arrays and arrays[0]:
        return roofline_dtype(arrays[0][0][0])
    leaves = [a for operand in arrays for a in operand]
    if not leaves:
        return ""
    largest = max(range(len(leaves)), key=lambda i: (leaves[i][1], -i))
    return roofline_dtype(leaves[largest][0])
