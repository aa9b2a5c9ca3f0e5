"""TensorFlow on GPU without XLA (tf_v100_bert): only the CUDA stream lines are kernels,
the device ``Steps`` line gives the steps, kernels are listed by their TF op.

Oracles from the raw XSpace (``xplane_pb2``, plain Python) and XProf 2.24.2's
``roofline_model`` of the same file (MANIFEST: Program 623,195.95 us, peak_hbm_bw
836.372 GiB/s, rows Total and step 0).
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from conftest import run_cli

from tb_roofline_plugin.protos import xplane_pb2

BERT = "field/tf_v100_bert/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb"


def _gpu_lines(path):
    """{plane name: {line name: [(event name, display name, stats, begin, end)]}}."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    out: dict = {}
    for plane in space.planes:
        if not plane.name.startswith("/device:GPU:"):
            continue
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        lines = out.setdefault(plane.name, defaultdict(list))
        for line in plane.lines:
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                stats = {}
                for stat in event.stats:
                    kind = stat.WhichOneof("value")
                    value = getattr(stat, kind) if kind else None
                    stats[names[stat.metadata_id]] = (
                        names.get(value) if kind == "ref_value" else value
                    )
                begin = line.timestamp_ns * 1000 + event.offset_ps
                lines[line.name].append(
                    (meta.name, meta.display_name, stats, begin, begin + event.duration_ps)
                )
    return out


@pytest.fixture(scope="module")
def bert(shared_data):
    path = shared_data / BERT
    full = json.loads(run_cli("export", "--format", "json", path, check=True).stdout)
    table, diagnostics = json.loads(run_cli("export", path, check=True).stdout)
    return _gpu_lines(path), full, table, diagnostics


def _stream_events(lines):
    return [e for plane in lines.values() for n, es in plane.items() if n.startswith("Stream #")
            for e in es]  # fmt: skip


def test_unattributed_kernels_are_the_stream_lines_events(bert):
    lines, full, _, _ = bert
    stream = _stream_events(lines)
    derived = [n for plane in lines.values() for n in plane if not n.startswith("Stream #")]
    assert sorted(set(derived)) == ["Steps", "TensorFlow Name Scope", "TensorFlow Ops"]
    assert len(stream) == 1556
    time_us = sum(e - b for *_, b, e in stream) / 1e6
    assert time_us == pytest.approx(30_162.105, abs=1e-3)
    rows = full["unattributed_kernels"]
    assert sum(r["occurrences"] for r in rows) == len(stream)
    assert sum(r["total_time_us"] for r in rows) == pytest.approx(time_us, rel=1e-9)
    assert full["ops"] == []


def test_kernels_are_listed_by_the_tf_op_whose_span_holds_them(bert):
    lines, full, _, _ = bert
    by_op: dict[str, list] = defaultdict(lambda: [0, 0])
    for plane in lines.values():
        ops = plane["TensorFlow Ops"]
        for name, events in plane.items():
            if not name.startswith("Stream #"):
                continue
            for kernel, _, _, begin, end in events:
                holder = [o for o, _, _, ob, oe in ops if ob <= begin and end <= oe]
                key = holder[0] if holder else kernel
                by_op[key][0] += 1
                by_op[key][1] += end - begin
    ours = {r["name"]: (r["occurrences"], r["total_time_us"]) for r in full["unattributed_kernels"]}
    assert ours.keys() == by_op.keys()
    for name, (count, time_ps) in by_op.items():
        assert ours[name][0] == count, name
        assert ours[name][1] == pytest.approx(time_ps / 1e6, rel=1e-9), name
    top = sorted(by_op.items(), key=lambda kv: -kv[1][1])[:3]
    got = [r["name"] for r in full["unattributed_kernels"][:3]]
    assert got == [name for name, _ in top]


def test_steps_program_time_and_peak_equal_xprofs(bert):
    lines, full, table, diagnostics = bert
    steps = [
        (int(stats["step_name"]), b, e)
        for plane in lines.values()
        for _, _, stats, b, e in plane.get("Steps", [])
    ]
    assert {num for num, _, _ in steps} == {0}
    assert [s["step_num"] for s in full["steps"]] == [0]
    ids = [c["id"] for c in table["cols"]]
    rows = [dict(zip(ids, [c["v"] for c in r["c"]])) for r in table["rows"]]
    assert [(r["step"], r["operation"]) for r in rows] == [
        ("Total", "Program"), ("0", "Program"), ("Total", "Program"), ("0", "Program")
    ]  # fmt: skip
    # Program time: each GPU's first kernel start to last kernel end, summed (XProf's).
    spans = []
    for plane in lines.values():
        events = [e for n, es in plane.items() if n.startswith("Stream #") for e in es]
        if events:
            spans.append(max(e for *_, e in events) - min(b for *_, b, _ in events))
    assert sum(spans) / 1e6 == pytest.approx(623_195.95, abs=0.01)
    assert rows[0]["total_time"] == pytest.approx(623_195.95, abs=0.01)
    assert table["p"]["peak_hbm_bw"] == "836.372"
    # Step 0: each GPU's Steps span (its kernels lie inside), summed over the GPUs.
    assert rows[1]["total_time"] == pytest.approx(sum(e - b for _, b, e in steps) / 1e6, rel=1e-9)
    messages = [r["c"][1]["v"] for r in diagnostics["rows"]]
    assert sum("no XLA programs" in m for m in messages) == 1
    assert not any("No step marker observed" in m for m in messages)
