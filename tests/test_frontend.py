"""The roofline tab in a real browser, against a real ``tensorboard`` process.

One TensorBoard serves a demo logdir (`demo.write_demo_logdir`), a tiny profile whose op
name is an HTML payload and, when the shared samples are there, `tpu_inference_2`. Chromium
(Debian's, never downloaded) opens `/#roofline` and the tests work inside the plugin's iframe,
comparing what the page shows with what the HTTP API returns. Every page is checked for
console errors, dialogs and requests to other hosts; screenshots go to `test-artifacts/`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tensorboard_process import running_tensorboard

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"browser tests need Debian's chromium at {CHROMIUM}", allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright for Python is not installed"
)

from tiny_tpu import CORE_EVENTS, OPS, US, tiny_tpu  # noqa: E402

from tb_roofline_plugin import demo  # noqa: E402
from tb_roofline_plugin.serve.calibrator import calibration_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"
SHARED_SAMPLE = Path(__file__).resolve().parents[2] / "shared/data/xprof/tpu_inference_2.xplane.pb"
CPU_SAMPLE = (
    Path(__file__).resolve().parents[2]
    / "shared/data/jax-cpu/jax_transformer/plugins/profile/2026_11_30_09_47_29/vm.xplane.pb"
)
CPU_RUN = "jax_cpu/run1"
PYTORCH = Path(__file__).resolve().parents[2] / "shared/data/pytorch"
TORCH_GPU = PYTORCH / "a100_recsys/control.pt.trace.json.gz"
TORCH_CPU = PYTORCH / "cpu_cnn/worker0.1796108550851685382.pt.trace.json"
TORCH_GPU_RUN, TORCH_CPU_RUN = "torch_a100", "torch_cpu"  # hosts: the traces' workers
XSS = "<img src=x onerror=alert(1)>"
TRAIN = "train_v5p/2026_01_01_00_00_00"
XSS_RUN = "xss/run1"
SHARED_RUN = "shared_tpu/run1"
BROKEN_RUN = "broken/run1"
EMPTY_RUN = "empty/run1"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
G = 1e9


# ----------------------------------------------------------------------------- server


def copy_profile(logdir: Path, run: str, profile: Path) -> None:
    """Copies a profile file into ``logdir`` as run ``run``: ``name/sub`` is an XSpace run
    (``name/plugins/profile/sub/``), a name without ``/`` a folder of PyTorch traces."""
    name, _, sub = run.partition("/")
    folder = logdir / name / "plugins/profile" / sub if sub else logdir / run
    folder.mkdir(parents=True)
    shutil.copyfile(profile, folder / profile.name)


def plugin_tensorboard(logdir: Path, **kwargs) -> contextlib.AbstractContextManager[str]:
    """``running_tensorboard`` for ``logdir``, its log and calibrations beside it (never the
    user's own cache); ``kwargs`` go on to it."""
    return running_tensorboard(
        logdir,
        logdir.parent / "tensorboard.log",
        extra_args=("--roofline_calibration_dir", str(logdir.parent / "calibration")),
        **kwargs,
    )


@contextlib.contextmanager
def browser_context(width: int = 1280, height: int = 900) -> Iterator:
    """A Chromium context with a ``width`` x ``height`` viewport, closed afterwards."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        context = browser.new_context(viewport={"width": width, "height": height})
        yield context
        context.close()
        browser.close()


@contextlib.contextmanager
def opened_tab(base: str, selection: dict | None = None, width: int = 1280) -> Iterator[Session]:
    """A ``Session`` on the tab of the server at ``base``, opened (with ``selection``)."""
    with browser_context(width) as context:
        session = Session(context, base)
        session.open(selection)
        yield session


def _write_logdir(logdir: Path) -> None:
    demo.write_demo_logdir(logdir)
    ops = dict(OPS)
    ops[XSS] = ("loop fusion", 3_000_000, 500_000, None)
    events = [[*CORE_EVENTS[0], (XSS, 13 * US, US)], CORE_EVENTS[1]]
    xss = logdir / "xss/plugins/profile/run1/tiny.xplane.pb"
    xss.parent.mkdir(parents=True)
    xss.write_bytes(tiny_tpu(core_events=events, ops=ops).SerializeToString())
    empty = logdir / "empty/plugins/profile/run1/e.xplane.pb"
    empty.parent.mkdir(parents=True)
    empty.write_bytes(tiny_tpu(core_events=[[]]).SerializeToString())
    broken = logdir / "broken/plugins/profile/run1/h.xplane.pb"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"\x0a\xff\xff\xff not a profile")
    for run, sample in (
        (SHARED_RUN, SHARED_SAMPLE),
        (CPU_RUN, CPU_SAMPLE),
        (TORCH_GPU_RUN, TORCH_GPU),  # a folder of PyTorch profiler traces is a run
        (TORCH_CPU_RUN, TORCH_CPU),
    ):
        if sample.is_file():
            copy_profile(logdir, run, sample)


@pytest.fixture(scope="module")
def calibration_dir(tmp_path_factory) -> Path:
    """The server's --roofline_calibration_dir: never the user's own cache."""
    return tmp_path_factory.mktemp("calibration")


@pytest.fixture(scope="module")
def server(tmp_path_factory, calibration_dir):
    logdir = tmp_path_factory.mktemp("frontend_logdir")
    _write_logdir(logdir)
    calibration = calibration_dir
    SERVER_LOG["path"] = logdir.parent / "tensorboard.log"
    with running_tensorboard(
        logdir,
        SERVER_LOG["path"],
        extra_args=("--roofline_calibration_dir", str(calibration)),
    ) as base:
        yield base


SERVER_LOG: dict[str, Path] = {}  # the server fixture's log, for the tests that read it


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


def api(base: str, route: str, **params):
    return get_json(f"{base}/data/plugin/roofline/{route}?{urllib.parse.urlencode(params)}")


def api_error(base: str, route: str, **params) -> str:
    try:
        api(base, route, **params)
    except urllib.error.HTTPError as err:
        return json.loads(err.read())["error"]
    raise AssertionError(f"{route} {params} did not fail")


def records(data: dict, step="total", include=True):
    """(program, op records) of one selection, as the page picks them."""
    kind = {"total": "ALL", "average": "AVERAGE_STEP"}.get(str(step), "PER_STEP")
    chosen = [
        r
        for r in data["database"]["roofline_model_record"]
        if bool(r.get("include_infeed_outfeed")) == include
        and r.get("record_type", "ALL") == kind
        and (kind != "PER_STEP" or str(r.get("step_num", 0)) == str(step))
    ]
    program = next(r for r in chosen if int(r.get("rank", 0)) == 0)
    return program, [r for r in chosen if int(r.get("rank", 0)) > 0]


def plottable(r: dict) -> bool:
    return r.get("measured_flop_rate", 0) > 0 and r.get("bottleneck_operational_intensity", 0) > 0


def key(r: dict) -> str:
    return f"{r['hlo_module_id']}:{r['hlo_name']}"


# ----------------------------------------------------------------------------- browser


class Session:
    """A page with what it did recorded: console errors, dialogs, requests to other hosts."""

    def __init__(self, context, base: str):
        self.base = base
        self.page = context.new_page()
        self.page.set_default_timeout(30_000)
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.foreign: list[str] = []
        self.failed: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("dialog", self._dialog)
        self.page.on("request", self._request)
        self.page.on(
            "response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}")
        )

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _request(self, request):
        host = urllib.parse.urlparse(request.url).hostname
        if request.url.startswith(("http:", "https:", "ws:", "wss:")) and host != "127.0.0.1":
            self.foreign.append(request.url)

    def open(self, selection: dict | None = None):
        """Opens the tab (optionally with a remembered selection) and returns its frame."""
        seed = json.dumps(json.dumps(selection or {}))
        self.page.add_init_script(
            "if (window === window.top && !sessionStorage.getItem('seeded')) {"
            f"  localStorage.setItem('tb-roofline.selection', {seed});"
            "  sessionStorage.setItem('seeded', '1'); }"
        )
        self.page.goto(f"{self.base}/#roofline")
        return self.frame()

    def show(self, run: str, host: str, step: str = "total"):
        """Selects run, host and step in the sidebar (Roofline Model), filters reset."""
        frame = self.frame()
        if frame.locator("#tool-select").input_value() != "model":
            frame.select_option("#tool-select", "model")
        frame.wait_for_selector("#run-select")
        for control, value, want in (
            ("#run-select", run, {"run": run}),
            ("#host-select", host, {"run": run, "host": host}),
            ("#step-select", step, {"run": run, "host": host, "step": step}),
        ):
            if frame.locator(control).input_value() != value:
                frame.select_option(control, value)
            wait_view(frame, **want)
        if frame.locator("#filter-reset").count():
            frame.click("#filter-reset")
        return frame

    def reset(self) -> None:
        """Forgets what earlier tests recorded."""
        for log in (self.errors, self.dialogs, self.foreign, self.failed):
            log.clear()

    def frame(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for frame in self.page.frames:
                if "plugin_entry" in frame.url:
                    return frame
            self.page.wait_for_timeout(25)
        raise AssertionError("the plugin iframe never appeared")

    def shot(self, name: str, frame=None) -> None:
        """A screenshot 1280 px wide, as tall as the tab's content."""
        ARTIFACTS.mkdir(exist_ok=True)
        frame = frame or self.frame()
        height = frame.evaluate("document.documentElement.scrollHeight")
        self.page.set_viewport_size({"width": 1280, "height": min(height + 70, 4000)})
        self.page.wait_for_timeout(400)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        self.page.set_viewport_size({"width": 1280, "height": 900})

    def assert_clean(self) -> None:
        assert self.errors == [], f"console errors: {self.errors} (failed requests: {self.failed})"
        assert self.dialogs == [], f"dialogs opened: {self.dialogs}"
        assert self.foreign == [], f"requests to other hosts: {self.foreign}"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def context(browser):
    """One context for the module: the 4.8 MB chart library is fetched and compiled once."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    yield context
    context.close()


@pytest.fixture(scope="module")
def tab(context, server):
    """The TensorBoard page with the tab open, loaded once for the module."""
    s = Session(context, server)
    s.open()
    yield s
    s.page.close()


@pytest.fixture
def session(tab):
    tab.reset()
    return tab


VIEW_READY = """([view, want]) => {
  const node = document.getElementById(view);
  if (!node || node.hidden || node.dataset.state !== 'ready') return false;
  const shown = JSON.parse(node.dataset.view || '{}');
  return Object.entries(want).every(([k, v]) => JSON.stringify(shown[k]) === JSON.stringify(v));
}"""

OP_POINTS = """() => {
  const gd = document.getElementById('op-chart');
  if (!gd || !gd.data) return null;
  return gd.data.filter((t) => t.meta && t.meta.kind === 'ops')
    .flatMap((t) => t.x.map((x, i) => [x, t.y[i], t.customdata[i]]));
}"""

TRACES = """(id) => document.getElementById(id).data.map((t) => ({
  meta: t.meta || {}, x: t.x, y: t.y, n: (t.x || []).length }))"""

TABLE = """(id) => [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) =>
  [...tr.children].map((td) => (td.querySelector('.op-name') || td).textContent))"""

HEADERS = """(id) => [...document.querySelectorAll(`#${id} thead th button span:first-child`)]
  .map((s) => s.textContent)"""


ROOF_DRAWN = """() => { const gd = document.getElementById('op-chart');
  return Boolean(gd && gd.data && gd.data.some((t) => t.meta && t.meta.kind === 'roof')); }"""


def wait_view(frame, view="model-view", **want):
    frame.wait_for_function(VIEW_READY, arg=[view, want])


def wait_points(frame, count: int):
    frame.wait_for_function(
        f"() => {{ const p = ({OP_POINTS})(); return p !== null && p.length === {count}; }}"
    )
    return frame.evaluate(OP_POINTS)


def column(frame, label: str, table="op-table") -> list[str]:
    index = frame.evaluate(HEADERS, table).index(label)
    return [row[index] for row in frame.evaluate(TABLE, table)]


def number(text: str) -> float:
    return float(text.replace(",", "").replace("%", "").replace("\u2212", "-"))


def micros_of(text: str) -> float:
    """A time cell ("850 µs", "1.8 ms", "77.8 s") in µs."""
    value, unit = text.split(" ")
    return number(value) * {"µs": 1, "ms": 1e3, "s": 1e6}[unit]


# ----------------------------------------------------------------------------- tests


def test_tab_opens_with_every_op_point_and_roof(session, server):
    listing = get_json(f"{server}/data/plugins_listing")
    tab = listing["roofline"]["tab_name"]
    assert listing["roofline"]["enabled"] is True
    runs = api(server, "runs")
    host = api(server, "hosts", run=runs[0])[0]
    frame = session.show(runs[0], host)  # the first run is what the tab opens with
    wait_view(frame, run=runs[0], host=host, step="total", include=True)
    assert session.page.get_by_role("tab", name=tab, selected=True).is_visible()

    data = api(server, "data", run=runs[0], host=host, format="json")
    program, ops = records(data)
    expected = {
        key(r): (r["bottleneck_operational_intensity"], r["measured_flop_rate"] * G)
        for r in ops
        if plottable(r)
    }
    points = wait_points(frame, len(expected))
    assert 0 < len(expected) < len(ops)  # some ops have no FLOPs: table only
    for x, y, k in points:
        assert math.isclose(x, expected[k][0]) and math.isclose(y, expected[k][1])
    unplaced = len(ops) - len(expected)
    note = frame.locator("[data-note=not-plotted]").text_content()
    assert note.startswith(f"{unplaced} ops have no FLOPs")
    assert len(frame.evaluate(TABLE, "op-table")) == len(ops)

    # Roofs: one per memory with a peak, one per distinct compute ceiling; every memory roof
    # has slope = its bandwidth in bytes/s, so it meets the peak exactly at the ridge point.
    device = data["device"]
    traces = frame.evaluate(TRACES, "op-chart")
    roofs = [t for t in traces if t["meta"].get("kind") == "roof"]
    ceilings = [t for t in traces if t["meta"].get("kind") == "ceiling"]
    peaks = set(device["dtype_peak_gflops"].values()) | {device["peak_flop_rate_gflops"]}
    assert len(roofs) == len(device["memories"]) == 3
    assert len(ceilings) == len(peaks)
    for memory, roof in zip(device["memories"], roofs):
        assert roof["meta"]["memory"] == memory["name"]
        for x, y in zip(roof["x"], roof["y"]):
            assert math.isclose(y / x, memory["peak_gbps"] * G)
        ridge_y = memory["ridge_point"] * memory["peak_gbps"] * G
        assert math.isclose(ridge_y, device["peak_flop_rate_gflops"] * G)
    ridge = next(t for t in traces if t["meta"].get("kind") == "ridge")
    assert sorted(ridge["x"]) == pytest.approx(sorted(m["ridge_point"] for m in device["memories"]))
    star = next(t for t in traces if t["meta"].get("kind") == "program")
    assert star["x"] == pytest.approx([program["bottleneck_operational_intensity"]])
    assert star["y"] == pytest.approx([program["measured_flop_rate"] * G])

    text = frame.locator("details.device").text_content()
    assert device["device_type"] in text and "the profile" in text
    assert data["database"]["diagnostics"]["warnings"][0] in text
    session.shot("model_light", frame)
    session.assert_clean()


def test_filters_change_points_and_rows_and_sorting_orders_values(session, server):
    frame = session.show(TRAIN, "host0", "total")
    _, ops = records(api(server, "data", run=TRAIN, host="host0", format="json"))
    wait_points(frame, sum(map(plottable, ops)))

    loop = [r for r in ops if r["hlo_category"] == "loop fusion"]
    frame.select_option("#filter-category", "loop fusion")
    assert len(wait_points(frame, sum(map(plottable, loop)))) < sum(map(plottable, ops))
    assert sorted(column(frame, "Operation")) == sorted(r["hlo_name"] for r in loop)

    frame.fill("#filter-topn", "3")
    wait_points(
        frame, sum(map(plottable, sorted(loop, key=lambda r: -r["total_self_time_in_us"])[:3]))
    )
    assert len(frame.evaluate(TABLE, "op-table")) == 3
    frame.fill("#filter-topn", "")

    frame.fill("#filter-regex", "fusion.(")  # invalid: a message, no exception
    error = frame.locator(".filter-error")
    assert "not a valid regular expression" in error.text_content()
    assert len(frame.evaluate(TABLE, "op-table")) == len(loop)
    frame.fill("#filter-regex", r"^fusion\.2")
    assert error.text_content() == ""
    names = column(frame, "Operation")
    assert names and all(n.startswith("fusion.2") for n in names)
    frame.click("#filter-reset")
    wait_points(frame, sum(map(plottable, ops)))

    # Without infeed/outfeed: the other record set.
    data = api(server, "data", run=TRAIN, host="host0", format="json")
    _, without = records(data, include=False)
    frame.uncheck("#include-toggle")
    wait_view(frame, run=TRAIN, host="host0", step="total", include=False)
    assert len(wait_points(frame, sum(map(plottable, without)))) > 0
    assert sorted(column(frame, "Operation")) == sorted(r["hlo_name"] for r in without)
    assert len(without) < len(ops)
    frame.check("#include-toggle")
    wait_view(frame, run=TRAIN, host="host0", step="total", include=True)

    header = frame.locator("#op-table thead th[data-key=gflops] button")
    header.click()  # numbers sort largest first
    # One FLOP/s unit for the table: the largest rate reaches 1 TFLOP/s, so TFLOP/s.
    assert max(r["measured_flop_rate"] for r in ops) >= 1000
    values = [number(v) for v in column(frame, "TFLOP/s")]
    assert values == sorted(values, reverse=True) and len(values) == len(ops)
    assert (
        frame.locator("#op-table thead th[data-key=gflops]").get_attribute("aria-sort")
        == "descending"
    )
    header.press("Enter")  # keyboard: again reverses
    values = [number(v) for v in column(frame, "TFLOP/s")]
    assert values == sorted(values)
    frame.locator("#op-table thead th[data-key=wasted_rank] button").press("Space")
    ranks = [int(v) for v in column(frame, "Wasted rank") if v]  # '': not judged
    assert ranks == sorted(ranks, reverse=True)
    session.assert_clean()


def test_clicking_a_dot_selects_its_row_and_a_row_rings_its_dot(session, server):
    frame = session.show(TRAIN, "host0", "total")
    _, ops = records(api(server, "data", run=TRAIN, host="host0", format="json"))
    points = wait_points(frame, sum(map(plottable, ops)))
    pixels = frame.evaluate(
        """(points) => { const gd = document.getElementById('op-chart');
          const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
          return points.map(([x, y]) =>
            [xa._offset + xa.l2p(Math.log10(x)), ya._offset + ya.l2p(Math.log10(y))]); }""",
        points,
    )

    def room(i):  # distance to the nearest other dot
        return min(math.dist(pixels[i], p) for j, p in enumerate(pixels) if j != i)

    best = max(range(len(points)), key=room)
    k = points[best][2]
    pixel = pixels[best]
    frame.locator("#op-chart").click(position={"x": pixel[0], "y": pixel[1]})
    selected = frame.locator("#op-table tbody tr.selected")
    selected.wait_for()
    assert selected.get_attribute("data-key") == k

    other = next(r for r in ops if plottable(r) and key(r) != k)
    frame.locator(f"#op-table tbody tr[data-key='{key(other)}']").press("Enter")
    frame.wait_for_function(
        """(k) => document.getElementById('op-chart').data
          .find((t) => t.meta && t.meta.kind === 'highlight').meta.key === k""",
        arg=key(other),
    )
    ring = next(t for t in frame.evaluate(TRACES, "op-chart") if t["meta"]["kind"] == "highlight")
    assert ring["x"] == pytest.approx([other["bottleneck_operational_intensity"]])
    session.assert_clean()


def test_choosing_a_step_draws_that_steps_records(session, server):
    frame = session.show(TRAIN, "ALL_HOSTS", "total")
    options = frame.locator("#step-select option").all_text_contents()
    assert options[:3] == ["Total (whole profile)", "Average step", "Step 0 (incomplete)"]
    frame.select_option("#host-select", "host1")
    wait_view(frame, run=TRAIN, host="host1", step="total")
    frame.select_option("#step-select", "3")
    wait_view(frame, run=TRAIN, host="host1", step="3")

    data = api(server, "data", run=TRAIN, host="host1", format="json", step=3)
    program, ops = records(data, step=3)
    assert all(r["record_type"] == "PER_STEP" and r["step_num"] == 3 for r in ops)
    total_program, _ = records(api(server, "data", run=TRAIN, host="host1", format="json"))
    assert program["total_time_in_us"] < total_program["total_time_in_us"]
    expected = {
        key(r): (r["bottleneck_operational_intensity"], r["measured_flop_rate"] * G)
        for r in ops
        if plottable(r)
    }
    for x, y, k in wait_points(frame, len(expected)):
        assert math.isclose(x, expected[k][0]) and math.isclose(y, expected[k][1])
    star = next(t for t in frame.evaluate(TRACES, "op-chart") if t["meta"].get("kind") == "program")
    assert star["y"] == pytest.approx([program["measured_flop_rate"] * G])
    times = [micros_of(v) for v in column(frame, "Self time")]
    assert sum(times) == pytest.approx(sum(r["total_self_time_in_us"] for r in ops), rel=1e-3)
    chosen = frame.locator(".step-table tr.selected th").text_content()
    assert chosen == "Step 3"
    # The program chart: Total, Average step and each step with a Program row.
    total = api(server, "data", run=TRAIN, host="host1", format="json")
    rows = [
        r
        for r in total["database"]["roofline_model_record"]
        if r["hlo_name"] == "Program" and r["include_infeed_outfeed"] and plottable(r)
    ]
    assert {r["record_type"] for r in rows} == {"ALL", "AVERAGE_STEP", "PER_STEP"}
    program_points = sum(
        t["n"]
        for t in frame.evaluate(TRACES, "program-chart")
        if t["meta"].get("kind") == "program-points"
    )
    assert program_points == len(rows)
    session.shot("model_step3", frame)
    session.assert_clean()


STEP_ROWS = """() => Object.fromEntries([...document.querySelectorAll('#step-table tbody tr')]
  .map((tr) => [tr.dataset.step, tr.children[1].textContent]))"""


@pytest.mark.parametrize(
    "run, cores", [(TRAIN, "8 TensorCores"), ("torch_gpu", "2 GPUs")], ids=["tpu", "torch"]
)
def test_slowest_and_fastest_say_the_program_tables_figures(session, server, run, cores):
    """One meaning of time: the Slowest/Fastest jumps name the step's device time, the
    figure its program-table row shows, with what it is summed over (and its wall time
    apart); the table says what its times are; Total is never shorter than its steps."""
    frame = session.show(run, "ALL_HOSTS", "total")
    steps = api(server, "steps", run=run, host="ALL_HOSTS")
    meaning = f"device time summed over {cores}"
    assert steps["time_meaning"] == meaning
    complete = [s for s in steps["steps"] if s["complete"]]
    slowest = min(complete, key=lambda s: (-s["device_time_us"], s["step_num"]))
    fastest = min(complete, key=lambda s: (s["device_time_us"], s["step_num"]))
    cells = frame.evaluate(STEP_ROWS)
    for suffix, step in (("slowest", slowest), ("fastest", fastest)):
        title = frame.get_attribute(f"#step-select-{suffix}", "title")
        figure = cells[str(step["step_num"])]
        assert f"step {step['step_num']}: {figure} of {meaning} (wall time " in title, title
        assert micros_of(figure) == pytest.approx(step["device_time_us"], rel=2e-3)
        wall = re.search(r"\(wall time ([^)]+)\)", title).group(1)
        assert micros_of(wall) == pytest.approx(step["duration_us"], rel=2e-3)
        assert step["duration_us"] < step["device_time_us"]  # several cores: never the same
    header = frame.locator("#step-table thead th").nth(1)
    assert header.text_content() == "Device time"
    assert header.get_attribute("title") == f"Program time: {meaning}, not wall time"
    note = frame.locator("[data-note=time-meaning]").text_content()
    assert note.startswith(f"Times are {meaning}, not wall time")
    total = micros_of(cells["total"])
    assert total >= sum(micros_of(cells[str(s["step_num"])]) for s in complete) * (1 - 2e-3)


def test_a_steps_neighbours_are_fetched_ahead_and_the_next_one_drawn_from_them(session, server):
    """After a step is drawn the tab asks for the steps either side (without the list of
    steps, which the whole profile's answer has); ▶ then draws the next step from that
    answer, asking the server nothing. (host0's steps: not asked for by the tests before.)"""
    asked: list[dict] = []

    def record(request):
        if "/data/plugin/roofline/data?" in request.url:
            query = urllib.parse.parse_qs(urllib.parse.urlparse(request.url).query)
            asked.append({k: v[0] for k, v in query.items()})

    session.page.on("request", record)
    try:
        frame = session.show(TRAIN, "host0", "total")
        frame.select_option("#step-select", "2")
        wait_view(frame, run=TRAIN, host="host0", step="2")
        deadline = time.monotonic() + 20
        wanted = {("2", "0"), ("1", "0"), ("3", "0")}
        while time.monotonic() < deadline:
            steps = {(a.get("step"), a.get("step_list")) for a in asked if a.get("host") == "host0"}
            if wanted <= steps:
                break
            frame.wait_for_timeout(50)
        assert wanted <= steps, steps
        before = len(asked)
        frame.click("#step-select-next")
        wait_view(frame, run=TRAIN, host="host0", step="3")
        assert not [a for a in asked[before:] if a.get("step") == "3"]  # from the tab's cache
    finally:
        session.page.remove_listener("request", record)
    data = api(server, "data", run=TRAIN, host="host0", format="json", step=3)
    program, _ = records(data, step=3)
    star = next(t for t in frame.evaluate(TRACES, "op-chart") if t["meta"].get("kind") == "program")
    assert star["y"] == pytest.approx([program["measured_flop_rate"] * G])
    session.assert_clean()


def test_compare_draws_arrows_and_the_delta_table(session, server):
    frame = session.show(TRAIN, "host0", "1")
    frame.select_option("#tool-select", "compare")
    a = {"run": TRAIN, "host": "host0", "step": "1"}
    b = {"run": TRAIN, "host": "host1", "step": "1"}
    wait_view(frame, "compare-view", a=a, b=b)
    frame.select_option("#b-step", "average")
    b["step"] = "average"
    wait_view(frame, "compare-view", a=a, b=b)

    result = api(
        server,
        "compare",
        **{f"{s}_{k}": v for s, sel in (("a", a), ("b", b)) for k, v in sel.items()},
    )
    _, ops_a = records(api(server, "data", run=TRAIN, host="host0", format="json", step=1), step=1)
    _, ops_b = records(
        api(server, "data", run=TRAIN, host="host1", format="json", step="average"), step="average"
    )
    by_a = {key(r): r for r in ops_a}
    by_b = {key(r): r for r in ops_b}
    matched = [
        op
        for op in result["ops"]
        if not op["only_in"]
        and plottable(by_a[f"{op['program']}:{op['operation']}"])
        and plottable(by_b[f"{op['program']}:{op['operation']}"])
    ]
    arrows = frame.evaluate(
        "() => document.getElementById('compare-chart').layout.annotations"
        ".filter((a) => a.name === 'op-arrow')"
    )
    assert len(arrows) == len(matched) > 0
    first = by_b[f"{matched[0]['program']}:{matched[0]['operation']}"]
    assert arrows[0]["x"] == pytest.approx(math.log10(first["bottleneck_operational_intensity"]))
    assert all(a["showarrow"] and a["arrowhead"] for a in arrows)

    assert len(frame.evaluate(TABLE, "compare-table")) == len(result["ops"])
    assert column(frame, "Operation", "compare-table") == [op["operation"] for op in result["ops"]]
    summary = frame.locator("#compare-summary").text_content()
    assert "Program time per step" in summary and "roofline efficiency" in summary
    assert ("B is slower" in summary) == (result["program"]["time_us_delta"] > 0)
    session.shot("compare", frame)
    session.assert_clean()


def test_csv_and_json_exports_match_the_table(session, server):
    frame = session.show(TRAIN, "host0", "total")
    frame.select_option("#filter-bound", "HBM")
    frame.locator("#op-table thead th[data-key=wasted_us] button").click()
    shown = frame.evaluate(TABLE, "op-table")
    headers = frame.evaluate(HEADERS, "op-table")

    with session.page.expect_download() as info:
        frame.click("#model-view [aria-label='Table export'] button:text-is('CSV')")
    download = info.value
    assert download.suggested_filename.endswith(".csv")
    rows = list(csv.reader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    header, body = rows[0], rows[1:]
    # CSV keeps µs and GFLOP/s, and the program's id and name apart.
    in_csv = {"Self time": "Self time (µs)", "Wasted": "Wasted (µs)", "TFLOP/s": "GFLOP/s"}
    expected = [in_csv.get(h, h) for h in headers[:2] + ["Guidance"] + headers[2:]]
    assert header == [*expected, "Program name"]
    assert len(body) == len(shown) > 0
    assert [r[1] for r in body] == [r[1] for r in shown]
    assert {r[header.index("Bound by")] for r in body} == {"HBM"}
    wasted = [float(r[header.index("Wasted (µs)")]) for r in body]
    assert wasted == sorted(wasted, reverse=True)
    for row, cells in zip(body, shown):
        assert float(row[header.index("Self time (µs)")]) == pytest.approx(
            micros_of(cells[headers.index("Self time")]), rel=1e-3
        )

    with session.page.expect_download() as info:
        frame.click("#model-view [aria-label='Table export'] button:text-is('JSON')")
    exported = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert [r["operation"] for r in exported["rows"]] == [r[1] for r in shown]
    assert exported["filters"]["boundBy"] == "HBM"

    with session.page.expect_download() as info:
        frame.click("#model-view [aria-label='Chart export'] button:text-is('SVG')")
    assert Path(info.value.path()).read_text(encoding="utf-8").lstrip().startswith("<svg")
    session.assert_clean()


def test_dark_mode_follows_tensorboard_live(session, server):
    frame = session.show(TRAIN, "host0", "total")
    colours = """() => [getComputedStyle(document.body).backgroundColor,
      getComputedStyle(document.querySelector('#op-chart .main-svg')).backgroundColor,
      document.getElementById('op-chart')._fullLayout.paper_bgcolor]"""
    assert frame.evaluate(colours) == ["rgb(255, 255, 255)", "rgb(255, 255, 255)", "#ffffff"]
    session.page.evaluate("document.body.classList.add('dark-mode')")
    frame.wait_for_function(f"() => ({colours})()[1] === 'rgb(30, 31, 34)'")
    assert frame.evaluate(colours) == ["rgb(30, 31, 34)", "rgb(30, 31, 34)", "#1e1f22"]
    program_paper = frame.evaluate(
        "document.getElementById('program-chart')._fullLayout.paper_bgcolor"
    )
    assert program_paper == "#1e1f22"
    session.shot("model_dark", frame)
    session.page.evaluate("document.body.classList.remove('dark-mode')")
    frame.wait_for_function(f"() => ({colours})()[1] === 'rgb(255, 255, 255)'")
    session.assert_clean()


def test_profile_strings_are_shown_as_text_and_run_nothing(session, server):
    frame = session.show(XSS_RUN, "tiny", "total")
    _, ops = records(api(server, "data", run=XSS_RUN, host="tiny", format="json"))
    points = wait_points(frame, sum(map(plottable, ops)))
    assert XSS in column(frame, "Operation")
    assert frame.get_by_text(XSS, exact=True).count() == 2  # its row and its advice line
    # Hover the op: Plotly renders the (escaped) name as text, no element.
    index = [p[2] for p in points].index(f"7:{XSS}")
    frame.evaluate(
        """(i) => { const gd = document.getElementById('op-chart');
          let n = i; for (const [c, t] of gd.data.entries()) {
            if (!(t.meta && t.meta.kind === 'ops')) continue;
            if (n < t.x.length) { Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: n}]); return; }
            n -= t.x.length; } }""",
        index,
    )
    hover = frame.locator("#op-chart .hoverlayer")
    assert XSS in hover.text_content()
    session.page.wait_for_timeout(300)
    assert frame.evaluate("document.querySelectorAll('img').length") == 0
    assert session.page.locator("img[src=x]").count() == 0
    session.shot("xss_profile", frame)
    assert session.dialogs == []
    session.assert_clean()


def test_no_step_markers_and_errors_are_said_in_words(session, server):
    run = "inference_v6e/2026_01_01_00_00_00"
    frame = session.show(run, "host0", "total")
    assert frame.locator("#step-select option").all_text_contents() == ["Total (whole profile)"]
    assert (
        "No step markers in this profile"
        in frame.locator("[data-note=no-step-markers]").text_content()
    )
    # A profile whose devices ran nothing: said so, with the device panel still there.
    frame.select_option("#run-select", EMPTY_RUN)
    wait_view(frame, run=EMPTY_RUN, host="e", step="total")
    assert (
        "This profile has no device ops"
        in frame.locator("#model-view .status.empty").text_content()
    )
    assert "TPU test" in frame.locator("details.device").text_content()
    session.shot("empty_profile", frame)
    # A corrupt profile: the API's own message (HTTP 422), in the page.
    frame.select_option("#run-select", BROKEN_RUN)
    error = frame.locator("#model-view .status.error")
    error.wait_for()
    message = api_error(server, "data", run=BROKEN_RUN, host="h", format="json", step="total")
    assert "not a valid XSpace profile" in message and message in error.text_content()
    session.shot("error_state", frame)
    # The failed request itself is logged by the browser; nothing else may be.
    session.errors = [e for e in session.errors if "status of 422" not in e]
    session.assert_clean()


@pytest.mark.skipif(not SHARED_SAMPLE.is_file(), reason=f"shared sample {SHARED_SAMPLE} not found")
def test_first_paint_of_the_op_chart_for_the_shared_tpu_sample(browser, server):
    """Cold (first load after server start, fresh browser) and cached (reload) first paint."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        session = Session(context, server)
        host = SHARED_SAMPLE.name.removesuffix(".xplane.pb")
        timings = {}
        frame = session.open({"run": SHARED_RUN, "host": host, "tool": "model", "step": "total"})
        for load in ("cold", "cached"):
            if load == "cached":
                session.page.reload()
                frame = session.frame()
            frame.wait_for_function(
                "() => window.__roofline && window.__roofline.opChartFirstPaintMs", timeout=120_000
            )
            timings[load] = frame.evaluate("window.__roofline")
        wait_view(frame, run=SHARED_RUN, host=host, step="total")
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "first_paint.json").write_text(json.dumps(timings, indent=2))
        session.shot("shared_tpu_sample", frame)
        print({k: round(v["opChartFirstPaintMs"]) for k, v in timings.items()})
        assert 0 < timings["cached"]["opChartFirstPaintMs"] < 30_000
        assert 0 < timings["cold"]["opChartFirstPaintMs"] < 120_000
        session.assert_clean()
    finally:
        context.close()


def plottable_without_peaks(r: dict) -> bool:
    return r.get("measured_flop_rate", 0) > 0 and r.get("operational_intensity", 0) > 0


def chart_x(r: dict) -> float:
    """Where the tab puts a record: its bottleneck intensity, or without peaks its
    operational intensity (FLOPs per byte accessed)."""
    return r.get("bottleneck_operational_intensity", 0) or r.get("operational_intensity", 0)


@pytest.mark.skipif(not CPU_SAMPLE.is_file(), reason=f"shared CPU sample {CPU_SAMPLE} not found")
def test_a_cpu_run_without_peaks_places_every_op_and_a_device_draws_roofs(session, server):
    frame = session.show(CPU_RUN, "vm", "total")
    data = api(server, "data", run=CPU_RUN, host="vm", format="json")
    assert data["device"]["peaks_known"] is False and data["device"]["main_memory"] == "DRAM"
    program, ops = records(data)
    with_cost = [r for r in ops if int(r.get("flops", 0)) > 0 and int(r["bytes_accessed"]) > 0]
    assert (len(with_cost), len(ops)) == (163, 195)  # the rest have no FLOPs (copies, ...)
    assert all(r.get("bottleneck_operational_intensity", 0) == 0 for r in ops)  # no bound
    points = wait_points(frame, len(with_cost))
    expected = {
        key(r): (r["operational_intensity"], r["measured_flop_rate"] * G) for r in with_cost
    }
    assert sorted(p[2] for p in points) == sorted(expected)
    for x, y, k in points:
        assert math.isclose(x, expected[k][0]) and math.isclose(y, expected[k][1])
    traces = frame.evaluate(TRACES, "op-chart")
    assert not [t for t in traces if t["meta"].get("kind") in ("roof", "ceiling", "ridge")]
    star = next(t for t in traces if t["meta"].get("kind") == "program")
    assert star["x"] == pytest.approx([program["operational_intensity"]])  # 18.1 FLOP/byte
    assert star["y"] == pytest.approx([program["measured_flop_rate"] * G])  # 33 GFLOP/s
    assert frame.locator("[data-note=plotted]").text_content() == (
        f"{len(with_cost)} of {len(ops)} ops on the chart."
    )
    assert (
        frame.locator("[data-note=not-plotted]")
        .text_content()
        .startswith(f"{len(ops) - len(with_cost)} ops have no FLOPs or no byte counts")
    )
    note = frame.locator("[data-note=no-roofs]").text_content()
    assert "No roofs: no device peaks are known" in note and "operational intensity" in note
    assert frame.locator("#calibrate-button").is_enabled()
    assert "no roof known" in frame.locator("[data-note=program]").text_content()
    panel = frame.locator("details.device").text_content()
    assert "DRAM" in panel and "0 FLOP/s" not in panel and "HBM" not in panel
    assert "DRAM GB/s" in frame.evaluate(HEADERS, "op-table")
    steps = [r for r in data["database"]["roofline_model_record"] if r["hlo_name"] == "Program"]
    shown = sum(
        t["n"]
        for t in frame.evaluate(TRACES, "program-chart")
        if t["meta"].get("kind") == "program-points"
    )
    assert shown == len([r for r in steps if r["include_infeed_outfeed"]]) == 12  # 10 steps
    session.shot("cpu_no_peaks", frame)

    # A built-in device from the note: roofs drawn, the same points judged by it.
    frame.select_option("#note-peaks-select", "h100-sxm")
    wait_view(frame, run=CPU_RUN, host="vm", step="total")
    frame.wait_for_function(ROOF_DRAWN)
    judged = api(server, "data", run=CPU_RUN, host="vm", format="json", peaks="h100-sxm")
    device = judged["device"]
    assert device["peaks_source"] == "built-in table (NVIDIA H100 SXM5 80 GB)"
    assert [m["name"] for m in device["memories"]] == ["DRAM"]
    _, judged_ops = records(judged)
    expected = {
        key(r): (chart_x(r), r["measured_flop_rate"] * G) for r in judged_ops if plottable(r)
    }
    assert len(expected) == len(with_cost)  # the same ops, now with a bound
    points = wait_points(frame, len(expected))
    for x, y, k in points:
        assert math.isclose(x, expected[k][0]) and math.isclose(y, expected[k][1])
    traces = frame.evaluate(TRACES, "op-chart")
    roof = next(t for t in traces if t["meta"].get("kind") == "roof")
    assert roof["meta"]["memory"] == "DRAM"
    assert roof["y"][0] / roof["x"][0] == pytest.approx(device["memories"][0]["peak_gbps"] * G)
    ceilings = {t["meta"]["gflops"] for t in traces if t["meta"].get("kind") == "ceiling"}
    assert device["peak_flop_rate_gflops"] in ceilings
    assert frame.locator("[data-note=no-roofs]").count() == 0
    assert frame.locator("#peaks-select").input_value() == "h100-sxm"
    assert "H100" in frame.locator("#peaks-source .value").text_content()
    assert set(column(frame, "Bound by")) <= {"DRAM", "Compute"}
    session.shot("cpu_h100_peaks", frame)
    frame.select_option("#peaks-select", "")
    wait_view(frame, run=CPU_RUN, host="vm", step="total")
    frame.locator("[data-note=no-roofs]").wait_for()

    # Compare without peaks: the ops of step 1 against the average step, placed the same way.
    frame.select_option("#step-select", "1")
    wait_view(frame, run=CPU_RUN, host="vm", step="1")
    frame.select_option("#tool-select", "compare")
    frame.wait_for_selector("#a-run")
    a = {"run": CPU_RUN, "host": "vm", "step": "1"}
    b = {"run": CPU_RUN, "host": "vm", "step": "average"}
    for side, want in (("a", a), ("b", b)):  # earlier tests may have left other sides
        if frame.locator(f"#{side}-run").input_value() != CPU_RUN:
            frame.select_option(f"#{side}-run", CPU_RUN)
            wait_view(frame, "compare-view", **{side: {**want, "step": "total"}})
        if frame.locator(f"#{side}-step").input_value() != want["step"]:
            frame.select_option(f"#{side}-step", want["step"])
    wait_view(frame, "compare-view", a=a, b=b)
    notes = frame.locator("#compare-view .notes").text_content()
    assert "No peaks known: no roofs" in notes
    _, ops_a = records(api(server, "data", run=CPU_RUN, host="vm", format="json", step=1), step=1)
    matched = [r for r in ops_a if plottable_without_peaks(r)]
    arrows = frame.evaluate(
        "() => document.getElementById('compare-chart').layout.annotations"
        ".filter((a) => a.name === 'op-arrow').length"
    )
    assert 0 < arrows <= len(matched)
    summary = frame.locator("#compare-summary").text_content()
    assert "no peaks known, so no roofline efficiency or bound" in summary
    assert "roofline efficiency 0.0%" not in summary
    session.shot("cpu_compare_no_peaks", frame)
    frame.select_option("#tool-select", "model")
    wait_view(frame, run=CPU_RUN, host="vm", step="1")
    session.assert_clean()


@pytest.mark.skipif(not CPU_SAMPLE.is_file(), reason=f"shared CPU sample {CPU_SAMPLE} not found")
def test_long_step_lists_and_many_messages_are_summarised(context, server):
    """A profile whose answers list 1,498 cut steps, a warning naming all of them and 30 notes
    (the server's answers are rewritten in the browser): every note stays a line or two."""
    numbers = list(range(1498))
    long_warning = f"1,498 incomplete step(s) cut (step {', '.join(map(str, numbers))}) are out."
    steps = [{"step_num": n, "complete": False, "duration_us": 10.0} for n in numbers]

    def rewrite(route):
        response = route.fetch()
        body = response.json()
        if "/steps?" in route.request.url:
            body = {"has_step_markers": True, "steps": steps}
        else:
            body["steps"] = steps
            body["database"]["diagnostics"].setdefault("warnings", []).append(long_warning)
            body["notes"] = [f"custom-call.{i}: cost unknown" for i in range(30)]
        route.fulfill(response=response, body=json.dumps(body))

    session = Session(context, server)
    try:
        session.page.route("**/data/plugin/roofline/steps?*", rewrite)
        session.page.route("**/data/plugin/roofline/data?*", rewrite)
        frame = session.open({"run": CPU_RUN, "host": "vm", "tool": "model", "step": "total"})
        wait_view(frame, run=CPU_RUN, host="vm", step="total")
        sidebar = frame.locator(".sidebar [data-note=incomplete-steps]").text_content()
        assert sidebar == (
            "1,498 steps, 0–1,497 were cut by the profile window (incomplete) and are left out "
            "of the average."
        )
        note = frame.locator("#model-view [data-note=incomplete-steps]").text_content()
        assert note.startswith("1,498 steps, 0–1,497 were cut by the profile window")
        panel = frame.locator("details.device .messages")
        warning = panel.locator("li.warning", has_text="incomplete step(s)").text_content()
        assert "(step 0, 1, …, 1497 (1,498 in all))" in warning and len(warning) < 200
        notes = panel.locator("li.info", has_text="cost unknown")
        assert notes.count() == 8
        more = panel.locator("[data-note=more-messages]").text_content()
        assert "… and 22 more" in more
        lengths = frame.evaluate(
            "[...document.querySelectorAll('.hint, .note, .messages li')]"
            ".map((n) => n.textContent.length)"
        )
        assert len(lengths) > 10 and max(lengths) < 300  # every note a line or two
        session.shot("long_lists", frame)
        session.assert_clean()
    finally:
        session.page.close()


@pytest.mark.skipif(not CPU_SAMPLE.is_file(), reason=f"shared CPU sample {CPU_SAMPLE} not found")
def test_measuring_this_machine_from_the_note_draws_its_roofs(context, server, calibration_dir):
    """The button starts a measurement, the tab polls it, then judges by it. The 10 s
    measurement itself is stood in for: its POST is answered in the browser, and its peak file
    appears in the server's calibration folder while the tab polls; the server reads it."""
    measured = {
        "name": "calibrated test-machine",
        "vendor": "CPU",
        "dtype_tflops": {"fp32": 2.0, "fp64": 1.0},
        "hbm_gbps": 40.0,
        "source": "calibration (stand-in, for tests)",
    }
    path = Path(calibration_file(str(calibration_dir)))  # the server runs on this machine
    running = json.dumps({"state": "running", "available": False, "running_s": 1})
    posts, polls = [], []

    def calibrate_route(route):
        if route.request.method == "POST":
            posts.append(route.request.headers.get("x-roofline-calibrate"))
            route.fulfill(status=202, content_type="application/json", body=running)
        elif not polls:
            polls.append("running")
            path.write_text(json.dumps(measured), encoding="utf-8")  # the measurement ends
            route.fulfill(content_type="application/json", body=running)
        else:
            polls.append("server")
            route.continue_()

    session = Session(context, server)
    try:
        session.page.route("**/data/plugin/roofline/calibrate", calibrate_route)
        frame = session.open({"run": CPU_RUN, "host": "vm", "tool": "model", "step": "total"})
        wait_view(frame, run=CPU_RUN, host="vm", step="total")
        assert frame.locator("[data-note=no-roofs]").count() == 1
        frame.click("#calibrate-button")
        frame.wait_for_function(
            ROOF_DRAWN,
            timeout=30_000,
        )
        wait_view(frame, run=CPU_RUN, host="vm", step="total")
        assert posts == ["1"] and polls[0] == "running" and "server" in polls
        assert frame.locator("#peaks-select").input_value() == "calibrated"
        data = api(server, "data", run=CPU_RUN, host="vm", format="json", peaks="calibrated")
        assert data["device"]["peaks_source"] == "calibration of this machine"
        traces = frame.evaluate(TRACES, "op-chart")
        roof = next(t for t in traces if t["meta"].get("kind") == "roof")
        assert roof["meta"]["memory"] == "DRAM" and roof["meta"]["gbps"] == 40.0
        ceilings = sorted(t["meta"]["gflops"] for t in traces if t["meta"].get("kind") == "ceiling")
        assert ceilings == [1000.0, 2000.0]  # fp64 and fp32, in GFLOP/s
        assert frame.locator("[data-note=no-roofs]").count() == 0
        assert "calibration of this machine" in frame.locator("#peaks-source .value").text_content()
        session.shot("cpu_calibrated", frame)
        frame.select_option("#peaks-select", "")
        frame.locator("[data-note=no-roofs]").wait_for()
        assert (
            "Use this machine's measured peaks" in frame.locator("#use-calibration").text_content()
        )
        session.assert_clean()
    finally:
        session.page.close()
        path.unlink(missing_ok=True)


@pytest.mark.skipif(not TORCH_GPU.is_file(), reason=f"shared PyTorch sample {TORCH_GPU} not found")
def test_a_pytorch_gpu_run_shows_the_a100_its_ops_and_its_steps(session, server):
    frame = session.show(TORCH_GPU_RUN, "control", "total")
    data = api(server, "data", run=TORCH_GPU_RUN, host="control", format="json")
    device = data["device"]
    assert device["device_type"] == "NVIDIA A100-PG509-200 (compute 8.0, 108 SMs)"
    assert device["peak_flop_rate_gflops"] == 312_000.0
    assert [(m["name"], m["peak_gbps"]) for m in device["memories"]] == [
        ("HBM2", 1555.0),  # the A100 40 GB's memory, by its kind
        ("Shared memory / L1", 38983.7),
    ]
    panel = frame.locator("details.device").text_content()
    assert "NVIDIA A100-PG509-200" in panel and "A100 SXM 40 GB" in panel
    assert "bf16 compute312 TFLOP/s" in panel and "HBM21.555 TB/s" in panel
    # The kernels no op launched are rows too, named by the annotation around their launch.
    assert "not attributed to any op" not in panel
    assert "882 GPU memory copies and sets (54.75 ms) count in device time" in panel
    assert "HLO" not in panel  # PyTorch ops are not called HLO ops

    program, ops = records(data)
    with_cost = [r for r in ops if plottable(r)]
    assert all(int(r["flops"]) > 0 and int(r["bytes_accessed"]) > 0 for r in with_cost)
    assert 10 < len(with_cost) < len(ops)
    points = wait_points(frame, len(with_cost))
    expected = {
        key(r): (r["bottleneck_operational_intensity"], r["measured_flop_rate"] * G)
        for r in with_cost
    }
    assert sorted(p[2] for p in points) == sorted(expected)  # one point per op
    for x, y, k in points:
        assert math.isclose(x, expected[k][0]) and math.isclose(y, expected[k][1])
    names = column(frame, "Operation")
    assert "aten::mm" in names and len(names) == len(ops)
    assert "Optimizer.step#FusedAdam.step" in names
    assert (
        len([t for t in frame.evaluate(TRACES, "op-chart") if t["meta"].get("kind") == "roof"]) == 2
    )
    session.shot("pytorch_a100", frame)

    values = frame.locator("#step-select option").evaluate_all("(os) => os.map((o) => o.value)")
    assert [v for v in values if v.isdigit()] == [str(n) for n in range(1009, 1015)]
    frame.select_option("#step-select", "1011")
    wait_view(frame, run=TORCH_GPU_RUN, host="control", step="1011")
    step = api(server, "data", run=TORCH_GPU_RUN, host="control", format="json", step=1011)
    step_program, step_ops = records(step, step=1011)
    assert all(r["record_type"] == "PER_STEP" and r["step_num"] == 1011 for r in step_ops)
    assert step_program["total_time_in_us"] < program["total_time_in_us"] / 5  # 1 of 6 steps
    expected = {
        key(r): (r["bottleneck_operational_intensity"], r["measured_flop_rate"] * G)
        for r in step_ops
        if plottable(r)
    }
    for x, y, k in wait_points(frame, len(expected)):
        assert math.isclose(x, expected[k][0]) and math.isclose(y, expected[k][1])
    assert frame.locator(".step-table tr.selected th").text_content() == "Step 1011"
    session.shot("pytorch_a100_step1011", frame)
    session.assert_clean()


@pytest.mark.skipif(not TORCH_CPU.is_file(), reason=f"shared PyTorch sample {TORCH_CPU} not found")
def test_a_pytorch_cpu_run_without_peaks_places_ops_by_operational_intensity(session, server):
    frame = session.show(TORCH_CPU_RUN, "worker0", "total")
    data = api(server, "data", run=TORCH_CPU_RUN, host="worker0", format="json")
    assert data["device"]["peaks_known"] is False
    program, ops = records(data)
    with_cost = [r for r in ops if plottable_without_peaks(r)]
    assert all(r.get("bottleneck_operational_intensity", 0) == 0 for r in ops)  # no bound
    # Every op with self time is a row; 24 of them (aten::fill_, views...) have no FLOPs.
    assert (len(with_cost), len(ops)) == (14, 38)
    expected = {
        key(r): (r["operational_intensity"], r["measured_flop_rate"] * G) for r in with_cost
    }
    points = wait_points(frame, len(with_cost))
    assert sorted(p[2] for p in points) == sorted(expected)
    for x, y, k in points:
        assert math.isclose(x, expected[k][0]) and math.isclose(y, expected[k][1])
    traces = frame.evaluate(TRACES, "op-chart")
    assert not [t for t in traces if t["meta"].get("kind") in ("roof", "ceiling", "ridge")]
    star = next(t for t in traces if t["meta"].get("kind") == "program")
    assert star["x"] == pytest.approx([program["operational_intensity"]])
    note = frame.locator("[data-note=no-roofs]").text_content()
    assert "No roofs: no device peaks are known" in note and "operational intensity" in note
    assert frame.locator("[data-note=plotted]").text_content() == "14 of 38 ops on the chart."
    names = column(frame, "Operation")
    assert {"aten::mkldnn_convolution", "aten::mm", "aten::addmm"} <= set(names)
    assert len(names) == 38
    session.shot("pytorch_cpu_no_peaks", frame)
    session.assert_clean()


# ------------------------------------------------------- where the time goes, off-host links

# Ops a roofline cannot judge, by name (the test's own list, from the XLA and NCCL names).
UNJUDGED_NAME = (
    r"^(all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all|send|recv|"
    r"copy-start|copy-done|infeed|outfeed|while)(-start|-done)?(\.\d+)?$|"
    r"^record_param_comms$|^nccl|^c10d::"
)


def top_judged_by_wasted_time(data: dict) -> str:
    """The op with the most time x (1 - min(roofline efficiency, 1)), leaving out the ops the
    roofline cannot judge: collectives, copies, infeed/outfeed, loops, and ops without FLOPs
    and bytes."""
    _, ops = records(data)
    judged = [
        r
        for r in ops
        if not re.search(UNJUDGED_NAME, r["hlo_name"])
        and r.get("hlo_category") != "communication (NCCL)"
        and (r.get("measured_flop_rate", 0) > 0 or r.get("measured_memory_bw", 0) > 0)
    ]
    wasted = {
        r["hlo_name"]: r["total_time_in_us"] * (1 - min(r.get("roofline_efficiency", 0), 1))
        for r in judged
    }
    return max(wasted, key=wasted.get)


@pytest.mark.parametrize(
    ("run", "host", "before"),
    [(TRAIN, "host0", "all-reduce.7"), (TORCH_GPU_RUN, "control", "record_param_comms")],
)
def test_where_the_time_goes_leads_with_ops_the_roofline_judges(session, server, run, host, before):
    if run == TORCH_GPU_RUN and not TORCH_GPU.is_file():
        pytest.skip(f"shared PyTorch sample {TORCH_GPU} not found")
    frame = session.show(run, host)
    data = api(server, "data", run=run, host=host, format="json")
    panel = frame.locator("section.advice")
    assert panel.locator("h3").text_content() == "Where the time goes"
    items = panel.locator("li").all_text_contents()
    assert items == [a["text"] for a in data["advice"]]  # the server's text, as it is
    first = panel.locator("li.advice-op button").first.text_content()
    assert first == top_judged_by_wasted_time(data) != before
    unjudged = panel.locator("li.advice-unjudged").text_content()
    assert "of device time is communication" in unjudged and "not judged by the roofline" in (
        unjudged
    )
    # The collective is in the table, without a wasted time or a rank.
    row = next(r for r in frame.evaluate(TABLE, "op-table") if r[1].startswith(before))
    headers = frame.evaluate(HEADERS, "op-table")
    assert row[headers.index("Wasted")] == "—" and row[headers.index("Wasted rank")] == ""
    # The first op's line selects it in the table.
    panel.locator("li.advice-op button").first.click()
    assert frame.locator("#op-table tr.selected .op-name").text_content() == first
    session.shot(f"advice_{run.split('/')[0]}", frame)
    session.assert_clean()


@pytest.mark.skipif(not SHARED_SAMPLE.is_file(), reason=f"shared sample {SHARED_SAMPLE} not found")
def test_programs_show_by_their_module_name(session, server):
    frame = session.show(SHARED_RUN, "tpu_inference_2")
    labels = frame.locator("#filter-program option").all_text_contents()
    assert "jit_f (12190760917235803885)" in labels
    headers = frame.evaluate(HEADERS, "op-table")
    programs = {r[headers.index("Program")] for r in frame.evaluate(TABLE, "op-table")}
    assert "jit_f (12190760917235803885)" in programs
    hovers = frame.evaluate(
        "() => document.getElementById('op-chart').data.flatMap((t) => t.text || [])"
    )
    assert any("program jit_f (12190760917235803885)" in h for h in hovers)
    session.assert_clean()


OFF_HOST = """() => {
  const urls = [];
  for (const [selector, attr] of [['a[href]', 'href'], ['form[action]', 'action'],
      ['img[src]', 'src'], ['script[src]', 'src'], ['link[href]', 'href'],
      ['iframe[src]', 'src'], ['source[src]', 'src']]) {
    for (const node of document.querySelectorAll(selector)) urls.push(node.getAttribute(attr));
  }
  return urls.filter((u) => new URL(u, location.href).origin !== location.origin);
}"""

MODEBAR = """() => [...document.querySelectorAll('#op-chart .modebar-btn')].map((b) =>
  `${b.getAttribute('data-title') || ''} ${b.getAttribute('data-attr') || ''}`)"""


def test_nothing_on_the_page_points_off_host_and_the_mode_bar_cannot_share(session, server):
    frame = session.show(TRAIN, "host0")
    frame.hover("#op-chart")
    buttons = frame.evaluate(MODEBAR)
    assert any("Download plot as a PNG" in b for b in buttons)  # the mode bar is drawn
    assert not [b for b in buttons if re.search(r"share|cloud|edit|chart studio", b, re.I)]
    assert frame.locator(".modebar a[href], .plotly-cloud-dialog-box").count() == 0
    assert frame.evaluate(OFF_HOST) == []
    session.assert_clean()


def test_revalidated_files_carry_a_content_type_and_the_log_has_no_warning(session, server):
    url = f"{server}/data/plugin/roofline/static/index.js"
    with urllib.request.urlopen(url) as first:
        etag = first.headers["ETag"]
    request = urllib.request.Request(url, headers={"If-None-Match": etag})
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request)
    answer.value.close()  # its connection, which a later garbage collection would warn of
    assert answer.value.code == 304
    assert answer.value.headers["Content-Type"].startswith("text/javascript")
    session.page.reload()  # the browser revalidates every module: 304s
    frame = session.frame()
    wait_view(frame)
    log = SERVER_LOG["path"].read_text(errors="replace")
    assert "Content-Type is required on a Response" not in log
