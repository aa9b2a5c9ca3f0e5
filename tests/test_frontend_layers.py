"""The Roofline Layers tool in a real browser, against a real ``tensorboard`` process.

The logdir holds a PyTorch trace written in Kineto's format with module ranges (the one of
``test_layers.py``) and, when the shared samples are there, the real H100 Qwen trace. What
the page shows (tree rows, chart points, a layer's ops) is compared with the ``layers`` of
the HTTP API's json.
"""

from __future__ import annotations

import json
import math
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from test_frontend import opened_tab, plugin_tensorboard
from test_layers import _Trace

QWEN = Path(__file__).resolve().parents[2] / "shared/data/field/tl_h100_qwen"
TORCH_RUN, QWEN_RUN = "torch_modules", "qwen_h100"
G = 1e9

LAYER_POINTS = """() => {
  const gd = document.getElementById('layer-chart');
  if (!gd || !gd.data) return null;
  return gd.data.filter((t) => t.meta && t.meta.kind === 'layers')
    .flatMap((t) => t.x.map((x, i) => [x, t.y[i], t.customdata[i]]));
}"""
TREE_ROWS = """() => [...document.querySelectorAll('#layer-table tbody tr')].map((tr) =>
  [Number(tr.dataset.id), tr.querySelector('.layer-name').textContent.replace(/^[▸▾]/, '')])"""
OPS_ROWS = """() => [...document.querySelectorAll('#layer-ops-table tbody tr')].map((tr) =>
  [...tr.children].map((td) => td.textContent))"""
