"""Words shown to people: lists kept readable at any length (a few items named, many
summarised), and profile strings made safe where they are shown (a terminal, a spreadsheet).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

NAMED_AT_MOST = 5  # longer lists are a count and a range


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``1 step``, ``8 TensorCores``, ``1,500 steps``: a count and its noun, singular or plural."""
    return f"{count:,} {singular if count == 1 else plural or singular + 's'}"


def numbered(numbers: Sequence[int], noun: str) -> str:
    """``step 3``, ``steps 0, 4 and 7``; past ``NAMED_AT_MOST``: ``1,498 steps, 0–1,497``."""
    values = sorted(int(n) for n in numbers)
    if len(values) == 1:
        return f"{noun} {values[0]}"
    if len(values) <= NAMED_AT_MOST:
        return f"{noun}s {', '.join(map(str, values[:-1]))} and {values[-1]}"
    return f"{len(values):,} {noun}s, {values[0]:,}–{values[-1]:,}"


def named(names: Sequence[str], noun: str, at_most: int = NAMED_AT_MOST) -> str:
    """``op a``, ``ops a, b and c``; past ``at_most``: the first ones and how many more."""
    if len(names) == 1:
        return f"{noun} {names[0]}"
    if len(names) <= at_most:
        return f"{noun}s {', '.join(names[:-1])} and {names[-1]}"
    shown = ", ".join(names[:at_most])
    return f"{len(names):,} {noun}s ({shown} and {len(names) - at_most:,} more)"


# What a profile string may not do to a terminal: C0 and C1 controls and DEL (escape
# sequences retitle, clear or recolour it), bidi embeddings, overrides and isolates (which
# reorder the text around them) and the line and paragraph separators.
_TERMINAL_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]"
)


def _escaped(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with its controls and bidi formatting characters shown as ``\\x1b``,
    ``\\u202e``: what a profile names is printed, never obeyed. One line stays one line."""
    return _TERMINAL_UNSAFE.sub(_escaped, text)


# The first characters with which a spreadsheet reads a cell as a formula (or, tab and CR,
# shifts it into one): the tab's rule (frontend/format.js csvCell).
SPREADSHEET_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """A CSV cell that a spreadsheet shows and never runs: a string starting as a formula
    gets a leading ``'``; numbers and other values are returned as they are."""
    if isinstance(value, str) and value.startswith(SPREADSHEET_FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_safe_all(values) -> list:
    """``spreadsheet_safe`` of each value of a column (a list or an array)."""
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    starts = SPREADSHEET_FORMULA_STARTS
    return [
        "'" + v if isinstance(v, str) and v.startswith(starts) else v  # spreadsheet_safe, inlined
        for v in values
    ]
