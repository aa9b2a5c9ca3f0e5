"""One table for every step's ops: the same numbers as one OpMetricsDb per step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tb_roofline_plugin.ops import step_ops as step_ops_module
from tb_roofline_plugin.ops.op_metrics import IDLE_NAME, combine, empty_columns, with_idle
from tb_roofline_plugin.ops.op_stats import (
    OpStats,
    StepInfo,
    any_step_holds_ops,
    step_nbytes,
    steps_holding_ops,
    sum_steps,
    table_steps,
)
from tb_roofline_plugin.ops.step_ops import cells, step_ops
from tb_roofline_plugin.peaks.perf_env import PerfEnv, RunEnvironment
from tb_roofline_plugin.roofline.model import step_diagnostics
from tb_roofline_plugin.roofline.records import db_segments, program_db, step_segments
from tb_roofline_plugin.serve import stats_store
from tb_roofline_plugin.xspace.event_table import StringCodes, first_seen_codes


def _table():
    """Three ops (a, b, c); events of three steps: step 0 runs b and a, step 1 c, step 2 a."""
    static = empty_columns(3)
    static["name"][:] = ["a", "b", "c"]
    static["category"][:] = ["fusion", "convolution", "infeed"]
    static["program_id"][:] = [7, 7, 9]
    group = np.array([0, 0, 0, 1, 2, 2])
    op = np.array([1, 0, 1, 2, 0, 0])
    binned = cells(group, op, 3, 3)
    time_ps = binned.sum(np.array([10, 20, 30, 40, 50, 60], np.float64))
    flops = binned.sum(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    columns = {
        "occurrences": binned.sum().astype(np.int64),
        "time_ps": time_ps.astype(np.int64),
        "self_time_ps": time_ps.astype(np.int64),
        "flops": flops,
        "bytes_accessed": flops * 2,
    }
    return step_ops(static, binned, columns, [100, 50, 90])


def test_cells_group_events_by_step_then_op():
    binned = cells(np.array([1, 0, 1, 0]), np.array([2, 1, 0, 1]), 3, 3)
    assert binned.group.tolist() == [0, 1, 1]
    assert binned.op.tolist() == [1, 0, 2]
    assert binned.offsets.tolist() == [0, 1, 3, 3]
    assert binned.sum(np.array([1.0, 2.0, 3.0, 4.0])).tolist() == [6.0, 3.0, 1.0]


def test_a_steps_db_has_its_ops_and_idle():
    table = _table()
    db = table.db(0)
    assert db.name.tolist() == ["a", "b", IDLE_NAME]
    assert db.time_ps.tolist() == [20, 40, 40]  # IDLE = 100 - 20 - 40
    assert db.occurrences.tolist() == [1, 2, 0]
    assert db.flops.tolist() == [2.0, 4.0, 0.0]
    assert db.total_time_ps == 100
    assert table.idle_ps().tolist() == [40, 10, 0]  # step 2: 110 ps of ops in 90 ps


def test_summed_steps_equal_combine_of_their_dbs():
    table = _table()
    for steps in ([0, 1, 2], [1, 2], [2, 0], [1]):
        want = combine([table.db(s) for s in steps])
        got = table.summed(np.array(steps))
        assert got.name.tolist() == want.name.tolist()
        for column in ("time_ps", "self_time_ps", "occurrences", "flops", "bytes_accessed"):
            assert getattr(got, column).tolist() == getattr(want, column).tolist(), column
        assert got.category.tolist() == want.category.tolist()
        assert got.program_id.tolist() == want.program_id.tolist()
        assert got.total_time_ps == want.total_time_ps


def test_summed_breakdowns_equal_combine_to_the_bit_and_steps_without_ops_are_idle():
    table = _table()
    thirds = np.arange(len(table.op) * 6, dtype=np.float64).reshape(-1, 3, 2) / 3
    table = replace(table, values={**table.values, "breakdown": thirds})
    for steps in ([0, 1, 2], [2, 0], [1]):
        want = combine([table.db(s) for s in steps])
        got = table.summed(np.array(steps))
        assert got.breakdown.shape == want.breakdown.shape == (len(want), 3, 2)
        assert got.breakdown.tobytes() == want.breakdown.tobytes()
    # op a: row 0 (step 0) then row 3 (step 2), in table order
    assert table.summed(np.array([2, 0])).breakdown[0, 1].tolist() == [2 / 3 + 20 / 3, 1.0 + 7.0]
    empty = table.keep_rows(np.zeros(len(table.op), bool))
    idle = empty.summed(np.arange(3))
    assert idle.name.tolist() == [IDLE_NAME] and idle.time_ps.tolist() == [240]
    assert idle.breakdown.tolist() == [[[0.0, 0.0]] * 3]


def test_program_rows_of_table_steps_equal_those_of_step_dbs():
    table = _table()
    steps = table_steps(table, [10, 11, 12], [True, True, True], [100, 50, 90])
    for chosen in (steps, steps[1:], [steps[2], steps[0]]):
        for include in (True, False):
            want = program_db([s.db for s in chosen], include)
            got = program_db(step_segments(chosen), include)
            assert got.time_ps.tolist() == want.time_ps.tolist()
            assert got.flops.tolist() == want.flops.tolist()
            assert got.bytes_accessed.tolist() == want.bytes_accessed.tolist()
    # Without infeed/outfeed, step 11 (only the infeed op c) keeps 50 - 40 ps.
    assert program_db(step_segments(steps), False).time_ps.tolist() == [100, 10, 90]
    assert program_db(db_segments([steps[1].db]), True).time_ps.tolist() == [50]


def test_sum_steps_takes_the_table_or_falls_back_to_dbs():
    table = _table()
    steps = table_steps(table, [0, 1, 2], [True] * 3, [1, 1, 1])
    own = [StepInfo(s.step_num, True, s.db) for s in steps]
    assert sum_steps(steps).time_ps.tolist() == sum_steps(own).time_ps.tolist()
    assert sum_steps(steps).time_ps.tolist() == [130, 40, 50, 40]  # a, b, IDLE (40 + 10), c
    # The table once (3 ops' descriptions, 4 rows), not a db per step.
    assert step_nbytes(steps) == table.nbytes < step_nbytes(own)


def test_keep_rows_drops_rows_and_keeps_steps():
    table = _table().keep_rows(np.array([True, False, True, True]))
    assert table.offsets.tolist() == [0, 1, 2, 3]
    assert [table.db(s).name.tolist()[:-1] for s in range(3)] == [["a"], ["c"], ["a"]]


def test_stats_store_keeps_the_step_table():
    table = _table()
    stats = OpStats(
        hosts=["h"],
        run_env=RunEnvironment(hardware_type="GPU", device_type="x"),
        perf_env=PerfEnv(),
        all_db=with_idle(table.summed(np.arange(3))),
        steps=table_steps(table, [4, 5, 6], [True, False, True], [100, 50, 90]),
    )
    back = stats_store.loads(stats_store.dumps(stats))
    assert [(s.step_num, s.complete, s.duration_ps) for s in back.steps] == [
        (4, True, 100),
        (5, False, 50),
        (6, True, 90),
    ]
    assert back.steps[0].table is back.steps[2].table
    for mine, theirs in zip(stats.steps, back.steps):
        assert theirs.db.name.tolist() == mine.db.name.tolist()
        assert theirs.db.time_ps.tolist() == mine.db.time_ps.tolist()


def test_first_seen_codes_number_keys_in_order_of_appearance():
    codes, distinct = first_seen_codes(np.array([5, 3, 5, -1, 3, 9]))
    assert codes.tolist() == [0, 1, 0, 2, 1, 3]
    assert distinct.tolist() == [5, 3, -1, 9]


@pytest.mark.parametrize("texts", [["b", "a"], ["a"]])
def test_string_codes_span_lines(texts):
    strings = StringCodes()
    strings.add_distinct(texts, np.array([0] * len(texts) + list(range(len(texts)))))
    strings.add_distinct(["z", "a"], np.array([1, 0]))
    codes, values = strings.factorized()
    assert [values[c] for c in codes] == [texts[0]] * len(texts) + texts + ["a", "z"]


def test_cells_give_the_same_bins_with_and_without_sorting(monkeypatch):
    rng = np.random.default_rng(3)
    group, op = rng.integers(0, 50, 2000), rng.integers(0, 40, 2000)
    dense = cells(group, op, 40, 50)
    monkeypatch.setattr(step_ops_module, "DENSE_CELLS", 0)
    by_sort = cells(group, op, 40, 50)
    for field in ("group", "op", "inverse", "offsets"):
        assert getattr(dense, field).tolist() == getattr(by_sort, field).tolist(), field
    assert dense.sum().sum() == 2000


@pytest.mark.parametrize("dense", [True, False])
def test_cells_of_parts_sum_like_cells_of_all_events(monkeypatch, dense):
    if not dense:
        monkeypatch.setattr(step_ops_module, "DENSE_CELLS", 0)
    rng = np.random.default_rng(5)
    groups = [rng.integers(0, 20, n) for n in (300, 0, 150)]
    ops = [rng.integers(0, 9, len(g)) for g in groups]
    weights = [rng.random(len(g)) for g in groups]
    whole = cells(np.concatenate(groups), np.concatenate(ops), 9, 20)
    parts = step_ops_module.part_cells(groups, ops, 9, 20)
    assert parts.op.tolist() == whole.op.tolist()
    assert parts.offsets.tolist() == whole.offsets.tolist()
    assert parts.sum().tolist() == whole.sum().tolist()
    assert np.allclose(parts.sum(weights), whole.sum(np.concatenate(weights)))


def _bincount_sum(binned, weights):
    """Cells.sum's general path, part by part, as an oracle."""
    total = np.zeros(len(binned))
    with np.errstate(all="ignore"):  # inf - inf across parts
        for k, inverse in enumerate(binned.inverse):
            part = None if weights is None else weights[k]
            total += np.bincount(inverse, weights=part, minlength=len(binned))
    return total


