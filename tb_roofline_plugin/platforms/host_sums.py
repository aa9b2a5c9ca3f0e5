"""XLA:CPU host lines read in one compiled pass: a piece's ops, ends, executions and step
roots straight from the line's bytes, or its integer stats from its decoded stats.

``_wire.host_ops`` walks a piece of a host line once and keeps only what the CPU reader
uses (the op events' columns, the ``end:`` events' flow ids, executions, schedules and step
roots); ``cpu.read_host_parts`` falls back to the piece's EventTable where it cannot
(``compiled_host_ops``; tests/test_host_ops.py compares both and hand-made events). There,
an XLA:CPU op event carries several integer stats (``program_id``, ``run_id``, the flow ids
``_p``/``_c``, ``device_ordinal``, ``_r``); ``EventTable.integers`` scans all of a piece's
stats once for each. The compiled ``_wire.host_integers`` takes them all in one walk; the
numpy path (no compiler, or ``TB_ROOFLINE_PURE=1``) asks ``EventTable.integers`` for each,
with the same bits (tests/test_host_sums.py compares both and raw events).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arrays import unique
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


# _wire.host_ops' flag bits of an event metadata id (HO_IS_* in _wire.c).
IS_END, IS_EXECUTE, IS_SCHEDULE = 1, 2, 4
MAX_TABLE_ID = 1 << 24  # ids past this: no lookup table (bytes per id), the array path


@dataclass
class HostOpTables:
    """What ``_wire.host_ops`` looks ids up in, made once per plane: the flags of each event
    metadata id (an ``end:``, execution or schedule event), whether each stat metadata id
    names a non-empty string, and those names."""

    flags: bytes
    named: bytes
    stat_name: dict[int, str]


def host_op_tables(
    stat_name: dict[int, str], end_meta: np.ndarray, execute_meta: np.ndarray, schedule_meta
) -> HostOpTables | None:
    """The tables, or None where the compiled pass cannot take them (not built, or an id
    too large or negative for a table)."""
    if not compiled_host_sums() or not hasattr(_wire, "host_ops"):
        return None
    named_ids = np.fromiter((i for i, name in stat_name.items() if name), np.int64)
    marked = [(end_meta, IS_END), (execute_meta, IS_EXECUTE), (schedule_meta, IS_SCHEDULE)]
    every = np.concatenate([named_ids] + [np.asarray(ids, np.int64) for ids, _ in marked])
    if len(every) and (every.min() < 0 or every.max() >= MAX_TABLE_ID):
        return None
    named = np.zeros(int(named_ids.max()) + 1 if len(named_ids) else 0, np.uint8)
    named[named_ids] = 1
    meta_ids = np.concatenate([np.asarray(ids, np.int64) for ids, _ in marked])
    flags = np.zeros(int(meta_ids.max()) + 1 if len(meta_ids) else 0, np.uint8)
    for ids, bit in marked:
        flags[np.asarray(ids, np.int64)] |= bit
    return HostOpTables(flags.tobytes(), named.tobytes(), stat_name)


@dataclass
class HostOpPiece:
    """A piece of a host line as ``cpu.read_host_parts`` keeps it: the step roots, the op
    events' columns, and the ops' hlo_op names (distinct texts, each op's index)."""

    roots: tuple[np.ndarray, np.ndarray, np.ndarray]  # step_num (NaN: none), begin, end
    columns: dict[str, np.ndarray]
    texts: list[str]
    text_index: np.ndarray


def compiled_host_ops(
    line, start: int, max_events: int, stat_ids: Sequence[int | None], tables: HostOpTables
) -> tuple[int, HostOpPiece] | None:
    """One compiled pass over a piece of a host line read from the file's bytes (from byte
    ``start``, at most ``max_events`` events): the byte offset to go on from and the piece,
    the same as the array path reads from the piece's EventTable; None where the array path
    must read it (``_wire.host_ops``' docstring says when)."""
    raw = getattr(line, "raw", None)
    if raw is None:
        return None
    out = _wire.host_ops(
        raw, line.timestamp_ns, start, max_events, list(stat_ids), tables.flags, tables.named
    )
    if out is None:
        return None
    i64 = [np.frombuffer(column, np.int64) for column in out[1:8]]
    begin, end, flow, program, run, device, hlo = i64
    has_flow, has_run = (np.frombuffer(column, bool) for column in out[8:10])
    flow_ids, flow_end, execute_begin, execute_end, schedule = (
        np.frombuffer(column, np.int64) for column in out[10:15]
    )
    root_begin, root_end = (np.frombuffer(column, np.int64) for column in out[16:18])
    roots = (np.frombuffer(out[15], np.float64), root_begin, root_end)
    columns = {
        "flow_ids": flow_ids,
        "flow_end": flow_end,
        "execute": np.stack([execute_begin, execute_end]),
        "schedule": schedule,
        "begin": begin,
        "end": end,
        "flow": flow,
        "has_flow": has_flow,
        "program": program.view(np.uint64),
        "run": run,
        "has_run": has_run,
        "device": device,
    }
    refs, index = unique(hlo, return_inverse=True)
    texts = [tables.stat_name[ref] for ref in refs.tolist()]
    return out[0], HostOpPiece(roots, columns, texts, index.reshape(-1))
