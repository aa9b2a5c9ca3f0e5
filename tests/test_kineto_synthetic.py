"""benchmarks/kineto_trace.py writes traces whose analysis it knows in advance."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tb_roofline_plugin.kineto import analyze_trace, trace_reader

GENERATOR = Path(__file__).resolve().parents[1] / "benchmarks" / "kineto_trace.py"


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("kineto_trace", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kineto_trace"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["kineto_trace"]


@pytest.mark.parametrize(
    ("suffix", "chunk"), [(".pt.trace.json", 1 << 16), (".pt.trace.json.gz", 1 << 16),
                          (".pt.trace.json", 97)]
)  # fmt: skip
def test_synthetic_trace_gives_the_generators_numbers(
    generator, tmp_path, monkeypatch, suffix, chunk
):
    """Also when the columns are built in many chunks (97 events: cpu ops cross chunks)."""
    monkeypatch.setattr(trace_reader, "CHUNK_EVENTS", chunk)
    path = tmp_path / f"worker0.123{suffix}"
    expected = generator.write_trace(str(path), steps=5, seed=3)
    stats = analyze_trace(path)
    db = stats.all_db
    rows = {n: i for i, n in enumerate(db.name.tolist()) if n != "IDLE"}
    assert set(rows) == set(expected["time_us"]) == {"aten::addmm", "aten::mul", "aten::mm"}
    for name, i in rows.items():
        assert db.time_ps[i] == expected["time_us"][name] * 1_000_000
        assert db.flops[i] == expected["flops"][name]
        assert db.occurrences[i] == expected["kernels"][name]
    assert [s.step_num for s in stats.steps] == expected["steps"]
    assert all(s.complete for s in stats.steps)
    un = stats.unattributed
    assert un.time_ps.sum() == expected["memcpy_us"] * 1_000_000
    assert "H100" in stats.perf_env.source
    # Kernels of the autograd thread's ops are found through that thread.
    assert db.dtype[rows["aten::mm"]] == "bf16"


def test_size_asked_for_is_about_the_size_written(generator, tmp_path):
    path = tmp_path / "big.pt.trace.json"
    generator.write_trace(str(path), steps=generator.steps_for_mb(2))
    assert 1.6e6 < path.stat().st_size < 2.4e6
