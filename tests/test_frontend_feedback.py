"""The tab's feedback while a profile converts, in a real browser against a real
``tensorboard`` whose conversions are slow on purpose (``tests/slow_tensorboard.py``: each
stage and each rendered answer waits ``STAGE_S``), so a small demo profile loads as slowly
as a big one: the sidebar lists the runs at once, the view says the time so far and the
server's stage, and a step change keeps the current view, dimmed, until the next is drawn.
Also: a stray ``*.xplane.pb`` is named under the run list, and a long run name shows in
full on hover.
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

import pytest
from test_frontend import Session, api, browser_context, plugin_tensorboard, wait_view

from tb_roofline_plugin.demo.logdir import write_demo_logdir
from tb_roofline_plugin.serve.progress import STAGES

STAGE_S = 2.5  # as tests/slow_tensorboard.py is told (TB_ROOFLINE_TEST_STAGE_S)
TRAIN = "train_v5p/2026_01_01_00_00_00"
LONG = "an_experiment_whose_name_is_much_longer_than_the_sidebar_is_wide_for_sure/run_2026_01_01"
STRAY = "loose_host.xplane.pb"
SLOW = Path(__file__).with_name("slow_tensorboard.py")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("feedback_logdir")
    write_demo_logdir(logdir, runs=("train_v5p",))
    host0 = logdir / TRAIN.replace("/", "/plugins/profile/") / "host0.xplane.pb"
    prefix, run = LONG.split("/")
    long = logdir / prefix / "plugins/profile" / run
    long.mkdir(parents=True)
    shutil.copyfile(host0, long / "host0.xplane.pb")
    shutil.copyfile(host0, logdir / STRAY)  # outside plugins/profile/<run>/: not read
    with plugin_tensorboard(
        logdir,
        command=(sys.executable, str(SLOW)),
        env={"TB_ROOFLINE_TEST_STAGE_S": str(STAGE_S)},
    ) as base:
        yield base


@pytest.fixture(scope="module")
def context():
    with browser_context() as context:
        yield context


PROBE = """() => {
  const view = document.getElementById('model-view');
  const run = document.getElementById('run-select');
  const line = document.querySelector('#model-view .progress-line');
  const status = document.querySelector('#model-view .status.with-progress');
  return {
    state: view ? view.dataset.state || '' : '',
    runs: run ? [...run.options].map((o) => o.value) : [],
    line: line ? line.textContent : '',
    stage: status ? status.dataset.stage || '' : '',
    stepsLoading: Boolean(document.querySelector('[data-note=steps-loading]')),
  };
}"""


def _watch(frame, until_ready_s: float = 60) -> list[dict]:
    """What the page shows every 100 ms until the model view is ready."""
    seen = []
    deadline = time.monotonic() + until_ready_s
    while time.monotonic() < deadline:
        probe = frame.evaluate(PROBE)
        probe["t"] = time.monotonic()
        seen.append(probe)
        if probe["state"] == "ready":
            return seen
        frame.wait_for_timeout(100)
    raise AssertionError(f"the view never got ready: {seen[-1]}")


def test_the_sidebar_lists_runs_and_the_view_counts_time_while_a_profile_converts(context, server):
    runs = api(server, "runs")
    assert TRAIN in runs and LONG in runs and len(runs) == 3
    session = Session(context, server)
    try:
        frame = session.open({"run": TRAIN, "host": "host0", "tool": "model"})
        seen = _watch(frame)
        loading = [p for p in seen if p["state"] == "loading"]
        # The runs were listed while the profile was still converting (2 stages of 1.5 s).
        listed = [p for p in loading if sorted(p["runs"]) == sorted(runs)]
        assert listed, seen[:5]
        assert any(p["stepsLoading"] for p in listed)  # the step picker said it waits
        assert loading[-1]["t"] - listed[0]["t"] >= 2 * STAGE_S - 0.5
        # The time so far, rising, and the server's stages in words.
        times = [float(m.group(1)) for p in loading if (m := re.match(r"([\d.]+) s", p["line"]))]
        assert len(times) >= 5 and times == sorted(times) and times[-1] >= 2 * STAGE_S
        # The server's stages in words. Which ones a poll (once a second) lands in depends on
        # the machine's load (the first second or two the page compiles the chart library
        # and draws nothing): at least one, each in its words, in the server's order.
        order = list(STAGES)
        stages = [p["stage"] for p in loading if p["stage"]]
        assert stages and set(stages) <= set(order), stages
        assert [order.index(s) for s in stages] == sorted(order.index(s) for s in stages)
        words = " ".join(p["line"] for p in loading)
        assert re.search(
            r"\d+(\.\d)? s · (reading|analysing|combining|rendering) [a-z ()]+…", words
        )
        if "analysing" in stages:
            assert "analysing its ops and steps…" in words
        if "rendering" in stages:
            assert "rendering the roofline…" in words
        wait_view(frame, run=TRAIN, host="host0", step="total")
        assert not frame.locator("#model-view .progress-line").count()
        assert not frame.locator("[data-note=steps-loading]").count()
        session.assert_clean()
    finally:
        session.page.close()


def test_a_step_change_keeps_the_view_dimmed_until_the_next_one_is_drawn(context, server):
    session = Session(context, server)
    try:
        frame = session.open({"run": TRAIN, "host": "host0", "tool": "model"})
        wait_view(frame, run=TRAIN, host="host0", step="total")
        frame.select_option("#step-select", "3")
        stale = frame.evaluate(
            """() => { const v = document.getElementById('model-view');
            return {state: v.dataset.state, stale: v.classList.contains('stale'),
                    busy: v.getAttribute('aria-busy'),
                    chart: Boolean(document.getElementById('op-chart')),
                    title: (document.querySelector('.selection-label') || {}).textContent,
                    status: (v.querySelector(':scope > .stale-status') || {}).textContent}; }"""
        )
        # The rendered answer of step 3 takes 1.5 s: meanwhile the Total view stays, dimmed.
        assert stale["state"] == "loading" and stale["stale"] and stale["busy"] == "true"
        assert stale["chart"] and stale["title"].endswith("· total")
        assert stale["status"].startswith(f"Loading {TRAIN} · host0 · step 3…")
        frame.wait_for_timeout(400)  # the dimming fades in (0.15 s)
        opacity = frame.evaluate(
            "getComputedStyle(document.querySelector('#model-view .view-header')).opacity"
        )
        assert float(opacity) < 0.6
        assert frame.evaluate("document.getElementById('model-view').dataset.state") == "loading"
        blank = frame.evaluate("() => document.getElementById('model-view').children.length")
        assert blank > 2  # never a blank view
        wait_view(frame, run=TRAIN, host="host0", step="3")
        after = frame.evaluate(
            """() => { const v = document.getElementById('model-view');
            return [v.classList.contains('stale'), v.getAttribute('aria-busy'),
                    v.querySelectorAll('.stale-status').length,
                    document.querySelector('.selection-label').textContent]; }"""
        )
        assert after == [False, None, 0, f"{TRAIN} · host0 · step 3"]
        session.assert_clean()
    finally:
        session.page.close()


def test_a_stray_profile_is_named_under_the_runs_and_long_names_show_in_full(context, server):
    notes = api(server, "logdir_notes")["notes"]
    assert len(notes) == 1 and f"({STRAY})" in notes[0]
    session = Session(context, server)
    try:
        frame = session.open({"run": LONG, "host": "host0", "tool": "model"})
        frame.wait_for_selector("[data-note=logdir] details")
        note = frame.locator("[data-note=logdir] details")
        assert note.locator("summary").text_content() == notes[0][: notes[0].index("): ") + 1]
        assert note.get_attribute("title") == notes[0]
        frame.click("[data-note=logdir] summary")
        assert "plugins/profile/run1/<host>.xplane.pb" in note.locator("p").text_content()
        # The long run name: cut by the select, whole in its title and its option's.
        select = frame.locator("#run-select")
        frame.wait_for_function(f"() => document.getElementById('run-select').value === {LONG!r}")
        assert select.get_attribute("title") == LONG
        titles = frame.evaluate(
            "[...document.querySelectorAll('#run-select option')].map((o) => o.title)"
        )
        assert LONG in titles and all(titles)
        clipped = frame.evaluate(
            "(() => { const s = document.getElementById('run-select');"
            " return s.scrollWidth > s.clientWidth || s.clientWidth < 8 * s.value.length; })()"
        )
        assert clipped  # the name does not fit: the title is what shows it
        wait_view(frame, run=LONG, host="host0", step="total")
        frame.select_option("#run-select", TRAIN)
        assert frame.locator("#run-select").get_attribute("title") == TRAIN
        session.assert_clean()
    finally:
        session.page.close()
