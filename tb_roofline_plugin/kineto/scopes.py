"""Where in the model each PyTorch op ran: the module ranges and annotations around it.

``torch.profiler.profile(with_stack=True)`` (``with_modules=True`` too) records each
``nn.Module``'s forward as a ``python_function`` event ``nn.Module: <Class>_<i>`` (the i-th
instance of the class) around the ops it runs; ``record_function`` ranges are
``user_annotation`` events. An op's scopes are the spans of both that hold its start on its
thread, outermost first (``ProfilerStep#N`` aside: steps group ops, they are not layers).

A backward op runs in an autograd node (``AddmmBackward0``, itself inside
``autograd::engine::evaluate_function: AddmmBackward0``) that carries the ``Sequence
number`` of the forward op that made it: its scopes are that forward op's (the last one of
that number before the node), then the node, so the forward and the backward of a module
meet under its name (``ops/layers.py`` folds the node into the backward mark).
"""

from __future__ import annotations

import re

import numpy as np

from ..arrays import unique
from .spans import annotation_rows, innermost_rows, nesting
from .trace_reader import TraceEvents

MODULE_EVENT = "nn.Module: "
EVALUATE_FUNCTION = "autograd::engine::evaluate_function: "
AUTOGRAD_NODE = re.compile(r"Backward\d*$")
NO_SCOPE = ""


def _module_rows(events: TraceEvents) -> np.ndarray:
    codes = [c for c, n in enumerate(events.names) if n.startswith(MODULE_EVENT)]
    rows = np.flatnonzero(events.category == events.code("python_function"))
    return rows[np.isin(events.name[rows], codes)]


def _scope_name(text: str) -> str:
    return text[len(MODULE_EVENT) :] if text.startswith(MODULE_EVENT) else text


def _node_rows(events: TraceEvents) -> np.ndarray:
    """The CPU op rows of autograd nodes (``MmBackward0``, ``evaluate_function: ...``)."""
    codes = [
        c
        for c, n in enumerate(events.names)
        if n.startswith(EVALUATE_FUNCTION) or AUTOGRAD_NODE.search(n)
    ]
    return events.op_rows[np.isin(events.name[events.op_rows], codes)]


class _Scopes:
    """The module ranges and annotations of a trace, with the path of each."""

    def __init__(self, events: TraceEvents) -> None:
        rows = np.concatenate([_module_rows(events), annotation_rows(events, "user_annotation")])
        self.rows = np.sort(rows)
        self.events = events
        self.path = np.zeros(0, object)
        self.parent = np.zeros(0, np.int64)
        if not len(self.rows):
            return
        self.nest = nesting(events, self.rows)
        order, parent = self.nest.order, self.nest.parent
        names = events.names
        sorted_path = [""] * len(order)
        for i, (row, up) in enumerate(zip(self.rows[order].tolist(), parent.tolist())):
            name = _scope_name(names[events.name[row]])
            sorted_path[i] = f"{sorted_path[up]}/{name}" if up >= 0 else name
        self.path = np.empty(len(order), object)
        self.path[order] = sorted_path
        self.parent = np.full(len(order), -1, np.int64)
        held = parent >= 0
        self.parent[order[held]] = order[parent[held]]

    def of(self, rows: np.ndarray) -> np.ndarray:
        """The path (object array, "" for none) of the scopes around each event row; a scope
        row's own path is that of the scope around it."""
        out = np.full(len(rows), NO_SCOPE, object)
        if not len(self.rows) or not len(rows):
            return out
        events = self.events
        at = self.nest.innermost(self.nest.shift(events.thread[rows], events.begin_ns[rows]))
        slot = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
        itself = self.rows[slot] == rows
        at[itself] = self.parent[slot[itself]]
        found = at >= 0
        out[found] = self.path[at[found]]
        return out


def op_scopes(events: TraceEvents, rows: np.ndarray) -> np.ndarray:
    """The scope path of each event row (CPU ops, annotations): module ranges and
    annotations around it, outermost first, joined by "/" ("" for none); for an op in an
    autograd node, its forward op's path, then the node's name."""
    scopes = _Scopes(events)
    paths = scopes.of(rows)
    nodes = _node_rows(events)
    if not len(nodes) or not len(rows):
        return paths
    thread, begin = events.thread, events.begin_ns
    node_of = innermost_rows(events, nodes, thread[rows], begin[rows])
    inside = np.flatnonzero(node_of >= 0)
    if not len(inside):
        return paths
    used, which = unique(node_of[inside], return_inverse=True)
    forward = _forward_ops(events, nodes, used)
    base = scopes.of(np.where(forward >= 0, forward, used))
    names = events.names
    node_path = [
        f"{prefix}/{_node_name(names[code])}" if prefix else _node_name(names[code])
        for prefix, code in zip(base.tolist(), events.name[used].tolist())
    ]
    paths[inside] = np.asarray(node_path, object)[which.ravel()]
    return paths


def _node_name(text: str) -> str:
    return text[len(EVALUATE_FUNCTION) :] if text.startswith(EVALUATE_FUNCTION) else text


def _forward_ops(events: TraceEvents, nodes: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The row of the forward op of each autograd node of ``wanted``: the last op outside
    every node with the node's sequence number that began before it (-1: none)."""
    seq = events.sequence
    ops = events.op_rows[seq[events.op_rows] >= 0]
    ops = ops[~np.isin(ops, nodes)]
    ops = ops[innermost_rows(events, nodes, events.thread[ops], events.begin_ns[ops]) < 0]
    out = np.full(len(wanted), -1, np.int64)
    asked = seq[wanted] >= 0
    if not len(ops) or not asked.any():
        return out
    times, rank = unique(
        np.concatenate([events.begin_ns[ops], events.begin_ns[wanted]]), return_inverse=True
    )
    rank = rank.ravel()
    width = len(times) + 1
    if int(max(seq[ops].max(), seq[wanted].max())) >= (2**62) // width:
        return out  # sequence numbers past any real run: no pairing
    op_key = seq[ops] * width + rank[: len(ops)]
    order = np.argsort(op_key, kind="stable")
    op_key, ops = op_key[order], ops[order]
    node_key = seq[wanted] * width + rank[len(ops) :]
    at = np.searchsorted(op_key, node_key, side="right") - 1
    ok = asked & (at >= 0)
    ok[ok] = op_key[at[ok]] // width == seq[wanted][ok]
    out[ok] = ops[at[ok]]
    return out
