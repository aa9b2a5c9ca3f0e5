"""Property tests (hypothesis) of the roofline math: what holds for every input, not one example.

* roofline efficiency is the largest utilization (compute and every memory the device has);
* the optimal FLOP rate never exceeds the peak when the utilizations are at most 1;
* ``bound_by`` is the argmax of the utilizations in the documented order (Compute, HBM,
  CMEM Read, CMEM Write, VMEM Read, VMEM Write; Shm/L1 on GPU), ties to the earlier one,
  ``Unknown`` when all are zero (docs/roofline-semantics.md section 8);
* per-step sums equal the totals over complete steps (generated TPU timelines and steps);
* no NaN or infinity in any output (datatable, json, compare) for any finite input of
  realistic magnitude; non-finite and huge stat values are covered too (they read as absent).
"""

from __future__ import annotations

import json
import math

import fuzz_support as fs
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tiny_tpu import OPS, PEAKS, tiny_tpu

from tb_roofline_plugin.ops.op_metrics import OpMetricsDb, empty_columns, with_idle
from tb_roofline_plugin.ops.op_stats import OpStats, StepInfo
from tb_roofline_plugin.ops.selection import AVERAGE, TOTAL, average_db, select
from tb_roofline_plugin.peaks.perf_env import PerfEnv, RunEnvironment
from tb_roofline_plugin.platforms.analysis import analyze_profile
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.render.datatable import to_csv, to_datatable
from tb_roofline_plugin.render.export import selection_database, to_json
from tb_roofline_plugin.roofline.compare import Side, compare
from tb_roofline_plugin.roofline.formulas import DatabasePeaks, record_metrics
from tb_roofline_plugin.roofline.model import build_database
from tb_roofline_plugin.xspace.profile_reader import decode_profile

GIB = 1.073741824
US = 1_000_000
TPU_ORDER = (  # label, bandwidth key, PerfEnv index, memory bytes (breakdown space, kind)
    ("CMEM Read", "cmem_read", 3, (1, 0)),
    ("CMEM Write", "cmem_write", 4, (1, 1)),
    ("VMEM Read", "vmem_read", 5, (2, 0)),
    ("VMEM Write", "vmem_write", 6, (2, 1)),
)
PROPERTY = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- strategies --------------------------------------------------------------------------------

_COUNT = st.one_of(st.just(0.0), st.floats(1.0, 1e15))  # FLOPs or bytes of an op
_CATEGORIES = ("loop fusion", "convolution fusion", "infeed", "outfeed", "while", "custom-call")


@st.composite
def op_dbs(draw, max_ops: int = 6) -> OpMetricsDb:
    """An OpMetricsDb of realistic magnitudes (times up to 1 s, costs up to 1e15)."""
    n = draw(st.integers(0, max_ops))
    cols = empty_columns(n)
    for i in range(n):
        time_ps = draw(st.one_of(st.just(0), st.integers(1, 10**12)))
        cols["program_id"][i] = draw(st.integers(0, 2))
        cols["name"][i] = f"op{i}"
        cols["category"][i] = draw(st.sampled_from(_CATEGORIES))
        cols["occurrences"][i] = draw(st.integers(0, 1000))
        cols["time_ps"][i] = time_ps
        cols["self_time_ps"][i] = draw(st.integers(0, time_ps))
        cols["flops"][i] = draw(_COUNT)
        cols["model_flops"][i] = draw(st.one_of(st.just(0.0), _COUNT))
        cols["bytes_accessed"][i] = draw(_COUNT)
        cols["breakdown"][i] = np.array([[draw(_COUNT), draw(_COUNT)] for _ in range(3)])
        cols["has_breakdown"][i] = draw(st.booleans())
        cols["dma_stall_ps"][i] = draw(st.floats(0, max(time_ps, 0)))
        cols["normalized_time_ps"][i] = time_ps * draw(st.floats(0.5, 2.0))
    total = int(cols["time_ps"].sum()) + draw(st.integers(0, 10**12))
    return OpMetricsDb(**cols, total_time_ps=total)


_PEAK = st.one_of(st.just(0.0), st.floats(1e-2, 1e5))


