"""Comparison of two selections: zero deltas for identical ones, a slowed op on top, CI gating."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace, write_profile
from tb_roofline_plugin.ops.selection import per_step_selection, select
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.roofline.compare import Side, compare


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    base = write_profile(root / "base" / "h.xplane.pb", tpu_xspace(TpuSpec(cores=2)))
    slow = write_profile(
        root / "slow" / "h.xplane.pb", tpu_xspace(TpuSpec(cores=2, slow_op="fusion.3"))
    )
    more = write_profile(
        root / "more" / "h.xplane.pb", tpu_xspace(TpuSpec(cores=2, ops_per_step=26))
    )
    return base, slow, more


def _side(path, step="average"):
    stats = analyze_file(path)
    return Side(str(path), stats, select(stats, step))


def test_identical_selections_have_all_zero_deltas(profiles):
    base, _, _ = profiles
    result = compare(_side(base), _side(base))
    program = result["program"]
    assert program["time_us_delta"] == 0.0 and program["time_us_delta_pct"] == 0.0
    assert program["efficiency_delta"] == 0.0 and program["bound_by_a"] == program["bound_by_b"]
    assert result["ops"] and all(op["time_us_delta"] == 0.0 for op in result["ops"])
    assert all(
        op["flop_rate_delta"] == 0.0 and op["efficiency_delta"] == 0.0 for op in result["ops"]
    )
    assert not any(op["only_in"] for op in result["ops"])


def test_a_slowed_op_is_on_top_with_its_delta(profiles):
    base, slow, _ = profiles
    result = compare(_side(base), _side(slow))
    top = result["ops"][0]
    assert top["operation"] == "fusion.3"
    assert top["time_us_delta"] == pytest.approx(2 * top["time_us_a"], rel=1e-3)
    assert top["time_us_delta_pct"] == pytest.approx(200.0, rel=1e-3)
    assert top["flop_rate_b"] == pytest.approx(top["flop_rate_a"] / 3, rel=1e-3)
    assert top["efficiency_delta"] < 0
    assert result["program"]["time_us_delta"] == pytest.approx(top["time_us_delta"], rel=0.05)
    others = [op for op in result["ops"][1:] if op["operation"] != "while.8"]
    assert all(abs(op["time_us_delta"]) < 0.05 * abs(top["time_us_delta"]) for op in others)


def test_ops_on_one_side_only(profiles):
    base, _, more = profiles
    result = compare(_side(base), _side(more))
    only_b = [op for op in result["ops"] if op["only_in"] == "B"]
    assert sorted(op["operation"] for op in only_b) == ["fusion.31", "transpose.30"]
    for op in only_b:
        assert op["time_us_a"] == 0.0 and op["time_us_b"] > 0 and op["bound_by_a"] is None
        assert op["efficiency_a"] is None and op["time_us_delta_pct"] is None
    reverse = compare(_side(more), _side(base))
    assert sorted(op["operation"] for op in reverse["ops"] if op["only_in"] == "A") == sorted(
        op["operation"] for op in only_b
    )


def test_cli_compare_table_and_fail_if_slower(profiles):
    base, slow, _ = profiles
    result = json.loads(
        run_cli(
            "compare",
            base,
            slow,
            "--a-step",
            "average",
            "--b-step",
            "average",
            "--format",
            "json",
            check=True,
        ).stdout
    )
    slower = result["program"]["time_us_delta_pct"]
    assert slower > 5
    table = run_cli("compare", base, slow, "--a-step", "average", "--b-step", "average")
    assert table.returncode == 0
    assert "Program time per step" in table.stdout and "fusion.3" in table.stdout.splitlines()[9]
    failing = run_cli("compare", base, slow, "--fail-if-slower", f"{slower - 1:.3f}")
    assert failing.returncode == 1 and "slower per step than A" in failing.stderr
    passing = run_cli("compare", base, slow, "--fail-if-slower", f"{slower + 1:.3f}")
    assert passing.returncode == 0
    faster = run_cli("compare", slow, base, "--fail-if-slower", "0")
    assert faster.returncode == 0


def test_cli_compare_csv(profiles, tmp_path):
    base, slow, _ = profiles
    out = tmp_path / "delta.csv"
    run_cli("compare", base, slow, "--format", "csv", "-o", out, check=True)
    lines = out.read_text().splitlines()
    assert lines[0].startswith(
        "program,operation,category,only_in,time_us_a,time_us_b,time_us_delta"
    )
    assert lines[1].split(",")[1] == "fusion.3"


def test_total_selections_compare_per_step(profiles):
    """Total compares as its Average step: Compare's "per step" is the Average's figure."""
    base, _, _ = profiles
    stats = analyze_file(base)
    total = compare(Side("t", stats, per_step_selection(stats, "total")), _side(base, "average"))
    complete = stats.complete_steps
    average_us = sum(s.db.total_time_ps for s in complete) / len(complete) / 1e6
    assert total["program"]["time_us_a"] == pytest.approx(average_us, rel=1e-9)
    assert total["program"]["time_us_delta"] == pytest.approx(0.0, abs=1e-6)
    assert total["per_step"] == {"a": True, "b": True}
    assert total["time"]["a"] == (
        f"device time summed over 2 TensorCores, per step (mean of {len(complete)} complete steps)"
    )
