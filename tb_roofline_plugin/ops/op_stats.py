"""What one host's (or several hosts') profile says about its ops: XProf's OpStats, reduced."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..peaks.perf_env import PerfEnv, RunEnvironment
from .op_metrics import OpMetricsDb, combine
from .step_ops import StepOps


class StepInfo:
    """One step: its ops (summed over cores) and whether the profile window cut it.

    Platform readers keep every step's ops in one StepOps table; a step's db is made from
    it only when asked for (``db``), so tens of thousands of steps cost no object each.
    """

    __slots__ = ("step_num", "complete", "duration_ps", "_db", "table", "index")

    def __init__(
        self,
        step_num: int,
        complete: bool,
        db: OpMetricsDb | None = None,
        duration_ps: int = 0,  # wall time of the step (longest core)
        *,
        table: StepOps | None = None,
        index: int = -1,
    ) -> None:
        self.step_num = step_num
        self.complete = complete
        self.duration_ps = duration_ps
        self._db = db
        self.table = table
        self.index = index

    @property
    def db(self) -> OpMetricsDb:
        if self._db is not None:
            return self._db
        assert self.table is not None  # a StepInfo has its db or its table
        return self.table.db(self.index)

    @property
    def holds_ops(self) -> bool:
        """True when an op ran in the step (IDLE aside); read without making the step's db."""
        if self._db is None and self.table is not None:
            begin, end = self.table.offsets[self.index], self.table.offsets[self.index + 1]
            return bool((self.table.values["occurrences"][begin:end] > 0).any())
        return bool((self.db.occurrences > 0).any())

    def __repr__(self) -> str:
        return f"StepInfo(step_num={self.step_num}, complete={self.complete})"


def table_steps(table: StepOps, numbers, complete, durations) -> list[StepInfo]:
    """The StepInfo of every step of ``table`` (same order)."""
    return [
        StepInfo(int(num), bool(done), duration_ps=int(d), table=table, index=i)
        for i, (num, done, d) in enumerate(zip(numbers, complete, durations))
    ]


def shared_table(steps: list[StepInfo]) -> tuple[StepOps | None, np.ndarray]:
    """The one StepOps all ``steps`` live in and their indices there, or (None, [])."""
    table = steps[0].table if steps else None
    if table is None or any(s.table is not table or s._db is not None for s in steps):
        return None, np.zeros(0, np.int64)
    return table, np.array([s.index for s in steps], np.int64)


def step_nbytes(steps: list[StepInfo]) -> int:
    """Memory the steps' ops hold: each shared table once, and the steps' own dbs."""
    tables = {id(s.table): s.table for s in steps if s._db is None and s.table is not None}
    own = [s._db for s in steps if s._db is not None]
    numeric = sum(v.nbytes for db in own for v in db.__dict__.values() if hasattr(v, "nbytes"))
    return sum(t.nbytes for t in tables.values()) + numeric


def steps_without_ops_note(stats: OpStats) -> str | None:
    """One line when the profile has steps and ops but none of its steps holds an op (every
    op ran, or was launched, outside the steps), else None."""
    if not stats.steps or not (stats.all_db.occurrences > 0).any():
        return None
    if any(s.holds_ops for s in stats.steps):
        return None
    numbers = sorted(s.step_num for s in stats.steps)
    if len(numbers) == 1:
        return f"Step {numbers[0]} holds no op: every op ran outside it; only Total shows the ops."
    return (
        f"None of the {len(numbers):,} steps ({numbers[0]:,}–{numbers[-1]:,}) holds an op: "
        "every op ran outside the steps; only Total shows the ops."
    )


def sum_steps(steps: list[StepInfo]) -> OpMetricsDb:
    """``combine`` of the steps' dbs; straight from their table when they share one."""
    table, index = shared_table(steps)
    if table is not None:
        return table.summed(index)
    return combine([s.db for s in steps])


@dataclass
class Diagnostics:
    info: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def extend(self, other: Diagnostics) -> None:
        for mine, theirs in (
            (self.info, other.info),
            (self.warnings, other.warnings),
            (self.errors, other.errors),
        ):
            mine.extend(m for m in theirs if m not in mine)


