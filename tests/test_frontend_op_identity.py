"""Ops you recognise, in a real browser: the chart's hover of a GEMM shows its shapes, a table
row says its shapes and framework op under its name and opens (▸) to its HLO line, shapes,
dtype, framework op, source line and program; a PyTorch trace recorded ``with_stack=True``
names the module and the line of Python. Every value is checked against the HTTP API's json
(``ops``), which ``test_op_identity.py`` checks against the raw profiles."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_frontend import (
    ARTIFACTS,
    OP_POINTS,
    TRAIN,
    api,
    copy_profile,
    opened_tab,
    plugin_tensorboard,
    records,
)

from tb_roofline_plugin import demo

SHARED = Path(__file__).resolve().parents[2] / "shared/data"
AMD_GEMM = SHARED / "tracelens/jax08_gemm/tw003.xplane.pb"
TORCH_STACK = SHARED / "new-producers/torch_lstm/lstm_lm.1796151468267422256.pt.trace.json"
GEMM_RUN, TORCH_RUN = "amd_gemm/run1", "torch_lstm"

HOVER = """(key) => { const gd = document.getElementById('op-chart');
  Plotly.Fx.unhover(gd);
  for (const [c, t] of gd.data.entries()) {
    if (!(t.meta && t.meta.kind === 'ops')) continue;
    const n = t.customdata.indexOf(key);
    if (n >= 0) { Plotly.Fx.hover(gd, [{curveNumber: c, pointNumber: n}]); return true; } }
  return false; }"""

ROW = """(key) => { const tr = [...document.querySelectorAll('#op-table tbody tr[data-key]')]
  .find((node) => node.dataset.key === key);
  return tr && { identity: (tr.querySelector('.op-identity') || {}).textContent || '',
    detail: tr.nextElementSibling && tr.nextElementSibling.classList.contains('row-detail')
      ? tr.nextElementSibling.innerText : null }; }"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("op_identity")
    demo.write_demo_logdir(logdir)
    for run, profile in ((GEMM_RUN, AMD_GEMM), (TORCH_RUN, TORCH_STACK)):
        if profile.is_file():
            copy_profile(logdir, run, profile)
    with plugin_tensorboard(logdir) as base, opened_tab(base, width=1440) as session:
        yield session


def _ops(base: str, run: str, host: str) -> tuple[list[dict], dict[str, dict]]:
    """The selection's op records and their json details, by the page's row key."""
    data = api(base, "data", run=run, host=host, format="json")
    _, ops = records(data)
    details = {f"{d['hlo_module_id']}:{d['hlo_name']}": d for d in data["ops"]}
    return ops, details


def _hover_text(frame, key: str) -> str:
    """The chart's hover text of the op ``key`` (its name leads it)."""
    assert frame.evaluate(HOVER, key), f"{key} is not on the chart"
    name = key.split(":", 1)[1]
    frame.wait_for_function(
        "(name) => { const h = document.querySelector('#op-chart .hoverlayer');"
        " return h && h.textContent.startsWith(name); }",
        arg=name,
    )
    return frame.locator("#op-chart .hoverlayer").text_content()


