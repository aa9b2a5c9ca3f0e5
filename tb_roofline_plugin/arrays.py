"""Array operations numpy has, made linear-time for the keys profiles are full of.

Metadata ids, string codes, op and step numbers are small non-negative integers; numpy's
``unique`` sorts them (O(n log n), a third of a second per two million events). Counted
into a table as long as their range instead, the same answer takes a few passes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Keys spanning at most this many values per key (or this many values) are counted densely.
DENSE_SPAN_PER_KEY = 4
DENSE_SPAN_MIN = 1 << 16
_np_unique: Any = np.unique  # one signature whatever is asked for


def unique(
    keys: np.ndarray,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
) -> Any:
    """``np.unique`` of a 1-D array, with the same results (sorted distinct values, the
    first position of each, each key's slot, the counts), in linear time for integer keys
    whose range is small; other keys go to ``np.unique``."""
    keys = np.asarray(keys)
    asked = (return_index, return_inverse, return_counts)
    if keys.ndim != 1 or keys.dtype.kind not in "iu" or len(keys) == 0:
        return _np_unique(keys, *asked)
    low, high = int(keys.min()), int(keys.max())
    span = high - low + 1
    if span > max(DENSE_SPAN_PER_KEY * len(keys), DENSE_SPAN_MIN):
        return _np_unique(keys, *asked)
    slot_of_key = (keys - low).astype(np.intp) if low else keys.astype(np.intp, copy=False)
    counts = np.bincount(slot_of_key, minlength=span)
    present = counts > 0
    found = np.flatnonzero(present)
    results = [(found + low).astype(keys.dtype)]
    if return_index:
        first = np.full(span, len(keys), np.intp)
        np.minimum.at(first, slot_of_key, np.arange(len(keys), dtype=np.intp))
        results.append(first[found])
    if return_inverse:
        rank = np.cumsum(present, dtype=np.intp) - 1
        results.append(rank[slot_of_key])
    if return_counts:
        results.append(counts[found].astype(np.intp))
    return results[0] if len(results) == 1 else tuple(results)


def held_bytes(arrays) -> int:
    """The memory ``arrays`` hold: each buffer once, whatever views of it are given (a column
    shared by two names, a slice, a broadcast scalar standing for a column of zeros)."""
    owners: dict[int, int] = {}
    for array in arrays:
        owner = array
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        owners[id(owner)] = owner.nbytes
    return sum(owners.values())