@st.composite
def perf_envs(draw) -> PerfEnv:
    return PerfEnv(
        peak_tera_flops_per_second=draw(_PEAK),
        peak_bws_gbps=[draw(_PEAK) for _ in range(7)],
        has_megacore=draw(st.booleans()),
        has_merged_vmem=draw(st.booleans()),
    )


HARDWARE = st.sampled_from(["TPU", "GPU", "CPU"])


def _util(rate: np.ndarray, peak: float) -> np.ndarray:
    """Utilization as XProf's SafeDivide computes it (0 for a peak below 1e-10)."""
    return rate / peak if abs(peak) >= 1e-10 else np.zeros_like(rate)


def _utilizations(m: dict, peaks: DatabasePeaks) -> dict[str, np.ndarray]:
    """Every utilization the efficiency takes, from the record's own rates and the db peaks."""
    zero = np.zeros_like(m["hbm_bw"])
    return {
        "compute": _util(m["measured_flop_rate"], peaks.peak_flop_rate),
        "hbm": _util(m["hbm_bw"], peaks.peak_hbm_bw),
        "cmem_read": _util(m["cmem_read_bw"], peaks.peak_cmem_read_bw) if peaks.has_cmem else zero,
        "cmem_write": _util(m["cmem_write_bw"], peaks.peak_cmem_write_bw)
        if peaks.has_cmem
        else zero,
        "vmem_read": _util(m["vmem_read_bw"], peaks.peak_vmem_read_bw)
        if peaks.has_merged_vmem
        else zero,
        "vmem_write": _util(m["vmem_write_bw"], peaks.peak_vmem_write_bw)
        if peaks.has_merged_vmem
        else zero,
    }


# --- 1. efficiency, optimal FLOP rate, bound_by ---------------------------------------------


@PROPERTY
@given(db=op_dbs(), env=perf_envs(), hardware=HARDWARE, cores=st.integers(0, 8))
def test_roofline_efficiency_is_the_largest_utilization(db, env, hardware, cores):
    peaks = DatabasePeaks.from_env(env, hardware)
    m = record_metrics(db, db.total_time_ps, peaks, cores)
    utils = _utilizations(m, peaks)
    largest = np.maximum.reduce(list(utils.values()))
    np.testing.assert_allclose(m["roofline_efficiency"], largest, rtol=1e-12, atol=0)
    assert np.array_equal(
        m["roofline_efficiency"],
        np.maximum(m["flop_rate_relative_to_hw_limit"], m["memory_bw_relative_to_hw_limit"]),
    )
    memory = np.maximum.reduce([v for k, v in utils.items() if k != "compute"])
    np.testing.assert_allclose(m["memory_bw_relative_to_hw_limit"], memory, rtol=1e-12, atol=0)
    # The rates themselves: FLOPs per ns is GFLOP/s; bytes per ns over 1.0737 is GiB/s.
    ns = db.time_ps / 1000.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(ns >= 1e-10, db.flops / ns, 0.0)
    np.testing.assert_allclose(m["measured_flop_rate"], rate, rtol=1e-12, atol=0)


@PROPERTY
@given(db=op_dbs(), env=perf_envs(), hardware=HARDWARE)
def test_optimal_flop_rate_never_exceeds_the_peak(db, env, hardware):
    peaks = DatabasePeaks.from_env(env, hardware)
    m = record_metrics(db, db.total_time_ps, peaks, 1)
    utils = _utilizations(m, peaks)
    within = np.logical_and.reduce([u <= 1.0 for u in utils.values()])
    rows = (m["roofline_efficiency"] > 0) & within & (peaks.peak_flop_rate > 0)
    assert np.all(m["optimal_flop_rate"][rows] <= peaks.peak_flop_rate * (1 + 1e-12))
    assert np.all(m["optimal_flop_rate"] >= 0)
    # Where the op runs at a roof (efficiency 1) its optimal rate is its measured rate.
    at_roof = m["roofline_efficiency"] == 1.0
    np.testing.assert_allclose(
        m["optimal_flop_rate"][at_roof], m["measured_flop_rate"][at_roof], rtol=1e-12
    )


