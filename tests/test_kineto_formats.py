"""Every Kineto format PyTorch has written since 1.8, and JSON traces under any name: old
category and key names read as today's, a trace told by its content, misnamed traces in a
logdir reported (not read), XSpace never taken for a trace."""

from __future__ import annotations

import gzip
import json
import logging
import shutil

import pytest
from conftest import SHARED_DATA, run_cli

from tb_roofline_plugin.kineto.trace_reader import NO_VALUE, read_trace
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.serve.convert import convert_file
from tb_roofline_plugin.serve.service import RooflineService
from tb_roofline_plugin.xspace.discovery import file_head, looks_like_trace, scan

R50 = "field/kineto_r50_w0/worker0.1623143089861.pt.trace.json.gz"
GPU_METRICS = "field/kineto_gpu_metrics/gpu_metrics_input.json"
GEMM_XSPACE = "tracelens/jax08_gemm/tw003.xplane.pb"
FIELD_TRACES = sorted(
    p.relative_to(SHARED_DATA).as_posix() for p in SHARED_DATA.glob("field/*/*.json*")
)
# Kernels with runtime calls but no CPU op: analysed once kineto/ops.py's fix of issue 19 is in.
# Older Kineto's categories, written out here as the oracle (not the reader's table).
OLD_TO_NEW = {
    "Operator": "cpu_op",
    "Kernel": "kernel",
    "Runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}


def _raw_events(path) -> tuple[dict, list[dict]]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    document = json.loads(data)
    return document, [e for e in document["traceEvents"] if e.get("ph") == "X"]


@pytest.mark.parametrize("rel", [R50, GPU_METRICS])
def test_old_kineto_traces_read_under_todays_names(shared_data, rel):
    document, events = _raw_events(shared_data / rel)
    trace = read_trace(shared_data / rel)
    kernels = sum(e.get("cat") == "Kernel" for e in events)
    operators = sum(e.get("cat") == "Operator" for e in events)
    assert kernels > 0 and operators > 0
    assert (trace.category == trace.code("kernel")).sum() == kernels
    assert len(trace.op_rows) == operators == (trace.category == trace.code("cpu_op")).sum()
    # Only the categories the trace has, each once, by today's name.
    assert sorted(trace.categories) == sorted({OLD_TO_NEW.get(e["cat"], e["cat"]) for e in events})
    assert not set(OLD_TO_NEW) & set(trace.categories)
    # Ops carry "External id", kernels and runtime calls "external id".
    with_id = sum(
        ("External id" in e.get("args", {})) or ("external id" in e.get("args", {})) for e in events
    )
    assert (trace.external_id != NO_VALUE).sum() == with_id
    kernel_ids = [e["args"]["external id"] for e in events if e.get("cat") == "Kernel"]
    assert trace.external_id[trace.category == trace.code("kernel")].tolist() == kernel_ids
    first = trace.device_properties[0]
    assert first["name"] == "Tesla V100-DGXS-32GB"
    assert (first["computeMajor"], first["computeMinor"], first["numSms"]) == (7, 0, 80)
    assert first["id"] == 0 and first["totalGlobalMem"] == 34084028416
    assert len(trace.device_properties) == len(
        document.get("deviceProperties") or document["computeProperties"]
    )


def test_old_trace_is_a_gpu_roofline_judged_by_its_v100(shared_data):
    stats = analyze_file(shared_data / GPU_METRICS)
    assert stats.run_env.hardware_type == "GPU"
    assert "V100" in stats.perf_env.source


def test_modern_trace_lists_no_category_it_lacks(shared_data):
    trace = read_trace(shared_data / "field/tl_mi210_gpu_only/gpu_only_trace.json.gz")
    assert sorted(trace.categories) == ["Trace", "cuda_runtime", "kernel"]
    assert trace.code("cpu_op") == -1 and len(trace.op_rows) == 0


def _tiny_trace(old: bool) -> dict:
    """One aten::mm whose runtime call launches one 20 us kernel, in the old or new names."""
    cat = (lambda new, before: before) if old else (lambda new, before: new)
    ext = "external id" if old else "External id"
    props = (
        {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936,
         "major": 9, "minor": 0, "multiProcessorCount": 132}
        if old
        else {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936,
              "computeMajor": 9, "computeMinor": 0, "numSms": 132}
    )  # fmt: skip
    return {
        "schemaVersion": 1,
        ("computeProperties" if old else "deviceProperties"): [props],
        "traceEvents": [
            {"ph": "X", "cat": cat("cpu_op", "Operator"), "name": "aten::mm", "pid": 1,
             "tid": 1, "ts": 100, "dur": 50,
             "args": {"External id": 1, "Input Dims": [[64, 32], [32, 16]],
                      "Input type": ["float", "float"]}},
            {"ph": "X", "cat": cat("cuda_runtime", "Runtime"), "name": "cudaLaunchKernel",
             "pid": 1, "tid": 1, "ts": 110, "dur": 5, "args": {"correlation": 7, ext: 1}},
            {"ph": "X", "cat": cat("kernel", "Kernel"), "name": "gemm", "pid": 0, "tid": 7,
             "ts": 120, "dur": 20, "args": {"correlation": 7, ext: 1, "device": 0}},
        ],
    }  # fmt: skip


def _mm_row(stats) -> tuple[int, int]:
    names = stats.all_db.name.tolist()
    i = names.index("aten::mm")
    return int(stats.all_db.time_ps[i]), int(stats.all_db.occurrences[i])


@pytest.mark.parametrize("old", [False, True])
@pytest.mark.parametrize(
    ("name", "lead", "gz", "host"),
    [
        ("trace.json", b"", False, "trace"),
        ("trace.json.gz", b"", True, "trace"),
        ("x.txt", b"", False, "x.txt"),
        ("lead.json", b"\n  ", False, "lead"),
        ("lead.json.gz", b"\n  ", True, "lead"),
    ],
)
def test_a_json_trace_reads_whatever_its_name(tmp_path, old, name, lead, gz, host):
    data = lead + json.dumps(_tiny_trace(old), indent=1).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if gz else data)
    assert looks_like_trace(file_head(path))
    for stats in (analyze_file(path), convert_file(str(path))):
        assert stats.hosts == [host]
        assert stats.run_env.hardware_type == "GPU"
        assert "H100" in stats.perf_env.source
        assert _mm_row(stats) == (20_000_000, 1)  # the kernel's 20 us


