"""GPU op metrics (NVIDIA and AMD) from ``/device:GPU:N`` kernel events and the HLO cost model.

Kernels on a plane's stream lines carry ``hlo_op`` and ``program_id``; the last ``::``
part of ``hlo_op`` names the instruction in that program's HLO module, whose cost comes
from ``hlo_cost``. As in XProf, every kernel is one occurrence, all kernels count in
the device time, and kernels without an HLO op are not op rows; unlike XProf, an op's
cost is counted once per execution (a run of consecutive kernels of the same op on
one stream whose kernel names do not repeat), not once per kernel, and kernels without an
HLO op are reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .device_peaks import gpu_dtype_tflops, gpu_perf_env
from .event_table import line_table
from .hlo_cost import ModuleCosts
from .host_steps import HostMarkers, host_markers
from .op_metrics import HBM, READ, WRITE, OpMetricsDb, empty_columns, with_idle
from .op_stats import OpStats, StepInfo
from .perf_env import RunEnvironment
from .profile_reader import GPU_PLANE, HOST_PLANE, Profile, stat_ids, stat_names, stats_dict
from .protos import xplane_pb2

KERNEL_STATS = ("hlo_op", "program_id", "tf_op", "correlation_id", "flops", "bytes_accessed")
NO_HLO_CATEGORY = "kernel without HLO op"
GPU_STEPS_INFO = (
    "Per-step rows computed by tb_roofline_plugin from host step markers and kernel "
    "launches (XProf reports zeros for GPU steps)."
)


@dataclass
class Kernels:
    """All kernel events of one GPU plane, in time order per line."""

    begin_ps: np.ndarray
    end_ps: np.ndarray
    line: np.ndarray
    name: list[str]  # kernel (event metadata) name
    hlo_op: list[str | None]
    program_id: list[int]
    tf_op: list[str | None]
    correlation_id: list[int | None]
    flops: list[float | None]
    bytes_accessed: list[float | None]

    @property
    def span_ps(self) -> int:
        return int(self.end_ps.max() - self.begin_ps.min()) if len(self.begin_ps) else 0


def read_kernels(plane: xplane_pb2.XPlane) -> Kernels:
    """Every event of every line of the plane (kernels, memcpys), with absolute times."""
    ids = stat_ids(plane, KERNEL_STATS)
    names = stat_names(plane)
    columns: dict[str, list] = {k: [] for k in ("begin", "end", "line", "name", *KERNEL_STATS)}
    for index, line in enumerate(plane.lines):
        table = line_table(line)
        metadata, inverse = np.unique(table.metadata_id, return_inverse=True)
        meta_names = np.array(
            [
                plane.event_metadata[m].name if m in plane.event_metadata else ""
                for m in metadata.tolist()
            ],
            object,
        )
        columns["begin"].append(table.begin_ps)
        columns["end"].append(table.end_ps)
        columns["line"].append(np.full(len(table), index, np.int64))
        columns["name"].extend(meta_names[inverse].tolist() if len(table) else [])
        for key in ("hlo_op", "tf_op"):
            values = table.strings(ids.get(key), names)
            columns[key].extend(v if v else None for v in values.tolist())
        for key in ("program_id", "correlation_id"):
            present, values = table.integers(ids.get(key))
            as_u64 = values.astype(np.uint64).tolist()
            columns[key].extend(v if p else None for v, p in zip(as_u64, present.tolist()))
        for key in ("flops", "bytes_accessed"):
            values = table.numbers(ids.get(key))
            columns[key].extend(None if np.isnan(v) else v for v in values.tolist())
    empty = np.zeros(0, np.int64)
    return Kernels(
        begin_ps=np.concatenate(columns["begin"]) if columns["begin"] else empty,
        end_ps=np.concatenate(columns["end"]) if columns["end"] else empty,
        line=np.concatenate(columns["line"]) if columns["line"] else empty,
        name=columns["name"],
        hlo_op=columns["hlo_op"],
        program_id=[v or 0 for v in columns["program_id"]],
        tf_op=columns["tf_op"],
        correlation_id=columns["correlation_id"],
        flops=columns["flops"],
        bytes_accessed=columns["bytes_accessed"],
    )


@dataclass
class _OpRow:
    program_id: int
    name: str
    category: str
    kernels: int = 0
    executions: int = 0
    time_ps: int = 0
    event_flops: float = 0.0
    event_bytes: float = 0.0
    source: tuple[str, int, str] = ("", -1, "")
    cost: object = None


@dataclass
class GpuOps:
    """Ops (by program and instruction) and kernels without an HLO op, of some kernels."""

    rows: dict[tuple[int, str], _OpRow] = field(default_factory=dict)
    unattributed: dict[str, _OpRow] = field(default_factory=dict)


def _op_of(kernels: Kernels, i: int, modules: dict[int, ModuleCosts]):
    """(program, instruction name, module) of kernel i; None when it is no XLA/framework op."""
    hlo_op = kernels.hlo_op[i]
    if hlo_op is not None:
        name = hlo_op.rsplit("::", 1)[-1]
        module = modules.get(kernels.program_id[i])
        if module is None or module.cost(name) is None:
            return None
        return kernels.program_id[i], name, module
    if kernels.tf_op[i] is not None and not kernels.tf_op[i].startswith("XlaModule:"):
        return 0, f"{kernels.tf_op[i]}/{kernels.name[i]}", None
    return None


def collect_ops(kernels: Kernels, modules: dict[int, ModuleCosts], take: np.ndarray) -> GpuOps:
    """Sums the kernels selected by ``take`` per op (and per kernel name without an op)."""
    ops = GpuOps()
    # Per line: the op of the last kernel and the kernel names of its current execution. A
    # new execution starts with another op or when a kernel name repeats: an op launched as
    # kernels [A, B] three times in a row is A B A B A B, i.e. three executions.
    previous: dict[int, tuple[tuple[int, str] | None, set[str]]] = {}
    order = np.lexsort((kernels.begin_ps, kernels.line))
    for i in order[take[order]].tolist():
        found = _op_of(kernels, i, modules)
        duration = int(kernels.end_ps[i] - kernels.begin_ps[i])
        line = int(kernels.line[i])
        if found is None:
            name = kernels.name[i] or "(unnamed kernel)"
            row = ops.unattributed.setdefault(name, _OpRow(0, name, NO_HLO_CATEGORY))
            row.kernels += 1
            row.executions += 1
            row.time_ps += duration
            previous[line] = (None, set())
            continue
        program, name, module = found
        key = (program, name)
        row = ops.rows.get(key)
        if row is None:
            if module is None:
                row = _OpRow(program, name, "framework op")
            else:
                row = _OpRow(program, name, module.category(name), source=module.source(name))
                row.cost = module.cost(name)
            ops.rows[key] = row
        row.kernels += 1
        row.time_ps += duration
        last_key, seen = previous.get(line, (None, set()))
        if last_key != key or kernels.name[i] in seen:
            row.executions += 1
            seen = set()
        seen.add(kernels.name[i])
        previous[line] = (key, seen)
        row.event_flops += kernels.flops[i] or 0.0
        row.event_bytes += kernels.bytes_accessed[i] or 0.0
    return ops


def ops_db(rows: list[_OpRow], total_time_ps: int) -> OpMetricsDb:
    """Op metrics of the rows: per-execution cost × executions; kernels as occurrences."""
    cols = empty_columns(len(rows))
    for i, row in enumerate(rows):
        cols["program_id"][i] = row.program_id
        cols["name"][i] = row.name
        cols["category"][i] = row.category
        cols["occurrences"][i] = row.kernels
        cols["time_ps"][i] = cols["self_time_ps"][i] = row.time_ps
        cols["normalized_time_ps"][i] = row.time_ps
        cost = row.cost
        flops = cost.flops * row.executions if cost is not None else 0.0
        total_bytes = cost.bytes_accessed * row.executions if cost is not None else 0.0
        written = cost.bytes_written * row.executions if cost is not None else 0.0
        if flops <= 0 and row.event_flops > 0:  # XProf's fallback: stats on the events
            flops = row.event_flops
        if total_bytes <= 0 and row.event_bytes > 0:
            total_bytes, written = row.event_bytes, 0.0
        cols["flops"][i] = cols["model_flops"][i] = flops
        cols["bytes_accessed"][i] = total_bytes
        read = max(total_bytes - written, 0.0)
        cols["breakdown"][i, HBM, READ] = read
        cols["breakdown"][i, HBM, WRITE] = max(written, 0.0)
        cols["has_breakdown"][i] = read > 0 or written > 0
        cols["source_file"][i], cols["source_line"][i], cols["source_stack"][i] = row.source
        cols["dtype"][i] = cost.dtype if cost is not None else ""
    return OpMetricsDb(**cols, total_time_ps=int(total_time_ps))


def gpu_op_stats(profile: Profile, host: str, modules: dict[int, ModuleCosts]) -> OpStats:
    planes = profile.planes_matching(GPU_PLANE)
    with_stats = [p for p in planes if p.stats] or planes
    plane_stats = stats_dict(with_stats[0].stats, stat_names(with_stats[0]))
    perf_env, device_type = gpu_perf_env(plane_stats)
    perf_env.dtype_tflops = gpu_dtype_tflops(plane_stats)
    all_kernels = [read_kernels(p) for p in planes]
    used = [k for k in all_kernels if len(k.begin_ps)]
    total = sum(k.span_ps for k in used)
    op_rows: dict[tuple[int, str], _OpRow] = {}
    unattributed: dict[str, _OpRow] = {}
    for kernels in used:
        ops = collect_ops(kernels, modules, np.ones(len(kernels.begin_ps), bool))
        _merge(op_rows, ops.rows)
        _merge(unattributed, ops.unattributed)
    stats = OpStats(
        hosts=[host],
        run_env=RunEnvironment(
            hardware_type="GPU",
            device_type=device_type,
            device_core_count=len(planes),
            active_core_count=len(used),
        ),
        perf_env=perf_env,
        all_db=with_idle(ops_db(list(op_rows.values()), total)),
        unattributed=ops_db(list(unattributed.values()), total) if unattributed else None,
    )
    stats.notes.extend(cost_notes(op_rows.values()))
    markers = host_markers(profile.plane(HOST_PLANE))
    if markers.steps:
        stats.has_step_markers = True
        stats.steps, unclaimed = gpu_steps(used, modules, markers)
        stats.diagnostics.info.append(GPU_STEPS_INFO)
        if unclaimed[0]:
            stats.notes.append(
                f"{unclaimed[0]} kernels ({unclaimed[1] / 1e6:,.1f} us) were launched outside "
                "every step; they count in Total only."
            )
    return stats


def gpu_steps(
    used: list[Kernels], modules: dict[int, ModuleCosts], markers: HostMarkers
) -> tuple[list[StepInfo], tuple[int, int]]:
    """Steps from host step roots: a kernel belongs to the step its launch is in.

    A step's time on a GPU runs from the earlier of the step's start and its first kernel
    to the later of the step's end and its last kernel; a step with a launch whose kernel
    never ran (the profile stopped) is incomplete. Returns the steps and the (count, ps)
    of kernels no step claims.
    """
    starts = np.array([b for _, b, _ in markers.steps], np.int64)
    ends = np.array([e for _, _, e in markers.steps], np.int64)
    kernel_ids = set()
    assigned = []
    unclaimed_count = unclaimed_ps = 0
    for kernels in used:
        launch = np.array(
            [markers.launch_ps.get(c, -1) if c is not None else -1 for c in kernels.correlation_id],
            np.int64,
        )
        index = np.searchsorted(starts, launch, side="right") - 1
        claimed = (launch >= 0) & (index >= 0)
        claimed[claimed] &= launch[claimed] < ends[index[claimed]]
        index[~claimed] = -1
        assigned.append(index)
        kernel_ids.update(c for c in kernels.correlation_id if c is not None)
        unclaimed_count += int((~claimed).sum())
        unclaimed_ps += int((kernels.end_ps - kernels.begin_ps)[~claimed].sum())
    launches = np.array(sorted(markers.launch_ps.items()), np.int64).reshape(-1, 2)
    steps = []
    for s, (num, begin, end) in enumerate(markers.steps):
        rows: dict[tuple[int, str], _OpRow] = {}
        total = 0
        for kernels, index in zip(used, assigned):
            take = index == s
            if not take.any():
                continue
            _merge(rows, collect_ops(kernels, modules, take).rows)
            first = min(begin, int(kernels.begin_ps[take].min()))
            total += max(end, int(kernels.end_ps[take].max())) - first
        inside = launches[(launches[:, 1] >= begin) & (launches[:, 1] < end), 0]
        complete = all(int(c) in kernel_ids for c in inside)
        db = with_idle(ops_db(list(rows.values()), total))
        steps.append(StepInfo(num, complete, db, duration_ps=end - begin))
    return steps, (unclaimed_count, unclaimed_ps)


def _merge(into: dict, rows: dict) -> None:
    for key, row in rows.items():
        mine = into.get(key)
        if mine is None:
            into[key] = row
            continue
        mine.kernels += row.kernels
        mine.executions += row.executions
        mine.time_ps += row.time_ps
        mine.event_flops += row.event_flops
        mine.event_bytes += row.event_bytes


def cost_notes(rows) -> list[str]:
    """One note per custom-call target whose cost is unknown (0 FLOPs; bytes from shapes)."""
    targets = sorted({row.cost.note for row in rows if row.cost is not None and row.cost.unknown})
    return [f"{t}: cost unknown, counted as 0 FLOPs with bytes from its shapes" for t in targets]
