"""The ops of every step as one table, not one OpMetricsDb per step.

Profiles have up to tens of thousands of steps; a db per step costs about a millisecond
of Python each and a dense steps x ops grid costs memory. Here only the (step, op) cells
that ran are rows, grouped by step (CSR ``offsets``), each with its op's index in the
platform reader's op table, so sums over steps are array operations and a step's db is
made only when somebody asks for that step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..arrays import held_bytes, unique
from .op_metrics import (
    HBM,
    IDLE_NAME,
    READ,
    SUMMED_COLUMNS,
    WRITE,
    OpMetricsDb,
    empty_columns,
    with_idle,
)

DENSE_CELLS = 1 << 25  # up to this many possible (group, op) cells, bin without sorting


@dataclass
class Cells:
    """The (group, op) cells that events fall in: sorted by group, then op."""

    group: np.ndarray  # int64 per cell
    op: np.ndarray  # int64 per cell
    inverse: np.ndarray | list[np.ndarray]  # cell of each event used (per part: a list)
    offsets: np.ndarray  # (groups + 1) int64: cells of group g are offsets[g]:offsets[g+1]
    # Parts that each meet every cell once, in the same order (the cores of one program):
    # their sums are added element by element, then put in place once (``sum``).
    aligned: bool = False

    def __len__(self) -> int:
        return len(self.op)

    def sum(self, weights: np.ndarray | list | None = None) -> np.ndarray:
        """float64 per cell: the count of events (no weights) or the sum of ``weights``
        (for cells of parts: one array per part, summed part by part)."""
        if not isinstance(self.inverse, list):
            return np.bincount(self.inverse, weights=weights, minlength=len(self))
        if self.aligned:
            return self._aligned_sum(weights)
        total = np.zeros(len(self))
        for k, inverse in enumerate(self.inverse):
            part = None if weights is None else weights[k]
            total += np.bincount(inverse, weights=part, minlength=len(self))
        return total

    def _aligned_sum(self, weights: np.ndarray | list | None) -> np.ndarray:
        """``sum`` of aligned parts, to the bit: a cell's bincount of a part is 0.0 plus its
        one weight, so adding the parts' weights from 0.0 in part order adds the same numbers
        in the same order (the running sum is never -0.0, so a weight of -0.0 adds as 0.0).
        Only where two NaNs meet may the NaN kept differ in sign (the span sums give none)."""
        if weights is None:  # one event a part in every cell
            return np.full(len(self), float(len(self.inverse)))
        summed = np.zeros(len(self))
        with np.errstate(all="ignore"):  # inf - inf and overflow pass silently, as in bincount
            for part in weights:
                summed += part
        total = np.empty(len(self))
        total[self.inverse[0]] = summed
        return total


def cells(group: np.ndarray, op: np.ndarray, ops: int, groups: int) -> Cells:
    """Bins events (their ``group`` and ``op``, both already filtered to >= 0) into cells."""
    binned = part_cells([group], [op], ops, groups)
    binned.inverse = binned.inverse[0]
    return binned


def part_cells(groups: list, ops: list, n_ops: int, n_groups: int) -> Cells:
    """``cells`` of events given in parts (e.g. one per core), without concatenating them;
    ``inverse`` is then one array per part."""
    width = max(n_ops, 1)
    keys = [np.asarray(g, np.int64) * width + np.asarray(o, np.int64) for g, o in zip(groups, ops)]
    if n_groups * width <= DENSE_CELLS:
        # A mark per possible cell and a running count: linear time, no sort.
        present = np.zeros(n_groups * width, bool)
        for key in keys:
            present[key] = True
        found = np.flatnonzero(present)
        rank = np.cumsum(present, dtype=np.int32) - 1
        inverse = [rank[key] for key in keys]
    else:
        found, whole = unique(np.concatenate(keys), return_inverse=True)
        inverse = np.split(whole.ravel(), np.cumsum([len(key) for key in keys])[:-1])
    cell_group, cell_op = np.divmod(found, width)
    offsets = np.searchsorted(cell_group, np.arange(n_groups + 1)).astype(np.int64)
    # Aligned: each part as long as the cells and the same as the first (then every cell is
    # in it, and once).
    aligned = len(inverse) > 1 and all(
        len(part) == len(found) and np.array_equal(part, inverse[0]) for part in inverse
    )
    return Cells(cell_group, cell_op, inverse, offsets, aligned)


# What each (step, op) row holds; the rest describes the op and is kept once per op.
ROW_COLUMNS = (*SUMMED_COLUMNS, "has_breakdown")


@dataclass
class StepOps:
    """Rows of all steps (IDLE not included), grouped by step.

    A row holds what adds up over steps (``values``); what describes its op (name,
    program, category, source, dtype) is in ``static``, one entry per op.
    """

    values: dict[str, np.ndarray]  # ROW_COLUMNS, one entry per row
    static: dict[str, np.ndarray]  # the other OpMetricsDb columns, one entry per op
    offsets: np.ndarray  # (steps + 1) int64
    op: np.ndarray  # int64 per row: the op's index in ``static``
    total_time_ps: np.ndarray  # int64 per step: device time of the step

    def __len__(self) -> int:
        return len(self.total_time_ps)

    @property
    def segment(self) -> np.ndarray:
        """The step of every row."""
        return np.repeat(np.arange(len(self)), np.diff(self.offsets))

    def row_db(self, rows: np.ndarray | slice) -> OpMetricsDb:
        """The given rows as an OpMetricsDb (descriptive columns looked up by op)."""
        op = self.op[rows]
        cols = {k: v[op] for k, v in self.static.items()}
        cols.update({k: v[rows] for k, v in self.values.items()})
        return OpMetricsDb(**cols)

    @property
    def rows(self) -> OpMetricsDb:
        """Every row as one OpMetricsDb (for tests and tools; costs memory per row)."""
        return self.row_db(slice(None))

    @property
    def nbytes(self) -> int:
        return held_bytes([*self.values.values(), *self.static.values(), self.op, self.offsets])

    def db(self, step: int) -> OpMetricsDb:
        """One step's db, IDLE included, as a per-step OpMetricsDb would be."""
        part = self.row_db(slice(int(self.offsets[step]), int(self.offsets[step + 1])))
        return with_idle(replace(part, total_time_ps=int(self.total_time_ps[step])))

    def idle_ps(self) -> np.ndarray:
        """IDLE time per step: device time minus the self time of its ops (never negative)."""
        ran = self.values["occurrences"] > 0
        # A step's rows are contiguous: its sum is a difference of prefix sums (integers, so
        # the same as adding them one by one, wrap-around included).
        prefix = np.concatenate([[0], np.cumsum(np.where(ran, self.values["self_time_ps"], 0))])
        busy = (prefix[self.offsets[1:]] - prefix[self.offsets[:-1]]).astype(np.int64)
        return np.maximum(self.total_time_ps - busy, 0)

    def keep_rows(self, mask: np.ndarray) -> StepOps:
        """The table with only the rows where ``mask`` is true (steps stay)."""
        if mask.all():  # the usual case: no copy of every column
            return replace(self, values=dict(self.values))
        kept = np.concatenate([[0], np.cumsum(mask)])
        return replace(
            self,
            values={k: v[mask] for k, v in self.values.items()},
            offsets=kept[self.offsets],
            op=self.op[mask],
        )

    def row_mask(self, steps: np.ndarray) -> np.ndarray:
        """Rows of the given steps (indices into this table)."""
        chosen = np.zeros(len(self), bool)
        chosen[steps] = True
        return chosen[self.segment]

    def summed(self, steps: np.ndarray) -> OpMetricsDb:
        """``combine`` of the given steps' dbs (IDLE included), without making them.

        Rows come in the order ``combine`` gives them: by first appearance over the
        steps in order, the IDLE row right after the first step's ops.
        """
        steps = np.asarray(steps, np.int64)
        if len(steps) == 0:
            return OpMetricsDb(**empty_columns(0))
        mask = self.row_mask(steps)
        rows = np.flatnonzero(mask)
        ops, first, slot = unique(self.op[rows], return_index=True, return_inverse=True)
        # Position of each op's first row; IDLE goes after the first step's rows.
        first_step_rows = int(self.offsets[steps[0] + 1] - self.offsets[steps[0]])
        position = first.astype(np.float64)
        position[position >= first_step_rows] += 1.0
        order = np.argsort(position, kind="stable")
        idle_at = int(np.searchsorted(position[order], first_step_rows))
        target = np.empty(len(ops), np.int64)
        target[order] = np.arange(len(ops)) + (np.arange(len(ops)) >= idle_at)
        out: dict[str, Any] = {}
        every = len(rows) == len(mask)  # all steps: the columns as they are, not copies
        into = target[slot.ravel()]
        for name, column in self.values.items():
            shape = (len(ops) + 1, *column.shape[1:])
            chosen = column if every else column[rows]
            if name == "has_breakdown":
                values = np.zeros(shape, bool)
                values[into[chosen]] = True
            elif column.ndim > 1 and column.dtype == np.float64:
                # Per cell: np.add.at is slow on rows of several cells; bincount adds in the
                # same order (row by row, from 0.0), so the sums are the same to the bit.
                values = np.zeros(shape, column.dtype)
                cells = int(np.prod(column.shape[1:]))
                flat = chosen.reshape(len(chosen), cells)
                for cell in range(cells):
                    values.reshape(len(values), cells)[:, cell] = np.bincount(
                        into, weights=flat[:, cell], minlength=len(values)
                    )
            else:
                values = np.zeros(shape, column.dtype)
                np.add.at(values, into, chosen)
            out[name] = values
        for name, column in self.static.items():
            values = empty_columns(1)[name].repeat(len(ops) + 1, axis=0)
            values[target] = column[ops]
            out[name] = values
        idle = int(self.idle_ps()[steps].sum())
        out["name"][idle_at] = out["category"][idle_at] = IDLE_NAME
        out["time_ps"][idle_at] = out["self_time_ps"][idle_at] = idle
        out["normalized_time_ps"][idle_at] = idle
        return OpMetricsDb(**out, total_time_ps=int(self.total_time_ps[steps].sum()))