def test_both_case_variants_of_a_category_are_one(tmp_path):
    document = _tiny_trace(old=True)
    kernel = dict(document["traceEvents"][2], ts=150, cat="kernel")  # a second, today's name
    document["traceEvents"].append(kernel)
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(document))
    trace = read_trace(path)
    assert sorted(trace.categories) == ["cpu_op", "cuda_runtime", "kernel"]
    assert (trace.category == trace.code("kernel")).sum() == 2


@pytest.mark.parametrize("name", ["foo.xplane.pb", "something.json"])
def test_an_xspace_is_never_read_as_a_trace(shared_data, tmp_path, name):
    """Named *.xplane.pb it is XSpace by name; under another name its content says XSpace
    (its first byte 0x0a is JSON whitespace, but no JSON object follows)."""
    original = analyze_file(shared_data / GEMM_XSPACE)
    copy = tmp_path / name
    shutil.copy(shared_data / GEMM_XSPACE, copy)
    assert not looks_like_trace(file_head(copy))
    stats = analyze_file(copy)
    assert stats.run_env.hardware_type == original.run_env.hardware_type == "GPU"
    assert stats.all_db.time_ps.sum() == original.all_db.time_ps.sum() > 0


def test_no_shared_xspace_looks_like_a_trace_and_every_field_trace_does(shared_data):
    xspace = sorted(shared_data.glob("**/*.xplane.pb"))
    assert len(xspace) >= 10
    assert not any(looks_like_trace(file_head(p)) for p in xspace)
    assert FIELD_TRACES and all(looks_like_trace(file_head(shared_data / p)) for p in FIELD_TRACES)


