"""What one host's (or several hosts') profile says about its ops: XProf's OpStats, reduced."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import compress, repeat
from typing import Callable

import numpy as np

from ..arrays import held_bytes, unique
from ..peaks.devices import device_time_words
from ..peaks.perf_env import PerfEnv, RunEnvironment
from ..wording import named
from .hardware import HardwareCounts, combine_hardware
from .op_metrics import (
    IDLE_NAME,
    STRING_COLUMNS,
    OpMetricsDb,
    combine,
    empty_columns,
    empty_db,
)
from .step_ops import ROW_COLUMNS, StepOps


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


class StepList(list):
    """The StepInfos ``table_steps`` makes, with what they were made of as arrays: readers of
    every step (the json's step list, which steps hold ops) take the arrays instead of a
    Python loop over tens of thousands of objects. A slice or copy is a plain list."""

    def __init__(self, items, table: StepOps, numbers, complete, durations, positions=None) -> None:
        super().__init__(items)
        self.table = table
        if positions is None:
            positions = np.arange(len(numbers), dtype=np.int64)
        self.positions = positions  # int64 per step: its index in ``table``
        self.numbers = numbers  # int64 per step
        self.complete = complete  # bool
        self.durations = durations  # int64 ps

    def where(self, chosen: np.ndarray) -> StepList:
        """The steps where ``chosen`` (bool per step) is true, arrays included."""
        index = np.flatnonzero(chosen)
        items = list(compress(self, chosen.tolist()))
        return StepList(
            items,
            self.table,
            self.numbers[index],
            self.complete[index],
            self.durations[index],
            self.positions[index],
        )


def table_steps(table: StepOps, numbers, complete, durations) -> list[StepInfo]:
    """The StepInfo of every step of ``table`` (same order)."""
    numbers = np.asarray(numbers, np.int64)
    complete = np.asarray(complete, bool)
    durations = np.asarray(durations, np.int64)
    # As Python ints and bools once: tens of thousands of steps, no numpy scalar each; the
    # arguments by position (keywords cost as much again).
    n = len(numbers)
    items = list(
        map(StepInfo, numbers.tolist(), complete.tolist(), repeat(None, n), durations.tolist(),
            repeat(table, n), range(n))
    )  # fmt: skip
    return StepList(items, table, numbers, complete, durations)


def step_arrays(steps: list[StepInfo]) -> StepList | None:
    """``steps`` as ``table_steps`` made them, arrays included; None for any other list."""
    if isinstance(steps, StepList) and len(steps) == len(steps.numbers):
        return steps
    return None


def shared_table(steps: list[StepInfo]) -> tuple[StepOps | None, np.ndarray]:
    """The one StepOps all ``steps`` live in and their indices there, or (None, [])."""
    made = step_arrays(steps)
    if made is not None:
        return made.table, made.positions
    table = steps[0].table if steps else None
    if table is None or any(s.table is not table or s._db is not None for s in steps):
        return None, np.zeros(0, np.int64)
    return table, np.array([s.index for s in steps], np.int64)


def steps_holding_ops(steps: list[StepInfo]) -> np.ndarray:
    """``holds_ops`` of every step (bool array); of steps sharing a table, from its columns
    at once, not step by step."""
    table, index = shared_table(steps)
    if table is None:
        return np.fromiter((s.holds_ops for s in steps), bool, len(steps))
    ran = np.concatenate([[0], np.cumsum(table.values["occurrences"] > 0)])
    return ran[table.offsets[index + 1]] > ran[table.offsets[index]]


def any_step_holds_ops(steps: list[StepInfo]) -> bool:
    """``steps_holding_ops(steps).any()``; of every step of a table, whose rows are all a
    step's, from whether any row ran (no prefix sum over the rows)."""
    table, index = shared_table(steps)
    if table is not None and len(index) == len(table) and len(table):
        ran = table.values["occurrences"] > 0
        every_row = table.offsets[0] == 0 and table.offsets[-1] == len(ran)
        if every_row and (index == np.arange(len(table))).all():
            return bool(ran.any())
    return bool(steps_holding_ops(steps).any())


def steps_device_time_ps(steps: list[StepInfo]) -> np.ndarray:
    """Each step's device time (int64 ps, summed over cores: its Program time with
    infeed/outfeed); of steps sharing a table, from its column at once."""
    table, index = shared_table(steps)
    if table is None:
        return np.fromiter((s.db.total_time_ps for s in steps), np.int64, len(steps))
    return table.total_time_ps[index]


def step_nbytes(steps: list[StepInfo]) -> int:
    """Memory the steps' ops hold: each shared table once, and the steps' own dbs."""
    tables = {id(s.table): s.table for s in steps if s._db is None and s.table is not None}
    own = [s._db for s in steps if s._db is not None]
    numeric = held_bytes([v for db in own for v in db.__dict__.values() if hasattr(v, "nbytes")])
    return sum(t.nbytes for t in tables.values()) + numeric


def steps_without_ops_note(stats: OpStats) -> str | None:
    """One line when the profile has steps and ops but none of its steps holds an op (every
    op ran, or was launched, outside the steps), else None."""
    if not stats.steps or not (stats.all_db.occurrences > 0).any():
        return None
    if any_step_holds_ops(stats.steps):
        return None
    numbers = sorted(s.step_num for s in stats.steps)
    if len(numbers) == 1:
        return f"Step {numbers[0]} holds no op: every op ran outside it; only Total shows the ops."
    return (
        f"None of the {len(numbers):,} steps ({numbers[0]:,}–{numbers[-1]:,}) holds an op: "
        "every op ran outside the steps; only Total shows the ops."
    )


# Op rows of GPU kernels that no CPU op launched (PyTorch traces): named by the annotation
# around their launch, or by the kernel itself.
ANNOTATION_CATEGORY = "annotation"
NO_OP_CATEGORY = "kernel without op"
KERNEL_SHARE_PREFIX = "kernel time: "
DEVICE_TIME_PREFIX = "Program time (Total, Average and each step) is device time"


def kernel_share_note(db: OpMetricsDb) -> str | None:
    """One line: the shares of the kernel time of ``db`` in op rows, annotation rows and
    kernel-named rows (None without kernel time)."""
    busy = db.name != IDLE_NAME
    time_ps, category = db.time_ps[busy].astype(np.float64), db.category[busy]
    total = float(time_ps.sum())
    if not total > 0:
        return None
    annotated = float(time_ps[category == ANNOTATION_CATEGORY].sum())
    alone = float(time_ps[category == NO_OP_CATEGORY].sum())
    ops = total - annotated - alone
    return (
        f"{KERNEL_SHARE_PREFIX}{100 * ops / total:.1f} % attributed to CPU ops, "
        f"{100 * annotated / total:.1f} % to annotations, {100 * alone / total:.1f} % as "
        f"kernels without an op (of {total / 1e6:,.1f} us)"
    )


def device_time_note(hardware_type: str, devices: int) -> str:
    """What Program time and a step's duration mean in a PyTorch GPU trace."""
    words = device_time_words(hardware_type, devices)
    return (
        f"{DEVICE_TIME_PREFIX}{words[len('device time') :]}: on each device, Total runs from "
        "the earlier of the first step's start and its first GPU event to the later of the "
        "last step's end and its last GPU event, a step from its start (or where the step "
        "before it ended on that device) to the later of its end and its last kernel. A "
        "step's duration_us is its wall time (the longest device's)."
    )


def hosts_notes(
    hosts: list[str],
    notes: list[list[str]],
    db: OpMetricsDb,
    devices: int,
    hardware_type: str = "GPU",
) -> list[str]:
    """Notes of hosts combined (``notes[i]`` of ``hosts[i]``): the kernel-share and
    device-time lines made again for the run (one each, from the combined ops and device
    count), the others once each, named by their hosts (``hosts_messages``)."""
    remade = (KERNEL_SHARE_PREFIX, DEVICE_TIME_PREFIX)
    kept = [[n for n in mine if not n.startswith(remade)] for mine in notes]
    out = hosts_messages(hosts, kept)
    every = [n for mine in notes for n in mine]
    if any(n.startswith(DEVICE_TIME_PREFIX) for n in every):
        out.append(device_time_note(hardware_type, devices))
    share = kernel_share_note(db) if any(n.startswith(KERNEL_SHARE_PREFIX) for n in every) else None
    return [*out, share] if share else out


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
class LayerSplit:
    """The op rows of a PyTorch trace split by module path (``op_path``): an op row there
    merges the op's executions in every module, so the layer tree (``ops/layers.py``) is
    made of these rows instead; for the whole profile and each step (the steps' numbers,
    completeness and durations are those of ``OpStats.steps``)."""

    all_db: OpMetricsDb
    steps: list[StepInfo] = field(default_factory=list)


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
    # The host's devices that ran ops, by number (XLA:CPU device ordinals, the N of
    # /device:GPU:N and /device:TPU:N): those a view can show one by one (none for several
    # hosts combined, or a PyTorch trace). ``device``: the one shown, None for all.
    devices: list[int] = field(default_factory=list)
    device: int | None = None
    # What hardware counters measured per op (XProf's ALL_HW records), when recorded.
    hardware: HardwareCounts | None = None
    # PyTorch traces whose ops ran in modules: their rows split by module (None: the op
    # rows' own op_path is their layer, as for every XLA op)
    layer_split: LayerSplit | None = None

    @property
    def complete_steps(self) -> list[StepInfo]:
        made = step_arrays(self.steps)
        if made is not None:  # with its arrays (the average sums them from the table)
            return made.where(made.complete)
        return [s for s in self.steps if s.complete]


HOSTS_NAMED_AT_MOST = 3  # a message of some hosts names this many, then counts the rest


def hosts_messages(hosts: list[str], messages: list[list[str]]) -> list[str]:
    """Each host's messages (``messages[i]`` of ``hosts[i]``) said once for the run: as they
    are when every host says the same, else named by the hosts that say it
    ("host1: 3 memcpy/memset (12.1 us) ..."), so all-hosts notes never repeat unnamed."""
    said_by: dict[str, list[str]] = {}
    for host, theirs in zip(hosts, messages):
        for message in dict.fromkeys(theirs):
            said_by.setdefault(message, []).append(host)
    out = []
    for message, by in said_by.items():
        if len(by) == len(hosts):
            out.append(message)
            continue
        shown = by[:HOSTS_NAMED_AT_MOST]
        who = ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]
        if len(by) > len(shown):
            who = f"{', '.join(shown)} and {len(by) - len(shown):,} more hosts"
        out.append(f"{who}: {message}")
    return out


