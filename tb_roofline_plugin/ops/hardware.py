"""What hardware performance counters measured per op: the rows of XProf's ``ALL_HW`` records
("Total (HW)": the metrics derived from the counters, not from a cost model).

A platform reader that finds counters (PyTorch traces recorded with CUPTI's range profiler,
``kineto.counters``) joins each counted kernel to its op row and gives a ``HardwareCounts``:
the op rows with the measured FLOPs and DRAM bytes in place of the modelled ones, their times
and occurrences as the modelled rows have them. What was not measured stays unknown (0 in the
db, False in ``measured``, said in ``notes``), never taken from the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .op_metrics import OpMetricsDb, combine

# What ``measured`` says was counted.
FLOPS = "flops"  # FP16/FP32/FP64 FLOPs of the SASS instruction counters
TENSOR_FLOPS = "tensor_flops"  # tensor-pipe math ops (sm__ops_path_tensor_*)
DRAM_BYTES = "dram_bytes"  # DRAM bytes read + written


@dataclass
class HardwareCounts:
    """The op rows with counted kernels, measured values in the place of the model's.

    ``db``: flops = measured FLOPs (SASS and tensor-pipe), bytes_accessed = measured DRAM
    bytes (0 where not measured); names, categories, program ids, occurrences and times are
    the modelled rows'; total_time_ps the whole profile's. ``kernels``: counted kernels per
    row. ``values``: per row, each measured quantity (FLOPs per precision ``fp16``,
    ``fp32``, ``fp64``, ``tensor_<dtype>``, ``dram_read_bytes``, ``dram_write_bytes``,
    ``tensor_instructions``).
    """

    db: OpMetricsDb
    kernels: np.ndarray
    values: dict[str, np.ndarray] = field(default_factory=dict)
    measured: dict[str, bool] = field(default_factory=dict)
    ranges: int = 0  # counter ranges in the profile
    launches: int = 0  # kernel launch calls they were joined against
    joined: int = 0  # ranges joined to an op row
    counters: list[str] = field(default_factory=list)  # counter names recorded
    source: str = ""  # what recorded them
    notes: list[str] = field(default_factory=list)

    def take(self, rows: np.ndarray) -> HardwareCounts:
        return replace(
            self,
            db=self.db.take(rows),
            kernels=self.kernels[rows],
            values={k: v[rows] for k, v in self.values.items()},
        )


def combine_hardware(parts: list[HardwareCounts], total_time_ps: int) -> HardwareCounts | None:
    """Several hosts' counts as one: rows merged by (program id, name) as ``combine`` merges
    ops, counts added; a quantity is measured when every host measured it."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    db = combine([p.db for p in parts])
    slot = {key: i for i, key in enumerate(zip(db.program_id.tolist(), db.name.tolist()))}
    kernels = np.zeros(len(db), np.int64)
    names = list(dict.fromkeys(k for p in parts for k in p.values))
    values = {k: np.zeros(len(db)) for k in names}
    for part in parts:
        rows = np.array(
            [slot[k] for k in zip(part.db.program_id.tolist(), part.db.name.tolist())], np.int64
        )
        np.add.at(kernels, rows, part.kernels)
        for key, column in part.values.items():
            np.add.at(values[key], rows, column)
    measured = {
        k: all(p.measured.get(k, False) for p in parts) for k in parts[0].measured
    }  # fmt: skip
    return HardwareCounts(
        db=replace(db, total_time_ps=total_time_ps),
        kernels=kernels,
        values=values,
        measured=measured,
        ranges=sum(p.ranges for p in parts),
        launches=sum(p.launches for p in parts),
        joined=sum(p.joined for p in parts),
        counters=list(dict.fromkeys(c for p in parts for c in p.counters)),
        source=parts[0].source,
        notes=list(dict.fromkeys(n for p in parts for n in p.notes)),
    )