def _expected_bound_by(m: dict, db: OpMetricsDb, env: PerfEnv, is_gpu: bool, i: int):
    """Argmax of the utilizations over the candidates in the documented order, ties earlier."""
    candidates = [
        ("Compute", m["measured_flop_rate"][i], 1000.0 * env.peak_tera_flops_per_second, True),
        ("HBM", m["hbm_bw"][i], env.peak_bws_gbps[0] / GIB, True),
    ]
    if is_gpu:
        if env.peak_bws_gbps[2] > 0:
            candidates.append(("Shm/L1", m["hbm_bw"][i], env.peak_bws_gbps[2] / GIB, True))
    else:
        for label, key, index, (space, kind) in TPU_ORDER:
            if env.peak_bws_gbps[index] > 0:
                enabled = db.breakdown[i, space, kind] > 0
                candidates.append(
                    (label, m[f"{key}_bw"][i], env.peak_bws_gbps[index] / GIB, enabled)
                )
    utils = [
        (rate / peak if abs(peak) >= 1e-10 else 0.0, -order, label)
        for order, (label, rate, peak, enabled) in enumerate(candidates)
        if enabled
    ]
    best = max(utils, default=(0.0, 0, "Unknown"))
    return best[2] if best[0] > 0 else "Unknown"


@PROPERTY
@given(db=op_dbs(), env=perf_envs(), hardware=HARDWARE)
def test_bound_by_is_the_argmax_in_the_documented_order(db, env, hardware):
    peaks = DatabasePeaks.from_env(env, hardware)
    m = record_metrics(db, db.total_time_ps, peaks, 1)
    for i in range(len(db)):
        assert m["bound_by"][i] == _expected_bound_by(m, db, env, hardware == "GPU", i), i


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        ((1.0, 1.0, 1.0, 1.0, 1.0, 1.0), "Compute"),  # all tied: the first
        ((0.5, 1.0, 1.0, 1.0, 1.0, 1.0), "HBM"),
        ((0.5, 0.5, 0.7, 0.7, 0.7, 0.7), "CMEM Read"),
        ((0.5, 0.5, 0.6, 0.7, 0.7, 0.7), "CMEM Write"),
        ((0.5, 0.5, 0.6, 0.6, 0.7, 0.7), "VMEM Read"),
        ((0.5, 0.5, 0.6, 0.6, 0.6, 0.7), "VMEM Write"),
        ((0.0, 0.0, 0.0, 0.0, 0.0, 0.0), "Unknown"),
    ],
)
def test_bound_by_ties_go_to_the_earlier_roof(rates, expected):
    """Utilizations set exactly (1 ns op, peaks of 1000 GFLOP/s and 1000 GiB/s everywhere)."""
    cols = empty_columns(1)
    cols["time_ps"][0] = cols["self_time_ps"][0] = 1000  # 1 ns
    cols["occurrences"][0] = 1
    cols["flops"][0] = rates[0] * 1000.0
    cols["has_breakdown"][0] = True
    for (space, kind), rate in zip([(0, 0), (1, 0), (1, 1), (2, 0), (2, 1)], rates[1:]):
        cols["breakdown"][0, space, kind] = rate * 1000.0 * GIB
    cols["breakdown"][0, 0, 1] = 0.0  # HBM = read + write: all of it on the read side
    cols["bytes_accessed"][0] = cols["breakdown"][0, 0, 0]
    db = OpMetricsDb(**cols, total_time_ps=1000)
    env = PerfEnv(1.0, [1000.0 * GIB] * 7, has_merged_vmem=True)
    m = record_metrics(db, 1000, DatabasePeaks.from_env(env, "TPU"), 1)
    assert m["bound_by"][0] == expected


# --- 2. per-step sums equal the totals over complete steps ------------------------------------

_NAMES = sorted(OPS)


