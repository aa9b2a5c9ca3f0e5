"""Every GPU kernel of a Kineto trace belongs somewhere; Total holds the steps; GPU traces
without activity; several workers.

Oracles come from the raw JSON in plain Python: a kernel's runtime call has its
``correlation`` (a graph launch's call is shared by every kernel it replays); the innermost
``cpu_op`` on the call's thread holding the call launched it, else the innermost
``user_annotation`` there (not ``ProfilerStep#N``) names it, else the innermost
``gpu_user_annotation`` holding the kernel on its stream, else the kernel names itself.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest
from kineto_oracle import Holder

from tb_roofline_plugin.demo import write_demo_logdir
from tb_roofline_plugin.kineto import analyze_trace
from tb_roofline_plugin.platforms.analysis import analyze_files
from tb_roofline_plugin.render.summary import summary_text

TRACES = [
    "field/hta_cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
    "field/hta_distinfo_nf/distributed_info_not_found.json.gz",
    "field/hta_triton/triton_example.json.gz",
    "field/tl_h100_qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "field/tl_mi210_gpu_only/gpu_only_trace.json.gz",
    "field/tl_mi300_sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    "pytorch/a100_recsys/control.pt.trace.json.gz",
    "pytorch/mi250_minitoy/mi250_minitoy_train.pt.trace.json.gz",
    "pytorch/cpu_cnn/worker0.1796108550851685382.pt.trace.json",
    "new-producers/torch_lstm/lstm_lm.1796151468267422256.pt.trace.json",
]
WITH_KERNELS = [t for t in TRACES if "hta_cupti" not in t and "distinfo" not in t]
WITH_KERNELS = [t for t in WITH_KERNELS if "cpu_cnn" not in t and "torch_lstm" not in t]
RUNTIME = ("cuda_runtime", "cuda_driver", "hip_runtime")
OLD_CATEGORIES = {
    "Operator": "cpu_op",
    "Kernel": "kernel",
    "Runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}
OWN_ROWS = ("annotation", "kernel without op")


def _document(path) -> dict:
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rt") as handle:
        return json.load(handle)


def _complete(document: dict) -> list[dict]:
    return [e for e in document["traceEvents"] if e.get("ph") == "X"]


def _is_step(e: dict) -> bool:
    return str(e.get("name", "")).startswith("ProfilerStep#")


def _owners(events: list[dict]) -> list[tuple[dict, str, str]]:
    """(kernel, kind, row name) per kernel; kind: "op", "annotation" or "kernel"."""
    ops = Holder([e for e in events if e.get("cat") == "cpu_op" and not _is_step(e)])
    marks = Holder([e for e in events if e.get("cat") == "user_annotation" and not _is_step(e)])
    device_marks = Holder(
        [e for e in events if e.get("cat") == "gpu_user_annotation" and not _is_step(e)]
    )
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in RUNTIME}
    out = []
    for k in (e for e in events if e.get("cat") == "kernel"):
        call = calls.get(k["args"].get("correlation"))
        op = mark = None
        if call is not None:
            thread = (call["pid"], call["tid"])
            op = ops.innermost(thread, call["ts"])
            mark = None if op else marks.innermost(thread, call["ts"])
        if op is None and mark is None:
            mark = device_marks.innermost((k["pid"], k["tid"]), k["ts"])
        if op is not None:
            out.append((k, "op", op["name"]))
        elif mark is not None:
            out.append((k, "annotation", mark["name"]))
        else:
            out.append((k, "kernel", k["name"]))
    return out


def _times_by_kind(db) -> dict[str, float]:
    """us of the op rows of each kind: launched by an op, named by an annotation, by itself."""
    out = {"op": 0.0, "annotation": 0.0, "kernel": 0.0}
    for category, name, time_ps in zip(db.category, db.name, db.time_ps.tolist()):
        if name == "IDLE":
            continue
        kind = {"annotation": "annotation", "kernel without op": "kernel"}.get(category, "op")
        out[kind] += time_ps / 1e6
    return out


@pytest.fixture(scope="module")
def analysed(shared_data):
    return {t: analyze_trace(shared_data / t) for t in TRACES}


@pytest.mark.parametrize("trace", WITH_KERNELS)
def test_kernel_time_by_owner_kind_is_the_oracles(shared_data, analysed, trace):
    events = _complete(_document(shared_data / trace))
    oracle = {"op": 0.0, "annotation": 0.0, "kernel": 0.0}
    for kernel, kind, _ in _owners(events):
        oracle[kind] += kernel["dur"]
    assert _times_by_kind(analysed[trace].all_db) == pytest.approx(oracle, abs=1e-3)


@pytest.mark.parametrize("trace", WITH_KERNELS)
def test_op_rows_hold_every_kernel(shared_data, analysed, trace):
    events = _complete(_document(shared_data / trace))
    kernels = [e for e in events if e.get("cat") == "kernel"]
    db = analysed[trace].all_db
    busy = db.name != "IDLE"
    assert db.time_ps[busy].sum() / 1e6 == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-3)
    assert int(db.occurrences[busy].sum()) == len(kernels)


@pytest.mark.parametrize("trace", WITH_KERNELS)
def test_rows_of_their_own_are_named_by_the_oracles_annotation_or_kernel(
    shared_data, analysed, trace
):
    events = _complete(_document(shared_data / trace))
    oracle: dict[tuple[str, str], float] = defaultdict(float)
    for kernel, kind, name in _owners(events):
        if kind != "op":
            oracle[({"annotation": "annotation"}.get(kind, "kernel without op"), name)] += kernel[
                "dur"
            ]
    db = analysed[trace].all_db
    ours = {
        (c, n): t / 1e6
        for c, n, t in zip(db.category, db.name, db.time_ps.tolist())
        if c in OWN_ROWS
    }
    assert ours == pytest.approx(dict(oracle), abs=1e-3)


def test_graph_replayed_kernels_go_to_the_annotation_around_the_graph_launch(analysed):
    stats = analysed["field/tl_mi300_sglang_decode/sglang_Qwen3-8B_decode.json.gz"]
    db = stats.all_db
    row = db.name.tolist().index("step[DECODE bs=32]")
    assert db.category[row] == "annotation"
    # 544 kernels share hipGraphLaunch's correlation 92178; one more launch lies there too.
    assert db.occurrences[row] == 545
    assert any("544 of them replayed by 1 graph launch" in n for n in stats.notes)


def test_gpu_only_trace_reads_and_its_rows_are_its_kernels(shared_data, analysed):
    trace = "field/tl_mi210_gpu_only/gpu_only_trace.json.gz"
    events = _complete(_document(shared_data / trace))
    names = {e["name"] for e in events if e.get("cat") == "kernel"}
    db = analysed[trace].all_db
    busy = db.name != "IDLE"
    assert set(db.name[busy]) == names
    assert set(db.category[busy]) == {"kernel without op"}


@pytest.mark.parametrize("trace", TRACES)
def test_total_holds_every_complete_step(shared_data, analysed, trace):
    stats = analysed[trace]
    complete = sum(s.db.total_time_ps for s in stats.steps if s.complete)
    assert stats.all_db.total_time_ps >= complete


def test_total_of_a_trace_whose_step_outlasts_its_kernels_is_the_step(analysed):
    stats = analysed["field/hta_triton/triton_example.json.gz"]
    # ProfilerStep#1 lasts 13,336,315.805 us; its one kernel 1.76 us.
    assert stats.all_db.total_time_ps == 13_336_315_805_000
    assert stats.steps[0].db.total_time_ps == stats.all_db.total_time_ps


def test_old_kineto_categories_read_as_modern_ones(shared_data, tmp_path):
    document = _document(shared_data / "field/kineto_r50_w0/worker0.1623143089861.pt.trace.json.gz")
    for e in document["traceEvents"]:
        e["cat"] = OLD_CATEGORIES.get(e.get("cat"), e.get("cat"))
    path = tmp_path / "worker0.pt.trace.json"
    path.write_text(json.dumps(document))
    stats = analyze_trace(path)
    events = _complete(document)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    oracle = {"op": 0.0, "annotation": 0.0, "kernel": 0.0}
    for kernel, kind, _ in _owners(events):
        oracle[kind] += kernel["dur"]
    assert len(kernels) == 8_772
    assert _times_by_kind(stats.all_db) == pytest.approx(oracle)
    assert oracle["op"] == sum(e["dur"] for e in kernels)  # every kernel has its op
    # Steps are ops there (ProfilerStep#5-#10): steps, not the op of every kernel.
    assert [s.step_num for s in stats.steps] == [5, 6, 7, 8, 9, 10]
    assert not any(n.startswith("ProfilerStep#") for n in stats.all_db.name)
    assert stats.all_db.total_time_ps >= sum(s.db.total_time_ps for s in stats.steps)


def test_gpu_trace_without_kernel_activity_names_its_gpu_and_places_no_op(analysed):
    stats = analysed["field/hta_distinfo_nf/distributed_info_not_found.json.gz"]
    assert stats.run_env.hardware_type == "GPU"
    assert stats.run_env.device_type.startswith("NVIDIA A100-PG509-200")
    assert stats.perf_env.known
    assert len(stats.all_db) == 0  # no rate from CPU op spans
    (warning,) = [w for w in stats.diagnostics.warnings if "no activity" in w]
    assert "ProfilerActivity.CPU, ProfilerActivity.CUDA" in warning


def test_cupti_range_profiler_trace_has_op_rows_without_times(analysed):
    """Its kernels are the counter ranges (tests/test_hardware_counters.py checks their
    counts): op rows with their kernels counted, no time, and a warning saying why."""
    stats = analysed["field/hta_cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"]
    assert stats.run_env.device_type.startswith("NVIDIA A100-PG509-200")
    assert stats.all_db.occurrences.sum() == 77 and stats.all_db.time_ps.sum() == 0
    assert stats.hardware is not None and stats.hardware.joined == 77
    (warning,) = [w for w in stats.diagnostics.warnings if "range profiler" in w]
    assert "77 cuda_profiler_range events" in warning and "no device times" in warning


def test_summary_prints_the_attributed_share(shared_data, analysed):
    trace = "field/tl_mi300_sglang_decode/sglang_Qwen3-8B_decode.json.gz"
    events = _complete(_document(shared_data / trace))
    oracle = {"op": 0.0, "annotation": 0.0, "kernel": 0.0}
    for kernel, kind, _ in _owners(events):
        oracle[kind] += kernel["dur"]
    total = sum(oracle.values())
    line = (
        f"kernel time: {100 * oracle['op'] / total:.1f} % attributed to CPU ops, "
        f"{100 * oracle['annotation'] / total:.1f} % to annotations, "
        f"{100 * oracle['kernel'] / total:.1f} % as kernels without an op (of {total:,.1f} us)"
    )
    assert line in summary_text(analysed[trace], [trace]).splitlines()


# --- generated traces, one per rule -------------------------------------------------------


def _x(cat, name, ts, dur, pid=1, tid=1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _kernel(name, ts, dur, corr, stream=7) -> dict:
    return _x("kernel", name, ts, dur, pid=0, tid=stream, correlation=corr, device=0)


H100 = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000,
         "computeMajor": 9, "computeMinor": 0, "numSms": 132}]  # fmt: skip


def _analyse(tmp_path, events, properties=H100):
    path = tmp_path / "w.1.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": properties}))
    return analyze_trace(path)


def _rows(stats) -> dict[str, tuple[str, int, float]]:
    db = stats.all_db
    return {
        n: (c, o, t / 1e6)
        for n, c, o, t in zip(db.name, db.category, db.occurrences.tolist(), db.time_ps.tolist())
        if n != "IDLE"
    }


def test_kernel_launched_inside_an_annotation_only_is_named_by_it(tmp_path):
    stats = _analyse(tmp_path, [
        _x("user_annotation", "ProfilerStep#3", 0, 200),
        _x("user_annotation", "## Call CompiledFxGraph f1 ##", 5, 100),
        _x("cuda_driver", "cuLaunchKernel", 10, 5, correlation=7),
        _kernel("triton_poi_fused_0", 50, 20, 7),
    ])  # fmt: skip
    assert _rows(stats) == {"## Call CompiledFxGraph f1 ##": ("annotation", 1, 20.0)}
    (step,) = stats.steps
    assert step.step_num == 3 and step.db.time_ps[step.db.name != "IDLE"].tolist() == [20_000_000]


def test_graph_replay_goes_to_the_op_that_launched_the_graph(tmp_path):
    stats = _analyse(tmp_path, [
        _x("cpu_op", "CUDAGraph::replay", 0, 50),
        _x("cuda_runtime", "cudaGraphLaunch", 10, 20, correlation=9),
        *[_kernel(f"k{i}", 40 + 10 * i, 5, 9) for i in range(3)],
    ])  # fmt: skip
    assert _rows(stats) == {"CUDAGraph::replay": ("other", 3, 15.0)}


def test_kernel_inside_a_gpu_annotation_without_a_launch_is_named_by_it(tmp_path):
    stats = _analyse(tmp_path, [
        _x("gpu_user_annotation", "forward", 0, 100, pid=0, tid=7),
        _kernel("gemm", 10, 30, 5),
        _kernel("lonely", 200, 4, 6),
        _kernel("other_stream", 20, 6, 8, stream=8),
    ])  # fmt: skip
    assert _rows(stats) == {
        "forward": ("annotation", 1, 30.0),
        "lonely": ("kernel without op", 1, 4.0),
        "other_stream": ("kernel without op", 1, 6.0),
    }


def test_a_step_starts_where_the_step_before_it_ended_on_the_device(tmp_path):
    stats = _analyse(tmp_path, [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("cpu_op", "aten::mm", 40, 20),
        _x("cuda_runtime", "cudaLaunchKernel", 50, 5, correlation=1),
        _kernel("gemm", 90, 60, 1),  # runs until 150, into step 2
        _x("user_annotation", "ProfilerStep#2", 100, 100),
        _x("cpu_op", "aten::add", 120, 10),
        _x("cuda_runtime", "cudaLaunchKernel", 122, 5, correlation=2),
        _kernel("add", 160, 10, 2),
    ])  # fmt: skip
    one, two = stats.steps
    assert one.db.total_time_ps == 150_000_000  # 0 .. 150
    assert two.db.total_time_ps == 50_000_000  # 150 .. 200
    assert (one.duration_ps, two.duration_ps) == (150_000_000, 50_000_000)
    assert stats.all_db.total_time_ps == 200_000_000


def _mtia_properties() -> list[dict]:
    return [{"id": 0, "name": "MTIA v2"}]


def test_mtia_trace_names_its_device_and_knows_no_peaks(tmp_path):
    stats = _analyse(tmp_path, [
        _x("cpu_op", "aten::mm", 0, 50, **{"Input Dims": [[4, 4], [4, 4]],
                                          "Input type": ["float", "float"]}),
        _x("mtia_runtime", "mtiaLaunchKernel", 10, 5, correlation=3),
        _x("mtia_ccp_events", "mm_kernel", 30, 8, pid=0, tid=1, correlation=3, device=0),
    ], properties=[])  # fmt: skip
    assert stats.run_env.hardware_type == "GPU"
    assert stats.run_env.device_type == "MTIA"
    assert not stats.perf_env.known
    assert any("No peaks known" in w for w in stats.diagnostics.warnings)
    assert _rows(stats)["aten::mm"][1:] == (1, 8.0)


def test_mtia_trace_without_its_activity_says_how_to_record_it(tmp_path):
    stats = _analyse(tmp_path, [
        _x("cpu_op", "aten::mm", 0, 50),
        _x("mtia_runtime", "mtiaLaunchKernel", 10, 5, correlation=3),
    ], properties=_mtia_properties())  # fmt: skip
    assert stats.run_env.device_type == "MTIA v2" and len(stats.all_db) == 0
    assert any("ProfilerActivity.MTIA" in w for w in stats.diagnostics.warnings)


def test_launches_without_kernel_activity_place_no_op(tmp_path):
    stats = _analyse(tmp_path, [
        _x("cpu_op", "aten::mm", 0, 50, **{"Input Dims": [[64, 64], [64, 64]],
                                          "Input type": ["float", "float"]}),
        _x("cuda_runtime", "cudaLaunchKernel", 10, 5, correlation=3),
    ])  # fmt: skip
    assert stats.run_env.device_type.startswith("NVIDIA H100 80GB HBM3")
    assert len(stats.all_db) == 0
    (warning,) = [w for w in stats.diagnostics.warnings if "no activity" in w]
    assert "1 kernel launch calls" in warning and "ProfilerActivity.CUDA" in warning


# --- several workers ------------------------------------------------------------------------


def test_workers_program_time_is_summed_and_step_duration_is_the_longest(tmp_path):
    written = write_demo_logdir(tmp_path, runs=("torch_gpu",))
    paths = sorted(str(p) for p in written if "torch_gpu" in str(p))
    assert len(paths) == 2
    parts = [analyze_trace(p) for p in paths]
    run = analyze_files(paths)
    for part in [*parts, run]:
        complete = sum(s.db.total_time_ps for s in part.steps if s.complete)
        assert part.all_db.total_time_ps >= complete
    assert run.all_db.total_time_ps == sum(p.all_db.total_time_ps for p in parts)
    for i, step in enumerate(run.steps):
        assert step.db.total_time_ps == sum(p.steps[i].db.total_time_ps for p in parts)
        assert step.duration_ps == max(p.steps[i].duration_ps for p in parts)
    notes = [n for n in run.notes if "device time summed over" in n]
    assert len(notes) == 1 and "summed over 2 GPUs" in notes[0]
    assert sum(n.startswith("kernel time: ") for n in run.notes) == 1
