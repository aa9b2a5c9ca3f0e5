"""Realistic, deterministic TPU-shaped XSpace profiles, built from code (as libtpu writes
them, ``docs/xspace.md``).

TPU (`TpuSpec`, `tpu_xspace`): several TensorCore planes with capability stats, an `XLA Ops`
line whose ops carry their cost on the event metadata, a `Steps` line whose first step may
be cut by the profile window, ops outside every step, a `while` op with nested children, two
programs, and host planes that readers must skip.

Everything is derived from the spec and a seeded `numpy` generator, never from the clock, so
the same spec always gives the same bytes.

"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..protos import xplane_pb2
from . import xspace_builder
from .common import NS, PROFILE_START_NS, US, Uniform, filler_line
from .tpu_ops import TpuOp, op_table
from .xspace_builder import U64, StatValue, memory_breakdown

READ, WRITE = 1, 2  # MemoryAccessed.operation_type
HBM, CMEM, VMEM = 1, 2, 3  # MemoryAccessed.memory_space

# Program ids are uint64 fingerprints in real files; the first one does not fit in an int64,
# so readers that forget to mask `& 0xFFFFFFFFFFFFFFFF` show up in tests.
TRAIN_PROGRAM_ID = 0xB2F5_6C1E_9A3D_4E07
METRICS_PROGRAM_ID = 0x1F0A_77C3_5D21_86B4
PROGRAMS = (("jit_train_step", TRAIN_PROGRAM_ID), ("jit_update_metrics", METRICS_PROGRAM_ID))

_INFERENCE_RUNS = 5  # program executions of an inference profile (steps == 0)
_DEVICE_ORIGIN_PS = 1_250 * US  # first device event, relative to the profile start


@dataclass(frozen=True)
class TpuSpec:
    """What `tpu_xspace` generates. The defaults give a ~70 KB 4-core v5p training profile."""

    cores: int = 4  # `/device:TPU:N` planes
    steps: int = 5  # events on the Steps line; 0 = inference profile without a Steps line
    # The first step is cut by the profile window: it starts exactly at the plane's earliest
    # op. Otherwise the window opens during the previous step, whose tail lies before step 0.
    incomplete_first_step: bool = True
    ops_per_step: int = 24  # distinct HLO ops run each (complete) step, >= 12
    device: str = "v5p"  # "v4" (CMEM, megacore), "v5p" (megacore, merged VMEM), "v6e"
    host: str = "demo-host"
    seed: int = 0
    slow_op: str | None = None  # instruction name that runs 3x longer, for comparisons
    target_bytes: int = 0  # > 0: repeat steps until the serialized size is about this
    host_lines: int = 4  # `/host:CPU` threads of filler events

    def __post_init__(self) -> None:
        if self.cores < 1:
            raise ValueError(f"cores must be >= 1, got {self.cores}")
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")
        if self.ops_per_step < 12:
            raise ValueError(f"ops_per_step must be >= 12, got {self.ops_per_step}")
        if self.device not in _DEVICES:
            raise ValueError(f"device must be one of {sorted(_DEVICES)}, got {self.device!r}")
        if self.target_bytes < 0 or self.host_lines < 0:
            raise ValueError("target_bytes and host_lines must be >= 0")


@dataclass(frozen=True)
class _Device:
    """Per-TensorCore capability stats, as libtpu writes them on each `/device:TPU:N` plane."""

    type_string: str
    tflops: float
    hbm: float
    sram_rd: float
    sram_wr: float
    cmem_rd: float
    cmem_wr: float
    vmem_rd: float
    vmem_wr: float
    megacore: int
    merged_vmem: int

    @property
    def on_chip_space(self) -> int:
        """Where on-chip traffic goes in the breakdowns: CMEM on v4, VMEM where it is merged."""
        return CMEM if self.cmem_rd > 0 else VMEM


_DEVICES = {
    "v4": _Device("TPU v4", 275.0, 1228.8, 12000.0, 9000.0, 4500.0, 4500.0, 0.0, 0.0, 1, 0),
    "v5p": _Device("TPU v5p", 459.0, 2765.0, 17000.0, 12000.0, 0.0, 0.0, 17000.0, 12000.0, 1, 1),
    # The v6e values are those of the real `tpu_inference_2` sample.
    "v6e": _Device(
        "TPU v6 Lite", 918.0, 1637.993152512, 23296.01, 16128.03, 0.0, 0.0, 23296.01, 16128.03, 0, 1
    ),
}


def _duration_ps(op: TpuOp, device: _Device) -> int:
    """Per-occurrence device time: the binding roof divided by the op's efficiency."""
    seconds = max(
        op.flops / (device.tflops * 1e12),
        op.bytes_accessed / (device.hbm * 1e9),
        op.bytes_accessed / (op.link_gbps * 1e9) if op.link_gbps else 0.0,
    )
    return max(int(seconds * 1e12 / op.efficiency), int(op.floor_ns * NS))


