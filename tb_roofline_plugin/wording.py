"""Lists in messages, kept readable at any length: a few items named, many summarised."""

from __future__ import annotations

from collections.abc import Sequence

NAMED_AT_MOST = 5  # longer lists are a count and a range


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
