"""Bad Kineto traces give one-line ProfileErrors naming the file, or an INFO diagnostic."""

from __future__ import annotations

import gzip
import json

import pytest

from tb_roofline_plugin.errors import ProfileError
from tb_roofline_plugin.kineto import analyze_trace, trace_reader


@pytest.fixture(params=[False, True], ids=["stdlib", "orjson-if-present"])
def parser(request, monkeypatch):
    """Both parse paths: streamed by the standard library, and whole (orjson) if installed."""
    if not request.param:
        monkeypatch.setattr(trace_reader, "_orjson", None)
    elif trace_reader._orjson is None:
        pytest.skip("orjson is not installed")


def _error(path) -> str:
    with pytest.raises(ProfileError) as caught:
        analyze_trace(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "\n" not in message
    return message


def test_truncated_gzip(tmp_path, parser):
    whole = gzip.compress(json.dumps({"traceEvents": []}).encode() * 50)
    path = tmp_path / "w.1.pt.trace.json.gz"
    path.write_bytes(whole[: len(whole) // 2])
    assert "truncated or corrupt gzip" in _error(path)


def test_not_json_and_empty(tmp_path, parser):
    path = tmp_path / "w.1.pt.trace.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": ')
    assert "not valid JSON" in _error(path)
    path.write_text("")
    assert "empty file" in _error(path)
    path.write_bytes(b"\xff\xfe{}")
    assert "UTF-8" in _error(path) or "JSON" in _error(path)


def test_json_without_trace_events(tmp_path, parser):
    path = tmp_path / "w.1.pt.trace.json"
    for document in ([1, 2], {"schemaVersion": 1}, {"traceEvents": {"a": 1}}):
        path.write_text(json.dumps(document))
        assert "without a traceEvents list" in _error(path)


def test_missing_file_names_it(tmp_path):
    assert "cannot read" in _error(tmp_path / "absent.pt.trace.json")


def test_trace_without_kernels_or_ops_is_an_info_diagnostic(tmp_path, parser):
    path = tmp_path / "w.1.pt.trace.json"
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 10, "dur": 5},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
        "not an event", {"ph": "X", "ts": "soon"},
    ]  # fmt: skip
    path.write_text(json.dumps({"traceEvents": events}))
    stats = analyze_trace(path)
    assert stats.run_env.hardware_type == "CPU_ONLY"
    assert "no GPU kernels and no CPU ops" in stats.diagnostics.info[0]


def test_odd_values_in_events_are_read_not_raised(tmp_path, parser):
    path = tmp_path / "w.1.pt.trace.json"
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": "p", "tid": [1], "ts": 0,
         "dur": 10, "args": {"Input Dims": "garbage", "Input type": None, "External id": "x",
                             "flops": "many"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 20,
         "dur": 10, "args": {"Input Dims": [[2, "a"], [3]], "Input type": ["float", 3],
                             "correlation": 1e300}},
    ]  # fmt: skip
    path.write_text(json.dumps({"traceEvents": events}))
    try:
        stats = analyze_trace(path)
    except ProfileError as error:  # an unhashable tid is the file's problem, said in a line
        assert "\n" not in str(error)
    else:
        assert stats.run_env.hardware_type == "CPU"


def test_kernels_without_runtime_calls_are_rows_of_their_own_with_a_reason(tmp_path, parser):
    path = tmp_path / "w.1.pt.trace.json"
    events = [
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100, "dur": 30,
         "args": {"correlation": 5, "device": 0}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 50,
         "args": {"Input Dims": [[4, 4], [4, 4]], "Input type": ["float", "float"]}},
    ]  # fmt: skip
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": []}))
    stats = analyze_trace(path)
    assert stats.run_env.hardware_type == "GPU"
    db = stats.all_db
    assert (db.category == "kernel without op").sum() == 1 and stats.unattributed is None
    assert db.time_ps[db.name == "gemm"].tolist() == [30_000_000]
    assert any("could be tied to a CPU op" in m for m in stats.diagnostics.info)
    assert any("No peaks known" in m for m in stats.diagnostics.warnings)
