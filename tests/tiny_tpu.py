"""Tiny hand-made TPU profiles for the math tests: every number is chosen to be hand-checked."""

from __future__ import annotations

from tb_roofline_plugin.demo.xspace_builder import U64, memory_breakdown, plane
from tb_roofline_plugin.protos import xplane_pb2

READ, WRITE = 1, 2
HBM, CMEM, VMEM = 1, 2, 3
US = 1_000_000  # ps per µs

# name: (category, flops per occurrence, bytes per occurrence, breakdown or None)
OPS = {
    "conv": (
        "convolution fusion",
        50_000_000,
        100_000,
        [(READ, HBM, 60_000), (WRITE, HBM, 40_000)],
    ),
    "fusion.1": (
        "loop fusion",
        1_000_000,
        800_000,
        [(READ, HBM, 400_000), (WRITE, HBM, 200_000), (READ, VMEM, 200_000)],
    ),
    "vmem_op": ("loop fusion", 0, 0, [(WRITE, VMEM, 1_000_000)]),
    "infeed": ("infeed", 0, 2_000_000, None),
    "while": ("while", 0, 0, None),
    "body": ("loop fusion", 2_000_000, 1_000_000, None),
    "zero_bytes": ("custom fusion", 1_000_000, 0, None),
}

# Core 0 and core 1 events: (op, begin ps, duration ps). `body` nests inside `while`.
CORE_EVENTS = [
    [
        ("conv", 0, 1 * US),
        ("fusion.1", 2 * US, 1 * US),
        ("vmem_op", 4 * US, 1 * US),
        ("infeed", 5 * US, 2 * US),
        ("while", 8 * US, 4 * US),
        ("body", 9 * US, 1 * US),
        ("zero_bytes", 12 * US, US // 2),
    ],
    [("conv", 1 * US, 1 * US)],
]

PEAKS = {
    "device_type_string": "TPU test",
    "peak_teraflops_per_second": 100.0,
    "peak_hbm_bw_gigabytes_per_second": 1000.0,
    "peak_cmem_rd_bw_gigabytes_per_second": 0.0,
    "peak_cmem_wr_bw_gigabytes_per_second": 0.0,
    "peak_vmem_rd_bw_gigabytes_per_second": 4000.0,
    "peak_vmem_wr_bw_gigabytes_per_second": 2000.0,
    "has_megacore": 0,
    "has_merged_vmem": 1,
}


def tiny_tpu(
    core_events=CORE_EVENTS,
    ops=OPS,
    peaks=PEAKS,
    steps: list[list[tuple[int, int, int]]] | None = None,
    program_id: int = 7,
) -> xplane_pb2.XSpace:
    """Cores of (op, begin, duration) events; ``steps`` per core as (number, begin, end)."""
    space = xplane_pb2.XSpace(hostnames=["tiny"])
    for core, events in enumerate(core_events):
        builder = plane(space, f"/device:TPU:{core}", plane_id=2 + core, stats=peaks)
        ops_line = builder.line("XLA Ops")
        for symbol, (name, begin, duration) in enumerate(events, start=1):
            category, flops, num_bytes, breakdown = ops[name]
            stats = {
                "hlo_category": category,
                "program_id": U64(program_id),
                "symbol_id": U64(list(ops).index(name) + 1),
                "flops": flops,
                "model_flops": 0,
                "bytes_accessed": num_bytes,
                "source": f"model.py:{10 + symbol}",
                "source_stack": f"model.py:{10 + symbol}:3\nmain.py:1:1\n",
            }
            if breakdown is not None:
                stats["memory_access_breakdown"] = memory_breakdown(breakdown)
            mid = builder.event_metadata(f"%{name} = f32[8] op()", name, stats)
            builder.event(
                ops_line,
                mid,
                begin + 7,
                duration,
                {"device_offset_ps": U64(begin), "device_duration_ps": U64(duration)},
            )
        if steps is not None:
            steps_line = builder.line("Steps")
            for number, begin, end in steps[core]:
                mid = builder.event_metadata(str(number))
                builder.event(steps_line, mid, begin, end - begin, {"step_num": number})
    plane(space, "/host:CPU").line("python")
    return space
