"""The compiled row writer (``render/_text.c``) gives the Python path's bytes on real profiles:
every format, the whole profile and single steps, as the CLI and the service write them."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tb_roofline_plugin.demo import CpuSpec, GpuSpec, TpuSpec, cpu_xspace, gpu_xspace, tpu_xspace
from tb_roofline_plugin.ops.op_metrics import OpMetricsDb, empty_columns
from tb_roofline_plugin.ops.selection import select
from tb_roofline_plugin.peaks.perf_env import PerfEnv
from tb_roofline_plugin.platforms.analysis import analyze_file, analyze_profile
from tb_roofline_plugin.protos import roofline_model_pb2
from tb_roofline_plugin.render import json_text
from tb_roofline_plugin.render.datatable import csv_text, datatable_text
from tb_roofline_plugin.render.export import (
    complete_json_text,
    record_dicts,
    records_text,
    render,
    selection_model,
)
from tb_roofline_plugin.roofline.formulas import DatabasePeaks
from tb_roofline_plugin.roofline.records import RecordSet, op_records
from tb_roofline_plugin.xspace.profile_reader import decode_profile

pytestmark = pytest.mark.skipif(
    json_text._text is None, reason="the compiled row writer (_text.c) is not built"
)

SHARED = {
    "tpu": "xprof/tpu_inference_2.xplane.pb",
    "amd": "tracelens/jax08_attention/tw003.xplane.pb",
    "jax_cpu": "jax-cpu/jax_mlp/plugins/profile/2026_11_30_09_47_20/vm.xplane.pb",
    "pytorch_cpu": "pytorch/cpu_cnn/worker0.1796108550851685382.pt.trace.json",
}
GENERATED = {
    "tpu_training": lambda: tpu_xspace(TpuSpec(cores=2, steps=4)),
    # A pod's host: four cores of one program, every one with events and steps.
    "tpu_pod_host": lambda: tpu_xspace(TpuSpec(steps=6, ops_per_step=40, host="p0", seed=3)),
    "gpu_training": lambda: gpu_xspace(GpuSpec(gpus=1, steps=3)),
    "cpu_training": lambda: cpu_xspace(CpuSpec()),
}


@pytest.fixture(scope="module", params=[*SHARED, *GENERATED])
def stats(request, shared_data):
    if request.param in SHARED:
        return analyze_file(shared_data / SHARED[request.param])
    space = GENERATED[request.param]()
    return analyze_profile(decode_profile(space.SerializeToString()), request.param)


def _texts(stats) -> dict[str, str]:
    """Every text the CLI and the service write of ``stats``."""
    steps = ["total"] + (["average"] if stats.complete_steps else [])
    steps += [s.step_num for s in stats.steps[:1] + stats.steps[-1:]]
    texts = {fmt: render(stats, fmt, ["p.xplane.pb"]) for fmt in ("datatable", "csv")}
    for step in steps:
        texts[f"json {step}"] = render(stats, "json", ["p.xplane.pb"], step)
        selection = select(stats, step)
        model = selection_model(stats, selection)  # the service's form: no indent
        texts[f"service {step}"] = complete_json_text(model, stats, ["p"], selection)
    return texts


def test_compiled_and_python_paths_write_the_same_bytes(stats, monkeypatch):
    monkeypatch.setenv(json_text.PURE_ENV, "1")
    pure = _texts(stats)
    monkeypatch.setenv(json_text.PURE_ENV, "0")
    compiled = _texts(stats)
    assert list(compiled) == list(pure)
    for name, text in compiled.items():
        assert text == pure[name], name

    model = selection_model(stats, select(stats, "total"))
    table, diagnostics = json.loads(compiled["datatable"])
    assert len(table["rows"]) == len(model.records) > 0
    assert [c["v"] for c in table["rows"][0]["c"][:4]] == ["Total", 0.0, "Program", "Program"]
    lines = list(csv.reader(io.StringIO(compiled["csv"])))
    assert len(lines) == len(model.records) + 1 and lines[0][:2] == ["Step", "Rank"]
    assert lines[1][:4] == ["Total", "0.0", "Program", "Program"]
    whole = json.loads(compiled["json total"])
    records = whole["database"]["roofline_model_record"]
    assert len(records) == len(model.records)
    assert records[0]["record_type"] == "ALL" and records[0]["hlo_name"] == "Program"
    assert [s["step_num"] for s in whole["steps"]] == [s.step_num for s in stats.steps]
    if stats.complete_steps:
        average = json.loads(compiled["service average"])
        kinds = {r["record_type"] for r in average["database"]["roofline_model_record"]}
        assert kinds == {"AVERAGE_STEP"} and average["step"] == "average"


def test_the_compiled_writer_is_what_the_renderers_use(stats, monkeypatch):
    """Not the Python path by accident: the compiled path's functions are called."""
    calls = []
    rows = json_text._text.rows
    monkeypatch.setattr(json_text._text, "rows", lambda *a: calls.append(a) or rows(*a))
    model = selection_model(stats, select(stats, "total"))
    datatable_text(model)
    csv_text(model)
    assert len(calls) == 2
    render(stats, "json", ["p"])
    assert len(calls) >= 4  # records, ops, steps


