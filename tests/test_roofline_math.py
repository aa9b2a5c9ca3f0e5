"""Every roofline formula against hand-computed values on tiny synthetic TPU profiles.

The profile (tests/tiny_tpu.py): peaks 100 TFLOP/s, HBM 1000 GB/s, VMEM 4000/2000 GB/s.
Core 0 spans 12.5 µs, core 1 spans 1 µs, so the device time is 13.5 µs; the ops' self
times add up to 10.5 µs, so IDLE is 3 µs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from tiny_tpu import CORE_EVENTS, OPS, PEAKS, US, tiny_tpu

from tb_roofline_plugin.ops.op_metrics import OpMetricsDb, empty_columns, self_times
from tb_roofline_plugin.peaks.perf_env import PerfEnv
from tb_roofline_plugin.platforms.analysis import analyze_profile
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.render.datatable import properties
from tb_roofline_plugin.roofline.formulas import (
    DatabasePeaks,
    record_metrics,
    ridge_point,
    safe_divide,
)
from tb_roofline_plugin.roofline.model import build_database
from tb_roofline_plugin.xspace.profile_reader import decode_profile

GIB = 1.073741824


def _database(space) -> roofline_model_pb2.RooflineModelDatabase:
    return build_database(analyze_profile(decode_profile(space.SerializeToString()), "tiny"))


def _records(
    database, include=True, record_type=roofline_model_pb2.ALL
) -> dict[str, roofline_model_pb2.RooflineModelRecord]:
    return {
        r.hlo_name
        if r.record_type == roofline_model_pb2.ALL
        else f"{r.record_type}:{r.step_num}": r
        for r in database.roofline_model_record
        if r.include_infeed_outfeed == include and r.record_type == record_type
    }


@pytest.fixture(scope="module")
def database():
    return _database(tiny_tpu())


def test_self_time_subtracts_only_direct_children():
    # parent [0,100) holds a [10,40) and b [50,70); b holds c [55,60).
    begin = np.array([0, 10, 50, 55])
    end = np.array([100, 40, 70, 60])
    assert self_times(begin, end).tolist() == [50, 30, 15, 5]


def test_partial_overlap_is_not_nesting():
    assert self_times(np.array([0, 50]), np.array([100, 150])).tolist() == [100, 100]


def test_nested_op_self_time_and_total_time(database):
    ops = _records(database)
    assert ops["while"].total_time_in_us == 4.0
    assert ops["while"].total_self_time_in_us == 3.0  # 4 µs minus the 1 µs body
    assert ops["body"].total_self_time_in_us == 1.0


def test_occurrences_sum_over_cores_and_costs_scale(database):
    conv = _records(database)["conv"]
    assert conv.occurrences == 2
    assert conv.flops_v2 == 100_000_000
    assert conv.bytes_accessed == 200_000
    assert conv.total_time_in_us == 2.0 and conv.avg_time_in_us == 1.0
    assert conv.total_time_per_core_in_us == 1.0  # 2 µs over 2 cores


def test_compute_bound_op(database):
    conv = _records(database)["conv"]
    assert conv.measured_flop_rate == pytest.approx(50_000.0)  # 100 MFLOP / 2000 ns
    assert conv.hbm_bw == pytest.approx(100.0 / GIB)  # 200 kB / 2000 ns
    assert conv.operational_intensity == pytest.approx(500.0)
    assert conv.bound_by == "Compute"
    assert conv.bottleneck_operational_intensity == pytest.approx(500.0)
    assert conv.flop_rate_relative_to_hw_limit == pytest.approx(0.5)
    assert conv.memory_bw_relative_to_hw_limit == pytest.approx(0.1)
    assert conv.roofline_efficiency == pytest.approx(0.5)
    assert conv.optimal_flop_rate == pytest.approx(100_000.0)


def test_hbm_bound_op_uses_breakdown_hbm_bytes_only(database):
    op = _records(database)["fusion.1"]
    assert op.measured_memory_bw == pytest.approx(800.0 / GIB)  # all 800 kB
    assert op.hbm_bw == pytest.approx(600.0 / GIB)  # 600 kB of it is HBM
    assert op.vmem_read_bw == pytest.approx(200.0 / GIB)
    assert op.bound_by == "HBM"
    assert op.hbm_operational_intensity == pytest.approx(1e6 / 600_000)
    assert op.bottleneck_operational_intensity == pytest.approx(1e6 / 600_000)
    assert op.roofline_efficiency == pytest.approx(0.6)
    assert op.optimal_flop_rate == pytest.approx(1000.0 / 0.6)  # OI x HBM peak


def test_vmem_write_bound_zero_flop_op(database):
    op = _records(database)["vmem_op"]
    assert op.hbm_bw == 0.0  # a breakdown without HBM entries means no HBM bytes
    assert op.vmem_write_bw == pytest.approx(1000.0 / GIB)
    assert op.bound_by == "VMEM Write"
    assert op.roofline_efficiency == pytest.approx(0.5)
    assert op.measured_flop_rate == 0.0 and op.optimal_flop_rate == 0.0
    assert op.operational_intensity == 0.0


def test_zero_byte_op_has_zero_intensity_and_is_compute_bound(database):
    op = _records(database)["zero_bytes"]
    assert op.operational_intensity == 0.0
    assert op.measured_flop_rate == pytest.approx(2000.0)
    assert op.bound_by == "Compute"
    assert op.roofline_efficiency == pytest.approx(0.02)


def test_op_without_breakdown_counts_all_bytes_as_hbm(database):
    op = _records(database)["infeed"]
    assert op.hbm_bw == pytest.approx(1000.0 / GIB)
    assert op.bound_by == "HBM"


def test_rank_order_ties_and_self_time_fractions(database):
    ops = [r for r in database.roofline_model_record if r.include_infeed_outfeed][:8]
    # IDLE (3 µs) ties `while` and sorts first by name, then is left out (0 occurrences).
    assert [r.hlo_name for r in ops] == [
        "Program",
        "while",
        "conv",
        "infeed",
        "body",
        "fusion.1",
        "vmem_op",
        "zero_bytes",
    ]
    assert [r.rank for r in ops] == list(range(8))
    assert ops[1].total_self_time_as_fraction == pytest.approx(3 / 13.5)
    assert ops[2].cumulative_total_self_time_as_fraction == pytest.approx(5 / 13.5)
    assert ops[-1].cumulative_total_self_time_as_fraction == pytest.approx(10.5 / 13.5)
    assert ops[1].total_time_in_percentage == pytest.approx(4 / 13.5)


def test_program_record_includes_idle_and_skips_inner_op_containers(database):
    program = _records(database)["Program"]
    assert program.total_time_in_us == 13.5
    assert program.total_time_in_percentage == 1.0
    assert program.total_time_per_core_in_us == 6.75
    # flops: conv 100M + fusion.1 1M + body 2M + zero_bytes 1M (the while op is skipped).
    assert program.flops_v2 == 104_000_000
    assert program.measured_flop_rate == pytest.approx(104e6 / 13_500)
    assert program.operational_intensity == pytest.approx(26.0)  # over all 4 MB
    # HBM: only breakdown entries (conv 200 kB + fusion.1 600 kB); infeed/body have none.
    assert program.hbm_bw == pytest.approx(800_000 / 13_500 / GIB)
    assert program.bound_by == "Compute"
    assert program.roofline_efficiency == pytest.approx(104e6 / 13_500 / 100_000)
    assert program.rank == 0 and program.hlo_module_id == 0


def test_without_infeed_outfeed_the_io_time_and_ops_are_left_out(database):
    ops = _records(database, include=False)
    assert "infeed" not in ops
    program = ops["Program"]
    assert program.total_time_in_us == 11.5
    assert program.measured_flop_rate == pytest.approx(104e6 / 11_500)
    assert program.measured_memory_bw == pytest.approx(2_000_000 / 11_500 / GIB)
    assert ops["while"].rank == 1 and ops["body"].rank == 3
    assert ops["while"].total_self_time_as_fraction == pytest.approx(3 / 11.5)


def test_database_peaks_and_ridge_points(database):
    assert database.peak_flop_rate == 100_000.0
    assert database.peak_hbm_bw == pytest.approx(1000 / GIB)
    assert database.peak_vmem_read_bw == pytest.approx(4000 / GIB)
    assert database.has_merged_vmem and not database.has_cmem and not database.megacore
    props = properties(database)
    assert props["hbm_ridge_point"] == "100"
    assert props["vmem_read_ridge_point"] == "25"
    assert props["vmem_write_ridge_point"] == "50"
    assert props["time_scale_multiplier"] == "1"
    # XProf's own test values.
    assert ridge_point(100, 100) == pytest.approx(0.931323, rel=1e-6)
    assert ridge_point(500, 200) == pytest.approx(2.32830, rel=1e-5)
    assert ridge_point(500, 0) == 0.0


def test_megacore_changes_the_flag_not_the_numbers(database):
    mega = _database(tiny_tpu(peaks={**PEAKS, "has_megacore": 1}))
    assert mega.megacore and not database.megacore
    plain = [
        (r.hlo_name, r.roofline_efficiency, r.bound_by) for r in database.roofline_model_record
    ]
    assert [
        (r.hlo_name, r.roofline_efficiency, r.bound_by) for r in mega.roofline_model_record
    ] == plain


def test_cmem_device_reports_cmem_peaks_and_cmem_bound_ops():
    peaks = {
        **PEAKS,
        "peak_cmem_rd_bw_gigabytes_per_second": 500.0,
        "peak_cmem_wr_bw_gigabytes_per_second": 500.0,
        "has_merged_vmem": 0,
    }
    ops = {**OPS, "fusion.1": ("loop fusion", 1_000_000, 900_000, [(1, 2, 900_000)])}
    database = _database(tiny_tpu(ops=ops, peaks=peaks))
    assert database.has_cmem and database.peak_cmem_read_bw == pytest.approx(500 / GIB)
    assert database.peak_vmem_read_bw == 0.0  # CMEM and VMEM peaks are exclusive
    op = _records(database)["fusion.1"]
    assert op.cmem_read_bw == pytest.approx(900 / GIB)
    assert op.bound_by == "CMEM Read"
    assert op.roofline_efficiency == pytest.approx(900 / 500)  # nothing is clamped
    # VMEM Write still takes part in bound_by (PerfEnv peak) but not in the efficiency.
    vmem = _records(database)["vmem_op"]
    assert vmem.bound_by == "VMEM Write" and vmem.roofline_efficiency == 0.0


def _db(**cols) -> OpMetricsDb:
    base = empty_columns(1)
    for key, value in cols.items():
        base[key][0] = value
    return OpMetricsDb(**base, total_time_ps=int(base["time_ps"][0]))


def test_bound_by_tie_goes_to_the_earlier_candidate():
    env = PerfEnv(peak_tera_flops_per_second=1.0, peak_bws_gbps=[1.0, 0, 0, 0, 0, 0, 0])
    peaks = DatabasePeaks.from_env(env, "TPU")
    # 1000 FLOP and 1 byte per ns: both utilizations are exactly 1.
    db = _db(occurrences=1, time_ps=1_000_000, flops=1_000_000.0, bytes_accessed=1_000.0)
    metrics = record_metrics(db, db.total_time_ps, peaks, 1)
    assert metrics["flop_rate_relative_to_hw_limit"][0] == 1.0
    assert metrics["bound_by"][0] == "Compute"


def test_all_zero_op_is_unknown_and_everything_is_finite():
    env = PerfEnv(peak_tera_flops_per_second=1.0, peak_bws_gbps=[1.0, 0, 0, 0, 0, 0, 0])
    db = _db(occurrences=0, time_ps=0)
    metrics = record_metrics(db, 0, DatabasePeaks.from_env(env, "TPU"), 0)
    assert metrics["bound_by"][0] == "Unknown"
    numbers = [v for v in metrics.values() if v.dtype != object]
    assert all(np.isfinite(v).all() for v in numbers)


def test_safe_divide_is_zero_for_tiny_denominators():
    assert safe_divide(1.0, 1e-11).item() == 0.0
    assert safe_divide(1.0, -1e-11).item() == 0.0
    assert safe_divide(1.0, 4.0).item() == 0.25


def test_no_steps_gives_zero_average_and_a_warning(database):
    average = _records(database, record_type=roofline_model_pb2.AVERAGE_STEP)
    (record,) = average.values()
    assert record.total_time_in_us == 0.0 and record.bound_by == "Unknown"
    assert database.diagnostics.warnings[0].startswith("No step marker observed")


def test_steps_per_step_and_average_with_an_incomplete_first_step():
    # Core 0: step 0 is cut (starts with the first op), steps 1 and 2 are complete.
    events = [
        [("conv", 0, US), ("fusion.1", 3 * US, US), ("conv", 6 * US, US), ("body", 9 * US, US)],
        [("conv", 0, US), ("conv", 3 * US, US), ("conv", 6 * US, US), ("conv", 9 * US, US)],
    ]
    steps = [[(0, 0, 2 * US), (1, 2 * US, 5 * US), (2, 5 * US, 8 * US)]] * 2
    database = _database(tiny_tpu(core_events=events, steps=steps))
    per_step = _records(database, record_type=roofline_model_pb2.PER_STEP)
    assert sorted(per_step) == ["3:1", "3:2"]  # the cut step 0 is left out
    step1 = per_step["3:1"]
    assert step1.total_time_in_us == 6.0  # 3 µs per core, 2 cores
    assert step1.flops_v2 == 1_000_000 + 50_000_000  # fusion.1 on core 0, conv on core 1
    (average,) = _records(database, record_type=roofline_model_pb2.AVERAGE_STEP).values()
    assert average.total_time_in_us == 6.0  # (6 + 6) / 2 steps
    assert average.avg_time_in_us == 12.0  # XProf does not divide avg_time
    # Per step, as --step average (XProf keeps the steps' sum on its Average row).
    assert average.flops_v2 == (51_000_000 + 100_000_000) / 2
    assert any("left out of the average" in w for w in database.diagnostics.warnings)
    assert not any(w.startswith("No step marker") for w in database.diagnostics.warnings)


def test_only_incomplete_steps_are_used_with_xprofs_warning():
    events = [[("conv", 0, US), ("conv", 3 * US, US)]]
    database = _database(tiny_tpu(core_events=events, steps=[[(4, 0, 2 * US)]]))
    assert sorted(_records(database, record_type=roofline_model_pb2.PER_STEP)) == ["3:4"]
    assert database.diagnostics.warnings[0].startswith("Incomplete step observed")


def test_core_events_fixture_is_what_the_docstring_says():
    spans = [max(b + d for _, b, d in core) - min(b for _, b, _ in core) for core in CORE_EVENTS]
    assert sum(spans) == 13.5 * US
    assert math.isclose(sum(spans) / US, 13.5)
