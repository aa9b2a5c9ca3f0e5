"""The roofline tab's layout in a real browser: what the first screen shows, any width from
1000 px, a readable chart, fixed colours.

One TensorBoard serves the demo logdir (`demo.write_demo_logdir`) and, when the shared samples
are there, an AMD MI300X JAX profile (its peak 1,307,443 GFLOP/s and its bf16 1,307,400 are one
ceiling), an AMD MI250 PyTorch trace (bf16 = fp16 = int8, fp64 = fp32) and the real TPU
profile. Geometry is read from the page (bounding boxes, Plotly's plot area, the SVG text's
own rotated boxes) and checked here; colours against the same category in other views.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_frontend import (
    SHARED_RUN,
    SHARED_SAMPLE,
    TRACES,
    TRAIN,
    api,
    copy_profile,
    opened_tab,
    plugin_tensorboard,
    wait_view,
)

from tb_roofline_plugin import demo

SHARED = Path(__file__).resolve().parents[2] / "shared/data"
MI300X = SHARED / "tracelens/jax08_gemm/tw003.xplane.pb"
MI250 = SHARED / "pytorch/mi250_minitoy/mi250_minitoy_train.pt.trace.json.gz"
MI300X_RUN, MI250_RUN = "amd_mi300x/run1", "torch_mi250"
INFERENCE = "inference_v6e/2026_01_01_00_00_00"
TRAIN_GPU = "train_gpu/2026_01_01_00_00_00"
TORCH = "torch_gpu"
G = 1e9


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("layout_logdir")
    demo.write_demo_logdir(logdir)
    for run, profile in ((MI300X_RUN, MI300X), (MI250_RUN, MI250), (SHARED_RUN, SHARED_SAMPLE)):
        if profile.is_file():
            copy_profile(logdir, run, profile)
    with plugin_tensorboard(logdir) as base:
        yield base


@pytest.fixture(scope="module")
def tab(server):
    with opened_tab(server, width=1440) as session:
        yield session


@pytest.fixture
def session(tab):
    tab.reset()
    tab.page.set_viewport_size({"width": 1440, "height": 900})
    tab.page.evaluate("document.body.classList.remove('dark-mode')")
    return tab


def chart_drawn(frame, chart="op-chart"):
    """Waits until the chart is drawn with its labels written for the plot as drawn."""
    frame.wait_for_function(
        """(id) => { const gd = document.getElementById(id);
          return gd && gd._fullLayout && gd._fullLayout._size && gd.rooflineLabelKey; }""",
        arg=chart,
    )
    frame.page.wait_for_timeout(300)


BOX = """(selector) => { const n = document.querySelector(selector);
  if (!n) return null; const b = n.getBoundingClientRect();
  return {left: b.left, top: b.top, right: b.right, bottom: b.bottom,
          width: b.width, height: b.height}; }"""

PLOT_AREA = """(id) => { const gd = document.getElementById(id); const s = gd._fullLayout._size;
  const b = gd.getBoundingClientRect();
  return {left: b.left + s.l, top: b.top + s.t, right: b.left + s.l + s.w,
          bottom: b.top + s.t + s.h, width: s.w, chart: b.width}; }"""

# Every label written on a chart, as the four corners of its text's own (rotated) box in page
# pixels: the SVG text's box in its coordinates, through its transform to the screen.
LABEL_CORNERS = """(id) => [...document.querySelectorAll(`#${id} .annotation`)]
  .map((a) => { const t = a.querySelector('text.annotation-text');
    if (!t || !t.textContent.trim()) return null;
    const b = t.getBBox(); const m = t.getScreenCTM();
    const at = (x, y) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f];
    return {text: t.textContent, corners: [at(b.x, b.y), at(b.x + b.width, b.y),
      at(b.x + b.width, b.y + b.height), at(b.x, b.y + b.height)]}; })
  .filter(Boolean)"""


def _separated(a, b) -> bool:
    """True when two convex polygons do not overlap (a separating axis exists)."""
    for poly in (a, b):
        for (x1, y1), (x2, y2) in zip(poly, poly[1:] + poly[:1]):
            axis = (y1 - y2, x2 - x1)
            pa = [x * axis[0] + y * axis[1] for x, y in a]
            pb = [x * axis[0] + y * axis[1] for x, y in b]
            if max(pa) <= min(pb) + 0.5 or max(pb) <= min(pa) + 0.5:
                return True
    return False


def assert_labels_apart(frame, chart="op-chart"):
    labels = frame.evaluate(LABEL_CORNERS, chart)
    assert labels
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            assert _separated(a["corners"], b["corners"]), (a["text"], b["text"])
    return labels


def inside(inner: dict, outer: dict, slack: float = 1) -> bool:
    return (
        inner["left"] >= outer["left"] - slack
        and inner["right"] <= outer["right"] + slack
        and inner["top"] >= outer["top"] - slack
        and inner["bottom"] <= outer["bottom"] + slack
    )


def disjoint(a: dict, b: dict) -> bool:
    return (
        a["right"] <= b["left"]
        or b["right"] <= a["left"]
        or a["bottom"] <= b["top"]
        or b["bottom"] <= a["top"]
    )


# ----------------------------------------------------------------------------- first screen


@pytest.mark.parametrize(("run", "host"), [(TRAIN, "host0"), (TORCH, "worker0")])
def test_at_1440x900_the_answer_and_the_op_chart_are_in_the_first_screen(
    session, server, run, host
):
    frame = session.show(run, host)
    chart_drawn(frame)
    frame.evaluate("scrollTo(0, 0)")  # the page as it opens (show() clicked the filters' reset)
    viewport = {"left": 0, "top": 0, "right": 1440, "bottom": frame.evaluate("innerHeight")}
    advice = api(server, "data", run=run, host=host, format="json")["advice"]
    top_op = next(a for a in advice if a["kind"] == "op")
    first = frame.locator("section.advice li.advice-op").first
    assert first.locator("button").text_content() == top_op["hlo_name"]
    line = frame.evaluate(BOX, "section.advice li.advice-op")
    chart = frame.evaluate(BOX, "#op-chart")
    assert inside(line, viewport), line
    assert inside(chart, viewport), (chart, viewport)  # the whole chart, legend and axes
    # Above the chart: the answer and the device's one line; the table comes after it.
    order = frame.evaluate(
        """() => ['section.advice', 'details.device', '#op-chart', '#op-table']
          .map((s) => document.querySelector(s).getBoundingClientRect().top)"""
    )
    assert order == sorted(order)
    session.assert_clean()


def test_the_device_panel_is_one_line_that_opens_on_click(session, server):
    frame = session.show(TRAIN, "host0")
    data = api(server, "data", run=TRAIN, host="host0", format="json")
    device = data["device"]
    panel = frame.locator("details.device")
    assert panel.evaluate("(d) => d.open") is False
    summary = frame.evaluate(BOX, "details.device summary")
    line_px = frame.evaluate(
        "parseFloat(getComputedStyle(document.querySelector('details.device summary')).lineHeight)"
    )
    assert summary["height"] <= 1.5 * line_px  # one line, whatever the width
    text = frame.locator("details.device summary").text_content()
    assert device["device_type"] in text and "4 TensorCores" in text
    assert "peaks 459 TFLOP/s, HBM 2.765 TB/s" in text  # the peaks the table uses
    warning = data["database"]["diagnostics"]["warnings"][0]
    assert frame.locator("details.device summary .first-warning").get_attribute("title") == (
        warning
    )
    assert not frame.locator("table.peaks").is_visible()
    panel_box = frame.evaluate(BOX, "details.device")
    assert panel_box["height"] < 45
    frame.click("details.device summary")
    assert panel.evaluate("(d) => d.open") is True
    assert frame.locator("table.peaks").is_visible()
    assert frame.locator("details.device .messages li.warning").first.is_visible()
    assert frame.evaluate(BOX, "details.device")["height"] > 150
    frame.click("details.device summary")  # and closes again
    assert panel.evaluate("(d) => d.open") is False
    session.assert_clean()


# ----------------------------------------------------------------------------- any width


@pytest.mark.parametrize("run", [TRAIN, MI300X_RUN])
def test_at_1000_px_the_plot_keeps_60_percent_and_nothing_overlaps(session, server, run):
    if run == MI300X_RUN and not MI300X.is_file():
        pytest.skip(f"shared sample {MI300X} not found")
    host = api(server, "hosts", run=run)[0]
    session.page.set_viewport_size({"width": 1000, "height": 800})
    frame = session.show(run, host)
    chart_drawn(frame)
    plot = frame.evaluate(PLOT_AREA, "op-chart")
    content = frame.evaluate(BOX, "#op-chart")
    panel = frame.evaluate(BOX, ".op-chart-panel")
    assert content["right"] <= panel["right"]  # the chart fits its panel: no sideways scroll
    assert plot["width"] >= 0.6 * content["width"], (plot, content)
    legend = frame.evaluate(BOX, "#op-chart .legend")
    assert legend and disjoint(legend, plot), (legend, plot)
    assert inside(legend, content)
    labels = assert_labels_apart(frame)
    texts = [label["text"] for label in labels]
    assert any(t.startswith("memory-bound") for t in texts) and "compute-bound" in texts
    for label in labels:  # every label inside the plot area
        for x, y in label["corners"]:
            assert plot["left"] - 1 <= x <= plot["right"] + 1, label
            assert plot["top"] - 1 <= y <= plot["bottom"] + 1, label
    session.assert_clean()


def test_the_operation_column_stays_in_view_when_the_table_scrolls(session, server):
    frame = session.show(TRAIN, "host0")
    wrap = frame.locator("#op-table").locator("xpath=..")
    sizes = wrap.evaluate("(w) => [w.scrollWidth, w.clientWidth, w.scrollHeight, w.clientHeight]")
    assert sizes[0] > sizes[1] and sizes[2] > sizes[3]  # it scrolls inside itself, both ways
    first_name = frame.locator("#op-table tbody tr").first.locator(".op-name").text_content()
    wrap.evaluate("(w) => { w.scrollLeft = w.scrollWidth; w.scrollTop = 120; }")
    frame.page.wait_for_timeout(100)
    box = wrap.evaluate(
        "(w) => { const b = w.getBoundingClientRect(); return [b.left, b.top, b.right]; }"
    )
    # What is drawn at the wrap's left edge, just under the header: an Operation cell.
    header = frame.evaluate(BOX, "#op-table thead th[data-key=operation]")
    assert abs(header["left"] - box[0]) <= 2 and abs(header["top"] - box[1]) <= 2
    hit = frame.evaluate(
        """([x, y]) => { const n = document.elementFromPoint(x, y);
          const td = n && n.closest('td'); const tr = td && td.closest('tr');
          return td ? [td.cellIndex, tr.querySelector('.op-name').textContent,
            (td.querySelector('.op-name') || {}).textContent || ''] : null; }""",
        [box[0] + 12, header["bottom"] + 8],
    )
    headers = frame.evaluate(
        "[...document.querySelectorAll('#op-table thead th')].map((th) => th.dataset.key)"
    )
    assert hit is not None and hit[0] == headers.index("operation") and hit[2] == hit[1]
    assert hit[1] != first_name  # scrolled down: another row, its name still shown
    # The header's last column is in view: the table scrolled right to its end.
    last = frame.evaluate(BOX, "#op-table thead th:last-child")
    assert last["right"] <= box[2] + 1
    wrap.evaluate("(w) => { w.scrollLeft = 0; w.scrollTop = 0; }")
    session.assert_clean()


# ----------------------------------------------------------------------------- the chart


def _merged_ceilings(device: dict) -> list[list[float]]:
    """Groups compute peaks that print alike (within 0.5 %): the ceilings to draw."""
    values = sorted(
        {*device["dtype_peak_gflops"].values(), device["peak_flop_rate_gflops"]}, reverse=True
    )
    groups: list[list[float]] = []
    for v in values:
        if groups and groups[-1][-1] - v <= 0.005 * groups[-1][-1]:
            groups[-1].append(v)
        else:
            groups.append([v])
    return groups


@pytest.mark.parametrize(
    ("run", "sample", "expected"),
    [
        # MI300X: peak 1,307,443.2 and bf16/fp16 1,307,400 GFLOP/s are one line with both
        # names; fp8/int8, tf32 and fp64/fp32 the others.
        (
            MI300X_RUN,
            MI300X,
            {
                "Peak compute (bf16 / fp16), 1.307 PFLOP/s": "bf16 / fp16 1.307 PFLOP/s",
                "fp8 / int8 peak, 2.615 PFLOP/s": "fp8 / int8 2.615 PFLOP/s",
                "tf32 peak, 653.7 TFLOP/s": "tf32 653.7 TFLOP/s",
                "fp64 / fp32 peak, 163.4 TFLOP/s": "fp64 / fp32 163.4 TFLOP/s",
            },
        ),
        # MI250 (104 of 110 CUs): bf16 = fp16 = int8 = the peak, fp64 = fp32.
        (
            MI250_RUN,
            MI250,
            {
                "Peak compute (bf16 / fp16 / int8), 181.1 TFLOP/s": (
                    "bf16 / fp16 / int8 181.1 TFLOP/s"
                ),
                "fp64 / fp32 peak, 45.24 TFLOP/s": "fp64 / fp32 45.24 TFLOP/s",
            },
        ),
    ],
)
def test_each_ceiling_is_drawn_once_and_labelled_on_the_chart(
    session, server, run, sample, expected
):
    if not sample.is_file():
        pytest.skip(f"shared sample {sample} not found")
    host = api(server, "hosts", run=run)[0]
    frame = session.show(run, host)
    chart_drawn(frame)
    device = api(server, "data", run=run, host=host, format="json")["device"]
    groups = _merged_ceilings(device)
    names = frame.evaluate(
        """() => document.getElementById('op-chart').data
          .filter((t) => t.meta && t.meta.kind === 'ceiling').map((t) => [t.name, t.y[0]])"""
    )
    assert len(names) == len(groups) == len(expected)
    assert sorted(name for name, _ in names) == sorted(expected)
    main = next(y for name, y in names if name.startswith("Peak compute"))
    assert main == pytest.approx(device["peak_flop_rate_gflops"] * G)  # drawn at the peak
    for (_, y), group in zip(sorted(names, key=lambda n: -n[1]), groups):
        assert min(group) * G <= y <= max(group) * G
    labels = [label["text"] for label in assert_labels_apart(frame)]
    for text in expected.values():
        assert labels.count(text) == 1, (text, labels)
    for memory in device["memories"]:  # each roof by name and bandwidth
        assert sum(t.startswith(f"{memory['name']} ") and "B/s" in t for t in labels) == 1
    session.assert_clean()


def test_small_dots_are_drawn_over_big_ones_and_the_program_star_is_hollow_on_top(session):
    frame = session.show(TORCH, "worker0")
    chart_drawn(frame)
    traces = frame.evaluate(
        """() => document.getElementById('op-chart').data.map((t) => ({
          kind: (t.meta || {}).kind, size: t.marker && t.marker.size,
          symbol: t.marker && t.marker.symbol }))"""
    )
    kinds = [t["kind"] for t in traces]
    assert kinds.count("ops") == 1  # one trace: drawn in this order whatever the category
    sizes = traces[kinds.index("ops")]["size"]
    assert len(sizes) > 10 and sizes == sorted(sizes, reverse=True)
    assert len(set(sizes)) > 5
    star = kinds.index("program")
    assert star > kinds.index("ops") and traces[star]["symbol"] == "star-open"
    # In the SVG too: the smallest dot is painted after (over) the largest.
    order = frame.evaluate(
        """() => { const i = document.getElementById('op-chart').data
            .findIndex((t) => t.meta && t.meta.kind === 'ops');
          const pts = [...document.querySelectorAll('#op-chart .scatterlayer .trace')][i]
            .querySelectorAll('path.point');
          const r = (p) => p.getBBox().width; return [r(pts[0]), r(pts[pts.length - 1])]; }"""
    )
    assert order[0] > order[1]
    session.assert_clean()


def test_compare_arrows_stay_visible_for_small_changes(session, server):
    frame = session.show(TRAIN, "host0", "1")
    frame.select_option("#tool-select", "compare")
    a = {"run": TRAIN, "host": "host0", "step": "1"}
    b = {"run": TRAIN, "host": "host1", "step": "1"}
    for side, want in (("a", a), ("b", b)):
        for control in ("run", "host", "step"):
            if frame.locator(f"#{side}-{control}").input_value() != want[control]:
                frame.select_option(f"#{side}-{control}", want[control])
    wait_view(frame, "compare-view", a=a, b=b)
    chart_drawn(frame, "compare-chart")
    # The two hosts run the same program: most ops move by a few pixels only.
    moves = frame.evaluate(
        """() => { const gd = document.getElementById('compare-chart');
          const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
          const [pa, pb] = ['compare-a', 'compare-b'].map((k) =>
            gd.data.find((t) => t.meta && t.meta.kind === k));
          const n = gd.layout.annotations.filter((x) => x.name === 'op-arrow').length;
          return [...Array(n).keys()].map((i) => Math.hypot(
            xa.l2p(Math.log10(pb.x[i])) - xa.l2p(Math.log10(pa.x[i])),
            ya.l2p(Math.log10(pb.y[i])) - ya.l2p(Math.log10(pa.y[i])))); }"""
    )
    # The drawn length of each op's arrow (its shaft, head excluded), in the same order.
    lengths = frame.evaluate(
        """() => { const gd = document.getElementById('compare-chart');
          return gd.layout.annotations.map((a, i) => [a.name, i]).filter(([n]) => n === 'op-arrow')
            .map(([, i]) => { const g = gd.querySelector(`.annotation[data-index="${i}"]`);
              const path = g && g.querySelector('.annotation-arrow-g path');
              return path ? path.getTotalLength() : 0; }); }"""
    )
    assert len(lengths) == len(moves) > 0
    small = [m for m in moves if 0.05 < m < 10]
    assert small, moves  # there are small changes to show
    for move, length in zip(moves, lengths):
        if move > 0.05:
            assert length >= 8, (move, length)  # a visible arrow, however small the change
    session.assert_clean()


# ----------------------------------------------------------------------------- colours

CATEGORY_COLOURS = """() => { const gd = document.getElementById('op-chart');
  const out = {};
  for (const t of gd.data) {
    const m = t.meta || {};
    if (m.kind === 'category') out[`legend:${m.category}`] = t.marker.color;
    if (m.kind === 'ops') m.categories.forEach((c, i) => {
      const key = `dot:${c}`; const colour = t.marker.color[i];
      out[key] = out[key] && out[key] !== colour ? 'MIXED' : colour; });
  }
  return out; }"""


def _colours(frame) -> dict[str, str]:
    chart_drawn(frame)
    drawn = frame.evaluate(CATEGORY_COLOURS)
    colours = {}
    for key, colour in drawn.items():
        category = key.split(":", 1)[1]
        assert colour != "MIXED"
        assert colours.setdefault(category, colour) == colour, (category, drawn)
    return colours


def test_a_category_keeps_its_colour_in_a_step_in_other_runs_and_in_each_theme(session):
    total = _colours(session.show(TRAIN, "host0"))
    step = _colours(session.show(TRAIN, "host0", "2"))
    other_host = _colours(session.show(TRAIN, "host1", "3"))
    inference = _colours(session.show(INFERENCE, "host0"))
    gpu = _colours(session.show(TRAIN_GPU, "host0"))
    for view in (step, other_host, inference, gpu):
        shared = set(view) & set(total)
        assert shared and all(view[c] == total[c] for c in shared), (view, total)
    assert {"all-reduce", "loop fusion"} <= set(gpu) & set(total) & set(inference)
    # Within a view, no two categories look alike (colour and symbol).
    torch = session.show(TORCH, "worker0")
    chart_drawn(torch)
    styles = torch.evaluate(
        """() => document.getElementById('op-chart').data
          .filter((t) => t.meta && t.meta.kind === 'category')
          .map((t) => `${t.marker.color} ${t.marker.symbol}`)"""
    )
    assert len(styles) > 5 and len(set(styles)) == len(styles)
    # Dark: its own fixed colours, the same across runs too.
    session.page.evaluate("document.body.classList.add('dark-mode')")
    torch.wait_for_function(
        "() => document.getElementById('op-chart')._fullLayout.paper_bgcolor === '#1e1f22'"
    )
    dark_train = _colours(session.show(TRAIN, "host0"))
    dark_gpu = _colours(session.show(TRAIN_GPU, "host0"))
    assert dark_train["all-reduce"] == dark_gpu["all-reduce"]
    assert dark_train["loop fusion"] == dark_gpu["loop fusion"]
    assert dark_train["output fusion"] != total["output fusion"]  # the dark shade of its blue
    session.page.evaluate("document.body.classList.remove('dark-mode')")
    session.assert_clean()


def test_a_category_legend_item_hides_and_shows_its_ops(session, server):
    frame = session.show(TRAIN, "host0")
    chart_drawn(frame)
    shown = """() => { const t = document.getElementById('op-chart').data
      .find((d) => d.meta && d.meta.kind === 'ops');
      return t.meta.categories.filter((c, i) => t.x[i] !== null); }"""
    before = frame.evaluate(shown)
    assert before.count("loop fusion") > 1
    item = frame.locator("#op-chart .legend .traces", has_text="loop fusion")
    item.locator(".legendtoggle").click()
    frame.wait_for_function(f"() => !({shown})().includes('loop fusion')")
    after = frame.evaluate(shown)
    assert sorted(after) == sorted(c for c in before if c != "loop fusion")
    chart_drawn(frame)
    frame.page.wait_for_timeout(400)  # past Plotly's double-click window: a second single click
    item.locator(".legendtoggle").click()
    frame.wait_for_function(f"() => ({shown})().length === {len(before)}")
    traces = frame.evaluate(TRACES, "op-chart")
    assert any(t["meta"].get("kind") == "roof" for t in traces)  # the roofs stay
    session.assert_clean()
