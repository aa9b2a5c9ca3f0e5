"""Browser timings of the roofline tab: navigation to the op chart's first paint in Chromium,
and a step switch on a large cached profile.

    python benchmarks/browser.py [--repeat N] [--warm N] [--profile FILE] [--tensorboard]
                                 [--step-profile FILE] [--step-switches N]

The profile (default: the shared TPU sample `xprof/tpu_inference_2.xplane.pb`) is linked into
a temporary logdir (nothing is written next to it). The script starts TensorBoard with the
plugin on 127.0.0.1, warms the server with one `data` request (the profile is converted
before the browser asks) and one of plotly.min.js (gzipped once per server), then opens the
plugin's own page, the one TensorBoard puts in the tab's iframe
(`/data/plugin_entry.html?name=roofline`), in Debian's Chromium:

- cold: a fresh browser profile (empty HTTP and code caches), first navigation;
- warm: the same browser profile, later navigations (HTTP cache and compiled code kept).

The figure is `window.__roofline.opChartFirstPaintMs`: `performance.now()` once the op chart's
first view (drawn with its data before the chart library has run, frontend/static_chart.js)
has been painted, i.e. milliseconds from the start of the navigation. Each figure is the
median of the repeats, printed with its target (warm <= 1.0 s, cold <= 2.5 s); beside it,
Plotly's own first draw of the chart (`opChartPlotlyFirstPaintMs`, its first
`plotly_afterplot`: hover and zoom from then on), which has no target.
`--tensorboard` also times the whole TensorBoard page (`/#roofline`, the tab in its iframe),
from the top page's navigation, with the same targets (TensorBoard's own app loads first).

`--step-profile FILE` (e.g. the ~300 MB GPU profile `benchmarks/run.py` generates) times a
step switch: TensorBoard is started on that profile alone and warmed with its first `data`
request (the conversion is cached before the browser asks), the plugin page opens on the
Total, then steps the page has not asked for before are chosen as a user would (once the
page has had no request in flight for half a second, as after a look at the view), each timed
from the click (or the Enter in the step box) to the op chart's next paint with that step's
records (`window.__roofline.opChartLastPaintMs`): the next step (the ▶ button, which the page
may have fetched ahead) and steps far from any asked for (typed into the step box). Target:
each drawn <= 0.5 s after the click.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared")) / "data"
SAMPLE = SHARED / "xprof" / "tpu_inference_2.xplane.pb"
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TARGETS_S = {"cold": 2.5, "warm": 1.0}
STEP_TARGET_S = 0.5  # a step not asked for before, drawn after the click
# The model view's state once the op chart shows `step` (its records and its paint).
STEP_DRAWN = """([step, clicked]) => {
  const view = document.getElementById('model-view');
  const marks = window.__roofline || {};
  if (!view || view.dataset.state !== 'ready' || !view.dataset.view) return false;
  if (JSON.parse(view.dataset.view).step !== step) return false;
  return marks.opChartLastPaintMs > clicked ? marks.opChartLastPaintMs : false;
}"""
CLICK_TIME = """() => new Promise((resolve) => {
  window.__rooflineInput = null;
  for (const type of ['click', 'keydown'])
    document.addEventListener(type, () => {
      if (window.__rooflineInput === null) window.__rooflineInput = performance.now();
    }, {capture: true, once: true});
  resolve(true);
})"""
PAINTED = "() => window.__roofline && window.__roofline.opChartFirstPaintMs"
# Both paints: the first view, then Plotly's chart (what _navigate waits for).
BOTH_PAINTED = (
    "() => window.__roofline && window.__roofline.opChartFirstPaintMs"
    " && window.__roofline.opChartPlotlyFirstPaintMs"
)
# Marks the page keeps besides the op chart's first paint (see frontend/timing.js).
MARKS = (
    "renderStartMs",
    "dataLoadedMs",
    "panelShownMs",
    "plotlyLoadedMs",
    "opChartPlotlyFirstPaintMs",
    "opChartFirstPaintMs",
)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=600) as response:
        return response.read()


def _navigate(page, url: str, frame_of=None) -> dict:
    """Opens `url` and returns the page's marks (ms) once the op chart has painted, as its
    first view and as Plotly's chart."""
    page.goto("about:blank")
    page.goto(url, wait_until="commit")
    frame = page.main_frame if frame_of is None else frame_of(page)
    frame.wait_for_function(BOTH_PAINTED, timeout=120_000)
    return frame.evaluate("({...window.__roofline})")


def _plugin_frame(page):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for frame in page.frames:
            if "plugin_entry" in frame.url:
                return frame
        page.wait_for_timeout(20)
    raise SystemExit("the plugin iframe never appeared")


