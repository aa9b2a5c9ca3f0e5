"""The roofline of each layer: its ops summed as one op (their self time, FLOPs and bytes),
judged by the formulas and peaks every op is judged by (``formulas.record_metrics``), for
both passes together and for the forward and the backward pass apart.
"""

from __future__ import annotations

import numpy as np

from ..ops.layers import BACKWARD, FORWARD, LayerTree
from ..ops.op_metrics import OpMetricsDb, empty_columns
from ..ops.op_stats import OpStats
from .formulas import DatabasePeaks, record_metrics

BOTH = -1  # the pass of the sums of both passes


def layer_db(tree: LayerTree, which: int = BOTH) -> OpMetricsDb:
    """The tree's nodes as op rows: their sums over one pass (FORWARD, BACKWARD) or both.

    A node's time is the self time of its ops (so a node's rates are those of its own work,
    each nanosecond of the selection in one node at any depth)."""
    cut = slice(None) if which == BOTH else slice(which, which + 1)
    cols = empty_columns(len(tree))
    cols["name"][:] = tree.name
    cols["category"][:] = tree.kind
    time = np.rint(tree.self_time_ps[:, cut].sum(axis=1)).astype(np.int64)
    cols["time_ps"] = cols["self_time_ps"] = time
    cols["normalized_time_ps"] = time.astype(np.float64)
    cols["flops"] = cols["model_flops"] = tree.flops[:, cut].sum(axis=1)
    cols["bytes_accessed"] = tree.bytes_accessed[:, cut].sum(axis=1)
    cols["breakdown"] = tree.breakdown[:, cut].sum(axis=1)
    cols["has_breakdown"] = tree.has_breakdown[:, cut].any(axis=1)
    cols["occurrences"] = tree.occurrences.copy()
    return OpMetricsDb(**cols, total_time_ps=tree.total_time_ps)


def layer_metrics(tree: LayerTree, stats: OpStats) -> dict[int, dict[str, np.ndarray]]:
    """{BOTH, FORWARD, BACKWARD: record metrics of every node} (``record_metrics``' keys:
    measured_flop_rate in GFLOP/s, operational_intensity in FLOP/byte, bound_by,
    roofline_efficiency, ...), judged by the profile's peaks."""
    peaks = DatabasePeaks.from_env(stats.perf_env, stats.run_env.hardware_type)
    cores = max(stats.run_env.device_core_count, 1)
    return {
        which: record_metrics(layer_db(tree, which), tree.total_time_ps, peaks, cores)
        for which in (BOTH, FORWARD, BACKWARD)
    }