def _breakdown(op: TpuOp, device: _Device) -> bytes | None:
    if op.mix is None:
        return None
    spaces = (HBM, HBM, device.on_chip_space, device.on_chip_space)
    entries = [
        (op_type, space, int(op.bytes_accessed * fraction))
        for fraction, space, op_type in zip(op.mix, spaces, (READ, WRITE, READ, WRITE))
    ]
    return memory_breakdown([e for e in entries if e[2] > 0])


@dataclass
class _Timeline:
    """The device events of core 0 (ps, device time base); other cores are shifted copies."""

    ops: list  # (op index, begin, duration)
    modules: list  # (program index, begin, duration, run id)
    steps: list  # (step number, begin, duration)


def _blocks(spec: TpuSpec, repeats: int, schedule: list[list[str]]):
    """The executions of one core: (step number or None, [(program, top-level ops), ...])."""
    train, metrics = schedule
    full = [(0, train), (1, metrics)]
    if spec.steps == 0:
        return [(None, full)] * repeats
    blocks: list[tuple[int | None, list[tuple[int, list[str]]]]] = []
    if spec.incomplete_first_step:
        # The window opens mid-step: the step's first captured op is the earliest event.
        blocks.append((0, [(0, train[len(train) // 3 :]), (1, metrics)]))
    else:
        # The window opens during the previous step: its tail lies before every step.
        blocks.append((None, [(0, train[2 * len(train) // 3 :]), (1, metrics)]))
        blocks.append((0, full))
    blocks += [(step, full) for step in range(1, repeats)]
    blocks.append((None, [(0, train[:3])]))  # the next step has begun when the window closes
    return blocks


def _timeline(
    spec: TpuSpec,
    blocks,
    ops: list[TpuOp],
    base_ps: list[int],
    uniform: Uniform,
    start_ps: int,
) -> _Timeline:
    index = {(op.program, op.name): i for i, op in enumerate(ops)}
    slow = {i for i, op in enumerate(ops) if op.name == spec.slow_op}
    events: list = []
    t = start_ps

    def run(i: int, t: int) -> int:
        op = ops[i]
        if not op.children:
            duration = int(base_ps[i] * uniform(0.97, 1.03))
            if i in slow:
                duration *= 3
            events.append((i, t, duration))
            return t + duration
        slot = len(events)
        events.append(None)
        begin = t
        t += int(uniform(1.0, 1.5) * US)  # loop setup: children start well inside the while
        for _ in range(op.trips):
            for child in op.children:
                t = run(index[(op.program, child)], t) + int(uniform(100, 400) * NS)
        t += int(uniform(1.0, 1.5) * US)
        if i in slow:
            t += 2 * (t - begin)
        events[slot] = (i, begin, t - begin)
        return t

    modules, steps = [], []
    run_id = 1
    for step, executions in blocks:
        step_begin = t
        if step is not None and not (step == 0 and spec.incomplete_first_step):
            t += int(uniform(1.0, 3.0) * US)
        for program, names in executions:
            module_begin = t
            end = t
            for name in names:
                end = run(index[(program, name)], t)
                t = end + int(uniform(100, 400) * NS)
            modules.append((program, module_begin, end + 200 * NS - module_begin, run_id))
            run_id += 1
            t = end + int(uniform(2.0, 5.0) * US)
        if step is not None:
            steps.append((step, step_begin, t - step_begin))
            t += int(uniform(2.0, 6.0) * US)
    return _Timeline(events, modules, steps)


def _device_plane(
    space: xplane_pb2.XSpace,
    spec: TpuSpec,
    core: int,
    ops: list[TpuOp],
    timeline: _Timeline,
    shift: int,
    rng: np.random.Generator,
) -> int:
    """Adds `/device:TPU:<core>` and returns the end of its last event (ps).

    All cores run the same schedule (the collectives keep them in step), `shift` ps apart; each
    core's own noise shortens leaf ops by up to 1% without moving anything, so it never adds up.
    """
    device = _DEVICES[spec.device]
    plane = xspace_builder.plane(
        space,
        f"/device:TPU:{core}",
        plane_id=2 + 8 * core,
        stats={
            "device_type_string": device.type_string,
            "peak_teraflops_per_second": float(device.tflops),
            "peak_hbm_bw_gigabytes_per_second": float(device.hbm),
            "peak_sram_rd_bw_gigabytes_per_second": float(device.sram_rd),
            "peak_sram_wr_bw_gigabytes_per_second": float(device.sram_wr),
            "peak_cmem_rd_bw_gigabytes_per_second": float(device.cmem_rd),
            "peak_cmem_wr_bw_gigabytes_per_second": float(device.cmem_wr),
            "peak_vmem_rd_bw_gigabytes_per_second": float(device.vmem_rd),
            "peak_vmem_wr_bw_gigabytes_per_second": float(device.vmem_wr),
            "has_megacore": int(device.megacore),
            "has_merged_vmem": int(device.merged_vmem),
        },
    )

    # One metadata per distinct op, carrying its per-occurrence cost.
    op_ids: list[int] = []
    symbols = [0, 0]
    for op in ops:
        mid = len(op_ids) + 1
        symbols[op.program] += 1
        line = 40 + 3 * mid
        stats: dict[str, StatValue] = {
            "hlo_category": op.category,
            "program_id": U64(PROGRAMS[op.program][1]),
            "symbol_id": U64(symbols[op.program]),
            "flops": int(op.flops),
            "model_flops": int(op.model_flops),
            "bytes_accessed": int(op.bytes_accessed),
            "raw_bytes_accessed": int(op.bytes_accessed),
        }
        breakdown = _breakdown(op, device)
        if breakdown is not None:
            stats["memory_access_breakdown"] = breakdown
        stats["source"] = f"train.py:{line}"
        stats["source_stack"] = (
            f"train.py:{line}:{4 + mid % 9}\nmodel.py:{100 + 7 * mid}:12\nmain.py:31:5\n"
        )
        stats["tf_op"] = op.tf_op
        op_ids.append(plane.event_metadata(op.hlo, op.name, stats))
    module_ids = [
        plane.event_metadata(f"{name}({program_id})", name) for name, program_id in PROGRAMS
    ]

    last_end = 0
    if timeline.steps:
        steps_line = plane.plane.lines.add(id=1, name="Steps", timestamp_ns=0)
        step_num = plane.stat_id("step_num")
        for number, begin, duration in timeline.steps:
            meta_id = plane.event_metadata(str(number))
            event = steps_line.events.add(
                metadata_id=meta_id, offset_ps=begin + shift, duration_ps=duration
            )
            event.stats.add(metadata_id=step_num, int64_value=number)
            last_end = max(last_end, begin + shift + duration)

    modules_line = plane.plane.lines.add(id=2, name="XLA Modules", timestamp_ns=0)
    run_id, queue_id = plane.stat_id("run_id"), plane.stat_id("queue_id")
    add = modules_line.events.add
    for program, begin, duration, run in timeline.modules:
        event = add(metadata_id=module_ids[program], offset_ps=begin + shift, duration_ps=duration)
        event.stats.add(metadata_id=run_id, int64_value=run)
        event.stats.add(metadata_id=queue_id, int64_value=0)
        last_end = max(last_end, begin + shift + duration)

    # Op events: libtpu's host-side offset/duration start a few hundred ns after the device
    # begin and end a little before the device end; the analysis uses the device values.
    ops_line = plane.plane.lines.add(id=3, name="XLA Ops", timestamp_ns=0)
    offset_id, duration_id = plane.stat_id("device_offset_ps"), plane.stat_id("device_duration_ps")
    if timeline.ops:
        index, begin, duration = np.array(timeline.ops, dtype=np.int64).T
        count = len(index)
        leaf = np.array([not op.children for op in ops])[index]
        duration = duration - (duration * rng.uniform(0.0, 0.01, count)).astype(np.int64) * leaf
        begin = begin + shift
        late = rng.integers(200, 600, count) * NS
        early = rng.integers(0, 200, count) * NS
        columns = (
            np.array(op_ids)[index],
            begin + late,
            duration - late - early,
            begin,
            duration,
        )
        add = ops_line.events.add
        for mid, offset, host_duration, device_begin, device_duration in zip(
            *(column.tolist() for column in columns)
        ):
            event = add(metadata_id=mid, offset_ps=offset, duration_ps=host_duration)
            event.stats.add(metadata_id=offset_id, uint64_value=device_begin)
            event.stats.add(metadata_id=duration_id, uint64_value=device_duration)
        last_end = max(last_end, int((begin + duration).max()))
    for line in plane.plane.lines:
        line.duration_ps = last_end
    plane.plane.lines.add(id=4, name="Overlay", timestamp_ns=0, duration_ps=last_end)
    return last_end


_HOST_THREADS = (
    ("python", ("PjitFunction(train_step)", "jax.numpy.asarray", "np.asarray")),
    ("tf_Compute", ("TpuExecute", "ExecuteOnLocalDevices", "TransferLiteralToDevice")),
    ("tpu_runtime", ("TpuProgram::Execute", "WaitForDeviceCompletion", "OutfeedDequeue")),
    ("tf_data_private_threadpool", ("Iterator::Prefetch", "Iterator::Map", "ParseExample")),
    ("grpc_global_timer", ("grpc::Poll", "grpc::Timer")),
)


def _host_plane(space: xplane_pb2.XSpace, spec: TpuSpec, repeats: int, span_ps: int) -> None:
    """`/host:CPU` with filler threads: readers of TPU profiles must skip all of it."""
    plane = xspace_builder.plane(space, "/host:CPU", plane_id=1)
    rng = np.random.default_rng([spec.seed, 9_999])
    # Enough events that the host plane keeps its share of the file as the profile grows.
    per_line = 8 * repeats * max(1, spec.cores) // max(1, spec.host_lines) + 24
    for index in range(spec.host_lines):
        thread, names = _HOST_THREADS[index % len(_HOST_THREADS)]
        tid = 1234 + 977 * index
        line_name = thread if thread == "python" else f"{thread}/{tid}"
        line = plane.plane.lines.add(
            id=tid if index % 2 == 0 else -(2**63) + tid,
            name=line_name,
            display_name=line_name,
            timestamp_ns=8_482 + 17 * index,
        )
        filler_line(plane, line, names, rng, per_line, span_ps)


def _build(spec: TpuSpec, repeats: int, origin_ps: int = _DEVICE_ORIGIN_PS) -> xplane_pb2.XSpace:
    ops, schedule = op_table(spec.ops_per_step)
    if spec.slow_op is not None and spec.slow_op not in {op.name for op in ops}:
        raise ValueError(f"slow_op {spec.slow_op!r} is not one of the generated ops")
    device = _DEVICES[spec.device]
    base_ps = [_duration_ps(op, device) for op in ops]
    blocks = _blocks(spec, repeats, schedule)

    space = xplane_pb2.XSpace(hostnames=[spec.host])
    span = 0
    timeline = _timeline(
        spec, blocks, ops, base_ps, Uniform(np.random.default_rng(spec.seed)), origin_ps
    )
    for core in range(spec.cores):
        rng = np.random.default_rng([spec.seed, 1 + core])
        shift = (core * 1_700 + int(rng.integers(0, 800))) * NS  # cores start a few µs apart
        span = max(span, _device_plane(space, spec, core, ops, timeline, shift, rng))
    span += 50 * US
    _host_plane(space, spec, repeats, span)
    space.planes.add(id=0, name="/host:metadata")
    start = PROFILE_START_NS + 1_000 * spec.seed
    xspace_builder.plane(
        space,
        "Task Environment",
        plane_id=1_000,
        stats={"profile_start_time": U64(start), "profile_stop_time": U64(start + span // NS)},
    )
    return space


def _repeats_for(spec: TpuSpec) -> int:
    """Steps (or inference runs) that make the serialized profile about spec.target_bytes."""
    default = spec.steps if spec.steps > 0 else _INFERENCE_RUNS
    if spec.target_bytes <= 0:
        return default
    small, large = 4, 8
    probe = _build(spec, small)
    size_small = probe.ByteSize()
    per_repeat = (_build(spec, large).ByteSize() - size_small) / (large - small)
    repeats = max(1, round(small + (spec.target_bytes - size_small) / per_repeat))
    # Offsets grow with the profile, and so do their varints: measure again near its middle.
    span = probe.planes[0].lines[-1].duration_ps - _DEVICE_ORIGIN_PS
    origin = _DEVICE_ORIGIN_PS + span * repeats // (2 * small)
    size_small = _build(spec, small, origin).ByteSize()
    per_repeat = (_build(spec, large, origin).ByteSize() - size_small) / (large - small)
    return max(1, round(small + (spec.target_bytes - size_small) / per_repeat))


def tpu_xspace(spec: TpuSpec = TpuSpec()) -> xplane_pb2.XSpace:
    """A TPU profile as libtpu would write it for `spec`; identical specs give identical bytes.

    With `target_bytes`, steps (or inference runs) are repeated until the serialized size is
    about that many bytes; `spec.steps` is then ignored except for choosing training (> 0) or
    inference (0).
    """
    return _build(spec, _repeats_for(spec))
