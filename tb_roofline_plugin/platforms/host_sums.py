"""XLA:CPU host lines' integer stats, all in one pass over a decoded piece's stats.

An XLA:CPU op event carries several integer stats (``program_id``, ``run_id``, the flow ids
``_p``/``_c``, ``device_ordinal``, ``_r``); ``EventTable.integers`` scans all of a piece's
stats once for each. The compiled ``_wire.host_integers`` takes them all in one walk; the
numpy path (no compiler, or ``TB_ROOFLINE_PURE=1``) asks ``EventTable.integers`` for each,
with the same bits (tests/test_host_sums.py compares both and raw events).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..xspace.event_table import EventTable, compiled_decoder

_wire: Any
try:
    from ..xspace import _wire  # type: ignore[attr-defined,no-redef]
except ImportError:  # built without a C compiler
    _wire = None


MAX_STATS = 16  # stats one compiled pass reads (HOST_MAX_STATS in _wire.c)


def compiled_host_sums() -> bool:
    """Whether the compiled pass is there (built, new enough, and not turned off)."""
    return compiled_decoder() and hasattr(_wire, "host_integers")


def integer_stats(
    table: EventTable, stat_ids: Sequence[int | None]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``table.integers(i)`` for each of ``stat_ids`` ((present, int64 bits) per event; an
    id of None: absent everywhere)."""
    wanted = [i for i in stat_ids if i is not None]
    if not wanted or len(wanted) > MAX_STATS or not compiled_host_sums():
        return [table.integers(i) for i in stat_ids]
    n = len(table)
    # A column each (not one block of all): memory as EventTable.integers' would be.
    has = [np.zeros(n, bool) for _ in wanted]
    bits = [np.zeros(n, np.int64) for _ in wanted]
    _wire.host_integers(
        np.ascontiguousarray(table.stat_event, np.int64),
        np.ascontiguousarray(table.stat_id, np.int64),
        np.ascontiguousarray(table.stat_kind, np.int8),
        np.ascontiguousarray(table.stat_int, np.int64),
        np.asarray(wanted, np.int64).tobytes(),
        has,
        bits,
    )
    out, row = [], 0
    for stat_id in stat_ids:
        if stat_id is None:
            out.append((np.zeros(n, bool), np.zeros(n, np.int64)))
        else:
            out.append((has[row], bits[row]))
            row += 1
    return out
