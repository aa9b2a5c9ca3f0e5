"""A big profile stays in the server's cache, and a step's payload is made from it fast.

The cache bound counts what a converted result holds: each buffer once (two names of one
column, a broadcast zero column), the records' Python objects; measured against
tracemalloc. Steps made by ``table_steps`` carry their numbers, completeness and durations
as arrays, so the json's step list and "which steps hold ops" need no loop over objects.
"""

from __future__ import annotations

import gc
import json
import os
import tracemalloc

import numpy as np
import pytest

from tb_roofline_plugin.arrays import held_bytes
from tb_roofline_plugin.demo import GpuSpec, TpuSpec, gpu_xspace, tpu_xspace, write_profile
from tb_roofline_plugin.ops.op_stats import (
    StepList,
    shared_table,
    step_arrays,
    steps_holding_ops,
    table_steps,
)
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.render.export import render, step_dicts
from tb_roofline_plugin.serve import service as service_module
from tb_roofline_plugin.serve.service import Result, RooflineService


def test_held_bytes_counts_each_buffer_once():
    column = np.zeros(1000)  # 8,000 bytes
    view = column[10:20]
    zeros = np.broadcast_to(np.zeros(1)[0], (10**6,))  # a column of zeros: one float held
    assert held_bytes([column, view, column]) == 8000
    assert held_bytes([zeros]) == 8 and zeros.nbytes == 8 * 10**6
    assert held_bytes([column, np.ones(3, np.int32)]) == 8012


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    """A GPU profile of 3,000 steps (~6 MB)."""
    path = tmp_path_factory.mktemp("steps") / "host.xplane.pb"
    write_profile(path, gpu_xspace(GpuSpec(gpus=2, steps=3000, host="host")))
    return path


def test_a_results_size_is_the_memory_it_holds(profile):
    gc.collect()
    tracemalloc.start()
    try:
        result = Result(analyze_file(profile), [str(profile)])
        estimate = result.size_bytes()
        result.model  # noqa: B018  (made on first use)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(result.stats.steps) == 3000
    assert 0.8 * held < estimate < 1.3 * held, (estimate, held)
    assert 0.8 * held < result.size_bytes() < 1.3 * held


def test_step_lists_carry_their_steps_values(profile):
    steps = analyze_file(profile).steps
    made = step_arrays(steps)
    assert isinstance(steps, StepList) and made is steps
    assert made.numbers.tolist() == [s.step_num for s in steps]
    assert made.complete.tolist() == [s.complete for s in steps]
    assert made.durations.tolist() == [s.duration_ps for s in steps]
    table, index = shared_table(steps)
    assert table is steps[0].table and index.tolist() == [s.index for s in steps]
    # A slice is a plain list: read object by object, to the same answers.
    part = steps[5:50]
    assert step_arrays(part) is None and shared_table(part)[1].tolist() == list(range(5, 50))
    assert steps_holding_ops(part).tolist() == steps_holding_ops(steps)[5:50].tolist()
    assert step_dicts(part) == step_dicts(steps)[5:50]


def test_the_complete_steps_keep_their_arrays_and_places(tmp_path):
    path = tmp_path / "tpu.xplane.pb"
    write_profile(path, tpu_xspace(TpuSpec(cores=2, steps=12, ops_per_step=20)))
    stats = analyze_file(path)
    complete = stats.complete_steps
    assert [s.step_num for s in complete] == [s.step_num for s in stats.steps if s.complete]
    made = step_arrays(complete)
    assert made is not None and made.numbers.tolist() == [s.step_num for s in complete]
    table, index = shared_table(complete)
    assert table is stats.steps[0].table and index.tolist() == [s.index for s in complete]
    assert 0 < len(complete) < len(stats.steps)  # the demo's first step is cut
    assert isinstance(stats.steps, StepList)


def test_table_steps_of_hand_values_keep_them():
    steps = table_steps(None, [3, 9], [True, False], [10, 20])
    assert [(s.step_num, s.complete, s.duration_ps) for s in steps] == [
        (3, True, 10),
        (9, False, 20),
    ]
    assert steps.numbers.dtype == np.int64 and steps.positions.tolist() == [0, 1]


def test_walking_steps_of_a_profile_bigger_than_the_old_bound_converts_once(
    profile, tmp_path, monkeypatch
):
    """The old bound counted a result about 2.5 times over: a profile whose result holds
    less than the cache was converted again for every step."""
    run = tmp_path / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    os.symlink(profile, run / "host.xplane.pb")
    held = Result(analyze_file(profile), []).size_bytes()
    # A cache whose profile share (3/4) holds the result with a fifth to spare.
    service = RooflineService(str(tmp_path), cache_mb=1.2 * held / 0.75 / 1e6)
    converted = []
    original = service_module.convert_file
    monkeypatch.setattr(
        service_module, "convert_file", lambda *a, **k: converted.append(1) or original(*a, **k)
    )
    numbers = [s["step_num"] for s in service.steps("r", "host")["steps"]]
    stats = analyze_file(profile)
    for step in numbers[100:105]:
        served = json.loads(service.data("r", "host", None, "json", str(step)))
        exported = json.loads(render(stats, "json", ["x"], step))
        assert served["step"] == str(step) and served["database"] == exported["database"]
        assert served["steps"] == exported["steps"] and len(served["steps"]) == 3000
    assert len(converted) == 1