@st.composite
def timelines(draw, cut_first: bool = False):
    """Cores of events (nested, overlapping or apart) and steps that cover every event start.

    Steps run from before the first event to after the last end, so none is cut by the
    profile window (``cut_first``: the first step starts exactly at the first event of a
    single core, which marks it incomplete).
    """
    cores = 1 if cut_first else draw(st.integers(1, 3))
    core_events = []
    for _ in range(cores):
        events, t = [], 1
        for _ in range(draw(st.integers(1, 10))):
            begin = t + draw(st.integers(0, 3 * US))
            duration = draw(st.integers(1, 2 * US))
            events.append((draw(st.sampled_from(_NAMES)), begin, duration))
            t = begin + draw(st.sampled_from([0, duration // 2, duration]))
        core_events.append(events)
    starts = sorted({b for events in core_events for _, b, _ in events})
    last_end = max(b + d for events in core_events for _, b, d in events)
    count = draw(st.integers(1, min(5, len(starts))))
    inner = []
    if len(starts) > 1:
        inner = draw(st.lists(st.sampled_from(starts[1:]), unique=True, max_size=count - 1))
    first = starts[0] if cut_first else 0
    bounds = [first, *sorted(inner), last_end + 1]
    steps = [(n, bounds[n], bounds[n + 1]) for n in range(len(bounds) - 1)]
    return core_events, [steps] * cores


def _stats(core_events, steps) -> OpStats:
    space = tiny_tpu(core_events=core_events, steps=steps)
    return analyze_profile(decode_profile(space.SerializeToString()), "tiny")


_ADDITIVE = ("occurrences", "time_ps", "self_time_ps", "flops", "bytes_accessed", "breakdown")


def _by_op(db: OpMetricsDb) -> dict:
    return {
        (int(p), str(n)): i
        for i, (p, n) in enumerate(zip(db.program_id, db.name))
        if str(n) != "IDLE"
    }


def _program(database, record_type: int, step: int = 0):
    return next(
        r
        for r in database.roofline_model_record
        if r.record_type == record_type and r.rank == 0 and r.include_infeed_outfeed
        if record_type != roofline_model_pb2.PER_STEP or r.step_num == step
    )


@settings(PROPERTY, max_examples=80)
@given(timeline=timelines())
def test_per_step_sums_equal_the_totals(timeline):
    core_events, steps = timeline
    stats = _stats(core_events, steps)
    assert [s.step_num for s in stats.steps] == [n for n, _, _ in steps[0]]
    assert all(s.complete for s in stats.steps)
    total = stats.all_db
    rows = _by_op(total)
    sums = {key: {c: 0 for c in _ADDITIVE} for key in rows}
    for step in stats.steps:
        for key, i in _by_op(step.db).items():
            for c in _ADDITIVE:
                sums[key][c] = sums[key][c] + getattr(step.db, c)[i]
    for key, i in rows.items():  # every event starts inside one step
        for c in _ADDITIVE:
            np.testing.assert_allclose(sums[key][c], getattr(total, c)[i], rtol=1e-12, err_msg=c)
    # The average step is the complete steps' sum divided by their number.
    n = len(stats.complete_steps)
    avg = average_db(stats)
    for key, i in _by_op(avg).items():
        j = rows[key]
        np.testing.assert_allclose(avg.flops[i] * n, total.flops[j], rtol=1e-12)
        assert abs(avg.time_ps[i] * n - total.time_ps[j]) <= n  # rounded to whole ps
    database = build_database(stats)
    per_step = [_program(database, roofline_model_pb2.PER_STEP, s.step_num) for s in stats.steps]
    average = _program(database, roofline_model_pb2.AVERAGE_STEP)
    assert average.total_time_in_us * n == pytest.approx(
        sum(r.total_time_in_us for r in per_step), rel=1e-12
    )
    # Its FLOPs are per step too (as --step average), never the steps' sum.
    assert average.flops_v2 * n == pytest.approx(sum(r.flops_v2 for r in per_step), rel=1e-12)


@settings(PROPERTY, max_examples=60)
@given(timeline=timelines(cut_first=True))
def test_a_cut_first_step_is_left_out_of_the_average(timeline):
    core_events, steps = timeline
    stats = _stats(core_events, steps)
    assert not stats.steps[0].complete
    assert all(s.complete for s in stats.steps[1:])
    database = build_database(stats)
    complete = stats.complete_steps
    if not complete:  # only the cut step: XProf averages it anyway, with a warning
        assert any("Incomplete step" in w for w in database.diagnostics.warnings)
        return
    per_step = [_program(database, roofline_model_pb2.PER_STEP, s.step_num) for s in complete]
    average = _program(database, roofline_model_pb2.AVERAGE_STEP)
    assert average.total_time_in_us * len(complete) == pytest.approx(
        sum(r.total_time_in_us for r in per_step), rel=1e-12
    )
    assert not [
        r
        for r in database.roofline_model_record
        if r.record_type == roofline_model_pb2.PER_STEP and r.step_num == stats.steps[0].step_num
    ]


# --- 3. no NaN or infinity in any output -------------------------------------------------------


@st.composite
def op_stats(draw) -> OpStats:
    hardware = draw(HARDWARE)
    env = draw(perf_envs())
    steps = [
        StepInfo(n, draw(st.booleans()), with_idle(draw(op_dbs(4))), draw(st.integers(0, 10**9)))
        for n in range(draw(st.integers(0, 3)))
    ]
    return OpStats(
        hosts=["h"],
        run_env=RunEnvironment(hardware, f"{hardware} test", draw(st.integers(0, 8)), 1),
        perf_env=env,
        all_db=with_idle(draw(op_dbs())),
        steps=steps,
        has_step_markers=bool(steps),
    )


def _assert_finite(value, where: str):
    found = fs.non_finite(value)
    assert found is None, f"{where}: {found}"
    json.dumps(value, allow_nan=False)


@settings(PROPERTY, max_examples=60)
@given(stats=op_stats(), other=op_stats())
def test_no_nan_or_infinity_in_any_output(stats, other):
    database = build_database(stats)
    table = to_datatable(database)
    _assert_finite(table, "datatable")
    for cell in to_csv(table).replace('"', ",").split(","):
        assert cell.strip().lower() not in ("nan", "inf", "-inf"), cell
    choices = [TOTAL] + ([AVERAGE] if stats.complete_steps else [])
    choices += [s.step_num for s in stats.steps]
    for step in choices:
        selection = select(stats, step)
        db = database if step == TOTAL else selection_database(stats, selection)
        _assert_finite(to_json(db, stats, ["h.xplane.pb"], selection), f"json step {step}")
    for a, b in ((stats, other), (other, stats), (stats, stats)):
        result = compare(Side("a", a, select(a, TOTAL)), Side("b", b, select(b, TOTAL)))
        _assert_finite(result, "compare")


_STAT_VALUES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308]),
    st.floats(),
    st.integers(0, 2**62).map(float),
)


