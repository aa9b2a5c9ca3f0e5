"""The op chart's first view in a real browser: drawn as a plain SVG (frontend/static_chart.js)
as soon as the data is here, before the chart library has run, then replaced by Plotly's
chart in the same element.

The chart library's answer is held back (Playwright's routing) so the first view can be
looked at; then it is let through and Plotly takes over. The dots' places are checked
against the API's records mapped onto Plotly's own axes (its plot area and ranges, read from
the page once it has drawn), the dots of both views against each other, and the labels and
legend of the first view against Plotly's. Screenshots of both views at 1000, 1440 and
1920 px go to `test-artifacts/`.
"""

from __future__ import annotations

import math

import pytest
from test_frontend import (
    ARTIFACTS,
    SHARED_RUN,
    SHARED_SAMPLE,
    TRAIN,
    G,
    Session,
    api,
    browser_context,
    copy_profile,
    key,
    plottable,
    plugin_tensorboard,
    records,
)

from tb_roofline_plugin import demo

PLOTLY_ROUTE = "**/static/plotly.min.js*"
WIDTHS = (1000, 1440, 1920)

# The first view's marks, relative to the chart's element: [kind, key, x, y, width].
STATIC_POINTS = """() => {
  const chart = document.getElementById('op-chart');
  const svg = chart.querySelector('.chart-static svg');
  const c = chart.getBoundingClientRect();
  const s = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('.static-points path')].map((p) => {
    const [, x, y] = /translate\\(([-\\d.e]+),([-\\d.e]+)\\)/.exec(p.getAttribute('transform'));
    return [p.parentNode.dataset.kind, p.dataset.key || '', s.left - c.left + +x,
            s.top - c.top + +y, p.getBBox().width];
  });
}"""
# Plotly's points, the same way: each trace's meta.kind, its customdata, the point's centre.
PLOTLY_POINTS = """() => {
  const gd = document.getElementById('op-chart');
  const size = gd._fullLayout._size;
  const found = [];
  gd.querySelectorAll('.scatterlayer .trace').forEach((layer) => {
    const trace = layer.__data__[0].trace;
    const kind = (trace.meta || {}).kind;
    layer.querySelectorAll('path.point').forEach((p, i) => {
      const m = /translate\\(([-\\d.e]+),([-\\d.e]+)\\)/.exec(p.getAttribute('transform') || '');
      if (!m) return;
      const key = trace.customdata ? String(trace.customdata[i]) : '';
      found.push([kind, key, size.l + +m[1], size.t + +m[2], p.getBBox().width]);
    });
  });
  return found;
}"""
AXES = """() => { const gd = document.getElementById('op-chart'); const f = gd._fullLayout;
  return {l: f._size.l, t: f._size.t, w: f._size.w, h: f._size.h,
          x: f.xaxis.range, y: f.yaxis.range}; }"""
STATIC_TEXT = """() => {
  const svg = document.querySelector('#op-chart .chart-static svg');
  const text = (n) => [...n.querySelectorAll(':scope > text')].map((t) => t.textContent);
  return {
    labels: [...svg.querySelectorAll('.static-annotations text')].map((t) => t.textContent),
    legend: text(svg.querySelector('.static-legend') || svg),
    roofs: svg.querySelectorAll('.static-line[data-kind=roof]').length,
    ceilings: svg.querySelectorAll('.static-line[data-kind=ceiling]').length,
  };
}"""
PLOTLY_TEXT = """() => {
  const gd = document.getElementById('op-chart');
  const plain = (html) => { const d = document.createElement('div');
    d.innerHTML = String(html).replace(/<br\\s*\\/?>/gi, ''); return d.textContent; };
  return {
    labels: (gd.layout.annotations || []).map((a) => plain(a.text)).filter(Boolean),
    legend: [...gd.querySelectorAll('.legend .legendtext, .legend .legendgrouptitle text')]
      .map((t) => t.textContent),
    roofs: gd.data.filter((t) => t.meta && t.meta.kind === 'roof').length,
    ceilings: gd.data.filter((t) => t.meta && t.meta.kind === 'ceiling').length,
  };
}"""
READY = "() => document.getElementById('model-view').dataset.state === 'ready'"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("first_view_logdir")
    demo.write_demo_logdir(logdir)
    if SHARED_SAMPLE.is_file():
        copy_profile(logdir, SHARED_RUN, SHARED_SAMPLE)
    with plugin_tensorboard(logdir) as base:
        yield base