def _odd_records() -> RecordSet:
    """Records with every SourceInfo shape (file, line and stack; stack only; line 0 only; none) and
    names that need escaping, per step and not."""
    cols = empty_columns(4)
    cols["program_id"][:] = [7, 2**64 - 1, 7, 3]
    cols["name"][:] = ['fusion "a"\\b', "naïve\n", "\U0001f642op\x7f", "plain"]
    cols["category"][:] = ["loop fusion", "convolution", "custom-call", "infeed"]
    cols["occurrences"][:] = [2, 1, 3, 1]
    cols["time_ps"][:] = cols["self_time_ps"][:] = [4_000_000, 1_000_000, 3_000_000, 7]
    cols["flops"][:] = [8e6, 2.0**70, 0.0, 1.0]
    cols["bytes_accessed"][:] = [1e3, 5e5, -1.0, 3.0]
    cols["source_file"][:] = ["model.py", "", "", ""]
    cols["source_line"][:] = [12, 0, 0, -1]
    cols["source_stack"][:] = ["train\nstep", "", "a.py:1", ""]
    db = OpMetricsDb(**cols, total_time_ps=10_000_000)
    peaks = DatabasePeaks.from_env(
        PerfEnv(peak_tera_flops_per_second=1.0, peak_bws_gbps=[1.0, 0, 0, 0, 0, 0, 0]), "TPU"
    )
    return RecordSet.concat(
        [
            op_records(db, peaks, 1, True, roofline_model_pb2.PER_STEP, 3),
            op_records(db, peaks, 1, False),
        ]
    )


@pytest.mark.parametrize("indent", [None, 1, 2])
def test_records_text_of_every_source_shape_is_json_dumps_of_the_record_dicts(monkeypatch, indent):
    records = _odd_records()
    assert records["hlo_name"].tolist()[:4] == [
        'fusion "a"\\b',
        "\U0001f642op\x7f",
        "naïve\n",
        "plain",
    ]
    assert records["has_source_info"].tolist() == [True, True, True, False, True, True, True]
    expected = json.dumps({"k": record_dicts(records)}, indent=indent)
    for pure in ("1", "0"):
        monkeypatch.setenv(json_text.PURE_ENV, pure)
        text = records_text(records, indent, 1)
        assert json.dumps({"k": "@"}, indent=indent).replace('"@"', text) == expected, pure
    sources = [r.get("source_info") for r in json.loads(expected)["k"]]
    assert sources[:4] == [
        {"file_name": "model.py", "line_number": 12, "stack_frame": "train\nstep"},
        {"stack_frame": "a.py:1"},
        {},
        None,
    ]


@pytest.mark.parametrize("at_once", [1, 3])
def test_a_datatables_rows_are_written_as_they_are_made(stats, monkeypatch, at_once):
    """The export writes a datatable piece by piece: the pieces of rows are made
    ``PIECES_AT_ONCE`` at a time (in as many threads) when the writer asks for them, so a
    million-step profile never holds its whole text at once; the text is the same."""
    from tb_roofline_plugin.render import datatable

    monkeypatch.setattr(datatable, "ROWS_PER_PIECE", 2)
    monkeypatch.setattr(datatable, "PIECES_AT_ONCE", at_once)
    calls = []
    rows = datatable.rows_text
    monkeypatch.setattr(datatable, "rows_text", lambda *a: calls.append(a) or rows(*a))
    model = selection_model(stats, select(stats, "total"))
    assert len(model.records) > 2 * at_once  # several rounds of pieces
    pieces = iter(datatable.datatable_pieces(model))
    assert calls == []  # nothing made yet
    written = [next(pieces)]
    while not calls:
        written.append(next(pieces))
    assert len(calls) == at_once  # the first round of pieces only
    assert sorted(call[3] for call in calls) == [2 * k for k in range(at_once)]
    written += list(pieces)
    assert len(calls) == (len(model.records) + 1) // 2
    assert "".join(written) == json.dumps(datatable.to_datatable(model))


def test_rows_let_other_threads_run_while_they_are_written():
    """A big piece of rows is written without the GIL (another thread of TensorBoard's, or the
    next piece, runs meanwhile), and its str cells are held: the list may change meanwhile."""
    import threading
    import time

    import numpy as np

    count = 1_000_000
    values = np.random.default_rng(3).random(count)
    pool = [f"op.{i}" for i in range(97)]
    names = [pool[i % 97] for i in range(count)]
    fields = [
        json_text.float_field("[", values),
        json_text.str_field(", ", names),
        json_text.float_field(", ", values * 3.5),
    ]
    expected = ", ".join(
        json.dumps([float(v), n, float(v * 3.5)]) for v, n in zip(values[:50], names[:50])
    )
    texts = []
    writer = threading.Thread(target=lambda: texts.append(json_text.rows_text(fields, "]", ", ")))
    stamps = [time.perf_counter()]
    writer.start()
    while writer.is_alive():
        stamps.append(time.perf_counter())
    writer.join()
    took = stamps[-1] - stamps[0]
    longest_wait = float(np.diff(stamps).max())
    assert longest_wait < took / 2, (longest_wait, took)  # held, it would be all of it
    assert texts[0].startswith(expected + ", ")
    assert texts[0].count("]") == count


@pytest.mark.parametrize("indent", [None, 1])
@pytest.mark.parametrize("count", [1, 511, 512, 1001])
def test_a_long_json_list_written_in_two_halves_is_json_dumps(count, indent):
    """From ROWS_IN_THREADS rows, a list's rows are written as two halves in two threads and
    put back with the separator between them: the text is json.dumps' all the same."""
    import numpy as np

    assert json_text.ROWS_IN_THREADS == 512
    values = np.arange(count) / 7.0
    names = [f"op.{i}" for i in range(count)]
    literals, tail = json_text.object_literals(["t", "name"], indent, 2)
    fields = [
        json_text.float_field(literals[0], values),
        json_text.str_field(literals[1], names),
    ]
    pieces = json_text.list_rows_pieces(fields, tail, indent, 1)
    assert len(pieces) == (5 if count >= 512 else 3)
    rows = [{"t": float(v), "name": n} for v, n in zip(values, names)]
    expected = json.dumps({"k": rows}, indent=indent)
    assert json.dumps({"k": "@"}, indent=indent).replace('"@"', "".join(pieces)) == expected
