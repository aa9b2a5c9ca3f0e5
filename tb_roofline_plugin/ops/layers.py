"""The layers of a model, from its ops' name stacks: a tree whose every node sums its ops.

Every producer writes where in the model each op comes from, in ``op_path`` (the op itself
last): JAX the name stack of the HLO instruction's ``op_name``
(``jit(train_step)/jvp(Transformer)/block_3/attention/dot_general``: ``jax.named_scope``,
Flax module names), TensorFlow its name scopes (the node name, ``sequential/dense/MatMul``;
gradients ``gradient_tape/sequential/dense/MatMul/MatMul``), PyTorch its module path
(``nn.Module: Linear_0`` ranges and ``record_function`` annotations around the op; a
backward op: its forward op's path and its autograd node, ``kineto/scopes.py``).

``layer_of`` folds the frameworks' own wrappers away, so the forward and the backward of a
layer meet under the layer's name, each op marked forward or backward: function boundaries
(``jit(f)``, ``pjit``), transformations (``jvp(block)`` is ``block``; ``transpose(...)`` and
``vmap(...)`` likewise, ``transpose`` marking the backward pass), control flow and
rematerialization (``while``, ``body``, ``cond``, ``closed_call``, ``checkpoint``, ...),
``jnp.einsum``'s spec, TensorFlow's gradient scopes (``gradient_tape/``, ``gradients/``: the
op belongs to the forward layer its name continues, the longest one the forward ops have)
and PyTorch's autograd nodes (``AddmmBackward0``).

``layer_tree`` puts the rows of one selection (the whole profile, a step or the average
step) into a tree: the Program at the root, the layers below it, ops without a name stack in
one "(no layer)" node and the IDLE row in an "IDLE" node, so every row is in exactly one
leaf and the root's sums are the Program's: self time (nothing counts twice), FLOPs and
bytes (those of loop and call containers left out, as the Program leaves them out: their
body ops carry them). A layer with ops of its own and sub-layers keeps its own ops in an
"(own ops)" child, so the nodes at any depth cover every op once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .op_metrics import IDLE_NAME, INNER_OP_CATEGORIES, OpMetricsDb

PROGRAM = "Program"
NO_LAYER = "(no layer)"
OWN_OPS = "(own ops)"
FORWARD, BACKWARD, NO_PASS = 0, 1, 2  # NO_PASS: idle time, in neither pass
PASSES = ("forward", "backward")
_SLOTS = len(PASSES) + 1  # the per-pass columns: forward, backward, no pass
# Node kinds.
ROOT, LAYER, OWN, UNSCOPED, IDLE = "program", "layer", "own ops", "no layer", "idle"

# Calls whose name is a function boundary or a transformation, not a layer: dropped with
# what they hold (``jit(relu)`` is the relu function, inside its caller's layer).
DROPPED_CALLS = frozenset(
    {"jit", "pjit", "pmap", "xla_pmap", "xmap", "shard_map", "xla_call", "core_call"}
)
# Transformations whose argument is the layer they apply to: ``jvp(block_0)`` is block_0.
UNWRAPPED_CALLS = frozenset({"jvp", "vmap", "linearize", "batch"})
BACKWARD_CALLS = frozenset({"transpose"})  # JAX's backward pass: transpose(jvp(block_0))
# Scopes the frameworks write themselves: control flow, rematerialization, custom rules.
FRAMEWORK_SCOPES = frozenset(
    {
        "while",
        "body",
        "cond",
        "closed_call",
        "core_call",
        "checkpoint",
        "remat",
        "rematted_computation",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "pjit",
    }
)
_BRANCH = re.compile(r"^branch_\d+_fun$")  # lax.cond / lax.switch branches
_CALL = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.S)
# TensorFlow's gradient scopes: the op is the gradient of the forward op its name continues.
_TF_GRADIENTS = re.compile(r"^(gradient_tape|gradients(_\d+)?)$")
_TF_GRAD_OP = re.compile(r"_grad$")  # TF1: gradients/dense/MatMul_grad/MatMul
_AUTOGRAD_NODE = re.compile(r"^(\w*Backward\d*|torch::autograd::\w+)$")  # AddmmBackward0


def split_path(path: str) -> list[str]:
    """The components of a name stack: '/' outside parentheses (``jvp(a/b)`` is one), the
    first of several ';'-joined stacks (an op XLA fused from several)."""
    out: list[str] = []
    held, depth = "", 0  # a component whose parentheses are still open
    for piece in path.split(";", 1)[0].split("/"):
        held = f"{held}/{piece}" if depth > 0 else piece
        depth = max(depth + piece.count("(") - piece.count(")"), 0)
        if depth == 0 and held.strip():
            out.append(held.strip())
    if depth > 0 and held.strip():  # unbalanced: what is left is one component
        out.append(held.strip())
    return out


def _folded(components: list[str]) -> tuple[list[str], bool]:
    """The layer names among name-stack components, and whether a backward wrapper
    (``transpose(...)``, an autograd node) was among them."""
    out: list[str] = []
    backward = False
    for component in components:
        call = _CALL.match(component)
        if call:
            name, inner = call.groups()
            if name in DROPPED_CALLS:
                continue
            if name in UNWRAPPED_CALLS or name in BACKWARD_CALLS:
                inner_layers, inner_backward = _folded(split_path(inner))
                out.extend(inner_layers)
                backward = backward or inner_backward or name in BACKWARD_CALLS
                continue
        if component in FRAMEWORK_SCOPES or _BRANCH.match(component) or "->" in component:
            continue  # "->": jnp.einsum's spec, the name of einsum's own call
        if _AUTOGRAD_NODE.match(component):
            backward = True
            continue
        out.append(component)
    return out, backward


@dataclass(frozen=True)
class ParsedPath:
    layers: tuple[str, ...]  # the layer names, outermost first
    backward: bool
    tf_gradient: bool  # a TensorFlow gradient op: its layer is resolved against the forward's


def parse_path(op_path: str) -> ParsedPath:
    """The layers of one op's name stack (the op itself, its last component, left out) and
    its pass; a TensorFlow gradient's layers are still to be resolved (``layer_of``)."""
    components = split_path(op_path)[:-1]
    cut = [i for i, c in enumerate(components) if _TF_GRADIENTS.match(c)]
    tf_gradient = bool(cut)
    if tf_gradient:  # training/Adam/gradients/dense/MatMul_grad: after the last marker
        components = components[cut[-1] + 1 :]
    layers, backward = _folded(components)
    return ParsedPath(_collapsed(layers), backward or tf_gradient, tf_gradient)