UNSPLIT_HOSTS = (
    "Layers: {hosts} recorded no module ranges or autograd nodes, so the hosts' layers "
    "cannot be combined; the layer tree holds every op without a layer."
)


def combine_hosts(parts: list[OpStats]) -> OpStats:
    """All hosts as one, as XProf combines them (``HostsCombiner``, all at once)."""
    combiner = HostsCombiner()
    for part in parts:
        combiner.add(part)
    return combiner.result()


class HostsCombiner:
    """All hosts as one, as XProf combines them, one host at a time (in host order).

    Ops are summed by (program, name) and core counts add up; the last non-zero peak
    FLOP/s wins and the bandwidths come from the first host that has them; steps are
    the step numbers every host has. Hosts with different devices or peaks get a
    warning instead of a silent merge.

    Each host's rows (of every step, and of the whole profile) are merged into the rows so
    far as arrays when it comes, so only merged rows are kept, never every host's: the same
    result, to the bit, as ``combine`` of the hosts' dbs step by step. One host alone is
    the result as it is.
    """

    def __init__(self) -> None:
        self._parts: list[OpStats] = []  # each host without its ops (but the first, alone)
        self._known: dict[tuple[int, str, str], int] = {}  # (program_id, name, op_path) -> key
        self._all_keys = _OpKeys(self._known)
        self._step_keys = _OpKeys(self._known)
        self._all: HostsStepOps | None = None
        self._steps: HostsStepOps | None = None  # every step number so far, in order
        self._numbers: list[int] = []
        self._seen: dict[int, list] = {}  # step number -> [hosts, complete, duration]
        self._unattributed: list[OpMetricsDb | None] = []
        self._hardware: list[HardwareCounts] = []
        self._split: HostsCombiner | None = None  # the hosts' layer splits
        self._unsplit: list[str] = []  # hosts without one

    def add(self, part: OpStats) -> None:
        split = part.layer_split
        if split is not None:  # PyTorch rows split by module, merged the same way
            if self._split is None:
                self._split = HostsCombiner()
            self._split.add(replace(part, all_db=split.all_db, steps=split.steps, layer_split=None))
        else:
            self._unsplit.extend(part.hosts)
        if len(self._parts) == 1:  # a second host: the first one's ops go in now
            self._parts[0] = self._merged_in(self._parts[0])
        self._parts.append(self._merged_in(part) if self._parts else part)

    def _merged_in(self, part: OpStats) -> OpStats:
        """Merges a host's ops into the rows so far; what is left of the host to keep."""
        self._unattributed.append(part.unattributed)
        if part.hardware is not None:
            self._hardware.append(part.hardware)
        self._merge(part)
        return replace(
            part, all_db=empty_db(), steps=[], unattributed=None, hardware=None, layer_split=None
        )

    def _merge(self, part: OpStats) -> None:
        block, keys = _db_block([part.all_db]), self._all_keys.of(part.all_db)
        self._all = _combined(self._all, None, block, keys, 1)

        by_number = {s.step_num: s for s in part.steps}
        for num, step in by_number.items():
            seen = self._seen.setdefault(num, [0, True, step.duration_ps])
            seen[0] += 1
            seen[1] = seen[1] and step.complete
            seen[2] = max(seen[2], step.duration_ps)
        if not by_number:
            return
        numbers = sorted(set(self._numbers) | set(by_number))
        position = {num: i for i, num in enumerate(numbers)}
        mine = list(by_number.values())
        table, index = shared_table(mine)
        block = _db_block([s.db for s in mine]) if table is None else _table_block(table, index)
        block.where = np.array([position[s.step_num] for s in mine], np.int64)
        so_far = np.array([position[num] for num in self._numbers], np.int64)
        keys = self._step_keys.of(block.static)
        self._steps = _combined(self._steps, so_far, block, keys, len(numbers))
        self._numbers = numbers

    def result(self) -> OpStats:
        parts = self._parts
        if len(parts) == 1:
            return parts[0]
        if not parts:
            raise ValueError("no hosts to combine")
        split, layer_notes = None, []
        if self._split is not None and not self._unsplit:
            merged = self._split.result()
            split = LayerSplit(merged.all_db, merged.steps)
        elif self._split is not None:
            layer_notes.append(UNSPLIT_HOSTS.format(hosts=named(self._unsplit, "host", 3)))
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
            memory=first.perf_env.memory,
            listed_dtypes_only=first.perf_env.listed_dtypes_only,
        )
        bws_found = any(first.perf_env.peak_bws_gbps)
        for part in parts:
            if part.perf_env.peak_tera_flops_per_second > 0:
                perf_env.peak_tera_flops_per_second = part.perf_env.peak_tera_flops_per_second
                perf_env.dtype_tflops = dict(part.perf_env.dtype_tflops)
            if not bws_found and any(part.perf_env.peak_bws_gbps):
                perf_env.peak_bws_gbps = list(part.perf_env.peak_bws_gbps)
                bws_found = True
        hosts = [", ".join(p.hosts) or f"host {i + 1}" for i, p in enumerate(parts)]
        diagnostics = Diagnostics(
            info=hosts_messages(hosts, [p.diagnostics.info for p in parts]),
            warnings=hosts_messages(hosts, [p.diagnostics.warnings for p in parts]),
            errors=hosts_messages(hosts, [p.diagnostics.errors for p in parts]),
        )
        devices = {(p.run_env.device_type, _peak_key(p.perf_env)) for p in parts}
        if len(devices) > 1:
            names = ", ".join(sorted({d for d, _ in devices}))
            diagnostics.warnings.append(
                f"Hosts differ in device or peaks ({names}); the combined roofline uses one set "
                "of peaks. Compare hosts one by one for exact efficiencies."
            )
        unattributed = [db for db in self._unattributed if db is not None]
        assert self._all is not None
        all_db = self._all.db(0)
        notes = (
            hosts_notes(
                hosts,
                [p.notes for p in parts],
                all_db,
                run_env.device_core_count,
                run_env.hardware_type,
            )
            + layer_notes
        )
        return OpStats(
            unattributed=combine(unattributed) if unattributed else None,
            notes=notes,
            program_names={k: v for p in parts for k, v in p.program_names.items()},
            hosts=[h for p in parts for h in p.hosts],
            run_env=run_env,
            perf_env=perf_env,
            all_db=all_db,
            steps=self._common_steps(len(parts)),
            diagnostics=diagnostics,
            has_step_markers=any(p.has_step_markers for p in parts),
            hardware=combine_hardware(self._hardware, all_db.total_time_ps),
            layer_split=split,
        )

    def _common_steps(self, hosts: int) -> list[StepInfo]:
        """The step numbers every host has, each summed over the hosts, in one table."""
        chosen = [i for i, num in enumerate(self._numbers) if self._seen[num][0] == hosts]
        if not chosen or self._steps is None:
            return []
        table = self._steps
        if len(chosen) < len(self._numbers):
            index = np.array(chosen, np.int64)
            starts, ends = table.offsets[index], table.offsets[index + 1]
            rows = _ranges(starts, ends)
            table = replace(
                table,
                values={k: v[rows] for k, v in table.values.items()},
                op=table.op[rows],
                offsets=np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64),
                total_time_ps=table.total_time_ps[index],
            )
        numbers = [self._numbers[i] for i in chosen]
        complete = [self._seen[num][1] for num in numbers]
        durations = [self._seen[num][2] for num in numbers]
        return table_steps(table, numbers, complete, durations)


