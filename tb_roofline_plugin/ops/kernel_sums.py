"""GPU kernels summed per op and per (step, op): what the GPU reader bins, in one pass.

A GPU profile holds millions of kernels; the reader needs, per op and per (step, op)
cell, their count, executions (``platforms.gpu.execution_starts``), time and the flops
and bytes stats on the events; per GPU plane the first start, last end, summed time and
busy time (the union of its streams' spans); per step its device time and launches whose
kernel never ran; the kernels without an op, by kernel name; and the kernels no step
claims. With the compiled decoder that is one C pass over the stream lines' bytes
(``_wire.kernel_sums``): decode, attribution key (the op of the kernel's program,
``hlo_op``, ``tf_op`` and name: asked of the reader once per new key), launch, step window,
sums; nothing per kernel but its span, kept for the busy time. Otherwise, or where the pass
declines (events out of time order or out of range, a stat twice in an event, string
``hlo_op``/``tf_op`` values, graph launches), the same sums from the kernels as arrays
(``array_kernel_sums``). Both give the same bits: each float sum adds its kernels in
reading order (planes, lines, events), from 0.0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..arrays import unique
from ..xspace.event_table import _wire, compiled_decoder
from .busy_shares import union_pieces

SUMS = ("count", "executions", "time_ps", "event_flops", "event_bytes")
# The kernel stats the pass reads, in the order of its stat ids.
KERNEL_SUM_STATS = ("hlo_op", "program_id", "tf_op", "correlation_id", "flops", "bytes_accessed")
# attribute(plane, program_id, hlo kind, hlo ref, tf kind, tf ref, metadata id) -> (op, kernel)
Attribute = Callable[[int, int, int, int, int, int, int], tuple[int, int]]


@dataclass
class KernelSums:
    """The sums of a host's GPU kernels; float64 sums unless said (``SUMS`` each)."""

    events: int
    op: np.ndarray  # int64, ascending: ops with kernels (of the kept plane)
    per_op: dict[str, np.ndarray]
    cell_step: np.ndarray  # int64 per (step, op) cell, sorted by step, then op
    cell_op: np.ndarray
    per_cell: dict[str, np.ndarray]
    unattributed_kernel: np.ndarray  # int64 kernel-name codes without an op, first seen first
    unattributed_count: np.ndarray
    unattributed_ps: np.ndarray
    plane_first_ps: np.ndarray  # int64 per plane (int64 max where it has no kernel)
    plane_last_ps: np.ndarray  # int64 (int64 min where none)
    plane_summed_ps: np.ndarray  # every kernel's time summed (all planes, whatever is kept)
    plane_busy_ps: np.ndarray  # the union of the plane's kernel spans
    step_total_ps: np.ndarray  # int64 per step: device time (GPUs kept)
    step_missing: np.ndarray  # int64 per step: its launches whose kernel is not in the profile
    unclaimed: int  # kernels (kept) no step claims, and their time (ps)
    unclaimed_ps: int


def compiled_kernel_sums(
    lines: list,
    planes: list[int],
    stat_ids: list[list[int | None]],
    attribute: Attribute,
    launches: tuple[np.ndarray, np.ndarray],
    windows: tuple[np.ndarray, np.ndarray] | None,
    n_planes: int,
    only: int,
) -> KernelSums | None:
    """``_wire.kernel_sums`` of the stream lines (LineViews) of GPU planes (``planes``: each
    line's plane index; ``stat_ids``: its plane's ids of ``KERNEL_SUM_STATS``); ops as
    ``attribute`` gives them. ``launches``: (uint64 ids ascending, int64 begin ps);
    ``windows``: step (begin, end) ps, begins ascending (None: no steps); ``only``: the plane
    kept (-1: all). None without the compiled decoder or where the pass declines."""
    if not compiled_decoder() or any(getattr(line, "raw", None) is None for line in lines):
        return None
    ids, times = (np.ascontiguousarray(a, t) for a, t in zip(launches, (np.uint64, np.int64)))
    begin = end = None
    if windows is not None:
        begin, end = (np.ascontiguousarray(w, np.int64) for w in windows)
        if len(begin) > 1 and (np.diff(begin) < 0).any():
            return None  # steps out of order: the array path's searchsorted
    out = _wire.kernel_sums(
        [line.raw for line in lines],
        [int(line.timestamp_ns) for line in lines],
        planes,
        stat_ids,
        attribute,
        ids,
        times,
        begin,
        end,
        n_planes,
        only,
    )
    if out is None:
        return None
    events, unclaimed, unclaimed_ps = out[:3]
    i64, f64 = np.int64, np.float64
    op_cols = [np.frombuffer(c, i64 if k == 0 else f64) for k, c in enumerate(out[3:9])]
    cells = [np.frombuffer(c, i64 if k < 2 else f64) for k, c in enumerate(out[9:16])]
    kernel, count, time_ps = (np.frombuffer(c, i64 if k == 0 else f64) for k, c in
                              enumerate(out[16:19]))  # fmt: skip
    first, last, summed, busy = (np.frombuffer(c, i64 if k < 2 else f64) for k, c in
                                 enumerate(out[19:23]))  # fmt: skip
    total, missing = (np.frombuffer(c, i64) for c in out[23:25])
    order = np.argsort(op_cols[0], kind="stable")
    cell_order = cell_sort(cells[0], cells[1])
    return KernelSums(
        events=events,
        op=op_cols[0][order],
        per_op={k: c[order] for k, c in zip(SUMS, op_cols[1:])},
        cell_step=cells[0][cell_order],
        cell_op=cells[1][cell_order],
        per_cell={k: c[cell_order] for k, c in zip(SUMS, cells[2:])},
        unattributed_kernel=kernel,
        unattributed_count=count,
        unattributed_ps=time_ps,
        plane_first_ps=first,
        plane_last_ps=last,
        plane_summed_ps=summed,
        plane_busy_ps=busy,
        step_total_ps=total,
        step_missing=missing,
        unclaimed=unclaimed,
        unclaimed_ps=unclaimed_ps,
    )


