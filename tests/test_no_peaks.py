"""Profiles without peaks (every CPU profile): still a roofline picture, and what fixes it.

The summary places ops by operational intensity and names CPU memory DRAM; the ``peaks``
parameter judges a profile by a built-in device or this machine's calibration; the
``calibrate`` routes run a measurement once, in the background, into a folder outside the
logdir. HTTP goes through TensorBoard's real routing stack; the measurement is a fake unless
a test runs the real (quick) one.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from pathlib import Path

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug import test as wtest
from werkzeug import wrappers

from tb_roofline_plugin.demo import CpuSpec, cpu_xspace, write_profile
from tb_roofline_plugin.peaks.devices import load_peaks
from tb_roofline_plugin.platforms.analysis import NO_PEAKS, analyze_file
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.render.export import database_dict, device_summary
from tb_roofline_plugin.render.summary import readable_message, summary_text
from tb_roofline_plugin.roofline.model import build_database, roofline_model
from tb_roofline_plugin.serve import calibrator as calibration_module
from tb_roofline_plugin.serve.calibrator import Calibrator, run_calibrate_process
from tb_roofline_plugin.serve.convert import convert_file
from tb_roofline_plugin.serve.peak_choice import builtin_choice, with_peaks
from tb_roofline_plugin.serve.plugin import CALIBRATE_HEADER, RooflinePlugin
from tb_roofline_plugin.serve.service import RooflineService

BASE = "/data/plugin/roofline"
TRANSFORMER = "jax_transformer/plugins/profile/2026_11_30_09_47_29"
FAKE = {  # what the fake measurement writes: a loadable peak file
    "name": "calibrated test-machine",
    "vendor": "CPU",
    "dtype_tflops": {"fp32": 1.5, "fp64": 0.75},
    "hbm_gbps": 25.0,
    "source": "calibration (fake, for tests)",
}


@pytest.fixture(scope="module")
def cpu_logdir(shared_data) -> Path:
    """The shared JAX CPU profiles, served read-only where they are."""
    return shared_data / "jax-cpu"


@pytest.fixture(scope="module")
def transformer(cpu_logdir) -> Path:
    return cpu_logdir / TRANSFORMER / "vm.xplane.pb"


def _fake_measure(peaks: dict, calls: list, gate: threading.Event | None = None):
    def measure(output: str) -> None:
        calls.append(output)
        if gate is not None:
            assert gate.wait(30)
        Path(output).write_text(json.dumps(peaks), encoding="utf-8")

    return measure


def _client(logdir, calibrator: Calibrator | None = None, **flags):
    ns = argparse.Namespace(
        logdir=str(logdir), roofline_cache_mb=None, roofline_max_file_mb=None, **flags
    )
    context = base_plugin.TBContext(logdir=str(logdir), flags=ns)
    service = None
    if calibrator is not None:
        service = RooflineService(str(logdir), workers=1, calibrator=calibrator)
    plugin = RooflinePlugin(context, service=service)
    return wtest.Client(application.TensorBoardWSGI([plugin]), wrappers.Response), plugin


def _get(client, route, **params):
    response = client.get(f"{BASE}/{route}", query_string=params)
    return response, json.loads(response.get_data())


def _post(client, route, headers=None):
    response = client.post(f"{BASE}/{route}", headers=headers or {})
    return response, json.loads(response.get_data())


START = {CALIBRATE_HEADER: "1"}


# ----------------------------------------------------------------------------- summary


def test_summary_without_peaks_places_ops_by_operational_intensity_in_dram(transformer):
    stats = analyze_file(transformer)
    text = summary_text(stats, [str(transformer)], top=3)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("step/rank"))
    assert "DRAM GiB/s" in header and "HBM" not in text.replace("--roofline_peaks", "")
    total = next(line for line in lines if line.startswith("Total"))
    cells = total.split()
    # Program: 33 GFLOP/s at 18.1 FLOP/byte (58.96 GFLOP over 3.26 GB), no bound, no efficiency
    # (over the Total that holds the steps' host spans).
    assert cells[-4:] == ["33.0", "1.7", "18.1", "-"]
    assert "no peaks known" in lines[1] and "  DRAM: bandwidth unknown" in lines
    third = next(
        r
        for r in build_database(stats).roofline_model_record
        if r.record_type == roofline_model_pb2.ALL and r.rank == 3 and r.include_infeed_outfeed
    )
    assert third.bottleneck_operational_intensity == 0 and third.operational_intensity > 0
    rank3 = next(line for line in lines if line.startswith("3 ")).split()
    assert rank3[1] == third.hlo_name[:40]
    assert rank3[-2] == f"{third.operational_intensity:.3g}"  # 73.1 for dot.50
    assert "0 GFLOP/s" not in text


def test_summary_with_peaks_keeps_the_bottleneck_intensity_and_names_dram(transformer):
    stats = analyze_file(transformer, builtin_choice("h100-sxm").perf_env)
    lines = summary_text(stats, [str(transformer)], top=3).splitlines()
    total = next(line for line in lines if line.startswith("Total")).split()
    assert total[2] == "DRAM" and total[-2] == "18.1" and total[-1] == "0.1"
    assert "  DRAM: 3,350.0 GB/s, ridge point 295.3 FLOP/byte" in lines


def test_summary_of_many_steps_shows_the_slowest_and_says_how_many(tmp_path):
    path = write_profile(tmp_path / "cpu.xplane.pb", cpu_xspace(CpuSpec(steps=40)))
    stats = analyze_file(path)
    assert len(stats.steps) == 40
    lines = summary_text(stats, [str(path)]).splitlines()
    step_lines = [line for line in lines if line.startswith("step ")]
    assert len(step_lines) == 10
    programs = [
        r
        for r in build_database(stats).roofline_model_record
        if r.record_type == roofline_model_pb2.PER_STEP and r.include_infeed_outfeed
    ]
    slowest = sorted(programs, key=lambda r: -r.total_time_in_us)[:10]
    shown = [int(line.split()[1]) for line in step_lines]
    assert shown == sorted(r.step_num for r in slowest)  # the slowest ten, in step order
    assert (
        min(float(line.split()[4].replace(",", "")) for line in step_lines)
        >= max(r.total_time_in_us for r in programs if r.step_num not in shown) - 0.05
    )
    note = next(line for line in lines if line.startswith("steps: "))
    assert note.startswith("steps: the 10 slowest of 40 steps, 0–39")
    assert max(map(len, lines)) < 400


def test_long_lists_are_summarised_never_written_out():
    message = f"2 steps cut (step {', '.join(map(str, range(1498)))}) are left out."
    assert (
        readable_message(message) == "2 steps cut (step 0, 1, …, 1497 (1,498 in all)) are left out."
    )
    assert readable_message("step 1, 2, 3") == "step 1, 2, 3"  # short lists stay
    cut = readable_message("x" * 5000)
    assert cut == "x" * 400 + "… (4,600 more characters)"


def test_summary_messages_are_bounded():
    from tb_roofline_plugin.render.summary import _messages

    many = [f"note {i}: " + ", ".join(map(str, range(2000))) for i in range(30)]
    out = _messages("WARNING", many)
    assert len(out) == 11 and out[-1].startswith("WARNING: … and 20 more")
    assert all(len(line) < 450 for line in out)
    assert "(2,000 in all)" in out[0]


# ----------------------------------------------------------------------------- judging by peaks


def test_device_summary_names_memory_and_says_whether_peaks_are_known(transformer):
    stats = analyze_file(transformer)
    device = device_summary(stats)
    assert (device["main_memory"], device["peaks_known"], device["memories"]) == ("DRAM", False, [])
    judged = device_summary(with_peaks(stats, builtin_choice("tpu-v5p").perf_env))
    assert judged["peaks_known"] is True and judged["main_memory"] == "DRAM"
    assert [m["name"] for m in judged["memories"]] == ["DRAM"]


def test_with_peaks_equals_converting_with_peaks(transformer):
    """Judging a converted profile by a device gives what `--peaks` gives: no second decode."""
    plain = convert_file(str(transformer))
    assert NO_PEAKS in plain.diagnostics.warnings
    judged = with_peaks(plain, builtin_choice("h100").perf_env)
    direct = convert_file(str(transformer), "h100-sxm")
    assert database_dict(roofline_model(judged)) == database_dict(roofline_model(direct))
    assert NO_PEAKS in plain.diagnostics.warnings  # the original is left as it was
    assert plain.perf_env.known is False


# ----------------------------------------------------------------------------- HTTP: peaks


def test_data_route_judges_by_a_builtin_device(cpu_logdir, tmp_path):
    client, plugin = _client(cpu_logdir, Calibrator(str(tmp_path)))
    run = "jax_transformer/2026_11_30_09_47_29"
    response, plain = _get(client, "data", run=run, host="vm", format="json")
    assert response.status_code == 200
    assert (
        plain["device"]["peaks_source"] == "none"
        and NO_PEAKS in (plain["database"]["diagnostics"]["warnings"])
    )
    response, judged = _get(client, "data", run=run, host="vm", format="json", peaks="H100")
    assert response.status_code == 200
    device = judged["device"]
    assert device["peaks_source"] == "built-in table (NVIDIA H100 SXM5 80 GB)"
    assert device["peak_flop_rate_gflops"] == 989_400.0
    assert device["memories"][0]["name"] == "DRAM" and device["memories"][0]["peak_gbps"] == 3350
    assert NO_PEAKS not in judged["database"]["diagnostics"].get("warnings", [])
    program = judged["database"]["roofline_model_record"][0]
    assert program["bound_by"] == "HBM"  # the XProf-compatible record keeps XProf's label
    assert program["bottleneck_operational_intensity"] == pytest.approx(18.106, abs=1e-3)
    # The alias and the canonical name are one cache entry; the profile was decoded once.
    _, again = _get(client, "data", run=run, host="vm", format="json", peaks="h100-sxm")
    assert again == judged
    _get(client, "data", run=run, host="vm", peaks="tpu-v5p")  # the datatable too
    assert plugin.service.cache.computations == 3  # one conversion, judged by two devices
    text = client.get(f"{BASE}/data_csv", query_string={"run": run, "host": "vm", "peaks": "h100"})
    assert text.status_code == 200 and '"HBM"' in text.get_data(as_text=True)


@pytest.mark.parametrize(
    "peaks, status, message",
    [
        ("no-such-gpu", 400, "unknown peaks 'no-such-gpu'; expected 'calibrated' or a built-in"),
        ("/etc/passwd", 400, "unknown peaks '/etc/passwd'"),
        ("../peaks.json", 400, "unknown peaks '../peaks.json'"),
        ("h100\x00", 400, "control characters"),
        ("x" * 2000, 400, "longer than 1024"),
        ("calibrated", 409, "this machine has not been measured yet"),
    ],
)
def test_bad_peaks_get_a_json_4xx(cpu_logdir, tmp_path, peaks, status, message):
    client, _ = _client(cpu_logdir, Calibrator(str(tmp_path)))
    run = "jax_transformer/2026_11_30_09_47_29"
    for route, params in (
        ("data", {"run": run, "host": "vm", "format": "json", "peaks": peaks}),
        ("compare", {"a_run": run, "a_host": "vm", "b_run": run, "b_host": "vm", "peaks": peaks}),
    ):
        response, body = _get(client, route, **params)
        assert response.status_code == status and response.mimetype == "application/json"
        assert message in body["error"]


def test_compare_route_judges_both_sides_by_the_peaks(cpu_logdir, tmp_path):
    client, _ = _client(cpu_logdir, Calibrator(str(tmp_path)))
    run = "jax_transformer/2026_11_30_09_47_29"
    sides = {"a_run": run, "a_host": "vm", "a_step": "1", "b_run": run, "b_host": "vm"}
    _, plain = _get(client, "compare", **sides)
    _, judged = _get(client, "compare", **sides, peaks="a100")
    assert plain["program"]["bound_by_a"] == "Unknown" and plain["program"]["efficiency_a"] == 0
    assert judged["program"]["bound_by_a"] == "DRAM" and judged["program"]["efficiency_a"] > 0
    assert judged["program"]["time_us_a"] == plain["program"]["time_us_a"]


def test_peaks_route_lists_what_the_tab_offers(cpu_logdir, tmp_path):
    client, _ = _client(cpu_logdir, Calibrator(str(tmp_path)))
    response, body = _get(client, "peaks")
    assert response.status_code == 200
    keys = [d["key"] for d in body["builtin"]]
    assert len(keys) == 31 and "h100-sxm" in keys and "tpu-v5p" in keys
    assert next(d for d in body["builtin"] if d["key"] == "mi300x")["vendor"] == "AMD"
    assert body["calibration"] == {"state": "idle", "available": False}
    assert body["server_peaks"] is False


# ----------------------------------------------------------------------------- HTTP: calibrate


def test_calibrate_runs_once_in_the_background_and_is_used_by_request(cpu_logdir, tmp_path):
    calls: list[str] = []
    gate = threading.Event()
    cache = tmp_path / "cache"
    calibrator = Calibrator(str(cache), measure=_fake_measure(FAKE, calls, gate))
    client, plugin = _client(cpu_logdir, calibrator)
    assert calls == [] and not cache.exists()  # nothing runs until asked
    response, body = _get(client, "calibrate")
    assert response.status_code == 200 and body == {"state": "idle", "available": False}
    assert calls == []  # a GET never starts a measurement

    response, body = _post(client, "calibrate")  # no header: another page cannot start it
    assert response.status_code == 403 and CALIBRATE_HEADER in body["error"]
    response, body = _post(client, "calibrate", START)
    assert response.status_code == 202 and body["state"] == "running"
    response, body = _post(client, "calibrate", START)  # while running: the same one
    assert response.status_code == 202 and body["state"] == "running"
    assert _get(client, "calibrate")[1]["state"] == "running"
    gate.set()
    calibrator.wait(30)
    assert len(calls) == 1 and Path(calls[0]).parent == cache
    response, body = _get(client, "calibrate")
    assert body["state"] == "done" and body["available"] is True
    assert body["peaks"] == {
        "name": "calibrated test-machine",
        "dtype_tflops": {"fp32": 1.5, "fp64": 0.75},
        "memory_gbps": 25.0,
        "source": "calibration (fake, for tests)",
    }
    assert sorted(p.name for p in cache.iterdir()) == [Path(calibrator.path).name]
    assert Path(calibrator.path).name.startswith("calibration-")

    run = "jax_transformer/2026_11_30_09_47_29"
    response, judged = _get(client, "data", run=run, host="vm", format="json", peaks="calibrated")
    assert response.status_code == 200
    device = judged["device"]
    assert device["peaks_source"] == "calibration of this machine"
    assert device["peak_flop_rate_gflops"] == 1500.0
    assert device["dtype_peak_gflops"] == {"fp32": 1500.0, "fp64": 750.0}
    assert device["memories"] == [
        {
            "name": "DRAM",
            "peak_gbps": 25.0,
            "peak_gibps": pytest.approx(25 / 1.073741824),
            "ridge_point": pytest.approx(60.0),  # 1,500 GFLOP/s over 25 GB/s
        }
    ]
    # Measured again: the new figures are used (the old judged result is not served).
    calibrator._measure = _fake_measure({**FAKE, "hbm_gbps": 50.0}, calls)
    _post(client, "calibrate", START)
    calibrator.wait(30)
    _, again = _get(client, "data", run=run, host="vm", format="json", peaks="calibrated")
    assert again["device"]["memories"][0]["peak_gbps"] == 50.0
    assert plugin.service.cache.computations == 3  # one conversion, judged twice


def test_a_failed_measurement_is_said_and_keeps_no_file(cpu_logdir, tmp_path):
    def broken(output: str) -> None:
        Path(output).write_text('{"name": "half', encoding="utf-8")
        raise RuntimeError("calibrate: numpy ran out of memory\nsecond line")

    calibrator = Calibrator(str(tmp_path / "cache"), measure=broken)
    client, _ = _client(cpu_logdir, calibrator)
    _post(client, "calibrate", START)
    calibrator.wait(30)
    response, body = _get(client, "calibrate")
    assert body == {
        "state": "failed",
        "available": False,
        "error": "calibrate: numpy ran out of memory",
    }
    assert list((tmp_path / "cache").iterdir()) == []  # the half-written file is gone
    run = "jax_transformer/2026_11_30_09_47_29"
    response, body = _get(client, "data", run=run, host="vm", peaks="calibrated")
    assert response.status_code == 409


def test_a_measurement_that_writes_junk_never_replaces_a_good_one(cpu_logdir, tmp_path):
    calls: list[str] = []
    calibrator = Calibrator(str(tmp_path), measure=_fake_measure(FAKE, calls))
    calibrator.start()
    calibrator.wait(30)
    calibrator._measure = _fake_measure({"name": "x", "dtype_tflops": {"fp32": -1}}, calls)
    status = calibrator.start()
    calibrator.wait(30)
    status = calibrator.status()
    assert status["state"] == "failed" and status["available"] is True
    assert status["peaks"]["memory_gbps"] == 25.0
    assert (
        status["error"] == "the measurement gave an unusable peak file: missing field(s) 'hbm_gbps'"
    )
    assert str(tmp_path) not in status["error"]  # no server paths in the tab


def test_calibration_folder_inside_the_logdir_is_refused(tmp_path):
    write_profile(tmp_path / "run/plugins/profile/r1/h.xplane.pb", cpu_xspace(CpuSpec(steps=2)))
    calls: list[str] = []
    calibrator = Calibrator(str(tmp_path / "cache"), measure=_fake_measure(FAKE, calls))
    client, _ = _client(tmp_path, calibrator)
    response, body = _post(client, "calibrate", START)
    assert response.status_code == 409 and "inside the logdir" in body["error"]
    assert _get(client, "calibrate")[1]["disabled"].startswith("the calibration folder")
    response, body = _get(client, "data", run="run/r1", host="h", peaks="calibrated")
    assert response.status_code == 409 and "calibration is off" in body["error"]
    assert calls == [] and not (tmp_path / "cache").exists()


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert calibration_module.default_cache_dir() == str(tmp_path / "tb-roofline")
    monkeypatch.delenv("XDG_CACHE_HOME")
    expected = os.path.join(os.path.expanduser("~"), ".cache", "tb-roofline")
    assert calibration_module.default_cache_dir() == expected


def test_the_plugin_flag_sets_the_calibration_folder_and_starts_nothing(cpu_logdir, tmp_path):
    client, plugin = _client(cpu_logdir, roofline_calibration_dir=str(tmp_path / "c"))
    assert plugin.service.calibrator.cache_dir == str(tmp_path / "c")
    assert _get(client, "calibrate")[1]["state"] == "idle"
    assert not (tmp_path / "c").exists()


def test_the_real_quick_calibration_writes_a_loadable_peak_file(tmp_path):
    out = tmp_path / "peaks.json"
    run_calibrate_process(str(out), quick=True)
    peaks = load_peaks(str(out))
    assert peaks.vendor == "CPU" and peaks.dtype_tflops["fp64"] > 0 and peaks.hbm_gbps > 0