# What a row of a db says about its op rather than adding up: kept once per op.
_DESCRIPTIVE = ("program_id", "source_line", *STRING_COLUMNS)


@dataclass
class HostsStepOps(StepOps):
    """Steps of several hosts merged (``combine_hosts``): rows are merged ops and each
    step's IDLE row, in the order ``combine`` gives them, so a step's db is its rows as
    they are (``StepOps.db`` adds the IDLE row a host's table lacks)."""

    # int64 per op: its (program_id, name) among all ops; ops of one key merge
    key: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def nbytes(self) -> int:
        return held_bytes([*self.values.values(), *self.static.values(), self.op, self.offsets,
                           self.key])  # fmt: skip

    def db(self, step: int) -> OpMetricsDb:
        part = self.row_db(slice(int(self.offsets[step]), int(self.offsets[step + 1])))
        return replace(part, total_time_ps=int(self.total_time_ps[step]))

    def idle_ps(self) -> np.ndarray:
        """IDLE time per step: its IDLE rows'."""
        rows = self.static["name"][self.op] == IDLE_NAME
        idle = np.zeros(len(self), np.int64)
        np.add.at(idle, self.segment[rows], self.values["self_time_ps"][rows])
        return idle

    def summed(self, steps: np.ndarray) -> OpMetricsDb:
        """``combine`` of the given steps' dbs, in the order given."""
        steps = np.asarray(steps, np.int64)
        if len(steps) == 0:
            return OpMetricsDb(**empty_columns(0))
        rows = _ranges(self.offsets[steps], self.offsets[steps + 1])
        total = np.array([self.total_time_ps[steps].sum()], np.int64)
        one = np.zeros(len(rows), np.int64)
        block = _Block(self.static, self.values.__getitem__, rows, self.op[rows], one, total)
        return _merged([block], 1, [self.key]).db(0)


