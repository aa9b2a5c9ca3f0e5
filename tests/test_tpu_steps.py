"""A TPU host's steps: the numbers every core has, each core's window of each (a number a core
repeats: its last), and which of them the profile window cut."""

from __future__ import annotations

import numpy as np
import pytest

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace
from tb_roofline_plugin.platforms import tpu
from tb_roofline_plugin.platforms.analysis import analyze_bytes
from tb_roofline_plugin.platforms.host_steps import StepSpans, no_steps


def _steps(numbers, begins, length=90) -> StepSpans:
    begin = np.array(begins, np.int64)
    return StepSpans(np.array(numbers, np.int64), begin, begin + length)


def test_windows_are_of_the_numbers_every_core_has_a_repeated_one_at_its_last():
    first = _steps([5, 6, 7, 6], [0, 100, 200, 300])  # 6 twice: its window is [300, 390)
    second = _steps([8, 7, 6], [1200, 1100, 1000])  # 5 missing, 8 its own
    numbers, windows = tpu._core_windows([first, second, no_steps()])
    assert numbers.tolist() == [6, 7]
    assert [w[0].tolist() for w in windows[:2]] == [[300, 200], [1000, 1100]]
    assert [w[1].tolist() for w in windows[:2]] == [[390, 290], [1090, 1190]]
    assert windows[2] is None


def test_no_core_with_steps_has_no_windows():
    numbers, windows = tpu._core_windows([no_steps(), no_steps()])
    assert numbers.tolist() == [] and windows == [None, None]


def _renumbered(space, numbers: list[int]):
    """``space`` with each core's Steps events renumbered (their step_num stats)."""
    for plane in space.planes:
        if not plane.name.startswith("/device:TPU:"):
            continue
        (line,) = [ln for ln in plane.lines if ln.name == "Steps"]
        step_num = next(k for k, m in plane.stat_metadata.items() if m.name == "step_num")
        for event, number in zip(line.events, numbers):
            (stat,) = [s for s in event.stats if s.metadata_id == step_num]
            stat.int64_value = number
    return space


@pytest.mark.parametrize("repeated", [False, True])
def test_a_cut_first_step_is_incomplete_unless_its_number_is_taken_later(repeated):
    # The first step starts with the first op event on each core: the profile window cut it.
    # Numbered 0, 1, 2, 3, 0, step 0 is the fifth step (a number's last), which is whole.
    space = tpu_xspace(TpuSpec(steps=5, ops_per_step=12, cores=2, incomplete_first_step=True))
    numbers = [0, 1, 2, 3, 0] if repeated else [0, 1, 2, 3, 4]
    data = _renumbered(space, numbers).SerializeToString()
    stats = analyze_bytes(data, "cut.xplane.pb")
    assert [s.step_num for s in stats.steps] == sorted(set(numbers))
    complete = {s.step_num: s.complete for s in stats.steps}
    assert complete == {n: repeated or n != 0 for n in sorted(set(numbers))}
    steps = {p.name: [e for ln in p.lines if ln.name == "Steps" for e in ln.events]
             for p in space.planes if p.name.startswith("/device:TPU:")}  # fmt: skip
    at = 4 if repeated else 0  # the event step 0 is: its duration, the longest core's
    longest = max(events[at].duration_ps for events in steps.values())
    assert next(s.duration_ps for s in stats.steps if s.step_num == 0) == longest
