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
    shares = np.zeros(len(begin_ps))
    for d in np.unique(device).tolist():
        mine = np.flatnonzero(device == d)
        covered = device[owner] == d
        events = np.concatenate([mine, owner[covered]])
        begin = np.concatenate([begin_ps[mine], hidden_begin[covered]])
        end = np.concatenate([end_ps[mine], hidden_end[covered]])
        sign = np.concatenate([np.ones(len(mine)), -np.ones(int(covered.sum()))])
        times, at = np.unique(np.concatenate([begin, end]), return_inverse=True)
        at = at.ravel()
        starts, stops = at[: len(begin)], at[len(begin) :]
        change = np.bincount(starts, sign, len(times)) - np.bincount(stops, sign, len(times))
        running = np.rint(np.cumsum(change)[:-1])  # events running in [times[k], times[k+1])
        length = np.diff(times).astype(np.float64)
        weight = np.divide(length, running, out=np.zeros(len(length)), where=running > 0)
        integral = np.concatenate([[0.0], np.cumsum(weight)])
        shares += np.bincount(events, sign * (integral[stops] - integral[starts]), len(shares))
    return np.maximum(np.floor(shares), 0).astype(np.int64)