@dataclass
class _Block:
    """Rows to merge (a host's, or those merged so far), in groups (steps), in the order
    ``combine`` meets them."""

    static: dict[str, np.ndarray]  # the descriptive columns, one entry per op
    column: Callable[[str], np.ndarray]  # a summed column; ``src`` indexes it
    src: np.ndarray  # int64 per row
    op: np.ndarray  # int64 per row: its entry in ``static``
    group: np.ndarray  # int64 per row: its group here
    totals: np.ndarray  # int64 per group: device time
    where: np.ndarray | None = None  # int64 per group: the merged group (None: the same)


class _OpKeys:
    """Keys of (program_id, name, op_path) triples, equal triples equal keys; a table of ops
    equal to the one before it (the hosts of one program) takes its keys as they are."""

    def __init__(self, known: dict[tuple[int, str, str], int]) -> None:
        self._known = known
        self._last: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def of(self, ops) -> np.ndarray:
        """The key of each op of ``ops`` (an OpMetricsDb or a dict of columns)."""
        get = ops.__getitem__ if isinstance(ops, dict) else ops.__getattribute__
        program_id, name, path = get("program_id"), get("name"), get("op_path")
        last = self._last
        if last is not None and len(last[0]) == len(name):
            same = (last[0] == program_id).all() and (last[1] == name).all()
            if same and (last[2] == path).all():
                return last[3]
        known = self._known
        triples = zip(program_id.tolist(), name.tolist(), path.tolist())
        keys = np.array([known.setdefault(t, len(known)) for t in triples], np.int64)
        self._last = (program_id, name, path, keys)
        return keys


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``starts[i]:ends[i]`` for every i, one after the other."""
    counts = np.asarray(ends - starts, np.int64)
    base = np.asarray(starts, np.int64) - (np.cumsum(counts) - counts)
    return np.repeat(base, counts) + np.arange(int(counts.sum()), dtype=np.int64)


def _db_block(dbs: list[OpMetricsDb]) -> _Block:
    """Whole dbs, one group each (their rows are their ops)."""
    lengths = [len(db) for db in dbs]
    rows = np.arange(sum(lengths), dtype=np.int64)

    def column(name: str) -> np.ndarray:
        return np.concatenate([getattr(db, name) for db in dbs])

    return _Block(
        {k: column(k) for k in _DESCRIPTIVE}, column, rows, rows,
        np.repeat(np.arange(len(dbs), dtype=np.int64), lengths),
        np.array([db.total_time_ps for db in dbs], np.int64),
    )  # fmt: skip


def _table_block(table: StepOps, index: np.ndarray) -> _Block:
    """Steps ``index`` of a table, one group each: a step's rows, then its IDLE row (as
    ``table.db`` has it) unless the table holds IDLE rows itself."""
    starts, ends = table.offsets[index], table.offsets[index + 1]
    rows = _ranges(starts, ends)
    totals = table.total_time_ps[index]
    if isinstance(table, HostsStepOps):
        group = np.repeat(np.arange(len(index), dtype=np.int64), ends - starts)
        return _Block(table.static, table.values.__getitem__, rows, table.op[rows], group, totals)
    per_step = ends - starts + 1
    idle_at = np.cumsum(per_step) - 1
    src = np.empty(int(per_step.sum()), np.int64)
    op = np.empty_like(src)
    is_op = np.ones(len(src), bool)
    is_op[idle_at] = False
    src[is_op], src[idle_at] = rows, len(table.op) + np.arange(len(index))
    op[is_op], op[idle_at] = table.op[rows], len(table.static["name"])
    idle = empty_columns(len(index))
    idle_ps = table.idle_ps()[index]
    idle["time_ps"] = idle["self_time_ps"] = idle_ps
    idle["normalized_time_ps"] = idle_ps.astype(np.float64)
    idle_op = empty_columns(1)
    idle_op["name"][0] = idle_op["category"][0] = IDLE_NAME
    static = {k: np.concatenate([v, idle_op[k]]) for k, v in table.static.items()}

    def column(name: str) -> np.ndarray:
        return np.concatenate([table.values[name], idle[name]])

    group = np.repeat(np.arange(len(index), dtype=np.int64), per_step)
    return _Block(static, column, src, op, group, totals)


def _combined(
    so_far: HostsStepOps | None,
    where: np.ndarray | None,
    block: _Block,
    keys: np.ndarray,
    groups: int,
) -> HostsStepOps:
    """The rows merged so far (their groups now ``where``) and ``block``'s, merged."""
    if so_far is None:
        return _merged([block], groups, [keys])
    if where is None or np.array_equal(where, np.arange(groups)):
        added = _added(so_far, block, keys)
        if added is not None:
            return added
    rows = _table_block(so_far, np.arange(len(so_far)))
    rows.where = where
    return _merged([rows, block], groups, [so_far.key, keys])