READY = """() => { const n = document.getElementById('layers-view');
  return Boolean(n && !n.hidden && n.dataset.state === 'ready'); }"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("layers_logdir")
    trace = _Trace()
    for number in (1, 2):
        trace.step(number, 10_000.0 * number)
    (logdir / TORCH_RUN).mkdir()
    trace.write(logdir / TORCH_RUN / "worker0.1.pt.trace.json")
    found = sorted(QWEN.glob("*.json.gz"))
    if found:
        (logdir / QWEN_RUN).mkdir()
        shutil.copyfile(found[0], logdir / QWEN_RUN / "qwen.1.pt.trace.json.gz")
    with plugin_tensorboard(logdir) as base:
        yield base


@pytest.fixture(scope="module")
def session(server):
    selection = {"tool": "layers", "run": TORCH_RUN, "host": "worker0", "step": "total"}
    with opened_tab(server, selection) as s:
        yield s


def layers(base: str, run: str, host: str, step: str = "total") -> dict:
    query = urllib.parse.urlencode(
        {"run": run, "host": host, "tag": "roofline_model", "format": "json", "step": step}
    )
    with urllib.request.urlopen(f"{base}/data/plugin/roofline/data?{query}", timeout=120) as r:
        return json.loads(r.read())["layers"]


def cut(nodes: list[dict], depth: int) -> list[dict]:
    """The plottable layers at ``depth`` (and the leaves above it), as the API has them."""
    chosen = [
        n for n in nodes if n["depth"] == depth or (0 < n["depth"] < depth and not n["children"])
    ]
    return [
        n for n in chosen
        if n["kind"] != "idle" and n["measured_flop_rate"] > 0
        and (n["bottleneck_operational_intensity"] or n["operational_intensity"]) > 0
    ]  # fmt: skip


def points(frame, count: int):
    frame.wait_for_function(
        f"() => {{ const p = ({LAYER_POINTS})(); return p !== null && p.length === {count}; }}"
    )
    return frame.evaluate(LAYER_POINTS)


def test_layers_view_draws_the_tree_and_the_chart_of_a_depth(session, server):
    frame = session.frame()
    frame.wait_for_function(READY)
    assert frame.locator("#tool-select").input_value() == "layers"
    nodes = layers(server, TORCH_RUN, "worker0")["nodes"]
    # Opened down to depth 2: every node of depth 2 or less is a row, in tree order.
    shown = frame.evaluate(TREE_ROWS)
    assert [i for i, _ in shown] == [n["id"] for n in nodes if n["depth"] <= 2]
    assert [name for _, name in shown] == [n["name"] for n in nodes if n["depth"] <= 2]
    # The chart: one dot per layer at depth 2, where the API places it.
    expected = {n["id"]: n for n in cut(nodes, 2)}
    drawn = points(frame, len(expected))
    for x, y, node_id in drawn:
        node = expected[node_id]
        assert math.isclose(
            x, node["bottleneck_operational_intensity"] or node["operational_intensity"]
        )
        assert math.isclose(y, node["measured_flop_rate"] * G)
    # The depth control changes the layers on the chart.
    counts = {}
    for depth in (1, 3):
        frame.fill("#layer-depth", str(depth))
        counts[depth] = len(points(frame, len(cut(nodes, depth))))
    assert counts[1] < len(expected) < counts[3]
    assert [i for i, _ in frame.evaluate(TREE_ROWS)] == [n["id"] for n in nodes if n["depth"] <= 3]
    session.assert_clean()


def test_clicking_a_layer_lists_its_ops_and_a_toggle_folds_it(session, server):
    frame = session.frame()
    frame.wait_for_function(READY)
    nodes = layers(server, TORCH_RUN, "worker0")["nodes"]
    by_path = {n["path"]: n for n in nodes}
    frame.fill("#layer-depth", "3")
    linear = by_path["Net_0/Linear_1"]
    frame.click(f"#layer-table tr[data-id='{linear['id']}'] .layer-name span:last-child")
    frame.wait_for_selector("#layer-ops-table tbody tr")
    rows = frame.evaluate(OPS_ROWS)
    assert sorted((r[0], r[1]) for r in rows) == sorted(
        (o["name"], o["pass"]) for o in linear["ops"]
    )
    assert {("aten::addmm", "forward"), ("aten::mm", "backward")} <= {(r[0], r[1]) for r in rows}
    assert "Net_0/Linear_1" in frame.locator("#layer-ops h3").text_content()
    # A layer with sub-layers lists the ops of all of them.
    net = by_path["Net_0"]
    frame.click(f"#layer-table tr[data-id='{net['id']}'] .layer-name span:last-child")
    frame.wait_for_function(
        f"() => document.querySelectorAll('#layer-ops-table tbody tr').length === {net['op_rows']}"
    )
    # Collapsing Net_0 hides its sub-layers; opening it again shows them.
    toggle = f"#layer-table [data-toggle='{net['id']}']"
    frame.click(toggle)
    ids = [i for i, _ in frame.evaluate(TREE_ROWS)]
    assert linear["id"] not in ids and net["id"] in ids
    frame.click(toggle)
    assert linear["id"] in [i for i, _ in frame.evaluate(TREE_ROWS)]
    # Clicking a dot selects its layer.
    frame.fill("#layer-depth", "1")
    points(frame, len(cut(nodes, 1)))
    frame.evaluate(
        """(id) => { const gd = document.getElementById('layer-chart');
        const t = gd.data.findIndex(
          (d) => d.meta && d.meta.kind === 'layers' && d.customdata.includes(id));
        gd.emit('plotly_click', {points: [{data: gd.data[t], customdata: id}]}); }""",
        net["id"],
    )
    frame.wait_for_selector(f"#layer-table tr.selected[data-id='{net['id']}']")
    session.assert_clean()


@pytest.mark.skipif(not QWEN.is_dir(), reason=f"shared trace {QWEN} not found")
def test_a_real_h100_trace_shows_its_decoder_layers(session, server):
    frame = session.frame()
    frame.select_option("#run-select", QWEN_RUN)
    frame.wait_for_function(
        "() => { const n = document.getElementById('layers-view');"
        " return n.dataset.state === 'ready'"
        " && document.querySelector('#run-select').value === 'qwen_h100'; }"
    )
    nodes = layers(server, QWEN_RUN, "qwen")["nodes"]
    frame.fill("#layer-depth", "2")
    drawn = points(frame, len(cut(nodes, 2)))
    names = {nodes[i]["name"] for _, _, i in drawn}
    assert {f"Qwen2DecoderLayer_{i}" for i in range(24)} <= names
    roofs = frame.evaluate(
        "() => document.getElementById('layer-chart').data"
        ".filter((t) => t.meta && t.meta.kind === 'roof').length"
    )
    assert roofs == 2  # HBM3 and shared memory
    # At depth 3 a decoder layer's attention, MLP and norms; the first attention's ops listed.
    frame.fill("#layer-depth", "3")
    points(frame, len(cut(nodes, 3)))
    attention = next(n for n in nodes if n["path"].endswith("Qwen2DecoderLayer_0/Qwen2Attention_0"))
    frame.click(f"#layer-table tr[data-id='{attention['id']}'] .layer-name span:last-child")
    frame.wait_for_function(
        "() => document.querySelectorAll('#layer-ops-table tbody tr').length"
        f" === {attention['op_rows']}"
    )
    session.shot("layers_qwen_h100", frame)
    session.assert_clean()