@pytest.mark.parametrize("rel", FIELD_TRACES)
def test_cli_summary_reads_every_field_trace(shared_data, rel):
    proc = run_cli("summary", str(shared_data / rel))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"profile: {shared_data / rel}\n")


def test_cli_reads_a_folder_of_json_traces_it_is_given(tmp_path):
    folder = tmp_path / "exported"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(_tiny_trace(old=False)))
    (folder / "b.json.gz").write_bytes(gzip.compress(json.dumps(_tiny_trace(old=True)).encode()))
    (folder / "notes.json").write_text("[1, 2]")  # JSON, not a trace
    doc = json.loads(run_cli("export", str(folder), "--format", "json", check=True).stdout)
    assert doc["hosts"] == ["a", "b"]


def test_foreign_files_stay_one_line_errors_naming_the_file(tmp_path):
    not_a_trace = tmp_path / "weird.json"
    not_a_trace.write_text('{"a": 1}')
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)))
    for path, detail in [
        (not_a_trace, "JSON without a traceEvents list, not a PyTorch profiler trace"),
        (binary, "not a valid XSpace profile"),
    ]:
        proc = run_cli("summary", str(path))
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1
        assert proc.stderr.startswith(f"tb-roofline: error: {path}: ") and detail in proc.stderr


def _logdir(tmp_path, trace: bytes):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1/worker0.123.pt.trace.json").write_bytes(trace)
    (tmp_path / "run2").mkdir()
    (tmp_path / "run2/trace.json").write_bytes(b"\n " + trace)
    (tmp_path / "run2/config.json").write_text('["not", "a", "trace"]')
    xspace = tmp_path / "jax/plugins/profile/r1"
    xspace.mkdir(parents=True)
    (xspace / "vm.xplane.pb").write_bytes(b"\x0a\x00")
    (xspace / "vm.trace.json.gz").write_bytes(gzip.compress(trace))  # the producer's own


def test_discovery_reads_pt_traces_and_reports_other_json_traces(tmp_path):
    trace = json.dumps(_tiny_trace(old=False)).encode()
    _logdir(tmp_path, trace)
    found = scan(str(tmp_path))
    assert list(found.runs) == ["jax/r1", "run1"]
    assert list(found.runs["run1"].hosts) == ["worker0"]
    assert found.skipped == {str(tmp_path / "run2"): ["trace.json"]}


def test_the_server_warns_once_per_folder_of_misnamed_traces(tmp_path, caplog):
    trace = json.dumps(_tiny_trace(old=False)).encode()
    _logdir(tmp_path, trace)
    service = RooflineService(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="tb_roofline_plugin.serve.service"):
        assert service.runs() == ["jax/r1", "run1"]
        assert service.runs() == ["jax/r1", "run1"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    (message,) = warnings
    assert str(tmp_path / "run2") in message and "(trace.json)" in message
    assert "<worker>.<timestamp>.pt.trace.json[.gz]" in message
    assert service.skipped_traces == {str(tmp_path / "run2"): ["trace.json"]}


def test_sniffing_reads_only_the_head_of_a_gzip(tmp_path):
    """A gzip's first SNIFF_BYTES are enough: a truncated compressed file still sniffs."""
    events = b",".join(b'{"ph": "X", "ts": %d}' % (i * 7919 % 100_003) for i in range(100_000))
    body = b'{"traceEvents": [' + events + b"]}"
    packed = gzip.compress(body)
    assert len(packed) > 4096
    assert looks_like_trace(packed[:4096])
    assert not looks_like_trace(gzip.compress(b"[" + body + b"]")[:4096])
    assert not looks_like_trace(b"\x1f\x8b not really gzip")
