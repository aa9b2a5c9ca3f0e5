"""The roofline tab at 1,500 steps, in a real browser against a real ``tensorboard``.

Two generated profiles (`tb_roofline_plugin.demo`): a one-core TPU training run with 1,500
steps, and a one-GPU run with 1,500 host step markers whose kernels were all launched outside
the steps (the step markers moved past the last launch). The tab must stay a page, not a wall
of text: a step picker that reaches any step (typed, previous / next, slowest / fastest), a
program table a page at a time, a program chart thinned with the selected step always drawn,
and one line, not 1,500 zero rows, when no step holds an op.
"""

from __future__ import annotations

import json
import math

import pytest
from test_frontend import TRACES, Session, api, browser_context, plugin_tensorboard, wait_view

from tb_roofline_plugin.demo import GpuSpec, TpuSpec, gpu_xspace, tpu_xspace, write_profile

STEPS = 1500
SCALE_RUN, SCALE_HOST = "tpu_1500/run1", "h"
EMPTY_STEPS_RUN, EMPTY_STEPS_HOST = "gpu_outside_steps/run1", "g"
PAGE = 50  # rows of steps per page of the program table
G = 1e9


def _steps_after_every_launch(space):
    """Moves the host step markers (`train` events of `python`) past everything else on
    their line, so no kernel launch falls inside a step."""
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        train = {m.name: k for k, m in plane.event_metadata.items()}["train"]
        for line in plane.lines:
            if line.name != "python":
                continue
            end = max(e.offset_ps + e.duration_ps for e in line.events)
            roots = [e for e in line.events if e.metadata_id == train]
            shift = end - min(e.offset_ps for e in roots) + 10**9
            for event in roots:
                event.offset_ps += shift
            line.duration_ps = max(e.offset_ps + e.duration_ps for e in line.events)
    return space


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("scale_logdir")
    spec = TpuSpec(steps=STEPS, cores=1, ops_per_step=12, host=SCALE_HOST, host_lines=0)
    write_profile(logdir / "tpu_1500/plugins/profile/run1/h.xplane.pb", tpu_xspace(spec))
    outside = _steps_after_every_launch(gpu_xspace(GpuSpec(steps=STEPS, gpus=1, host="g")))
    write_profile(logdir / "gpu_outside_steps/plugins/profile/run1/g.xplane.pb", outside)
    with plugin_tensorboard(logdir) as base:
        yield base


@pytest.fixture(scope="module")
def context():
    with browser_context() as context:
        yield context


def _texts(frame) -> list[str]:
    return frame.evaluate(
        "[...document.querySelectorAll('.hint, .note, .messages li, .status')]"
        ".map((n) => n.textContent)"
    )


def _selected(frame) -> dict:
    return next(
        t
        for t in frame.evaluate(TRACES, "program-chart")
        if t["meta"]["kind"] == "program-selected"
    )


def _program(data: dict, step: int) -> dict:
    return next(
        r
        for r in data["database"]["roofline_model_record"]
        if r["hlo_name"] == "Program"
        and r["include_infeed_outfeed"]
        and r.get("record_type") == "PER_STEP"
        and r.get("step_num") == step
    )


def _shown_steps(frame) -> list[str]:
    return frame.evaluate(
        "[...document.querySelectorAll('#step-table tbody tr[data-step]')]"
        ".map((tr) => tr.dataset.step).filter((s) => s !== 'total' && s !== 'average')"
    )