DENSE_LOOKUP = 1 << 22  # (group, key) cells looked up in an array up to this many


def _added(so_far: HostsStepOps, block: _Block, keys: np.ndarray) -> HostsStepOps | None:
    """``_merged`` of ``so_far``'s rows and ``block``'s where every row of ``block`` meets an
    op ``so_far`` has in its group already (the hosts of one program): the block's values
    go straight onto a copy of the sums so far, in the same order, and nothing moves (the
    sums so far are never -0.0, so they are what adding them to zeros gives). None where
    a row brings an op new to its group."""
    groups = len(so_far)
    width = int(max(so_far.key.max(initial=-1), keys.max(initial=-1))) + 1
    if groups * width > DENSE_LOOKUP:
        return None
    lookup = np.full(groups * width, -1, np.int64)
    lookup[so_far.segment * width + so_far.key[so_far.op]] = np.arange(len(so_far.op))
    group = block.group if block.where is None else block.where[block.group]
    cell = lookup[group * width + keys[block.op]]
    if len(cell) and int(cell.min()) < 0:
        return None
    values = {}
    if row_for_row(cell, len(so_far.op)):  # the hosts of one program: added whole
        for name, sums in so_far.values.items():
            add = np.bitwise_or if sums.dtype == bool else np.add  # as _add_rows does
            values[name] = add(sums, block.column(name)[block.src], out=np.empty_like(sums))
    else:
        once = not len(cell) or np.bincount(cell).max() <= 1
        for name, sums in so_far.values.items():
            out = sums.copy()
            _add_rows(out, cell, block.column(name)[block.src], once)
            values[name] = out
    totals = so_far.total_time_ps.copy()
    if block.where is None:
        totals += block.totals
    else:
        totals[block.where] += block.totals
    return replace(so_far, values=values, total_time_ps=totals)


