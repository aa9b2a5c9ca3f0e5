"""The demo's PyTorch trace generator (``demo.pytorch``, also benchmarks/kineto_vs_hta.py's)
writes traces whose analysis it knows in advance, through every parse path of the reader."""

from __future__ import annotations

import gzip
import json

import pytest

from tb_roofline_plugin.demo import KinetoSpec, steps_for_mb, write_trace
from tb_roofline_plugin.kineto import analyze_trace, trace_reader

SMALL = KinetoSpec(steps=2, layers=2, batch=8, seed=3)


@pytest.mark.parametrize(
    ("suffix", "chunk", "orjson_max"),
    [(".pt.trace.json", 1 << 16, 64 << 20), (".pt.trace.json.gz", 1 << 16, 64 << 20),
     (".pt.trace.json", 97, 0)],
)  # fmt: skip
def test_synthetic_trace_gives_the_generators_numbers(
    tmp_path, monkeypatch, suffix, chunk, orjson_max
):
    """Also when the columns are built in many chunks (97 events: cpu ops cross chunks) and
    when the events are streamed instead of parsed at once."""
    monkeypatch.setattr(trace_reader, "CHUNK_EVENTS", chunk)
    monkeypatch.setattr(trace_reader, "ORJSON_MAX_BYTES", orjson_max)
    path = tmp_path / f"worker0.123{suffix}"
    expected = write_trace(path, SMALL)
    stats = analyze_trace(path)
    db = stats.all_db
    rows = {n: i for i, n in enumerate(db.name.tolist()) if n != "IDLE"}
    assert set(rows) == set(expected["time_ns"])
    assert {"aten::addmm", "aten::mm", "aten::cudnn_convolution", "record_param_comms"} <= set(rows)
    for name, i in rows.items():
        assert db.time_ps[i] == expected["time_ns"][name] * 1000
        assert db.flops[i] == expected["flops"][name]
        assert db.occurrences[i] == expected["kernels"][name]
    assert [s.step_num for s in stats.steps] == expected["steps"] == [2, 3]
    assert all(s.complete for s in stats.steps)
    assert stats.unattributed.time_ps.sum() == expected["memcpy_ns"] * 1000
    assert "H100" in stats.perf_env.source
    # Kernels of the autograd thread's ops are found through that thread.
    assert db.occurrences[rows["aten::mm"]] == 2 * db.occurrences[rows["aten::addmm"]]
    assert db.dtype[rows["aten::mm"]] == "bf16"


def test_size_asked_for_is_about_the_size_written(tmp_path):
    path = tmp_path / "big.pt.trace.json"
    spec = KinetoSpec(steps=steps_for_mb(2))
    write_trace(path, spec)
    assert 1.8e6 < path.stat().st_size < 2.2e6


def test_written_trace_is_json_with_kinetos_top_level_keys(tmp_path):
    path = tmp_path / "w.pt.trace.json.gz"
    write_trace(path, SMALL)
    document = json.loads(gzip.decompress(path.read_bytes()))
    assert document["distributedInfo"] == {
        "backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1, "pg_config": [],
        "nccl_version": "2.21.5",
    }  # fmt: skip
    assert document["deviceProperties"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert document["baseTimeNanoseconds"] == 1_767_225_600_000_000_000
    steps = [e["name"] for e in document["traceEvents"] if e["name"].startswith("ProfilerStep")]
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"]