def measure(url: str, repeat: int, warm: int, *, top: bool = False) -> dict[str, list[dict]]:
    """Cold and warm marks of `repeat` fresh browser profiles, each navigated 1 + `warm` times."""
    from playwright.sync_api import sync_playwright

    found: dict[str, list[dict]] = {"cold": [], "warm": []}
    with sync_playwright() as playwright:
        for _ in range(repeat):
            with tempfile.TemporaryDirectory(prefix="tb-roofline-chromium-") as profile:
                context = playwright.chromium.launch_persistent_context(
                    profile,
                    executable_path=CHROMIUM,
                    args=LAUNCH_ARGS,
                    viewport={"width": 1280, "height": 900},
                )
                try:
                    page = context.new_page()
                    frame_of = _plugin_frame if top else None
                    for i in range(1 + warm):
                        marks = _navigate(page, url, frame_of)
                        if top:
                            _from_top(marks)
                        found["cold" if i == 0 else "warm"].append(marks)
                finally:
                    context.close()
    return found


def _from_top(marks: dict) -> None:
    """The iframe's marks moved to the top page's clock (its navigation's start)."""
    shift = marks["opChartFirstPaintFromTopMs"] - marks["opChartFirstPaintMs"]
    for mark in MARKS:
        if marks.get(mark) is not None:
            marks[mark] += shift


def _report(
    title: str,
    found: dict[str, list[dict]],
    targets: dict[str, float] | None,
    marks_from: str = "the navigation",
    page: str = "",
) -> bool:
    """Prints each load's figures (each line named by ``page`` when given); True when every
    target is met."""
    print(title)
    met_all = True
    for load in ("cold", "warm"):
        runs = found[load]
        paint = statistics.median(m["opChartFirstPaintMs"] for m in runs) / 1000
        parts = []
        for mark in MARKS[:-1]:
            values = [m[mark] for m in runs if m.get(mark) is not None]
            if values:
                parts.append(f"{mark.removesuffix('Ms')} {statistics.median(values) / 1000:.2f}")
        each = " ".join(f"{m['opChartFirstPaintMs'] / 1000:.2f}" for m in runs)
        name = f"{page}, {load}" if page else f"{load:4}"
        line = f"  {name}: op chart first paint {paint:5.2f} s (median of {len(runs)}: {each})"
        if targets is not None:
            met = paint <= targets[load]
            met_all &= met
            line += f"  target <= {targets[load]:.1f} s: {'met' if met else 'NOT MET'}"
        print(line)
        plotly = [
            m["opChartPlotlyFirstPaintMs"] for m in runs if m.get("opChartPlotlyFirstPaintMs")
        ]
        if plotly:
            each = " ".join(f"{ms / 1000:.2f}" for ms in plotly)
            print(
                f"  {name}: op chart drawn by Plotly {statistics.median(plotly) / 1000:5.2f} s "
                f"(median of {len(plotly)}: {each})"
            )
        print(f"        marks (median, s from {marks_from}): {', '.join(parts)}")
    return met_all


def _steps_of(base: str, run: str, host: str) -> list[int]:
    import json

    body = json.loads(_get(f"{base}/data/plugin/roofline/steps?run={run}&host={host}"))
    return [s["step_num"] for s in body["steps"]]