def test_1500_steps_are_a_page_not_a_wall(context, server):
    session = Session(context, server)
    try:
        frame = session.open({"run": SCALE_RUN, "host": SCALE_HOST, "tool": "model"})
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step="total")
        steps = api(server, "steps", run=SCALE_RUN, host=SCALE_HOST)["steps"]
        assert len(steps) == STEPS and all(s["holds_ops"] for s in steps)

        # No wall of text: every note a line or two, no step listed hundreds of times.
        body = frame.evaluate("document.body.innerText")
        assert len(body) < 20_000
        assert body.count("Step 1499") <= 1 and body.count("Step 700") <= 1
        texts = _texts(frame)
        assert texts and max(map(len, texts)) < 300
        # The step select holds Total, Average and one page of steps.
        options = frame.locator("#step-select option").all_text_contents()
        assert options[:3] == ["Total (whole profile)", "Average step", "Step 0 (incomplete)"]
        assert len(options) == 2 + PAGE

        # The program table: Total, Average and a page of steps, with page controls.
        assert _shown_steps(frame) == [str(n) for n in range(1, PAGE + 1)]  # step 0: no row
        pager = frame.locator("#step-pager .pager-text")
        assert pager.text_content() == "Steps 1–50 of 1,499"
        frame.click("#step-pager-next")
        assert pager.text_content() == "Steps 51–100 of 1,499"
        assert _shown_steps(frame) == [str(n) for n in range(51, 101)]
        frame.click("#step-pager-last")
        assert _shown_steps(frame) == [str(n) for n in range(1451, STEPS)]

        # The program chart: thinned to about 300 step points, Total ringed.
        program_points = sum(
            t["n"]
            for t in frame.evaluate(TRACES, "program-chart")
            if t["meta"].get("kind") == "program-points"
        )
        assert 250 < program_points < 320
        assert "steps on the chart" in frame.locator("[data-note=steps-thinned]").text_content()
        assert _selected(frame)["meta"]["step"] == "total"

        # Typing a step number reaches the last step.
        frame.fill("#step-select-input", "1499")
        frame.press("#step-select-input", "Enter")
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step="1499")
        total = api(server, "data", run=SCALE_RUN, host=SCALE_HOST, format="json")
        last = _program(total, 1499)
        ring = _selected(frame)
        assert ring["meta"]["step"] == "1499"
        assert math.isclose(ring["x"][0], last["bottleneck_operational_intensity"])
        assert math.isclose(ring["y"][0], last["measured_flop_rate"] * G)
        assert frame.locator("#step-select").input_value() == "1499"
        assert frame.locator("#step-table tr.selected th").text_content() == "Step 1499"
        assert "1499" in _shown_steps(frame) and len(_shown_steps(frame)) <= PAGE
        saved = json.loads(frame.evaluate("localStorage.getItem('tb-roofline.selection')"))
        assert saved["step"] == "1499"
        assert frame.locator("#step-select-next").is_disabled()

        # Previous / next, by keyboard.
        frame.focus("#step-select-prev")
        frame.press("#step-select-prev", "Enter")
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step="1498")
        assert frame.evaluate("document.activeElement.id") == "step-select-prev"
        frame.press("#step-select-next", "Enter")
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step="1499")

        # Slowest and fastest: among the complete steps, by the steps route's device_time_us
        # (the figure the program table shows for each step).
        complete = [s for s in steps if s["complete"]]
        slowest = min(complete, key=lambda s: (-s["device_time_us"], s["step_num"]))["step_num"]
        fastest = min(complete, key=lambda s: (s["device_time_us"], s["step_num"]))["step_num"]
        assert slowest != fastest
        frame.click("#step-select-slowest")
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step=str(slowest))
        assert _selected(frame)["meta"]["step"] == str(slowest)
        frame.click("#step-select-fastest")
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step=str(fastest))
        assert frame.locator("#step-select").input_value() == str(fastest)

        # A number that is no step says so, in a line, and changes nothing.
        frame.fill("#step-select-input", "5000")
        frame.press("#step-select-input", "Enter")
        message = frame.locator("#step-select-message").text_content()
        assert message.startswith("No step 5000") and "0–1,499" in message
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step=str(fastest))
        assert frame.locator("#step-select-input").get_attribute("aria-invalid") == "true"
        session.shot("scale_1500_steps", frame)
        session.assert_clean()
    finally:
        session.page.close()


