"""The layers of a selection as the json's ``layers`` key, a CSV and a terminal table.

Each node of the layer tree (``ops/layers.py``) with its sums, its roofline point
(``roofline/layers.py``), its forward and backward passes apart and, on a leaf, its ops.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from ..ops.layers import BACKWARD, FORWARD, IDLE, LAYER, NO_LAYER, PASSES, LayerTree
from ..ops.layers import layer_tree as _layer_tree
from ..ops.op_stats import OpStats
from ..ops.selection import TOTAL, Selection, layer_selection
from ..roofline.formulas import safe_divide
from ..roofline.layers import BOTH, layer_metrics

NO_SCOPES = (
    "No op of this selection carries a name scope: every op is in {no_layer}. Layers come "
    "from jax.named_scope and Flax module names (JAX), tf.name_scope and Keras layers "
    "(TensorFlow; with XLA), torch.profiler.profile(with_stack=True) module ranges and "
    "record_function (PyTorch), XLA_HLO_DEBUG=1 (PyTorch/XLA)."
)
OVERLAPPING_TIME = (
    "A layer's time is the self time of its ops, summed: some ops ran at the same time "
    "(kernels on several streams, ops on several CPU threads), so the layers' times add up "
    "to more than the selection's device time ({device_us:,.1f} us)."
)
MAX_LISTED_OPS = 500  # ops a leaf lists (by self time); the rest are counted
MAX_LISTED_ROWS = 5000  # ops all leaves list together: those with the most self time
LEFT_OUT = (
    "{count:,} ops of {layers:,} layers are not listed (a layer lists at most {most} ops, the "
    "layers together the {rows:,} with the most self time); their time, FLOPs and bytes are "
    "in their layers' sums."
)
# Record-metric keys each node carries (GFLOP/s, FLOP/byte, GiB/s, fractions).
_METRICS = (
    "measured_flop_rate",
    "operational_intensity",
    "bottleneck_operational_intensity",
    "hbm_bw",
    "measured_memory_bw",
    "flop_rate_relative_to_hw_limit",
    "memory_bw_relative_to_hw_limit",
    "roofline_efficiency",
)
_PASS_METRICS = ("measured_flop_rate", "operational_intensity", "hbm_bw")


def layer_tree_of(stats: OpStats, step: str | int = TOTAL) -> tuple[Selection, LayerTree]:
    """The selection the tree is made of and its tree."""
    selection = layer_selection(stats, step)
    return selection, _layer_tree(selection.db)


def layers_dict(stats: OpStats, step: str | int = TOTAL) -> dict:
    """The json's ``layers``: every node in pre-order (the Program first), ``depth`` 0 for
    the Program; a leaf lists its ops (by self time, most first)."""
    selection, tree = layer_tree_of(stats, step)
    metrics = layer_metrics(tree, stats)
    db = selection.db
    total_us = tree.total_time_ps / 1e6
    scoped = LAYER in tree.kind
    notes = [] if scoped else [NO_SCOPES.format(no_layer=f'"{NO_LAYER}"')]
    if tree.self_time_ps[0].sum() > tree.total_time_ps:  # ops overlapped
        notes.append(OVERLAPPING_TIME.format(device_us=total_us))
    nodes = []
    left_out, cut = 0, 0
    children: list[list[int]] = [[] for _ in range(len(tree))]
    for i, up in enumerate(tree.parent.tolist()):
        if up >= 0:
            children[up].append(i)
    # Each leaf's rows, most self time first (one sort for all leaves), of the rows with the
    # most self time of the selection.
    listed = np.zeros(len(db), bool)
    listed[np.argsort(-db.self_time_ps, kind="stable")[:MAX_LISTED_ROWS]] = True
    order = np.lexsort((-db.self_time_ps, tree.row_node))
    order = order[listed[order]]
    bounds = np.searchsorted(tree.row_node[order], np.arange(len(tree) + 1))
    for i, node in enumerate(_node_dicts(tree, metrics, children)):
        if tree.size[i] == 1 and tree.kind[i] != IDLE:
            rows = order[bounds[i] : bounds[i + 1]][:MAX_LISTED_OPS]
            node["ops"] = _op_dicts(stats, db, tree, rows)
            node["ops_not_listed"] = int(tree.op_rows[i]) - len(node["ops"])
            left_out += node["ops_not_listed"]
            cut += node["ops_not_listed"] > 0
        nodes.append(node)
    if left_out:
        notes.append(
            LEFT_OUT.format(count=left_out, layers=cut, most=MAX_LISTED_OPS, rows=MAX_LISTED_ROWS)
        )
    return {
        "step": selection.label,
        "max_depth": tree.max_depth,
        "passes": list(PASSES),
        "device_time_us": total_us,
        "notes": notes,
        "nodes": nodes,
    }


def _node_dicts(tree: LayerTree, metrics: dict, children: list[list[int]]) -> list[dict]:
    """Every node's dict: its place, sums and roofline point, both passes and each."""
    both = metrics[BOTH]
    time_us = tree.self_time_ps.sum(axis=1) / 1e6
    fraction = safe_divide(time_us, time_us[0] if len(time_us) else 0.0)  # of the Program's
    columns = {
        "parent": tree.parent.tolist(),
        "depth": tree.depth.tolist(),
        "op_rows": tree.op_rows.tolist(),
        "occurrences": tree.occurrences.tolist(),
        "self_time_us": time_us.tolist(),
        "time_fraction": np.atleast_1d(fraction).tolist(),
        "flops": tree.flops.sum(axis=1).tolist(),
        "bytes_accessed": tree.bytes_accessed.sum(axis=1).tolist(),
        **{key: np.asarray(both[key], np.float64).tolist() for key in _METRICS},
    }
    bound = [str(b) for b in both["bound_by"].tolist()]
    passes = {}
    for which, name in ((FORWARD, "forward"), (BACKWARD, "backward")):
        passes[name] = {
            "self_time_us": (tree.self_time_ps[:, which] / 1e6).tolist(),
            "flops": tree.flops[:, which].tolist(),
            "bytes_accessed": tree.bytes_accessed[:, which].tolist(),
            **{k: np.asarray(metrics[which][k], np.float64).tolist() for k in _PASS_METRICS},
        }
    nodes = []
    for i in range(len(tree)):
        node = {"id": i, "parent": columns["parent"][i], "name": tree.name[i]}
        node.update(path=tree.path[i], kind=tree.kind[i], depth=columns["depth"][i])
        node["children"] = children[i]
        for key in ("op_rows", "occurrences", "self_time_us", "time_fraction", "flops"):
            node[key] = columns[key][i]
        node["bytes_accessed"] = columns["bytes_accessed"][i]
        for key in _METRICS:
            node[key] = columns[key][i]
        node["bound_by"] = bound[i]
        for name, values in passes.items():
            node[name] = {key: column[i] for key, column in values.items()}
        nodes.append(node)
    return nodes


