"""The tab's Total (HW) panel in a real browser: what hardware counters measured per op beside
the model, in a table, and on a chart where the ops have device times.

Two runs: the shared A100 trace recorded with CUPTI's range profiler (counters, no kernel
activity: a table, no chart) and a generated one with kernels and counters (DRAM and
tensor-pipe too: measured points beside modelled ones). The page is compared with the HTTP
API's json; screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from counter_traces import write_counter_trace
from test_frontend import api, opened_tab, plugin_tensorboard

SHARED_TRACE = (
    Path(__file__).resolve().parents[2]
    / "shared/data/field/hta_cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"
)
CUPTI_RUN, COUNTED_RUN, HOST = "cupti", "counted", "worker0"
TRACE_NAME = "worker0.1679055439.pt.trace.json"

HW_TABLE = """() => [...document.querySelectorAll('#hw-table tbody tr')].map((tr) =>
  [...tr.children].map((td) => td.textContent))"""
HW_TRACES = """() => { const gd = document.getElementById('hw-chart');
  if (!gd || !gd.data) return null;
  return gd.data.filter((t) => t.meta).map((t) => ({kind: t.meta.kind, x: t.x, y: t.y,
    keys: t.customdata || []})); }"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if not SHARED_TRACE.is_file():
        pytest.skip(f"shared trace not found: {SHARED_TRACE}")
    logdir = tmp_path_factory.mktemp("hardware_logdir")
    (logdir / CUPTI_RUN).mkdir()
    shutil.copyfile(SHARED_TRACE, logdir / CUPTI_RUN / f"{TRACE_NAME}.gz")
    write_counter_trace(logdir / COUNTED_RUN / TRACE_NAME, with_kernels=True, tensor=True)
    with plugin_tensorboard(logdir) as base, opened_tab(base) as session:
        yield session


def test_counters_without_times_are_a_table_of_measured_and_modelled_flops(page):
    frame = page.show(CUPTI_RUN, HOST)
    frame.wait_for_selector("#hw-table tbody tr")
    data = api(page.base, "data", run=CUPTI_RUN, host=HOST, format="json")
    section = data["hardware_counters"]
    rows = frame.evaluate(HW_TABLE)
    assert [r[0] for r in rows] == ["Program"] + [op["hlo_name"] for op in section["ops"]]
    assert rows[0][1:3] == ["77", "80.23 GFLOP"]
    assert rows[1] == ["aten::cudnn_convolution", "28", "49.13 GFLOP", "—", "—"]
    notes = frame.locator(".hw-notes").inner_text()
    assert "No device times in this profile" in notes and "no DRAM counters recorded" in notes
    assert frame.locator("#hw-chart").count() == 0
    page.shot("hardware-counters-cupti", frame)
    page.assert_clean()


def test_counters_with_times_put_measured_points_beside_modelled_ones(page):
    frame = page.show(COUNTED_RUN, HOST)
    frame.wait_for_function(f"() => {{ const t = ({HW_TRACES})(); return t && t.length; }}")
    data = api(page.base, "data", run=COUNTED_RUN, host=HOST, format="json")
    hw = {
        f"{r['hlo_module_id']}:{r['hlo_name']}": r
        for r in data["database"]["roofline_model_record"]
        if r["record_type"] == "ALL_HW"
    }
    traces = {t["kind"]: t for t in frame.evaluate(HW_TRACES)}
    measured = traces["hw-measured"]
    assert sorted(measured["keys"]) == sorted(hw)  # every op with FLOPs, bytes and a time
    for key, x, y in zip(measured["keys"], measured["x"], measured["y"]):
        record = hw[key]
        assert y == pytest.approx(record["measured_flop_rate"] * 1e9)
        assert x == pytest.approx(record["bottleneck_operational_intensity"])
    modelled = traces["hw-modelled"]
    assert sorted(modelled["keys"]) == ["0:Program", "0:aten::add", "0:aten::mm"]
    assert len([v for v in traces["hw-pairs"]["x"] if v is None]) == 3  # a line per pair
    rows = frame.evaluate(HW_TABLE)
    (mm,) = [r for r in rows if r[0] == "aten::mm"]
    op = next(o for o in data["hardware_counters"]["ops"] if o["hlo_name"] == "aten::mm")
    assert mm[4].endswith("×") and float(mm[4][:-1]) == pytest.approx(op["flops_ratio"], rel=1e-3)
    # The op's name selects it in the op table.
    frame.locator("#hw-table .op-name", has_text="aten::mm").click()
    frame.wait_for_selector('#op-table tbody tr.selected[data-key="0:aten::mm"]')
    page.shot("hardware-counters-with-times", frame)
    page.assert_clean()