def expected_px(record: dict, axes: dict) -> tuple[float, float]:
    """Where a record's dot belongs on Plotly's axes (log10 ranges, plot area in px)."""
    x0, x1 = axes["x"]
    y0, y1 = axes["y"]
    x = record["bottleneck_operational_intensity"]
    y = record["measured_flop_rate"] * G
    return (
        axes["l"] + (math.log10(x) - x0) * axes["w"] / (x1 - x0),
        axes["t"] + (y1 - math.log10(y)) * axes["h"] / (y1 - y0),
    )


def first_view_then_plotly(server: str, run: str, host: str, width: int, name: str) -> dict:
    """Opens the tab on (run, host, total) with the chart library held back; returns what
    the first view and then Plotly's chart showed, screenshots taken."""
    with browser_context(width, 1000) as context:
        session = Session(context, server)
        held = []

        def hold(route) -> None:
            held.append(route)

        session.page.route(PLOTLY_ROUTE, hold)
        frame = session.open({"run": run, "host": host, "tool": "model", "step": "total"})
        frame.wait_for_selector("#op-chart .chart-static svg .static-points")
        frame.wait_for_function("() => window.__roofline.opChartFirstPaintMs > 0")
        first = {
            "points": frame.evaluate(STATIC_POINTS),
            "text": frame.evaluate(STATIC_TEXT),
            "marks": frame.evaluate("({...window.__roofline})"),
            "state": frame.evaluate("document.getElementById('model-view').dataset.state"),
            "plotly": frame.evaluate("Boolean(window.Plotly)"),
        }
        ARTIFACTS.mkdir(exist_ok=True)
        frame.locator("#op-chart").screenshot(path=str(ARTIFACTS / f"{name}_static_{width}.png"))
        assert held, "the chart library was never asked for"
        for route in held:
            route.continue_()
        session.page.unroute(PLOTLY_ROUTE, hold)
        frame.wait_for_function(READY, timeout=120_000)
        frame.wait_for_function(
            "() => { const gd = document.getElementById('op-chart'); return gd.rooflineLabelKey; }"
        )
        session.page.wait_for_timeout(300)
        then = {
            "points": frame.evaluate(PLOTLY_POINTS),
            "text": frame.evaluate(PLOTLY_TEXT),
            "axes": frame.evaluate(AXES),
            "marks": frame.evaluate("({...window.__roofline})"),
            "static_left": frame.locator("#op-chart .chart-static").count(),
            "containers": frame.locator("#op-chart .plot-container").count(),
        }
        frame.locator("#op-chart").screenshot(path=str(ARTIFACTS / f"{name}_plotly_{width}.png"))
        session.assert_clean()
    return {"first": first, "then": then}


def by_kind(points: list, kind: str) -> dict:
    return {p[1] or str(i): p for i, p in enumerate(q for q in points if q[0] == kind)}


