"""benchmarks/run.py's measurements: a process that runs out of its memory cap or time is a
clear line in the table, not a crash of the benchmark (1 GB runs of XProf do both)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[1] / "benchmarks" / "run.py"


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("bench_run", RUN)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["bench_run"]


def test_a_run_gives_time_memory_and_output(run):
    result = run.measure([sys.executable, "-c", "print('hi')"], cap_gb=4, timeout=60)
    assert result.ok and result.stdout == "hi\n"
    assert 0 < result.wall < 60 and result.rss > 1


def test_running_out_of_the_cap_is_reported(run):
    code = "x = bytearray(600 * 2**20)"
    result = run.measure([sys.executable, "-c", code], cap_gb=0.4, timeout=60)
    assert result.error.startswith("out of memory at the 0.4 GB cap")
    assert run._cell([result], 8)[0].strip() == "OOM"


def test_a_timeout_kills_and_is_reported(run):
    result = run.measure([sys.executable, "-c", "import time; time.sleep(30)"], 4, timeout=0.5)
    assert result.error.startswith("> 0 s") or result.error.startswith("> 1 s")
    assert result.wall < 10
    assert run._cell([result], 8)[0].strip() == "timeout"
    assert run._ratio([result], [result], "time", 6).strip() == "-"


def test_failures_say_why(run):
    result = run.measure([sys.executable, "-c", "raise SystemExit('no such profile')"], 4, 60)
    assert result.error == "failed (exit 1): no such profile"


def test_kineto_benchmark_measures_the_plain_and_gzipped_trace(tmp_path, capsys):
    """benchmarks/kineto_vs_hta.py (without HTA): one row per format with our export's and
    the JSON floor's figures; both files hold the same trace."""
    import gzip

    script = RUN.parent / "kineto_vs_hta.py"
    spec = importlib.util.spec_from_file_location("bench_kineto", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_kineto"] = module
    try:
        spec.loader.exec_module(module)
        argv = ["--mb", "1", "--repeat", "1", "--no-hta", "--out", str(tmp_path)]
        assert module.main(argv) == 0
    finally:
        del sys.modules["bench_kineto"]
        sys.modules.pop("run", None)
    (plain,) = tmp_path.glob("kineto_1mb_json/*.pt.trace.json")
    (packed,) = tmp_path.glob("kineto_1mb_gz/*.pt.trace.json.gz")
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.startswith(("plain", "gzip"))]
    assert [row[:2] for row in rows] == [["plain", ".json"], ["gzip", ".gz"]]
    for row in rows:
        ours_s, ours_mib, json_s = float(row[3]), float(row[4]), float(row[5])
        assert 0 < ours_s < 60 and ours_mib > 10 and 0 < json_s < 60
        assert row[7:11] == ["-", "-", "-", "-"]  # no HTA


def test_browser_benchmark_prints_each_figure_with_its_target(capsys):
    """benchmarks/browser.py's report (its Chromium runs are the browser tests' business):
    the median first paint of each load, its target and whether it was met."""
    script = RUN.parent / "browser.py"
    spec = importlib.util.spec_from_file_location("bench_browser", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = {
        "cold": [{"opChartFirstPaintMs": ms, "plotlyLoadedMs": 900.0} for ms in (2600, 2000, 2100)],
        "warm": [{"opChartFirstPaintMs": ms} for ms in (1300.0, 1100.0)],
    }
    assert module._report("plugin page", found, module.TARGETS_S) is False
    out = capsys.readouterr().out
    assert "cold: op chart first paint  2.10 s (median of 3: 2.60 2.00 2.10)" in out
    assert "target <= 2.5 s: met" in out and "target <= 1.0 s: NOT MET" in out
    assert "plotlyLoaded 0.90" in out
