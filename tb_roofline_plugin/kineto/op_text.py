"""What a PyTorch op row reads as (json and UI only): its recorded input shapes, the
``nn.Module`` it ran in and the line of Python that called it.

An op row holds every execution of one op name, so each text is the one most of its
executions have, with ``(+N more)`` when they differ. Shapes come from ``Input Dims`` and
``Input type`` (``bf16[8944,1024], bf16[1024,1024]``; scalars by their ``Concrete Inputs``).
A trace recorded ``with_stack=True`` has ``python_function`` spans around the ops on their
thread (``model.py(31): forward``, ``nn.Module: Linear_0`` with ``with_modules``); older
Kineto wrote a ``Call stack`` arg instead (``file.py(12): fn;...``, innermost first). The
source is the innermost frame outside PyTorch's own code and the interpreter's built-ins;
the module, the path of ``nn.Module`` spans holding the op (``LM_0/LSTM_0``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .aten_cost import element_type

TEXT_CHARS = 160  # a text at most (then an ellipsis), as the HLO ops' (``hlo.text``)
ELLIPSIS = "…"
MODULE_PREFIX = "nn.Module: "
_FRAME = re.compile(r"^(.*)\((\d+)\): ")  # "path/file.py(31): forward"
_INSTALLED = re.compile(r"^.*/(site|dist)-packages/")  # as newer Kineto writes paths
_TORCH_CODE = re.compile(r"(^|/)torch/")  # PyTorch's own frames (site-packages/torch/...)
# Names of integer and other types that have no roofline dtype, as short as XLA's.
_TYPE_NAMES = {
    "unsigned char": "uint8",
    "signed char": "int8",
    "short int": "int16",
    "int": "int32",
    "long int": "int64",
    "long": "int64",
    "bool": "bool",
}


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def _cut_left(text: str, limit: int = TEXT_CHARS) -> str:
    """The end of a long path is what tells it apart: the start is cut."""
    return text if len(text) <= limit else ELLIPSIS + text[len(text) - limit + 1 :]


def _type_name(recorded: object) -> str | None:
    """A tensor input's element type as the HLO ops name theirs (fp32, bf16, int64); None
    for an input that is not a tensor."""
    found = element_type(recorded)
    if found is None:
        return None
    return found[0] or _TYPE_NAMES.get(str(recorded).strip().lower(), str(recorded))


def inputs_text(dims: object, types: object, concrete: object) -> str:
    """An execution's recorded inputs: tensors as ``type[dims]``, other inputs by their
    concrete value (left out without one); "" when nothing was recorded."""
    dims_list = dims if isinstance(dims, list) else []
    types_list = types if isinstance(types, list) else []
    values = concrete if isinstance(concrete, list) else []
    parts = []
    for i in range(max(len(dims_list), len(types_list))):
        shape = dims_list[i] if i < len(dims_list) else []
        kind = types_list[i] if i < len(types_list) else ""
        # Older Kineto names scalar inputs by their IValue tag (Int, Bool, Double).
        scalar = shape == [] and str(kind)[:1].isupper() and "::" not in str(kind)
        name = None if scalar else _type_name(kind)
        if name is not None and isinstance(shape, list):
            parts.append(f"{name}[{','.join(map(str, shape))}]")
        elif i < len(values) and values[i] not in ("", None):
            parts.append(str(values[i]))
    return _cut(", ".join(parts))


def frame_source(frame: str) -> str:
    """``path/file.py(31): forward`` -> ``path/file.py:31``; "" for anything else."""
    match = _FRAME.match(frame)
    if not match:
        return ""
    path = _INSTALLED.sub("", match.group(1))
    return f"{path}:{match.group(2)}"


def is_user_frame(frame: str) -> bool:
    """A Python frame of the user's code: a file, not PyTorch's own nor a built-in."""
    match = _FRAME.match(frame)
    if match is None:
        return False
    path = match.group(1)
    return not path.startswith("<") and not _TORCH_CODE.search(path)


def stack_source(stack: str) -> str:
    """The source of a ``Call stack`` arg (frames joined by ``;``, innermost first): its
    innermost user frame's ``file:line``; "" when it has none."""
    for frame in stack.split(";"):
        frame = frame.strip()
        if is_user_frame(frame):
            return frame_source(frame)
    return ""


def per_row(rows: int, op: np.ndarray, value: np.ndarray, texts: Sequence[str]) -> list[str]:
    """For each of ``rows`` op rows: the text of the value most of its executions have
    (``op``: each execution's row, ``value``: its index into ``texts``, -1: none; ties: the
    first value), with ``(+N more)`` for the N other texts its executions have."""
    out = [""] * rows
    # Equal texts are one value; an empty one is none.
    canonical: dict[str, int] = {"": -1}
    lookup = np.array([canonical.setdefault(t, len(canonical) - 1) for t in texts] + [-1])
    texts = list(canonical)[1:]
    value = lookup[np.where(value >= 0, value, len(lookup) - 1)]
    keep = (value >= 0) & (op >= 0)
    if not keep.any():
        return out
    width = len(texts)
    pairs, counts = np.unique(op[keep] * width + value[keep], return_counts=True)
    row, chosen = np.divmod(pairs, width)
    # Per row: its pairs by most executions (stable: the smaller value first on ties).
    order = np.lexsort((chosen, -counts, row))
    starts = np.flatnonzero(np.r_[True, row[order][1:] != row[order][:-1]])
    ends = np.r_[starts[1:], len(order)]
    for start, end in zip(starts.tolist(), ends.tolist()):
        best = texts[int(chosen[order[start]])]
        others = end - start - 1
        out[int(row[order[start]])] = best + (f" (+{others} more)" if others else "")
    return out


def module_paths(names: Sequence[str], parent: np.ndarray) -> list[str]:
    """The path of each ``nn.Module`` span (``LM_0/LSTM_0``, outermost first), given the
    spans' names and each one's parent span (-1: none; parents come first)."""
    paths: list[str] = []
    for name, up in zip(names, parent.tolist()):
        own = name[len(MODULE_PREFIX) :] if name.startswith(MODULE_PREFIX) else name
        paths.append(f"{paths[up]}/{own}" if up >= 0 else own)
    return [_cut_left(p) for p in paths]
