"""The tab's Device picker: a host with several devices (jax_sharded4_jit, 4 XLA:CPU
devices) can be shown one device at a time; a host with one device has no picker."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest
from test_frontend import (
    Session,
    api,
    browser_context,
    column,
    copy_profile,
    micros_of,
    plugin_tensorboard,
    wait_view,
)

SHARED = Path(__file__).resolve().parents[2] / "shared/data"
SHARDED = SHARED / "new-producers/jax_sharded4_jit"
MLP = SHARED / "jax-cpu/jax_mlp"
SHARDED_RUN, MLP_RUN = "sharded/r1", "mlp/r1"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    sources = {SHARDED_RUN: SHARDED, MLP_RUN: MLP}
    found = {
        run: sorted(folder.glob("plugins/profile/*/*.xplane.pb")) for run, folder in sources.items()
    }
    if not all(found.values()):
        pytest.skip("the shared jax_sharded4_jit and jax_mlp profiles are not here")
    logdir = tmp_path_factory.mktemp("devices_logdir")
    for run, (path,) in found.items():
        copy_profile(logdir, run, path)
    with plugin_tensorboard(logdir) as base, browser_context() as context:
        session = Session(context, base)
        session.requests = []
        session.page.on("request", lambda r: session.requests.append(r.url))
        session.open({"run": SHARDED_RUN, "host": "vm", "tool": "model"})
        yield session


def _data_devices(requests: list[str]) -> list[str]:
    """The `device` of every data request made (absent: 'all')."""
    out = []
    for url in requests:
        parts = urllib.parse.urlparse(url)
        if parts.path.endswith("/data"):
            out.append(urllib.parse.parse_qs(parts.query).get("device", ["all"])[0])
    return out


def test_a_host_with_four_devices_shows_one_device_or_all(page):
    frame = page.frame()
    wait_view(frame, run=SHARDED_RUN, host="vm", device="all")
    options = frame.locator("#device-select option").all_text_contents()
    assert options == ["All 4 devices", "Device 0", "Device 1", "Device 2", "Device 3"]
    assert frame.locator("#device-select").input_value() == "all"
    page.requests.clear()
    frame.select_option("#device-select", "2")
    wait_view(frame, run=SHARDED_RUN, host="vm", device="2")
    assert "2" in _data_devices(page.requests)
    assert "device 2" in frame.locator("#model-view .selection-label").text_content()
    # The table is the device's: its op rows are those of the API's device=2 answer.
    data = api(page.base, "data", run=SHARDED_RUN, host="vm", tag="roofline_model",
               format="json", device="2")  # fmt: skip
    assert data["device"]["selected_device"] == 2
    frame.wait_for_selector("#op-table tbody tr")
    records = {
        r["hlo_name"]: r
        for r in data["database"]["roofline_model_record"]
        if r.get("record_type") == "ALL" and r.get("include_infeed_outfeed") and r.get("rank")
    }
    names, self_times = column(frame, "Operation"), column(frame, "Self time")
    assert len(names) == len(data["ops"]) == 16
    for name, text in zip(names, self_times):
        assert micros_of(text) == pytest.approx(records[name]["total_self_time_in_us"], rel=5e-3)
    whole = api(page.base, "data", run=SHARDED_RUN, host="vm", tag="roofline_model", format="json")
    shown = micros_of(self_times[0])
    assert shown < 0.5 * next(
        r["total_self_time_in_us"] for r in whole["database"]["roofline_model_record"]
        if r.get("record_type") == "ALL" and r.get("hlo_name") == names[0]
    )  # fmt: skip
    # A step of the device: its steps route's, with the device kept.
    frame.select_option("#step-select", "3")
    wait_view(frame, run=SHARDED_RUN, host="vm", step="3", device="2")
    saved = json.loads(frame.evaluate("() => localStorage.getItem('tb-roofline.selection')"))
    assert saved["device"] == "2" and saved["step"] == "3"
    page.shot("device-2-step-3", frame)
    frame.select_option("#device-select", "all")
    wait_view(frame, run=SHARDED_RUN, host="vm", step="3", device="all")
    assert page.errors == [] and page.dialogs == [] and page.foreign == []


def test_a_host_with_one_device_has_no_device_picker(page):
    frame = page.frame()
    frame.select_option("#run-select", MLP_RUN)
    wait_view(frame, run=MLP_RUN, host="vm", device="all")
    assert frame.locator("#device-select").count() == 0
    assert page.errors == []