def compiled_host_launches(lines: list, stat_ids: list[int | None]) -> tuple | None:
    """``_wire.host_launches`` of the host's lines (LineViews): the step roots (step_num,
    NaN where absent; begin; end ps) and the kernel launches (uint64 correlation id, begin
    ps) in line and event order, as numpy columns; ``stat_ids``: of ``_r``, ``step_num`` and
    ``correlation_id``. None without the compiled decoder or where the pass declines."""
    if not compiled_decoder() or any(getattr(line, "raw", None) is None for line in lines):
        return None
    out = _wire.host_launches(
        [line.raw for line in lines], [int(line.timestamp_ns) for line in lines], stat_ids
    )
    if out is None:
        return None
    types = (np.float64, np.int64, np.int64, np.uint64, np.int64)
    return tuple(np.frombuffer(column, t) for column, t in zip(out, types))


def renumbered(sums: KernelSums, final: np.ndarray) -> KernelSums:
    """The sums with op ``i`` called ``final[i]`` (a one-to-one renumbering), re-sorted."""
    op = final[sums.op]
    order = np.argsort(op, kind="stable")
    cell_op = final[sums.cell_op]
    cell_order = cell_sort(sums.cell_step, cell_op)
    sums.op = op[order]
    sums.per_op = {k: v[order] for k, v in sums.per_op.items()}
    sums.cell_step, sums.cell_op = sums.cell_step[cell_order], cell_op[cell_order]
    sums.per_cell = {k: v[cell_order] for k, v in sums.per_cell.items()}
    return sums


def cell_sort(step: np.ndarray, op: np.ndarray) -> np.ndarray:
    """The order of distinct (step, op) cells sorted by step, then op: placed by key in a
    table as long as their range (linear time; steps and ops are dense), else sorted."""
    if not len(op):
        return np.zeros(0, np.intp)
    width = int(op.max()) + 1
    keys = step * width + op
    low = int(keys.min())
    span = int(keys.max()) - low + 1
    if span > 4 * len(keys) + (1 << 16):
        return np.lexsort((op, step))
    slot = np.full(span, -1, np.intp)
    slot[keys - low] = np.arange(len(keys))
    return slot[slot >= 0]


def line_starts(line: np.ndarray, begin: np.ndarray, op: np.ndarray, kernel: np.ndarray):
    """Does each kernel start an execution of its op (on its line, in time order)? A run of
    one op's kernels on a line is one execution until the run's first kernel comes again."""
    order = np.lexsort((begin, line))
    o, on, k = op[order], line[order], kernel[order]
    change = np.ones(len(o), bool)
    change[1:] = (o[1:] != o[:-1]) | (on[1:] != on[:-1])
    run_first = np.maximum.accumulate(np.where(change, np.arange(len(o)), 0))
    starts = np.zeros(len(op), bool)
    starts[order] = change | (k == k[run_first])
    return starts