def step_switches(base: str, run: str, host: str, switches: int) -> list[dict]:
    """Times step switches in one warm browser: the next step (▶) and steps typed in the step
    box far from any asked for; each {kind, step, seconds}."""
    from playwright.sync_api import sync_playwright

    numbers = _steps_of(base, run, host)
    if len(numbers) < 4:
        raise SystemExit(f"the step profile has {len(numbers)} steps: too few to switch")
    far = [numbers[len(numbers) * (k + 1) // (switches + 1)] for k in range(switches)]
    found = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            quiet = _quiet_network(page)
            page.goto(f"{base}/data/plugin_entry.html?name=roofline", wait_until="commit")
            page.wait_for_function(PAINTED, timeout=300_000)
            plan = [("typed", step) for step in far]
            plan.insert(1, ("next", None))  # ▶ after the first typed step: its neighbour
            for kind, step in plan:
                quiet()  # as a user who looks at the view before choosing another step
                page.evaluate(CLICK_TIME)
                if kind == "next":
                    button = page.locator("#step-select-next")
                    step = int(button.get_attribute("title").split("(")[-1].rstrip(")"))
                    button.click()
                else:
                    box = page.locator("#step-select-input")
                    box.fill(str(step))
                    box.press("Enter")
                clicked = page.evaluate("() => window.__rooflineInput")
                painted = page.wait_for_function(
                    STEP_DRAWN, arg=[str(step), clicked], timeout=120_000, polling=10
                ).json_value()
                found.append({"kind": kind, "step": step, "seconds": (painted - clicked) / 1000})
        finally:
            browser.close()
    return found


def _quiet_network(page, quiet_ms: int = 500, timeout_s: float = 120):
    """A function that waits until the page has had no request in flight for ``quiet_ms``."""
    flying: set = set()
    page.on("request", lambda request: flying.add(request))
    page.on("requestfinished", lambda request: flying.discard(request))
    page.on("requestfailed", lambda request: flying.discard(request))

    def wait() -> None:
        deadline = time.monotonic() + timeout_s
        calm_since = None
        while time.monotonic() < deadline:
            page.wait_for_timeout(50)
            if flying:
                calm_since = None
            elif calm_since is None:
                calm_since = time.monotonic()
            elif time.monotonic() - calm_since >= quiet_ms / 1000:
                return

    return wait


def _report_steps(found: list[dict]) -> bool:
    met_all = True
    for kind, what in (("next", "the next step (▶)"), ("typed", "a step typed in the box")):
        runs = [f for f in found if f["kind"] == kind]
        if not runs:
            continue
        worst = max(f["seconds"] for f in runs)
        met = worst <= STEP_TARGET_S
        met_all &= met
        each = " ".join(f"{f['step']}: {f['seconds']:.2f}" for f in runs)
        print(
            f"  step switch, {what}: slowest {worst:.2f} s after the click ({each})  "
            f"target <= {STEP_TARGET_S:.1f} s: {'met' if met else 'NOT MET'}"
        )
    return met_all


def _step_profile(args) -> bool:
    """The step switches on ``args.step_profile``, in a TensorBoard of its own."""
    with tempfile.TemporaryDirectory(prefix="tb-roofline-logdir-") as logdir:
        run = Path(logdir, "plugins", "profile", "run1")
        run.mkdir(parents=True)
        os.symlink(args.step_profile.resolve(), run / args.step_profile.name)
        host = args.step_profile.name.removesuffix(".xplane.pb")
        from serve import start_tensorboard  # benchmarks/serve.py

        proc, base = start_tensorboard(logdir)
        try:
            start = time.perf_counter()
            _get(f"{base}/data/plugin/roofline/data?run=run1&host={host}&format=json&step=total")
            took = time.perf_counter() - start
            print(f"step profile {args.step_profile.name}: converted and cached in {took:.1f} s")
            found = step_switches(base, "run1", host, args.step_switches)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return _report_steps(found)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", type=Path, default=SAMPLE, help="an .xplane.pb file")
    parser.add_argument("--repeat", type=int, default=3, help="fresh browser profiles (cold)")
    parser.add_argument("--warm", type=int, default=3, help="warm navigations per profile")
    parser.add_argument(
        "--tensorboard", action="store_true", help="also time the whole TensorBoard page"
    )
    parser.add_argument(
        "--step-profile", type=Path, help="time step switches on this (large) profile too"
    )
    parser.add_argument("--step-switches", type=int, default=3, help="steps typed in the box")
    args = parser.parse_args(argv)
    if not args.profile.is_file():
        print(f"no profile at {args.profile}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tb-roofline-logdir-") as logdir:
        run = Path(logdir, "plugins", "profile", "run1")
        run.mkdir(parents=True)
        os.symlink(args.profile.resolve(), run / args.profile.name)
        host = args.profile.name.removesuffix(".xplane.pb")
        from serve import start_tensorboard  # benchmarks/serve.py

        proc, base = start_tensorboard(logdir)
        try:
            start = time.perf_counter()
            _get(f"{base}/data/plugin/roofline/data?run=run1&host={host}&format=json&step=total")
            print(f"server warmed: first data request {time.perf_counter() - start:.2f} s")
            # The server gzips plotly.min.js once, on its first request; a warm server has.
            _get(f"{base}/data/plugin/roofline/static/plotly.min.js")
            url = f"{base}/data/plugin_entry.html?name=roofline"
            found = measure(url, args.repeat, args.warm)
            ok = _report(
                f"plugin page {url} ({args.profile.name}):", found, TARGETS_S, page="plugin page"
            )
            if args.tensorboard:
                top = measure(f"{base}/#roofline", args.repeat, args.warm, top=True)
                title = f"TensorBoard page {base}/#roofline (from the top page's navigation):"
                ok &= _report(
                    title, top, TARGETS_S, "the top page's navigation", "TensorBoard page"
                )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    if args.step_profile is not None:
        ok &= _step_profile(args)
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
