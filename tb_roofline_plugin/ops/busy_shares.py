"""Self time as a share of a device's busy time, for ops that run concurrently.

On XLA:CPU a device's ops run on several threads at once (independent thunks, and
asynchronous ops in flight while the dispatching thread goes on), so their spans overlap
and self times taken as spans would add up to more than the device's wall time. Two ops
that run together share the device: each instant is split equally among the ops running
then, so the self times add up to the device's busy time (the union of its op spans),
never more. A container (``while``, ``call``) does not run while an op nested in it does:
those parts of its span (``hidden``) are not its own.
"""

from __future__ import annotations

import numpy as np

from ..arrays import unique

_NO_I64 = np.zeros(0, np.int64)


def union_pieces(
    group: np.ndarray, begin_ps: np.ndarray, end_ps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of each group's spans as disjoint pieces (group, begin, end), from spans
    sorted by (group, begin); touching spans make one piece."""
    if not len(group):
        return _NO_I64, _NO_I64, _NO_I64
    ends, rank = np.unique(end_ps, return_inverse=True)
    width = len(ends)
    # The latest end so far within the group: a running maximum over keys banded by group
    # (an earlier group's keys are all below the group's own band).
    band = group.astype(np.int64) * width
    reach = ends[np.maximum.accumulate(band + rank.ravel()) - band]
    new = np.ones(len(group), bool)
    new[1:] = (group[1:] != group[:-1]) | (begin_ps[1:] > reach[:-1])
    starts = np.flatnonzero(new)
    return group[starts], begin_ps[starts], np.maximum.reduceat(end_ps, starts)


def _ranks(*parts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(np.concatenate(parts), return_inverse=True)`` by a stable sort: a line's
    begins (and nearly its ends) are sorted runs, which a merge sort takes in one pass each;
    the index is int32 where it fits (half the memory of the per-time columns). Each column
    goes once it is read (memory: the 1 GB profile's 14 M times)."""
    times_ps = np.concatenate(parts)
    order = np.argsort(times_ps, kind="stable")
    ordered = times_ps[order]
    del times_ps
    new = np.empty(len(ordered), bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    index = np.int32 if len(ordered) < np.iinfo(np.int32).max else np.int64
    rank = np.cumsum(new, dtype=index)
    np.subtract(rank, 1, out=rank)
    at = np.empty(len(ordered), index)
    at[order] = rank
    del order, rank
    return ordered[new], at


def _device_shares(begin_ps: np.ndarray, end_ps: np.ndarray, sign: np.ndarray | None) -> np.ndarray:
    """Per span (pieces of ``sign`` -1 taken out of their event's time): the integral over
    it of 1 / (spans running), the running count summed with the signs."""
    times, at = _ranks(begin_ps, end_ps)
    starts, stops = at[: len(begin_ps)], at[len(begin_ps) :]
    del at
    # The changes summed into the running count in place (memory: one column, not three).
    if sign is None:  # counts of whole events: integers, as the signed sums would be
        change = np.bincount(starts, minlength=len(times))
        change -= np.bincount(stops, minlength=len(times))
        running = np.cumsum(change, out=change)[:-1].astype(np.float64)
    else:
        change = np.bincount(starts, sign, len(times))
        change -= np.bincount(stops, sign, len(times))
        running = np.rint(np.cumsum(change, out=change)[:-1])  # running in [t_k, t_k+1)
    del change
    length = np.empty(len(times) - 1)
    np.subtract(times[1:], times[:-1], out=length)  # in int64, each then as a float
    del times
    weight = np.divide(length, running, out=length, where=running > 0)
    weight[running <= 0] = 0.0
    del running
    integral = np.empty(len(weight) + 1)
    integral[0] = 0.0
    np.cumsum(weight, out=integral[1:])
    del weight
    share = integral[stops]
    share -= integral[starts]
    return share if sign is None else sign * share


def busy_shares(
    begin_ps: np.ndarray,
    end_ps: np.ndarray,
    device: np.ndarray,
    hidden: tuple[np.ndarray, np.ndarray, np.ndarray] = (_NO_I64, _NO_I64, _NO_I64),
) -> np.ndarray:
    """Each event's self time (ps): its share of its device's busy time.

    An event runs over its span but for its ``hidden`` pieces (event, begin, end: the
    disjoint parts of a container's span its nested ops cover, inside the span); at each
    instant, the events of a device that run then share it equally. Summed over a
    device's events the shares are the union of their spans (each rounded down to a
    whole ps, so never more). One sort per device.
    """
    owner, hidden_begin, hidden_end = hidden
    devices = unique(np.asarray(device)).tolist()
    if len(devices) == 1 and not len(owner):  # one device, no containers: no copies
        shares = _device_shares(np.asarray(begin_ps), np.asarray(end_ps), None)
        return np.maximum(np.floor(shares, out=shares), 0).astype(np.int64)
    shares = np.zeros(len(begin_ps))
    for d in devices:
        mine = np.flatnonzero(device == d)
        covered = device[owner] == d
        events = np.concatenate([mine, owner[covered]])
        begin = np.concatenate([begin_ps[mine], hidden_begin[covered]])
        end = np.concatenate([end_ps[mine], hidden_end[covered]])
        sign = np.concatenate([np.ones(len(mine)), -np.ones(int(covered.sum()))])
        shares += np.bincount(events, _device_shares(begin, end, sign), len(shares))
    return np.maximum(np.floor(shares), 0).astype(np.int64)
