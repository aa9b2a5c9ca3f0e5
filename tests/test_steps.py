"""Per-step rooflines on real JAX CPU profiles: every op of a step is assigned, sums hold."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from tb_roofline_plugin.ops.selection import average_db, select
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.platforms.cpu import read_host_events
from tb_roofline_plugin.xspace.profile_reader import HOST_PLANE, read_profile

NAMES = ("jax_matmul", "jax_mlp", "jax_transformer")


def _path(shared_data, name):
    (path,) = (shared_data / "jax-cpu" / name).glob("plugins/profile/*/vm.xplane.pb")
    return path


@pytest.mark.parametrize("name", NAMES)
def test_every_op_event_inside_a_step_is_counted_once(shared_data, name):
    path = _path(shared_data, name)
    stats = analyze_file(path)
    events = read_host_events(read_profile(path).plane(HOST_PLANE))
    assert len(stats.steps) == 10 and stats.has_step_markers
    previous_last = None
    for step in sorted(stats.steps, key=lambda s: s.step_num):
        at = events.steps.numbers.tolist().index(step.step_num)
        begin, end = int(events.steps.begin_ps[at]), int(events.steps.end_ps[at])
        inside = (events.op_begin >= begin) & (events.op_begin < end)
        assert int(step.db.occurrences.sum()) == int(inside.sum())
        assert int(step.db.time_ps[step.db.occurrences > 0].sum()) == int(
            (events.op_end - events.op_begin)[inside].sum()
        )
        # The step's wall time covers its ops, whose end events can come after the root's;
        # the time the step before ran into it is that step's, so steps never overlap.
        first = min(begin, int(events.op_begin[inside].min()))
        if previous_last is not None:
            first = max(first, previous_last)
        last = max(end, int(events.op_end[inside].max()))
        assert step.db.total_time_ps == last - first
        previous_last = last


@pytest.mark.parametrize("name", NAMES)
def test_average_is_the_mean_of_complete_steps(shared_data, name):
    stats = analyze_file(_path(shared_data, name))
    steps = stats.complete_steps
    average = average_db(stats)
    flops = [float(s.db.flops.sum()) for s in steps]
    assert float(average.flops.sum()) == pytest.approx(np.mean(flops), rel=1e-9)
    assert average.total_time_ps == pytest.approx(
        np.mean([s.db.total_time_ps for s in steps]), abs=1
    )
    total_flops = sum(flops)
    assert total_flops == pytest.approx(len(steps) * float(average.flops.sum()), rel=1e-9)


def test_step_selection_has_op_records(shared_data):
    path = _path(shared_data, "jax_mlp")
    doc = json.loads(run_cli("export", path, "--format", "json", "--step", "4", check=True).stdout)
    records = doc["database"]["roofline_model_record"]
    assert doc["step"] == "4"
    assert {r["record_type"] for r in records} == {"PER_STEP"}
    assert all(r["step_num"] == 4 for r in records)
    program = records[0]
    ops = [r for r in records if r["include_infeed_outfeed"] and r["hlo_name"] != "Program"]
    assert len(ops) >= 30
    assert sum(float(r.get("flops_v2", 0)) for r in ops) == pytest.approx(
        float(program["flops_v2"]), rel=1e-9
    )
    stats = analyze_file(path)
    assert program["total_time_in_us"] == pytest.approx(select(stats, 4).db.total_time_ps / 1e6)
    wasted = sorted(doc["ops"], key=lambda o: o["wasted_time_rank"])
    assert [o["wasted_time_rank"] for o in wasted] == list(range(1, len(wasted) + 1))
    assert wasted[0]["wasted_time_us"] >= wasted[-1]["wasted_time_us"]


def test_average_step_ops_are_per_step_values(shared_data):
    path = _path(shared_data, "jax_mlp")
    doc = json.loads(
        run_cli("export", path, "--format", "json", "--step", "average", check=True).stdout
    )
    records = doc["database"]["roofline_model_record"]
    assert {r["record_type"] for r in records} == {"AVERAGE_STEP"}
    stats = analyze_file(path)
    per_step = [float(s.db.flops.sum()) for s in stats.complete_steps]
    assert float(records[0]["flops_v2"]) == pytest.approx(np.mean(per_step), rel=1e-6)


def test_datatable_keeps_xprofs_shape_with_program_rows_per_step(shared_data):
    table = json.loads(run_cli("export", _path(shared_data, "jax_matmul"), check=True).stdout)[0]
    steps = [r["c"][0]["v"] for r in table["rows"] if r["c"][34]["v"]]
    assert steps[0] == "Total" and steps[-11:] == ["Average"] + [str(i) for i in range(10)]
    programs = [r for r in table["rows"] if r["c"][0]["v"] not in ("Total",)]
    assert all(r["c"][3]["v"] == "Program" for r in programs)


def test_bad_step_values(shared_data):
    path = _path(shared_data, "jax_mlp")
    proc = run_cli("export", path, "--format", "json", "--step", "42")
    assert proc.returncode == 2 and "no step 42 in this profile (steps: 0, 1, 2" in proc.stderr
    proc = run_cli("export", path, "--format", "json", "--step", "first")
    assert (
        proc.returncode == 2 and "step must be 'total', 'average' or a step number" in proc.stderr
    )
    proc = run_cli("export", path, "--step", "3")
    assert proc.returncode == 2 and "--step selects records of the json format" in proc.stderr