def test_steps_that_hold_no_op_are_said_once_and_total_is_shown(context, server):
    session = Session(context, server)
    try:
        frame = session.open({"run": EMPTY_STEPS_RUN, "host": EMPTY_STEPS_HOST, "tool": "model"})
        wait_view(frame, run=EMPTY_STEPS_RUN, host=EMPTY_STEPS_HOST, step="total")
        steps = api(server, "steps", run=EMPTY_STEPS_RUN, host=EMPTY_STEPS_HOST)
        assert len(steps["steps"]) == STEPS and steps["has_step_markers"]
        assert not any(s["holds_ops"] for s in steps["steps"])
        data = api(server, "data", run=EMPTY_STEPS_RUN, host=EMPTY_STEPS_HOST, format="json")
        said = [n for n in data["notes"] if "holds an op" in n]
        assert said == [
            "None of the 1,500 steps (0–1,499) holds an op: every op ran outside the steps; "
            "only Total shows the ops."
        ]
        body = frame.evaluate("document.body.innerText")
        # Once in view, by the program chart; the server's note is in the folded device panel.
        assert body.count("holds an op") == 1
        assert "holds an op" in frame.locator("details.device .messages").text_content()
        assert len(body) < 20_000 and "Step 1499" not in body
        # Total only: in the picker, the program table and the program chart.
        options = frame.locator("#step-select option").all_text_contents()
        assert options == ["Total (whole profile)"]
        assert frame.locator("#step-select-input").count() == 0
        rows = frame.evaluate(
            "[...document.querySelectorAll('#step-table tbody tr')].map((tr) => tr.dataset.step)"
        )
        assert rows == ["total"]
        points = [
            t
            for t in frame.evaluate(TRACES, "program-chart")
            if t["meta"].get("kind") == "program-points"
        ]
        assert sum(t["n"] for t in points) == 1
        assert max(map(len, _texts(frame))) < 300
        session.shot("scale_steps_without_ops", frame)
        session.assert_clean()
    finally:
        session.page.close()


# Counts, from now on, Plotly's draws and relayouts by chart, and the step boxes the sidebar
# is drawn with (each drawing of the sidebar makes a new one).
COUNT_DRAWS = """() => {
  const frame = window.__counted = {react: {}, relayout: {}, stepBoxes: 0};
  for (const name of ['react', 'relayout']) {
    const original = window.Plotly[name];
    window.Plotly[name] = function (node, ...rest) {
      frame[name][node.id] = (frame[name][node.id] || 0) + 1;
      return original.call(this, node, ...rest);
    };
  }
  new MutationObserver((changes) => {
    for (const change of changes)
      for (const added of change.addedNodes)
        if (added.querySelector && (added.id === 'step-select-input'
            || added.querySelector('#step-select-input'))) frame.stepBoxes += 1;
  }).observe(document.querySelector('nav.sidebar'), {childList: true, subtree: true});
}"""


@pytest.mark.parametrize("width", (1000, 1440))
def test_a_step_typed_in_the_box_draws_each_chart_once(context, server, width):
    """Enter in the step box: one update (the box's change event as it goes asks for
    nothing), and the op and program charts each drawn once by Plotly: the legend as tall as
    Plotly drew it for the step before, the labels placed for the frame it draws, so no
    second draw or relayout (each ~0.1 s on a large profile)."""
    session = Session(context, server)
    session.page.set_viewport_size({"width": width, "height": 900})
    try:
        frame = session.open({"run": SCALE_RUN, "host": SCALE_HOST, "tool": "model"})
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step="total")
        for step in ("700", "701"):  # the first: the step charts' legends and frames seen
            frame.fill("#step-select-input", step)
            frame.press("#step-select-input", "Enter")
            wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step=step)
        frame.evaluate(COUNT_DRAWS)
        frame.fill("#step-select-input", "1200")
        frame.press("#step-select-input", "Enter")
        wait_view(frame, run=SCALE_RUN, host=SCALE_HOST, step="1200")
        frame.wait_for_timeout(300)  # a late relayout would land by now
        counted = frame.evaluate("window.__counted")
        assert counted == {
            "react": {"op-chart": 1, "program-chart": 1},
            "relayout": {},
            "stepBoxes": 1,
        }
        assert frame.locator("#step-select").input_value() == "1200"
        session.assert_clean()
    finally:
        session.page.close()