def _binned(keys: np.ndarray, weights: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """(distinct keys ascending, the sum of each weight per key in element order)."""
    distinct, inverse = unique(keys, return_inverse=True)
    inverse = inverse.ravel()
    return distinct, [
        np.asarray(np.bincount(inverse, weights=w, minlength=len(distinct)), np.float64)
        for w in weights
    ]


def array_kernel_sums(
    kernels: dict[str, np.ndarray],
    launches: tuple[np.ndarray, np.ndarray],
    windows: tuple[np.ndarray, np.ndarray] | None,
    n_planes: int,
    only: int,
    starts: np.ndarray | None = None,
) -> KernelSums:
    """``compiled_kernel_sums`` of kernels given as arrays in reading order: ``kernels`` has
    begin_ps, end_ps, plane, line, op (-1: none), kernel (name code), has_correlation,
    correlation_id, event_flops and event_bytes; ``starts``: the kernels that start an
    execution (None: ``line_starts``, right where no kernels share a correlation id)."""
    begin, end, plane = kernels["begin_ps"], kernels["end_ps"], kernels["plane"]
    op, kernel = np.asarray(kernels["op"], np.int64), kernels["kernel"]
    duration = end - begin
    keep = np.ones(len(op), bool) if only < 0 else plane == only
    if starts is None:
        starts = line_starts(kernels["line"], begin, op, kernel)
    weights = [
        np.ones(len(op)),
        starts.astype(np.float64),
        duration,
        np.broadcast_to(kernels["event_flops"], (len(op),)),
        np.broadcast_to(kernels["event_bytes"], (len(op),)),
    ]
    use = keep & (op >= 0)
    ops, per_op = _binned(op[use], [w[use] for w in weights])

    rows = keep & (op < 0)
    codes, first = unique(kernel[rows].astype(np.int64), return_index=True, return_inverse=False)
    un_order = np.argsort(first, kind="stable")
    un_kernel = codes[un_order]
    _, (un_count, un_ps) = _binned(kernel[rows].astype(np.int64), [np.ones(int(rows.sum())),
                                                                   duration[rows]])  # fmt: skip
    un_count, un_ps = un_count[un_order], un_ps[un_order]

    first_ps = np.full(n_planes, np.iinfo(np.int64).max)
    last_ps = np.full(n_planes, np.iinfo(np.int64).min)
    np.minimum.at(first_ps, plane, begin)
    np.maximum.at(last_ps, plane, end)
    summed = np.bincount(plane, duration, minlength=n_planes).astype(np.float64)
    order = np.lexsort((begin, plane))
    busy_plane, busy_begin, busy_end = union_pieces(plane[order], begin[order], end[order])
    busy = np.bincount(busy_plane, busy_end - busy_begin, minlength=n_planes).astype(np.float64)

    ids, times = launches
    count = 0 if windows is None else len(windows[0])
    cell_step = cell_op = np.zeros(0, np.int64)
    per_cell = [np.zeros(0) for _ in SUMS]
    total = missing = np.zeros(count, np.int64)
    unclaimed, unclaimed_ps = 0, 0
    if windows is not None:
        step_begin, step_end = (np.asarray(w, np.int64) for w in windows)
        correlation = kernels["correlation_id"]
        slot = np.minimum(np.searchsorted(ids, correlation), max(len(ids) - 1, 0))
        launched = kernels["has_correlation"] & (len(ids) > 0)
        if len(ids):
            launched &= ids[slot] == correlation
        launch = np.where(launched, times[slot] if len(ids) else 0, -1)
        step = np.searchsorted(step_begin, launch, side="right") - 1
        claimed = launched & (step >= 0)
        claimed[claimed] &= launch[claimed] < step_end[step[claimed]]
        step = np.where(claimed & keep, step, -1)
        on = step >= 0
        cell = step[on] * n_planes + plane[on]
        cell_first = np.full(count * n_planes, np.iinfo(np.int64).max)
        cell_last = np.full(count * n_planes, np.iinfo(np.int64).min)
        np.minimum.at(cell_first, cell, begin[on])
        np.maximum.at(cell_last, cell, end[on])
        used = cell_last >= cell_first
        cell_first = np.minimum(cell_first, np.repeat(step_begin, n_planes))
        cell_last = np.maximum(cell_last, np.repeat(step_end, n_planes))
        total = np.where(used, cell_last - cell_first, 0).reshape(count, n_planes).sum(axis=1)
        mine = on & (op >= 0)
        width = max(int(op.max()) + 1 if len(op) else 1, 1)
        keys, per_cell = _binned(step[mine] * width + op[mine], [w[mine] for w in weights])
        cell_step, cell_op = np.divmod(keys, width)
        ran = np.isin(ids, correlation[kernels["has_correlation"]])
        launch_step = np.searchsorted(step_begin, times, side="right") - 1
        inside = (launch_step >= 0) & (times < step_end[np.maximum(launch_step, 0)])
        missing = np.bincount(launch_step[inside & ~ran], minlength=count).astype(np.int64)
        lost = ~claimed & keep
        unclaimed, unclaimed_ps = int(lost.sum()), int(duration[lost].sum())
    return KernelSums(
        events=len(op),
        op=ops.astype(np.int64),
        per_op=dict(zip(SUMS, per_op)),
        cell_step=cell_step.astype(np.int64),
        cell_op=cell_op.astype(np.int64),
        per_cell=dict(zip(SUMS, per_cell)),
        unattributed_kernel=un_kernel,
        unattributed_count=un_count,
        unattributed_ps=un_ps,
        plane_first_ps=first_ps,
        plane_last_ps=last_ps,
        plane_summed_ps=summed,
        plane_busy_ps=busy,
        step_total_ps=np.asarray(total, np.int64),
        step_missing=missing,
        unclaimed=unclaimed,
        unclaimed_ps=unclaimed_ps,
    )
