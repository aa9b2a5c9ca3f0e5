"""All hosts of a run combined at once (``combine_hosts``) is, to the bit, what combining the
hosts' dbs step by step with ``combine`` gives: every step's rows in the same order with the
same values, the whole profile, the average and every output format."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pytest
from conftest import run_cli

from tb_roofline_plugin.demo import (
    CpuSpec,
    GpuSpec,
    TpuSpec,
    cpu_xspace,
    gpu_xspace,
    tpu_xspace,
    write_profile,
)
from tb_roofline_plugin.ops.op_metrics import OpMetricsDb, combine
from tb_roofline_plugin.ops.op_stats import (
    HostsStepOps,
    OpStats,
    StepInfo,
    combine_hosts,
    shared_table,
    sum_steps,
)
from tb_roofline_plugin.platforms.analysis import analyze_file, analyze_files
from tb_roofline_plugin.render.export import render

# Hosts whose steps differ: counts, a cut first step or not, cores, ops per step.
TPU_HOSTS = (
    TpuSpec(steps=3, host="t0", seed=1),
    TpuSpec(steps=5, host="t1", seed=2, incomplete_first_step=False),
    TpuSpec(steps=6, host="t2", seed=3, ops_per_step=30),
    TpuSpec(steps=5, host="t3", seed=4, cores=2, slow_op="fusion.3"),
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hosts")
    for spec in TPU_HOSTS:
        write_profile(root / "tpu" / f"{spec.host}.xplane.pb", tpu_xspace(spec))
    for i, steps in enumerate((3, 4, 4)):
        spec = GpuSpec(steps=steps, host=f"g{i}", seed=i, truncated_last_step=i == 2)
        write_profile(root / "gpu" / f"g{i}.xplane.pb", gpu_xspace(spec))
    for i in range(2):
        spec = CpuSpec(host=f"c{i}", seed=i, steps=3 + i)
        write_profile(root / "cpu" / f"c{i}.xplane.pb", cpu_xspace(spec))
    for i in range(3):  # a pod: hosts of one program, the same steps and ops
        spec = TpuSpec(steps=4, ops_per_step=30, host=f"s{i}", seed=i)
        write_profile(root / "pod" / f"s{i}.xplane.pb", tpu_xspace(spec))
    return root


def _hosts(runs, run):
    return [analyze_file(p) for p in sorted((runs / run).glob("*.xplane.pb"))]


def _step_by_step(parts: list[OpStats]) -> list[StepInfo]:
    """The steps as combine_hosts made them before: ``combine`` of each common step."""
    common = set.intersection(*({s.step_num for s in p.steps} for p in parts))
    numbered = [{s.step_num: s for s in p.steps} for p in parts]
    steps = []
    for num in sorted(common):
        mine = [by_number[num] for by_number in numbered]
        db = combine([s.db for s in mine])
        complete = all(s.complete for s in mine)
        steps.append(StepInfo(num, complete, db, max(s.duration_ps for s in mine)))
    return steps


def _assert_same(a: OpMetricsDb, b: OpMetricsDb) -> None:
    assert a.total_time_ps == b.total_time_ps
    for f in fields(OpMetricsDb):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            same = x.tolist() == y.tolist() if x.dtype == object else x.tobytes() == y.tobytes()
            assert same, f.name


def _old(parts: list[OpStats]) -> OpStats:
    new = combine_hosts(parts)
    return replace(new, all_db=combine([p.all_db for p in parts]), steps=_step_by_step(parts))


@pytest.mark.parametrize("run", ["tpu", "gpu", "cpu", "pod"])
def test_combined_steps_are_the_step_by_step_combine(runs, run):
    parts = _hosts(runs, run)
    new, old = combine_hosts(parts), _old(parts)
    assert [s.step_num for s in new.steps] == [s.step_num for s in old.steps]
    assert len(new.steps) >= 2
    table, _ = shared_table(new.steps)
    assert isinstance(table, HostsStepOps)  # one table, no db per step
    for mine, theirs in zip(new.steps, old.steps):
        assert (mine.complete, mine.duration_ps) == (theirs.complete, theirs.duration_ps)
        _assert_same(mine.db, theirs.db)
    _assert_same(new.all_db, old.all_db)
    old_steps = {s.step_num: s for s in old.steps}
    for chosen in (new.complete_steps, new.steps, new.steps[::-1], new.steps[1:2]):
        _assert_same(sum_steps(chosen), sum_steps([old_steps[s.step_num] for s in chosen]))
    assert new.complete_steps or run == "gpu"


@pytest.mark.parametrize("run", ["tpu", "gpu", "cpu", "pod"])
def test_every_output_is_that_of_the_step_by_step_combine(runs, run):
    parts = _hosts(runs, run)
    new, old = combine_hosts(parts), _old(parts)
    for fmt in ("datatable", "json", "csv"):
        assert render(new, fmt, ["x"]) == render(old, fmt, ["x"])
    for step in ["average"] + [s.step_num for s in old.steps]:
        assert render(new, "json", ["x"], step) == render(old, "json", ["x"], step)


def test_hosts_with_steps_of_their_own_and_combined_hosts_combine_again(runs):
    """A host whose steps are dbs (not one table) and a combination of hosts merge like the
    hosts they hold, step by step."""
    t0, t1, t2, t3 = _hosts(runs, "tpu")
    own = replace(
        t1, steps=[StepInfo(s.step_num, s.complete, s.db, s.duration_ps) for s in t1.steps]
    )
    assert shared_table(own.steps)[0] is None
    nested = combine_hosts([combine_hosts([t0, own]), combine_hosts([t2, t3])])
    flat = _old([t0, t1, t2, t3])
    assert nested.hosts == ["t0", "t1", "t2", "t3"]
    for fmt in ("datatable", "json"):
        assert render(nested, fmt, ["x"]) == render(flat, fmt, ["x"])
    for mine, theirs in zip(nested.steps, flat.steps):
        _assert_same(mine.db, theirs.db)


def test_hosts_without_common_steps_have_no_steps(runs):
    t0 = _hosts(runs, "tpu")[0]
    moved = replace(t0, steps=[replace_step(s, 1000 + s.step_num) for s in t0.steps])
    combined = combine_hosts([t0, moved])
    assert combined.steps == [] and combined.has_step_markers
    _assert_same(combined.all_db, combine([t0.all_db, moved.all_db]))


def replace_step(step: StepInfo, number: int) -> StepInfo:
    return StepInfo(number, step.complete, step.db, step.duration_ps)


def test_cli_export_of_a_multi_host_folder_is_all_hosts_combined(runs, tmp_path):
    folder = runs / "tpu"
    files = [str(p) for p in sorted(folder.glob("*.xplane.pb"))]
    expected = render(_old([analyze_file(p) for p in files]), "json", files)
    out = tmp_path / "all.json"
    run_cli("export", folder, "--format", "json", "-o", out, check=True)
    assert out.read_text() == expected
    assert render(analyze_files(files), "json", files) == expected


def test_ops_that_repeat_within_a_host_step_merge_in_order(runs):
    """Two ops of one host with the same (program, name) merge, in row order, as combine
    merges them."""
    parts = _hosts(runs, "tpu")[:2]
    table, _ = shared_table(parts[0].steps)
    static = dict(table.static)
    for column in ("program_id", "name"):
        static[column] = static[column].copy()
        static[column][1] = static[column][0]
    twin = replace(table, static=static)
    parts[0] = replace(
        parts[0],
        steps=[
            StepInfo(s.step_num, s.complete, None, s.duration_ps, table=twin, index=s.index)
            for s in parts[0].steps
        ],
    )
    new, old = combine_hosts(parts), _old(parts)
    for mine, theirs in zip(new.steps, old.steps):
        _assert_same(mine.db, theirs.db)
    assert render(new, "json", ["x"]) == render(old, "json", ["x"])