def check_views(seen: dict, ops: list, program: dict) -> None:
    first, then = seen["first"], seen["then"]
    # The first view came before the chart library had run, and was its own paint.
    assert first["plotly"] is False and first["state"] != "ready"
    marks = first["marks"]
    assert marks["opChartFirstPaintMs"] > marks["dataLoadedMs"] > 0
    assert "opChartPlotlyFirstPaintMs" not in marks
    assert then["marks"]["opChartPlotlyFirstPaintMs"] > marks["opChartFirstPaintMs"]
    assert then["marks"]["opChartFirstPaintMs"] == marks["opChartFirstPaintMs"]
    # Takeover: one chart, Plotly's.
    assert then["static_left"] == 0 and then["containers"] == 1
    # The same dots: one per plottable op (by key) and the Program, where the records say.
    placed = [r for r in ops if plottable(r)]
    static_ops, plotly_ops = by_kind(first["points"], "ops"), by_kind(then["points"], "ops")
    assert set(static_ops) == {key(r) for r in placed} == set(plotly_ops)
    for r in placed:
        want = expected_px(r, then["axes"])
        for view in (static_ops, plotly_ops):
            x, y = view[key(r)][2:4]
            assert abs(x - want[0]) <= 1.5 and abs(y - want[1]) <= 1.5, (key(r), x, y, want)
        # The same size (dot area ∝ self time), within a pixel.
        assert abs(static_ops[key(r)][4] - plotly_ops[key(r)][4]) <= 1.0
    for kind in ("program", "ridge"):
        a, b = by_kind(first["points"], kind), by_kind(then["points"], kind)
        assert len(a) == len(b) >= 1
        for pa, pb in zip(a.values(), b.values()):
            assert abs(pa[2] - pb[2]) <= 1.5 and abs(pa[3] - pb[3]) <= 1.5
    (star,) = by_kind(first["points"], "program").values()
    want = expected_px(program, then["axes"])
    assert abs(star[2] - want[0]) <= 1.5 and abs(star[3] - want[1]) <= 1.5
    # The same roofs, ceilings, labels on the chart and legend entries.
    assert first["text"]["roofs"] == then["text"]["roofs"] >= 1
    assert first["text"]["ceilings"] == then["text"]["ceilings"] >= 1
    assert sorted(first["text"]["labels"]) == sorted(then["text"]["labels"])
    assert any("ridge" in text for text in first["text"]["labels"])
    assert sorted(first["text"]["legend"]) == sorted(then["text"]["legend"])


@pytest.mark.parametrize("width", WIDTHS)
def test_first_view_of_the_demo_training_profile_matches_plotlys_chart(server, width):
    """A TPU training profile with several categories: every dot of the first view where
    Plotly then draws it, the same labels and legend, at each width."""
    data = api(server, "data", run=TRAIN, host="host0", format="json", step="total")
    program, ops = records(data)
    seen = first_view_then_plotly(server, TRAIN, "host0", width, "first_view_train")
    check_views(seen, ops, program)


@pytest.mark.skipif(not SHARED_SAMPLE.is_file(), reason=f"shared sample {SHARED_SAMPLE} not found")
def test_first_view_of_the_shared_tpu_sample_matches_plotlys_chart(server):
    host = SHARED_SAMPLE.name.removesuffix(".xplane.pb")
    data = api(server, "data", run=SHARED_RUN, host=host, format="json", step="total")
    program, ops = records(data)
    seen = first_view_then_plotly(server, SHARED_RUN, host, 1440, "first_view_tpu_sample")
    check_views(seen, ops, program)


# In every frame: once the op chart's first view is on the page (its paint not yet awaited),
# another host is chosen in the same task, as a quick user would.
SWITCH_HOST_AT_FIRST_VIEW = """(() => {
  new MutationObserver((_, observer) => {
    if (!document.querySelector('#op-chart > .chart-static')) return;
    observer.disconnect();
    const select = document.getElementById('host-select');
    select.value = 'host1';
    select.dispatchEvent(new Event('change', {bubbles: true}));
    window.__switchedAtFirstView = true;
  }).observe(document, {childList: true, subtree: true});
})();"""


def test_another_host_chosen_while_the_first_view_paints_is_drawn_without_an_error(server):
    """The first view of host0 replaced before its paint was awaited: its drawing stops (no
    error from a chart that is gone) and host1's view is the one drawn, and said ready."""
    with browser_context(1440, 900) as context:
        session = Session(context, server)
        session.page.add_init_script(SWITCH_HOST_AT_FIRST_VIEW)
        frame = session.open({"run": TRAIN, "host": "host0", "tool": "model", "step": "total"})
        frame.wait_for_function("() => window.__switchedAtFirstView === true")
        frame.wait_for_function(
            "() => { const v = document.getElementById('model-view');"
            " return v.dataset.state === 'ready' && JSON.parse(v.dataset.view).host === 'host1'; }",
            timeout=120_000,
        )
        assert frame.locator("#host-select").input_value() == "host1"
        assert frame.locator("#op-chart .plot-container").count() == 1
        assert frame.locator("#op-chart .chart-static").count() == 0
        session.assert_clean()