def _hover_shot(page, name: str) -> None:
    """The page as it is, hover box included (``Session.shot`` resizes, which ends a hover)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _show(page, run: str, host: str):
    frame = page.show(run, host)
    ops, details = _ops(page.base, run, host)
    frame.wait_for_function(f"() => {{ const p = ({OP_POINTS})(); return p && p.length > 0; }}")
    return frame, ops, details


def test_the_hover_of_a_demo_gemm_shows_its_shapes_and_framework_op(page):
    frame, ops, details = _show(page, TRAIN, "host0")
    gemms = [
        f"{r['hlo_module_id']}:{r['hlo_name']}"
        for r in ops
        if "convolution" in r["hlo_category"] and r.get("measured_flop_rate", 0) > 0
    ]
    assert gemms, "the demo TPU run has matmul fusions"
    key = gemms[0]
    d = details[key]
    assert d["shapes"].startswith("bf16[") and " → bf16[" in d["shapes"]
    text = _hover_text(frame, key)
    assert f"shapes {d['shapes']}" in text
    assert f"framework op {d['framework_op']}" in text and "dot_general" in d["framework_op"]
    frame.locator("#op-chart").scroll_into_view_if_needed()
    _hover_shot(page, "op_identity_hover_tpu")
    page.assert_clean()


@pytest.mark.skipif(not AMD_GEMM.is_file(), reason=f"shared sample {AMD_GEMM} not found")
def test_the_five_amd_gemms_are_told_apart_by_their_shapes(page):
    frame, ops, details = _show(page, GEMM_RUN, "tw003")
    keys = [
        f"{r['hlo_module_id']}:{r['hlo_name']}" for r in ops if r["hlo_name"] == "custom-call.1"
    ]
    assert len(keys) == 5
    shapes = {details[k]["shapes"] for k in keys}
    assert len(shapes) == 5  # one GEMM size each
    for k in keys:
        assert details[k]["shapes"] in frame.evaluate(ROW, k)["identity"]
        text = _hover_text(frame, k)
        assert f"shapes {details[k]['shapes']}" in text
        assert "program jit_dot (" in text
    page.assert_clean()


@pytest.mark.skipif(not AMD_GEMM.is_file(), reason=f"shared sample {AMD_GEMM} not found")
def test_a_row_opens_to_its_hlo_text_and_closes_again(page):
    frame, ops, details = _show(page, GEMM_RUN, "tw003")
    key = next(
        f"{r['hlo_module_id']}:{r['hlo_name']}" for r in ops if r["hlo_name"] == "custom-call.1"
    )
    d = details[key]
    row = f'#op-table tbody tr[data-key="{key}"]'
    toggle = frame.locator(f"{row} .row-toggle")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert frame.evaluate(ROW, key)["detail"] is None
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    detail = frame.evaluate(ROW, key)["detail"]
    for label, value in (
        ("HLO", d["hlo_text"]),
        ("Shapes", d["shapes"]),
        ("dtype", "bf16"),
        ("Framework op", d["framework_op"]),
        ("Source", d["source"]),
        ("Program", f"jit_dot ({d['hlo_module_id']})"),
    ):
        assert value and f"{label}\n{value}" in detail, (label, value, detail)
    assert d["hlo_text"].startswith("%custom-call.1 = (bf16[")
    assert 'custom_call_target="__cublas$gemm"' in d["hlo_text"]
    page.shot("op_detail_open", frame)
    # Sorting keeps it open; the toggle (by keyboard) closes it.
    frame.click('#op-table thead th[data-key="operation"] button')
    assert frame.evaluate(ROW, key)["detail"] is not None
    toggle.focus()
    page.page.keyboard.press("Enter")
    assert frame.evaluate(ROW, key)["detail"] is None
    assert toggle.get_attribute("aria-expanded") == "false"
    page.assert_clean()


@pytest.mark.skipif(not TORCH_STACK.is_file(), reason=f"shared trace {TORCH_STACK} not found")
def test_a_pytorch_op_recorded_with_stack_names_its_module_and_line(page):
    host = TORCH_STACK.name.split(".")[0]
    frame, ops, details = _show(page, TORCH_RUN, host)
    key = next(f"{r['hlo_module_id']}:{r['hlo_name']}" for r in ops if r["hlo_name"] == "aten::mm")
    d = details[key]
    assert d["framework_op"].startswith("LM_0/Linear_0") and "torch_lstm.py:" in d["source"]
    text = _hover_text(frame, key)
    assert f"shapes {d['shapes']}" in text and f"source {d['source']}" in text
    assert f"framework op {d['framework_op']}" in text
    frame.locator("#op-chart").scroll_into_view_if_needed()
    _hover_shot(page, "op_identity_hover_pytorch")
    page.assert_clean()