def _assert_same_bits(got, expected):
    """Bit for bit, -0.0 against 0.0 included; a NaN against a NaN of either sign (which
    machine instruction's operand a NaN sum keeps is the compiler's choice, no sum of
    times has one, and no output shows its sign)."""
    nan = np.isnan(expected)
    assert np.isnan(got).tolist() == nan.tolist()
    assert got[~nan].tobytes() == expected[~nan].tobytes()


@pytest.mark.parametrize("seed", range(6))
def test_aligned_parts_sum_to_the_bits_of_summing_them_part_by_part(seed):
    """The cores of one program meet the same cells in the same order: their weights are
    added element by element, the same bits as a bincount per part (-0.0, NaN, inf,
    integer weights and huge values included); parts that are not aligned take the
    general path."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    group = np.sort(rng.integers(0, 7, n))
    op = rng.permutation(n) % 11
    keep = np.unique(group * 11 + op, return_index=True)[1]  # every cell once
    group, op = group[keep], op[keep]
    order = rng.permutation(len(group))  # the events in any order, the same in every part
    parts = int(rng.integers(2, 6))
    binned = step_ops_module.part_cells([group[order]] * parts, [op[order]] * parts, 11, 7)
    assert binned.aligned
    special = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1e300, -1e300, 2.0**60 + 1])
    weights = [
        np.where(rng.random(len(order)) < 0.3, rng.choice(special, len(order)),
                 rng.normal(0, 1e6, len(order)))
        for _ in range(parts)
    ]  # fmt: skip
    weights[-1] = rng.integers(-(2**62), 2**62, len(order))  # int64, as self times are
    _assert_same_bits(binned.sum(weights), _bincount_sum(binned, weights))
    assert (
        binned.sum().tolist()
        == _bincount_sum(binned, None).tolist()
        == [float(parts)] * len(binned)
    )
    shuffled = step_ops_module.part_cells(
        [group[order], group], [op[order], op], 11, 7
    )  # the same cells in another order
    assert not shuffled.aligned or np.array_equal(order, np.arange(len(order)))
    two = weights[:2]
    with np.errstate(all="ignore"):  # the general path's own inf - inf
        _assert_same_bits(shuffled.sum(two), _bincount_sum(shuffled, two))


def test_an_owned_profile_lets_its_lines_go_once_read_and_gives_the_same_roofline(tmp_path):
    from tb_roofline_plugin.demo import GpuSpec, gpu_xspace
    from tb_roofline_plugin.platforms.analysis import analyze_bytes, analyze_file
    from tb_roofline_plugin.roofline.model import build_database
    from tb_roofline_plugin.xspace.profile_reader import read_profile

    path = tmp_path / "host.xplane.pb"
    path.write_bytes(gpu_xspace(GpuSpec(steps=3)).SerializeToString())
    profile = read_profile(path, release_lines=True)
    assert any(plane.lines for plane in profile.planes)
    profile.done_reading()
    assert not any(plane.lines for plane in profile.planes)
    kept = read_profile(path)
    kept.done_reading()  # not owned: the lines stay
    assert any(plane.lines for plane in kept.planes)
    owned = build_database(analyze_file(path))
    borrowed = build_database(analyze_bytes(path.read_bytes(), str(path)))
    assert owned.SerializeToString() == borrowed.SerializeToString()
    assert len(owned.roofline_model_record) > 10


def _only_step_1_ran():
    """``_table``'s steps 10, 11, 12 (11 incomplete) where only step 11's op ran."""
    table = _table()
    ran = np.zeros(len(table.op), np.int64)
    ran[table.offsets[1] : table.offsets[2]] = 1
    table.values["occurrences"] = ran
    return table_steps(table, [10, 11, 12], [True, False, True], [100, 50, 90])


def test_any_step_holds_ops_is_the_any_of_each_steps_answer():
    steps = _only_step_1_ran()
    assert steps_holding_ops(steps).tolist() == [False, True, False]
    assert any_step_holds_ops(steps) is True  # every step of the table: any row that ran
    complete = steps.where(steps.complete)  # steps 10 and 12: the ran row is in neither
    assert [s.step_num for s in complete] == [10, 12]
    assert complete[0] is steps[0] and complete[1] is steps[2]
    assert complete.positions.tolist() == [0, 2]
    assert any_step_holds_ops(complete) is False
    assert any_step_holds_ops(list(steps)[1:]) is True  # a plain list: step by step
    assert any_step_holds_ops(list(steps)[2:]) is False
    steps.table.values["occurrences"][:] = 0
    assert any_step_holds_ops(steps) is False


def test_the_incomplete_steps_warning_is_the_same_from_the_step_arrays_and_the_list():
    steps = _only_step_1_ran()

    def warnings(step_list):
        stats = OpStats(
            hosts=["h"],
            run_env=RunEnvironment(hardware_type="GPU", device_type="x"),
            perf_env=PerfEnv(),
            all_db=with_idle(steps.table.summed(np.arange(3))),
            steps=step_list,
        )
        return step_diagnostics(stats).warnings

    assert (
        warnings(steps)
        == warnings(list(steps))
        == [
            "1 incomplete step left out of the average (cut by the profile window, or missing the "
            "work launched in them): step 11."
        ]
    )