def row_for_row(cells: np.ndarray, rows: int) -> bool:
    """Whether ``cells`` are the rows so far, each once and in order: the sums are then the
    rows' sums as whole columns (the same bits as adding them cell by cell)."""
    return len(cells) == rows and np.array_equal(cells, np.arange(rows))


def _add_rows(out: np.ndarray, cells: np.ndarray, rows: np.ndarray, once: bool) -> None:
    """Adds ``rows`` into ``out`` at ``cells`` (or-ed for bool columns such as has_breakdown);
    ``once``: no cell repeats, so one fancy-indexed update does."""
    if out.dtype == bool:
        if once:
            out[cells] |= rows
        else:
            np.logical_or.at(out, cells, rows)
    elif once:
        out[cells] += rows
    else:
        np.add.at(out, cells, rows)


def _merged(blocks: list[_Block], groups: int, keys: list[np.ndarray]) -> HostsStepOps:
    """The blocks' rows merged per group by key (``keys``: per block, per static entry), as
    ``combine`` of each group's dbs (block by block) merges them: ops in order of first
    appearance, summed block by block in block order, descriptive columns from the first
    row of each op."""
    width = max((int(k.max()) + 1 for k in keys if len(k)), default=1)
    group = np.concatenate([b.group if b.where is None else b.where[b.group] for b in blocks])
    key = np.concatenate([k[b.op] for k, b in zip(keys, blocks)])
    order = np.argsort(group, kind="stable")  # by group, then block, then row
    cell_keys, first, inverse = unique(
        (group * width + key)[order], return_index=True, return_inverse=True
    )
    rank = np.empty(len(cell_keys), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(cell_keys))
    target = np.empty(len(order), np.int64)
    target[order] = rank[inverse.ravel()]
    first_row = order[np.sort(first)]  # each cell's first row, in cell order

    # Descriptive columns: the entries first rows point to, each once.
    bounds = np.cumsum([0] + [len(b.op) for b in blocks])
    entry_base = np.cumsum([0] + [len(b.static["name"]) for b in blocks])
    block_of = np.searchsorted(bounds, first_row, side="right") - 1
    entry_of = np.concatenate([b.op for b in blocks])[first_row] + entry_base[block_of]
    entries, cell_op = unique(entry_of, return_inverse=True)
    static = {k: v for k, v in empty_columns(len(entries)).items() if k in _DESCRIPTIVE}
    entry_key = np.empty(len(entries), np.int64)
    for b, (block, block_keys) in enumerate(zip(blocks, keys)):
        lo, hi = np.searchsorted(entries, entry_base[b : b + 2])
        mine = entries[lo:hi] - entry_base[b]
        for name in _DESCRIPTIVE:
            static[name][lo:hi] = block.static[name][mine]
        entry_key[lo:hi] = block_keys[mine]

    values = {k: v for k, v in empty_columns(len(cell_keys)).items() if k in ROW_COLUMNS}
    for b, block in enumerate(blocks):
        mine = target[bounds[b] : bounds[b + 1]]
        # A block meets a cell at most once but where an op repeats in a step: then in order.
        once = not len(mine) or np.bincount(mine).max() <= 1
        for name, out in values.items():
            _add_rows(out, mine, block.column(name)[block.src], once)
    totals = np.zeros(groups, np.int64)
    for block in blocks:
        if block.where is None:
            totals += block.totals
        else:
            totals[block.where] += block.totals
    cell_group = group[first_row]
    return HostsStepOps(
        key=entry_key,
        values=values,
        static=static,
        offsets=np.searchsorted(cell_group, np.arange(groups + 1)).astype(np.int64),
        op=cell_op.ravel().astype(np.int64),
        total_time_ps=totals,
    )


def _peak_key(env: PerfEnv) -> tuple:
    return (round(env.peak_tera_flops_per_second, 6), tuple(round(b, 6) for b in env.peak_bws_gbps))