@dataclass
class OpStats:
    """Op metrics of the whole profile and of each step, with the peaks they are judged by."""

    hosts: list[str]
    run_env: RunEnvironment
    perf_env: PerfEnv
    all_db: OpMetricsDb  # whole profile, IDLE included
    steps: list[StepInfo] = field(default_factory=list)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    has_step_markers: bool = False
    # Ours, not XProf's (json and UI only): device time XProf leaves out (kernels without an
    # HLO op), notes such as unknown custom calls, and per-op cost flags.
    unattributed: OpMetricsDb | None = None
    notes: list[str] = field(default_factory=list)
    program_names: dict[int, str] = field(default_factory=dict)  # program id -> module name

    @property
    def complete_steps(self) -> list[StepInfo]:
        return [s for s in self.steps if s.complete]


def combine_hosts(parts: list[OpStats]) -> OpStats:
    """All hosts as one, as XProf combines them.

    Ops are summed by (program, name) and core counts add up; the last non-zero peak
    FLOP/s wins and the bandwidths come from the first host that has them; steps are
    the step numbers every host has. Hosts with different devices or peaks get a
    warning instead of a silent merge.
    """
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    run_env = RunEnvironment(
        hardware_type=first.run_env.hardware_type,
        device_type=first.run_env.device_type,
        device_core_count=sum(p.run_env.device_core_count for p in parts),
        active_core_count=sum(p.run_env.active_core_count for p in parts),
    )
    perf_env = PerfEnv(
        peak_bws_gbps=list(first.perf_env.peak_bws_gbps),
        has_megacore=first.perf_env.has_megacore,
        has_merged_vmem=first.perf_env.has_merged_vmem,
        source=first.perf_env.source,
        dtype_tflops=dict(first.perf_env.dtype_tflops),
    )
    bws_found = any(first.perf_env.peak_bws_gbps)
    for part in parts:
        if part.perf_env.peak_tera_flops_per_second > 0:
            perf_env.peak_tera_flops_per_second = part.perf_env.peak_tera_flops_per_second
            perf_env.dtype_tflops = dict(part.perf_env.dtype_tflops)
        if not bws_found and any(part.perf_env.peak_bws_gbps):
            perf_env.peak_bws_gbps = list(part.perf_env.peak_bws_gbps)
            bws_found = True
    diagnostics = Diagnostics()
    for part in parts:
        diagnostics.extend(part.diagnostics)
    devices = {(p.run_env.device_type, _peak_key(p.perf_env)) for p in parts}
    if len(devices) > 1:
        names = ", ".join(sorted({d for d, _ in devices}))
        diagnostics.warnings.append(
            f"Hosts differ in device or peaks ({names}); the combined roofline uses one set of "
            "peaks. Compare hosts one by one for exact efficiencies."
        )
    common = set.intersection(*({s.step_num for s in p.steps} for p in parts))
    numbered = [{s.step_num: s for s in p.steps} for p in parts]
    steps = []
    for num in sorted(common):
        mine = [by_number[num] for by_number in numbered]
        steps.append(
            StepInfo(
                step_num=num,
                complete=all(s.complete for s in mine),
                db=combine([s.db for s in mine]),
                duration_ps=max(s.duration_ps for s in mine),
            )
        )
    unattributed = [p.unattributed for p in parts if p.unattributed is not None]
    return OpStats(
        unattributed=combine(unattributed) if unattributed else None,
        notes=list(dict.fromkeys(n for p in parts for n in p.notes)),
        program_names={k: v for p in parts for k, v in p.program_names.items()},
        hosts=[h for p in parts for h in p.hosts],
        run_env=run_env,
        perf_env=perf_env,
        all_db=combine([p.all_db for p in parts]),
        steps=steps,
        diagnostics=diagnostics,
        has_step_markers=any(p.has_step_markers for p in parts),
    )


def _peak_key(env: PerfEnv) -> tuple:
    return (round(env.peak_tera_flops_per_second, 6), tuple(round(b, 6) for b in env.peak_bws_gbps))
