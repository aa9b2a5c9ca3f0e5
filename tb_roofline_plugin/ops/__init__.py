"""Per-op metrics of one host or many: what ran, how long, with what cost.

``op_metrics`` (XProf's OpMetricsDb as numpy columns, combining cores and hosts, self time
by nesting), ``step_ops`` (every step's ops as one table of (step, op) rows), ``op_stats``
(one host's ops, steps and diagnostics) and ``selection`` (total, average or one step).
Imports only ``peaks``, ``hlo``, ``xspace``, ``protos`` and the leaf modules.
"""
