"""What one host's (or several hosts') profile says about its ops: XProf's OpStats, reduced."""

from __future__ import annotations

from dataclasses import dataclass, field

from .op_metrics import OpMetricsDb, combine
from .perf_env import PerfEnv, RunEnvironment


@dataclass
class StepInfo:
    """One step: its ops (summed over cores) and whether the profile window cut it."""

    step_num: int
    complete: bool
    db: OpMetricsDb
    duration_ps: int = 0  # wall time of the step (longest core)


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
    steps = []
    for num in sorted(common):
        mine = [next(s for s in p.steps if s.step_num == num) for p in parts]
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
