"""The roofline of one host or all hosts: the RooflineModelDatabase (its fields, record
sets and diagnostics, ``docs/roofline-semantics.md`` sections 3, 4 and 10), for the whole
profile or one step, as ``RooflineModel`` (header plus record columns). A profile with
hardware counters gets XProf's ``ALL_HW`` records too ("Total (HW)", which XProf defines but
never produces): after all the others, include_infeed_outfeed true.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ops.hardware import DRAM_BYTES
from ..ops.op_metrics import (
    IDLE_NAME,
    OpMetricsDb,
    empty_db,
)
from ..ops.op_stats import Diagnostics, OpStats, step_arrays, sum_steps
from ..protos import roofline_model_pb2
from ..wording import counted, numbered
from .formulas import DatabasePeaks, safe_divide
from .records import (
    RecordSet,
    op_records,
    program_record_pair,
    program_records,
    step_segments,
)

NO_STEP_MARKER = (
    "No step marker observed and hence the step time is unknown. This may happen if (1) "
    "training steps are not instrumented (e.g., if you are not using Keras) or (2) the "
    "profiling duration is shorter than the step time. For (1), you need to add step "
    "instrumentation; for (2), you may try to profile longer."
)
INCOMPLETE_STEP = (
    "Incomplete step observed and hence the step time is unknown. Instead, we use the trace "
    "duration as the step time. This may happen if your profiling duration is shorter than "
    "the step time. In this case, you may try to profile longer."
)


# --- the database ---------------------------------------------------------------------------


def time_scale_multiplier(db: OpMetricsDb, hardware_type: str) -> float:
    if hardware_type == "GPU":
        return 0.0
    ops = (db.occurrences > 0) & (db.name != IDLE_NAME)
    total = db.self_time_ps[ops].astype(np.float64)
    normalized = safe_divide(total * db.normalized_time_ps[ops], db.time_ps[ops])
    if total.sum() == 0:
        return 1.0
    return float(safe_divide(normalized.sum(), total.sum()))


def step_diagnostics(stats: OpStats) -> Diagnostics:
    """XProf's step warnings: no step marker, or only incomplete steps used."""
    diag = Diagnostics()
    if stats.steps and not stats.complete_steps:
        diag.warnings.append(INCOMPLETE_STEP)
    elif not stats.steps:
        diag.warnings.append(NO_STEP_MARKER)
    made = step_arrays(stats.steps)
    if made is not None:  # tens of thousands of steps: from their arrays
        dropped = made.numbers[~made.complete].tolist()
    else:
        dropped = [s.step_num for s in stats.steps if not s.complete]
    if dropped and stats.complete_steps:
        diag.warnings.append(
            f"{counted(len(dropped), 'incomplete step')} left out of the average (cut by the "
            f"profile window, or missing the work launched in them): {numbered(dropped, 'step')}."
        )
    return diag


def _database_header(
    stats: OpStats,
) -> tuple[roofline_model_pb2.RooflineModelDatabase, DatabasePeaks | None]:
    """The database-level fields (device, peaks, flags); no peaks for an empty result."""
    run_env = stats.run_env
    database = roofline_model_pb2.RooflineModelDatabase(device_type=run_env.device_type)
    if run_env.hardware_type not in ("TPU", "GPU", "CPU"):
        return database, None
    peaks = DatabasePeaks.from_env(stats.perf_env, run_env.hardware_type)
    database.megacore = peaks.megacore
    database.has_cmem = peaks.has_cmem
    database.has_merged_vmem = peaks.has_merged_vmem
    database.peak_flop_rate = peaks.peak_flop_rate
    database.peak_hbm_bw = peaks.peak_hbm_bw
    database.peak_cmem_read_bw = peaks.peak_cmem_read_bw
    database.peak_cmem_write_bw = peaks.peak_cmem_write_bw
    database.peak_vmem_read_bw = peaks.peak_vmem_read_bw
    database.peak_vmem_write_bw = peaks.peak_vmem_write_bw
    database.time_scale_multiplier = time_scale_multiplier(stats.all_db, run_env.hardware_type)
    return database, peaks


@dataclass
class RooflineModel:
    """A roofline database as its header message (every field but the records) and its
    records as columns; ``database()`` is the schema's message, built when asked for."""

    header: roofline_model_pb2.RooflineModelDatabase
    records: RecordSet

    def database(self) -> roofline_model_pb2.RooflineModelDatabase:
        database = roofline_model_pb2.RooflineModelDatabase()
        database.CopyFrom(self.header)
        database.roofline_model_record.extend(self.records.to_messages())
        return database

    @classmethod
    def from_database(cls, database: roofline_model_pb2.RooflineModelDatabase) -> RooflineModel:
        header = roofline_model_pb2.RooflineModelDatabase()
        header.CopyFrom(database)
        header.ClearField("roofline_model_record")
        return cls(header, RecordSet.from_messages(database.roofline_model_record))


def as_model(database: RooflineModel | roofline_model_pb2.RooflineModelDatabase) -> RooflineModel:
    """A RooflineModel of either form (renderers take both)."""
    if isinstance(database, RooflineModel):
        return database
    return RooflineModel.from_database(database)