def _op_dicts(stats: OpStats, db, tree: LayerTree, rows: np.ndarray) -> list[dict]:
    """The ops of ``rows`` (one leaf's), as the json lists them."""
    programs = db.program_id[rows].tolist()
    names = stats.program_names
    columns = zip(
        db.name[rows].tolist(),
        programs,
        db.category[rows].tolist(),
        tree.row_backward[rows].tolist(),
        db.op_path[rows].tolist(),
        db.occurrences[rows].tolist(),
        db.self_time_ps[rows].tolist(),
        db.flops[rows].tolist(),
        db.bytes_accessed[rows].tolist(),
    )
    return [
        {
            "name": str(name),
            "hlo_module_id": str(int(program)),
            "program_name": names.get(int(program), ""),
            "category": str(category),
            "pass": PASSES[int(backward)],
            "op_path": str(path),
            "occurrences": int(occurrences),
            "self_time_us": int(time_ps) / 1e6,
            "flops": float(flops),
            "bytes_accessed": float(nbytes),
        }
        for name, program, category, backward, path, occurrences, time_ps, flops, nbytes in columns
    ]


def _shown(nodes: list[dict], depth: int | None) -> list[dict]:
    """The nodes down to ``depth`` (all: None), the Program first."""
    return [n for n in nodes if depth is None or n["depth"] <= depth]


CSV_COLUMNS = (
    ("path", "layer"),
    ("depth", "depth"),
    ("kind", "kind"),
    ("op_rows", "ops"),
    ("self_time_us", "self time (us)"),
    ("time_fraction", "time fraction"),
    ("flops", "FLOPs"),
    ("bytes_accessed", "bytes accessed"),
    ("measured_flop_rate", "GFLOP/s"),
    ("operational_intensity", "FLOP/byte"),
    ("hbm_bw", "HBM GiB/s"),
    ("bound_by", "bound by"),
    ("roofline_efficiency", "roofline efficiency"),
    ("forward.self_time_us", "forward self time (us)"),
    ("forward.flops", "forward FLOPs"),
    ("backward.self_time_us", "backward self time (us)"),
    ("backward.flops", "backward FLOPs"),
)


def layers_csv(stats: OpStats, step: str | int = TOTAL, depth: int | None = None) -> str:
    """One line per layer node down to ``depth`` (the Program first), in tree order."""
    nodes = _shown(layers_dict(stats, step)["nodes"], depth)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(label for _, label in CSV_COLUMNS)
    for node in nodes:
        row = []
        for key, _ in CSV_COLUMNS:
            value = node
            for part in key.split("."):
                value = value[part]
            row.append(value if node["depth"] or key != "path" else node["name"])
        writer.writerow(row)
    return out.getvalue()


def layers_table_rows(stats: OpStats, step: str | int, depth: int | None, memory: str):
    """The summary's layer table: (rows of cells, the header) down to ``depth``."""
    doc = layers_dict(stats, step)
    known = stats.perf_env.known
    header = [
        "layer",
        "bound by",
        "time (µs)",
        "time %",
        "fwd / bwd (µs)",
        "GFLOP/s",
        f"{memory} GiB/s",
        "OI (F/B)",
        "roofline %",
    ]
    rows = []
    for node in _shown(doc["nodes"], depth):
        indent = "  " * node["depth"]
        bound = memory if node["bound_by"] == "HBM" else node["bound_by"]
        oi = node["bottleneck_operational_intensity"] or node["operational_intensity"]
        passes = f"{node['forward']['self_time_us']:,.1f} / {node['backward']['self_time_us']:,.1f}"
        if node["kind"] == IDLE:
            passes = "-"  # idle time is in neither pass
        rows.append(
            [
                f"{indent}{node['name']}",
                bound if known else "Unknown",
                f"{node['self_time_us']:,.1f}",
                f"{100 * node['time_fraction']:.1f}",
                passes,
                f"{node['measured_flop_rate']:,.1f}",
                f"{node['hbm_bw']:,.1f}",
                f"{oi:.3g}",
                f"{100 * node['roofline_efficiency']:.1f}" if known else "-",
            ]
        )
    return header, rows, doc
