"""XLA:CPU control flow (``while``, ``call``, ...): the spans of containers and the work of
loops whose trip count XLA does not know.

XLA:CPU records a container and the ops it runs as separate op events, the nested ones
often on other threads or ending after it, so nesting on a line misses them: the loop
and its body would both hold the same time. A nested op belongs to the container event
of its program and device whose flight holds its start. The container ends when its own
event or its last nested op ends (its ``end:`` event can come much later, while the ops
after the loop run); the parts of its span no nested op covers (between iterations) are
its own (``busy_shares``).

A container's row carries its whole nested work (``ModuleCosts.work``), loops by XLA's
``known_trip_count``. A ``while`` without one (TensorFlow's gradient loops, a JAX
``while_loop`` on data) ran as many iterations as its body ran: each of its events is
costed as the most executions of one of its body's instructions among the op events it
holds (its condition's executions less one when no body op has an event; one iteration,
XLA's count, when neither has), and a container holding such loops gains their
iterations beyond the one ``work`` counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..hlo.cost.engine import ModuleCosts
from ..ops.busy_shares import union_pieces

_NO_I64 = np.zeros(0, np.int64)
_NO_WORK = np.zeros((0, 3))


@dataclass
class ControlFlow:
    """What the containers' nested op events say about them."""

    # Parts of containers' spans their nested ops cover (event, begin ps, end ps).
    hidden: tuple[np.ndarray, np.ndarray, np.ndarray]
    # Work of container events beyond one static execution (``ModuleCosts.work``): event
    # index and (flops, bytes accessed, bytes written); an event may appear more than once.
    extra_event: np.ndarray = field(default_factory=lambda: _NO_I64)
    extra_work: np.ndarray = field(default_factory=lambda: _NO_WORK)


def _work_vector(module: ModuleCosts, name: str) -> np.ndarray:
    cost = module.work(name)
    if cost is None:
        return np.zeros(3)
    return np.array([cost.flops, cost.bytes_accessed, cost.bytes_written], np.float64)


def _most_executions(group: np.ndarray, op: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """Per container event (0..count-1): the most events one op of ``rows`` has among
    the nested events (their container event ``group``, their ``op``)."""
    out = np.zeros(count, np.int64)
    mine = np.isin(op, rows)
    if not mine.any():
        return out
    width = int(op.max()) + 1
    keys, counts = np.unique(group[mine] * width + op[mine], return_counts=True)
    np.maximum.at(out, keys // width, counts)
    return out


def observed_trips(
    group: np.ndarray,
    op: np.ndarray,
    body_rows: np.ndarray,
    condition_rows: np.ndarray,
    count: int,
) -> np.ndarray:
    """Iterations each of a loop's ``count`` events ran, from its held nested op events
    (container event ``group``, ``op`` row): its body's most executed instruction's
    executions; else its condition's less one; else 1 (XLA's count)."""
    body = _most_executions(group, op, body_rows, count)
    condition = _most_executions(group, op, condition_rows, count)
    return np.where(body > 0, body, np.where(condition > 0, condition - 1, 1))


def control_flow(
    op: np.ndarray,
    op_keys: list[tuple[int, str]],
    begin_ps: np.ndarray,
    end_ps: np.ndarray,
    own_end_ps: np.ndarray,
    device: np.ndarray,
    modules: dict[int, ModuleCosts],
) -> ControlFlow:
    """Spans of control-flow op events from the ops they run (``end_ps`` updated in place),
    and the extra work of loops without a known trip count and of their containers.

    ``op`` is each event's row of ``op_keys`` (program id, instruction name), ``end_ps``
    the end of its flight, ``own_end_ps`` that of its own event. One pass per distinct
    container op.
    """
    owners, begins, ends = [_NO_I64], [_NO_I64], [_NO_I64]
    if not len(op):
        return ControlFlow((_NO_I64, _NO_I64, _NO_I64))
    row_of = {key: j for j, key in enumerate(op_keys)}
    loops: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # while without a trip count
    for row, (program, name) in enumerate(op_keys):
        module = modules.get(program)
        parts = module.unknown_trip_loop(name) if module is not None else None
        if parts is not None:
            body, condition = (
                np.asarray([row_of[(program, n)] for n in p if (program, n) in row_of], np.int64)
                for p in parts
            )
            loops[row] = (body, condition)
    loop_rows = np.asarray(sorted(loops), np.int64)
    own_events, own_work = [_NO_I64], [_NO_WORK]  # each loop event's iterations beyond one
    held_by, held = [_NO_I64], [_NO_I64]  # container event, loop event nested in it
    for row, (program, name) in enumerate(op_keys):
        module = modules.get(program)
        if module is None or not module.is_container(name):
            continue
        inner = module.nested(name)
        inner_ops = [row_of[(program, n)] for n in inner if (program, n) in row_of]
        if not inner_ops:
            continue
        mine = np.flatnonzero(op == row)
        nested = np.flatnonzero(np.isin(op, inner_ops))
        # Container events in (device, begin) order; a nested op goes to the last one of
        # its device starting at or before it, if that one is still in flight.
        order = mine[np.lexsort((begin_ps[mine], device[mine]))]
        slot = np.full(len(nested), -1, np.int64)
        for d in np.unique(device[order]).tolist():
            on_c = np.flatnonzero(device[order] == d)
            on_n = np.flatnonzero(device[nested] == d)
            where = np.searchsorted(begin_ps[order[on_c]], begin_ps[nested[on_n]], side="right")
            slot[on_n] = np.where(where > 0, on_c[np.maximum(where - 1, 0)], -1)
        inside = slot >= 0
        inside[inside] &= begin_ps[nested[inside]] < end_ps[order[slot[inside]]]
        group, nested = slot[inside], nested[inside]
        if row in loops:
            trips = observed_trips(group, op[nested], *loops[row], len(order))
            own_events.append(order)
            own_work.append((trips - 1)[:, None] * _work_vector(module, name)[None, :])
        is_loop = np.isin(op[nested], loop_rows)
        held_by.append(order[group[is_loop]])
        held.append(nested[is_loop])
        last = np.full(len(order), np.iinfo(np.int64).min)
        np.maximum.at(last, group, end_ps[nested])
        c_begin = begin_ps[order]
        c_end = np.where(
            last > np.iinfo(np.int64).min, np.maximum(own_end_ps[order], last), end_ps[order]
        )
        begin = np.maximum(begin_ps[nested], c_begin[group])
        end = np.minimum(end_ps[nested], c_end[group])
        sort = np.lexsort((begin, group))
        sort = sort[end[sort] > begin[sort]]
        piece, piece_begin, piece_end = union_pieces(group[sort], begin[sort], end[sort])
        end_ps[order] = c_end
        owners.append(order[piece])
        begins.append(piece_begin)
        ends.append(piece_end)
    hidden = (np.concatenate(owners), np.concatenate(begins), np.concatenate(ends))
    loop_event, loop_work = np.concatenate(own_events), np.concatenate(own_work)
    # A container holding a loop gains that loop's iterations beyond one (its ``work``
    # counts the loop once per execution of it).
    by, nested_loop = np.concatenate(held_by), np.concatenate(held)
    order = np.argsort(loop_event, kind="stable")
    at = np.minimum(np.searchsorted(loop_event[order], nested_loop), max(len(order) - 1, 0))
    found = loop_event[order][at] == nested_loop if len(order) else np.zeros(0, bool)
    return ControlFlow(
        hidden,
        np.concatenate([loop_event, by[found]]),
        np.concatenate([loop_work, loop_work[order][at[found]]]),
    )