def roofline_model(stats: OpStats) -> RooflineModel:
    """The full database: both include_infeed_outfeed sets, ALL, AVERAGE_STEP, PER_STEP."""
    database, peaks = _database_header(stats)
    if peaks is None:
        _add_diagnostics(database, stats.diagnostics)
        return RooflineModel(database, RecordSet.empty())
    cores = stats.run_env.device_core_count
    used_steps = stats.complete_steps or stats.steps
    average = _average_db(stats, used_steps)
    # The average's Program row, then every step's: each part's rows are summed on their
    # own (a row's sums are its segment's alone), not copied into one.
    per_step: list[tuple[RecordSet, RecordSet]] = []
    if average is not None:
        kind, divisor = roofline_model_pb2.AVERAGE_STEP, max(len(used_steps), 1)
        per_step.append(program_record_pair([average], peaks, cores, [kind], [0], [divisor]))
    if used_steps:
        kinds = [roofline_model_pb2.PER_STEP] * len(used_steps)
        nums = [s.step_num for s in used_steps]
        segments = step_segments(used_steps)
        per_step.append(
            program_record_pair(segments, peaks, cores, kinds, nums, [1] * len(used_steps))
        )
    records = []
    for at, include in enumerate((True, False)):
        records.append(
            program_records(
                [stats.all_db], peaks, cores, include, [roofline_model_pb2.ALL], [0], [1]
            )
        )
        records.append(op_records(stats.all_db, peaks, cores, include))
        records += [pair[at] for pair in per_step]
    hardware = hardware_records(stats, peaks)
    if hardware is not None:
        records.append(hardware)
    diagnostics = step_diagnostics(stats)
    diagnostics.extend(stats.diagnostics)
    _add_diagnostics(database, diagnostics)
    return RooflineModel(database, RecordSet.concat(records))


def hardware_records(stats: OpStats, peaks: DatabasePeaks) -> RecordSet | None:
    """The ALL_HW records (Program, then the ops by self time) of what the counters measured,
    include_infeed_outfeed true (the counters count every kernel, infeed/outfeed or not);
    None without counters. Without measured DRAM bytes no bound can be judged: Unknown."""
    hardware = stats.hardware
    if hardware is None or not len(hardware.db):
        return None
    cores = stats.run_env.device_core_count
    kind = roofline_model_pb2.ALL_HW
    records = RecordSet.concat(
        [
            program_records([hardware.db], peaks, cores, True, [kind], [0], [1]),
            op_records(hardware.db, peaks, cores, True, kind),
        ]
    )
    if not hardware.measured.get(DRAM_BYTES, False):
        records.columns["bound_by"][:] = "Unknown"
        records.columns["bottleneck_operational_intensity"][:] = 0.0
    return records


def build_database(stats: OpStats) -> roofline_model_pb2.RooflineModelDatabase:
    """``roofline_model`` as the schema's message."""
    return roofline_model(stats).database()


def step_roofline_model(
    stats: OpStats, db: OpMetricsDb, record_type: int, step_num: int = 0
) -> RooflineModel:
    """A database of one step (or the average step): its Program and its op records.

    This is ours: XProf has only a Program row per step. Both include_infeed_outfeed sets.
    """
    database, peaks = _database_header(stats)
    if peaks is None:
        return RooflineModel(database, RecordSet.empty())
    cores = stats.run_env.device_core_count
    records = []
    for include in (True, False):
        records.append(program_records([db], peaks, cores, include, [record_type], [step_num], [1]))
        records.append(op_records(db, peaks, cores, include, record_type, step_num))
    diagnostics = step_diagnostics(stats)
    diagnostics.extend(stats.diagnostics)
    _add_diagnostics(database, diagnostics)
    return RooflineModel(database, RecordSet.concat(records))


def step_database(
    stats: OpStats, db: OpMetricsDb, record_type: int, step_num: int = 0
) -> roofline_model_pb2.RooflineModelDatabase:
    """``step_roofline_model`` as the schema's message."""
    return step_roofline_model(stats, db, record_type, step_num).database()


def _average_db(stats: OpStats, used_steps) -> OpMetricsDb | None:
    """XProf's complete-steps db: the sum of the steps' dbs (zero when there are none).

    Single-host TPU always has one; single-host GPU never does (XProf's datatable shape;
    our json has the average), multi-host GPU gets real values where XProf has zeros.
    """
    single_host_gpu = stats.run_env.hardware_type == "GPU" and len(stats.hosts) == 1
    if used_steps and not single_host_gpu:
        return sum_steps(used_steps)
    if stats.run_env.hardware_type == "TPU" or len(stats.hosts) > 1:
        return empty_db()
    return None


def _add_diagnostics(database: roofline_model_pb2.RooflineModelDatabase, diag: Diagnostics) -> None:
    if diag.info or diag.warnings or diag.errors:
        database.diagnostics.info.extend(diag.info)
        database.diagnostics.warnings.extend(diag.warnings)
        database.diagnostics.errors.extend(diag.errors)