def _per_row(per_op: np.ndarray, op: np.ndarray) -> np.ndarray:
    """``per_op[op]``; a read-only zero view when the column is all zero (nothing to hold)."""
    if not per_op.any():
        return np.broadcast_to(np.zeros(1, per_op.dtype)[0], (len(op), *per_op.shape[1:]))
    return per_op[op]


def unnested_columns(
    occurrences: np.ndarray,
    time_ps: np.ndarray,
    flops: np.ndarray,
    bytes_accessed: np.ndarray,
    bytes_written: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per-cell columns of ops timed by events that do not nest (GPU kernels): self time is
    the time, and the bytes are HBM traffic, the written part and the rest read."""
    read = np.maximum(bytes_accessed - bytes_written, 0.0)
    breakdown = np.zeros((len(time_ps), 3, 2))
    breakdown[:, HBM, READ] = read
    breakdown[:, HBM, WRITE] = bytes_written
    time_int = time_ps.astype(np.int64)
    return {
        "occurrences": occurrences.astype(np.int64),
        "time_ps": time_int,
        "self_time_ps": time_int,
        "normalized_time_ps": time_ps,
        "flops": flops,
        "model_flops": flops,
        "bytes_accessed": bytes_accessed,
        "breakdown": breakdown,
        "has_breakdown": (read > 0) | (bytes_written > 0),
        "dma_stall_ps": np.zeros(len(time_ps)),
    }


def step_ops(static: dict[str, np.ndarray], binned: Cells, columns: dict, totals) -> StepOps:
    """A StepOps from the ops' static columns and the per-cell ``columns`` of the readers
    (row columns they leave out take their op's static value)."""
    values = {
        k: columns[k] if k in columns else _per_row(static[k], binned.op) for k in ROW_COLUMNS
    }
    return StepOps(
        values=values,
        static={k: v for k, v in static.items() if k not in ROW_COLUMNS},
        offsets=binned.offsets,
        op=binned.op,
        total_time_ps=np.asarray(totals, np.int64),
    )
