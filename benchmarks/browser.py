"""Browser timings of the roofline tab: navigation to the op chart's first paint in Chromium.

    python benchmarks/browser.py [--repeat N] [--warm N] [--profile FILE] [--tensorboard]

The profile (default: the shared TPU sample `xprof/tpu_inference_2.xplane.pb`) is linked into
a temporary logdir (nothing is written next to it). The script starts TensorBoard with the
plugin on 127.0.0.1, warms the server with one `data` request (the profile is converted
before the browser asks) and one of plotly.min.js (gzipped once per server), then opens the
plugin's own page, the one TensorBoard puts in the tab's iframe
(`/data/plugin_entry.html?name=roofline`), in Debian's Chromium:

- cold: a fresh browser profile (empty HTTP and code caches), first navigation;
- warm: the same browser profile, later navigations (HTTP cache and compiled code kept).

The figure is `window.__roofline.opChartFirstPaintMs`: `performance.now()` at the op chart's
first `plotly_afterplot`, i.e. milliseconds from the start of the navigation. Each figure is
the median of the repeats, printed with its target (warm <= 1.0 s, cold <= 2.5 s).
`--tensorboard` also times the whole TensorBoard page (`/#roofline`, the tab in its iframe),
from the top page's navigation; it has no target (TensorBoard's own app loads first).
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
PAINTED = "() => window.__roofline && window.__roofline.opChartFirstPaintMs"
# Marks the page keeps besides the op chart's first paint (see frontend/timing.js).
MARKS = ("plotlyLoadedMs", "dataLoadedMs", "panelShownMs", "opChartFirstPaintMs")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=600) as response:
        return response.read()


def _navigate(page, url: str, frame_of=None) -> dict:
    """Opens `url` and returns the page's marks (ms) once the op chart has painted."""
    page.goto("about:blank")
    page.goto(url, wait_until="commit")
    frame = page.main_frame if frame_of is None else frame_of(page)
    frame.wait_for_function(PAINTED, timeout=120_000)
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
                            marks["opChartFirstPaintMs"] = marks["opChartFirstPaintFromTopMs"]
                        found["cold" if i == 0 else "warm"].append(marks)
                finally:
                    context.close()
    return found


def _report(
    title: str,
    found: dict[str, list[dict]],
    targets: dict[str, float] | None,
    marks_from: str = "the navigation",
) -> bool:
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
        line = f"  {load:4}: op chart first paint {paint:5.2f} s (median of {len(runs)}: {each})"
        if targets is not None:
            met = paint <= targets[load]
            met_all &= met
            line += f"  target <= {targets[load]:.1f} s: {'met' if met else 'NOT MET'}"
        print(line)
        print(f"        marks (median, s from {marks_from}): {', '.join(parts)}")
    return met_all


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", type=Path, default=SAMPLE, help="an .xplane.pb file")
    parser.add_argument("--repeat", type=int, default=3, help="fresh browser profiles (cold)")
    parser.add_argument("--warm", type=int, default=3, help="warm navigations per profile")
    parser.add_argument(
        "--tensorboard", action="store_true", help="also time the whole TensorBoard page"
    )
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
            ok = _report(f"plugin page {url} ({args.profile.name}):", found, TARGETS_S)
            if args.tensorboard:
                top = measure(f"{base}/#roofline", args.repeat, args.warm, top=True)
                title = f"TensorBoard page {base}/#roofline (no target; from the top page):"
                _report(title, top, None, "the iframe's navigation")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print("targets met" if ok else "targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