@settings(PROPERTY, max_examples=60)
@given(flops=_STAT_VALUES, num_bytes=_STAT_VALUES, peak=_STAT_VALUES)
def test_no_nan_or_infinity_for_any_stat_value(flops, num_bytes, peak):
    ops = dict(OPS)
    category, _, _, breakdown = ops["fusion.1"]
    ops["fusion.1"] = (category, flops, num_bytes, breakdown)
    space = tiny_tpu(ops=ops, peaks={**PEAKS, "peak_teraflops_per_second": peak})
    outcome = fs.profile_target(space.SerializeToString(), "stats.xplane.pb")
    assert outcome.startswith(("ok", "error"))


@settings(PROPERTY, max_examples=50)
@given(
    flops=st.floats(0, 1e18),
    num_bytes=st.floats(0, 1e18),
    peak=st.one_of(st.just(0.0), st.floats(1e-3, 1e6)),
    hbm=st.one_of(st.just(0.0), st.floats(1e-3, 1e6)),
)
def test_generated_profiles_with_realistic_stats_give_finite_outputs(flops, num_bytes, peak, hbm):
    assume(math.isfinite(flops) and math.isfinite(num_bytes))
    ops = dict(OPS)
    category, _, _, breakdown = ops["fusion.1"]
    ops["fusion.1"] = (category, flops, num_bytes, breakdown)
    peaks = {**PEAKS, "peak_teraflops_per_second": peak, "peak_hbm_bw_gigabytes_per_second": hbm}
    space = tiny_tpu(ops=ops, peaks=peaks, steps=[[(1, 0, 6 * US), (2, 6 * US, 13 * US)]] * 2)
    assert fs.profile_target(space.SerializeToString(), "stats.xplane.pb").startswith("ok")