def _collapsed(layers: list[str]) -> tuple[str, ...]:
    """Consecutive repeats once: a rematerialized forward inside the backward
    (``transpose(jvp(block_1))/jvp(block_1)/...``) is the one layer."""
    out: list[str] = []
    for name in layers:
        if not out or out[-1] != name:
            out.append(name)
    return tuple(out)


def _gradient_layer(layers: tuple[str, ...], known: set[tuple[str, ...]]) -> tuple[str, ...]:
    """The forward layer of a TensorFlow gradient op: its name continues the forward op's
    (``dense/MatMul/MatMul`` is the gradient of ``dense/MatMul``), a while loop's gradient
    repeats the loop's path; the longest layer the forward ops have, else the path before
    a TF1 ``<op>_grad``, else the path less the forward op's name."""
    for k in range(1, len(layers) // 2 + 1):  # lstm/while/lstm/while/cell/...: drop a repeat
        if layers[:k] == layers[k : 2 * k]:
            layers = layers[k:]
            break
    for k in range(len(layers), 0, -1):
        if layers[:k] in known:
            return layers[:k]
    for k, name in enumerate(layers):
        if _TF_GRAD_OP.search(name):
            return layers[:k]
    return layers[:-1]


def layer_of(op_paths: list[str]) -> tuple[list[tuple[str, ...]], list[bool]]:
    """The layer (names, outermost first; () for none) and pass (True: backward) of each
    op path, TensorFlow gradients resolved against the forward layers of the same list."""
    parsed = [parse_path(p) for p in op_paths]
    known = {p.layers[:k] for p in parsed if not p.backward for k in range(1, len(p.layers) + 1)}
    layers = [_gradient_layer(p.layers, known) if p.tf_gradient else p.layers for p in parsed]
    return layers, [p.backward for p in parsed]


@dataclass
class LayerTree:
    """The layers of one selection's op rows; nodes in pre-order (the root, the Program,
    first; children by self time, most first), each node's sums those of its subtree.

    Per-pass columns are (nodes, 3): forward, backward, and no pass (IDLE's time, in
    neither pass); summed over the axis they are the node's whole figure.
    """

    name: list[str]
    path: list[str]  # the names from the root's child down, joined by "/"; "" for the root
    kind: list[str]  # ROOT, LAYER, OWN, UNSCOPED, IDLE
    parent: np.ndarray  # int64 per node, -1 for the root
    depth: np.ndarray  # int64 per node, 0 for the root
    size: np.ndarray  # int64 per node: nodes in its subtree (it included), contiguous
    self_time_ps: np.ndarray  # float64 (nodes, 3)
    flops: np.ndarray  # float64 (nodes, 3)
    bytes_accessed: np.ndarray  # float64 (nodes, 3)
    breakdown: np.ndarray  # float64 (nodes, 3, 3, 2): bytes by pass, memory space, read/write
    has_breakdown: np.ndarray  # bool (nodes, 3): one of its ops carried a memory breakdown
    occurrences: np.ndarray  # int64 per node
    op_rows: np.ndarray  # int64 per node: op rows in its subtree
    row_node: np.ndarray  # int64 per row of the db: the leaf holding it
    row_backward: np.ndarray  # bool per row of the db
    total_time_ps: int = 0  # the db's device time

    def __len__(self) -> int:
        return len(self.name)

    @property
    def max_depth(self) -> int:
        return int(self.depth.max(initial=0))

    def children(self, node: int) -> np.ndarray:
        return np.flatnonzero(self.parent == node)

    def at_depth(self, depth: int) -> np.ndarray:
        """The nodes a cut at ``depth`` shows: those at that depth and the leaves above it
        (the Program at depth 0, or when it is all there is); together they hold every row
        once."""
        leaf = self.size == 1
        chosen = (self.depth == depth) | (leaf & (self.depth < depth))
        chosen[0] = depth <= 0 or len(self) == 1
        return np.flatnonzero(chosen)

    def rows_of(self, node: int) -> np.ndarray:
        """The db rows in the node's subtree."""
        low, high = node, node + int(self.size[node])
        return np.flatnonzero((self.row_node >= low) & (self.row_node < high))


def layer_tree(db: OpMetricsDb) -> LayerTree:
    """The layer tree of a selection's op rows (``OpStats.layer_split``'s rows for PyTorch
    traces, whose op rows merge an op's executions of every module)."""
    codes: dict[str, int] = {}
    row_code = np.fromiter(
        (codes.setdefault(p, len(codes)) for p in db.op_path.tolist()), np.int64, len(db)
    )
    layers, backward = layer_of(list(codes))
    idle = (db.name == IDLE_NAME) & (db.category == IDLE_NAME)
    # Each row's leaf key: its layer, (no layer), or IDLE.
    keys: dict[tuple, int] = {}
    code_key = [keys.setdefault(("L", *names), len(keys)) if names else -1 for names in layers]
    row_key = np.asarray(code_key, np.int64)[row_code] if len(codes) else np.zeros(0, np.int64)
    unscoped = (row_key < 0) & ~idle
    no_layer_key = keys.setdefault(("U",), len(keys)) if unscoped.any() else -1
    idle_key = keys.setdefault(("I",), len(keys)) if idle.any() else -1
    row_key[unscoped] = no_layer_key
    row_key[idle] = idle_key
    nodes = _Nodes()
    key_node = np.array([nodes.leaf(key) for key in keys], np.int64)
    leaf_of_row = key_node[row_key] if len(row_key) else row_key
    leaf_of_row = nodes.own_ops(leaf_of_row)
    row_backward = np.asarray(backward, bool)[row_code] if len(codes) else np.zeros(0, bool)
    row_backward &= ~idle
    row_pass = np.where(idle, NO_PASS, row_backward.astype(np.int64))
    return nodes.tree(db, leaf_of_row, row_backward, row_pass)


class _Nodes:
    """Nodes made as the rows' layers are met (parents first), then ordered."""

    def __init__(self) -> None:
        self.key: list[tuple] = [("P",)]
        self.parent: list[int] = [-1]
        self.index: dict[tuple, int] = {("P",): 0}

    def _node(self, key: tuple, parent: int) -> int:
        at = self.index.get(key)
        if at is None:
            at = self.index[key] = len(self.key)
            self.key.append(key)
            self.parent.append(parent)
        return at

    def leaf(self, key: tuple) -> int:
        """The node of a row key, its ancestors made first."""
        if key[0] != "L":
            return self._node(key, 0)
        parent = 0
        for k in range(2, len(key) + 1):
            parent = self._node(key[:k], parent)
        return parent

    def own_ops(self, row_node: np.ndarray) -> np.ndarray:
        """Rows of a node with children go to its "(own ops)" child."""
        has_children = np.zeros(len(self.key), bool)
        has_children[[p for p in self.parent if p >= 0]] = True
        inner = np.unique(row_node[has_children[row_node]]) if len(row_node) else row_node
        target = np.arange(len(self.key), dtype=np.int64)
        for node in inner.tolist():
            target[node] = self._node((*self.key[node], None), node)
        return target[row_node]

    def tree(
        self, db: OpMetricsDb, row_node: np.ndarray, row_backward: np.ndarray, passes: np.ndarray
    ) -> LayerTree:
        """The tree of the rows' leaves; ``passes``: FORWARD, BACKWARD or NO_PASS per row."""
        n = len(self.key)
        parent = np.asarray(self.parent, np.int64)
        depth = np.zeros(n, np.int64)
        for i in range(1, n):  # parents come before their children
            depth[i] = depth[parent[i]] + 1
        counted = ~np.isin(db.category, list(INNER_OP_CATEGORIES))  # containers: time only
        cell = row_node * _SLOTS + passes
        time = _cells(cell, db.self_time_ps.astype(np.float64), n)
        flops = _cells(cell, np.where(counted, db.flops, 0.0), n)
        nbytes = _cells(cell, np.where(counted, db.bytes_accessed, 0.0), n)
        breakdown = np.zeros((n, _SLOTS, 3, 2))
        np.add.at(breakdown, (row_node, passes), db.breakdown * counted[:, None, None])
        has_breakdown = np.zeros((n, _SLOTS), bool)
        carried = db.has_breakdown & counted
        has_breakdown[row_node[carried], passes[carried]] = True
        occurrences = np.bincount(row_node, db.occurrences, n).astype(np.int64)
        op_rows = np.bincount(row_node, minlength=n).astype(np.int64)
        for level in range(int(depth.max(initial=0)), 0, -1):  # subtree sums, deepest first
            at = np.flatnonzero(depth == level)
            for column in (time, flops, nbytes, breakdown):
                np.add.at(column, parent[at], column[at])
            np.add.at(occurrences, parent[at], occurrences[at])
            np.add.at(op_rows, parent[at], op_rows[at])
            np.logical_or.at(has_breakdown, parent[at], has_breakdown[at])
        order = self._preorder(parent, time.sum(axis=1))
        position = np.empty(n, np.int64)
        position[order] = np.arange(n)
        size = np.ones(n, np.int64)
        for level in range(int(depth.max(initial=0)), 0, -1):
            at = np.flatnonzero(depth == level)
            np.add.at(size, parent[at], size[at])
        names = [self._name(key) for key in self.key]
        paths = ["/".join(names[a] for a in self._lineage(i)) for i in range(n)]
        kinds = [self._kind(key) for key in self.key]
        return LayerTree(
            name=[names[i] for i in order],
            path=[paths[i] for i in order],
            kind=[kinds[i] for i in order],
            parent=np.where(parent[order] >= 0, position[np.maximum(parent[order], 0)], -1),
            depth=depth[order],
            size=size[order],
            self_time_ps=time[order],
            flops=flops[order],
            bytes_accessed=nbytes[order],
            breakdown=breakdown[order],
            has_breakdown=has_breakdown[order],
            occurrences=occurrences[order],
            op_rows=op_rows[order],
            row_node=position[row_node],
            row_backward=row_backward,
            total_time_ps=int(db.total_time_ps),
        )

    def _preorder(self, parent: np.ndarray, time: np.ndarray) -> list[int]:
        """Nodes depth first, children by self time (most first), ties by name; "(own
        ops)" of a layer after its sub-layers, "(no layer)" and IDLE after the layers."""
        children: dict[int, list[int]] = {}
        for node, up in enumerate(parent.tolist()):
            if up >= 0:
                children.setdefault(up, []).append(node)
        rank = {"L": 0, None: 1, "U": 2, "I": 3}

        def order_key(node: int):
            key = self.key[node]
            kind = None if key[-1] is None else key[0]
            return (rank[kind], -time[node], self._name(key))

        out, stack = [], [0]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(sorted(children.get(node, []), key=order_key, reverse=True))
        return out

    def _lineage(self, node: int) -> list[int]:
        out = []
        while node > 0:
            out.append(node)
            node = self.parent[node]
        return out[::-1]

    @staticmethod
    def _name(key: tuple) -> str:
        if key[-1] is None:
            return OWN_OPS
        return {"P": PROGRAM, "U": NO_LAYER, "I": IDLE_NAME}.get(key[0]) or key[-1]

    @staticmethod
    def _kind(key: tuple) -> str:
        if key[-1] is None:
            return OWN
        return {"P": ROOT, "U": UNSCOPED, "I": IDLE, "L": LAYER}[key[0]]


def _cells(cell: np.ndarray, weights: np.ndarray, nodes: int) -> np.ndarray:
    """(nodes, 3) sums of ``weights`` by node and pass (forward, backward, no pass)."""
    return np.bincount(cell, weights, _SLOTS * nodes).reshape(nodes, _SLOTS)
