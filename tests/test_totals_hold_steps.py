"""A Total is never shorter than the complete steps inside it, on every shared profile.

Steps are widened to their host spans (or their kernels'); Total is the devices' spans
widened the same way, and a step whose work ran into the next step's span hands that time
on, so steps never overlap. The oracle is the arithmetic of the database's own records.
"""

from __future__ import annotations

import pytest

from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.xspace.discovery import PROFILE_SUFFIX


def _profiles(shared_data):
    found = sorted(shared_data.glob(f"**/*{PROFILE_SUFFIX}"))
    found += sorted(shared_data.glob("**/*.pt.trace.json*"))
    return [p for p in found if "CORRUPT" not in p.name]


def test_every_shared_total_holds_its_complete_steps(shared_data):
    profiles = _profiles(shared_data)
    assert len(profiles) >= 15
    stepped = 0
    for path in profiles:
        stats = analyze_file(path)
        steps = [s for s in stats.steps if s.complete]
        stepped += bool(steps)
        total_ps = stats.all_db.total_time_ps
        assert total_ps >= sum(s.db.total_time_ps for s in steps), path
    assert stepped >= 10


def test_keras_fit_steps_do_not_overlap(shared_data):
    (path,) = shared_data.glob(
        f"new-producers/tf_keras_fit/train/plugins/profile/*/*{PROFILE_SUFFIX}"
    )
    stats = analyze_file(path)
    assert [s.step_num for s in stats.steps] == [1, 2, 3, 4]
    total_us = stats.all_db.total_time_ps / 1e6
    steps_us = sum(s.db.total_time_ps for s in stats.steps) / 1e6
    assert steps_us <= total_us
    # One CPU device: the steps' device time is at most their host window.
    assert total_us == pytest.approx(629_436.664, abs=0.01)
