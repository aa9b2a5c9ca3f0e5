"""GPU events on concurrent streams: op and kernel self times are each kernel's own time
(XProf's rule, kept for the datatable's parity), so where kernels and copies of one GPU
overlap, the overlap counts once per stream; a note measures it.

Oracle: the raw XSpace (``xplane_pb2``): per ``/device:GPU:N`` plane, the events of its
``Stream #...`` lines, their durations summed and their union swept in plain Python.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tb_roofline_plugin.demo import GpuSpec, gpu_xspace, write_profile
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.platforms.gpu import read_kernels, stream_overlap
from tb_roofline_plugin.protos import roofline_model_pb2, xplane_pb2
from tb_roofline_plugin.roofline.model import build_database
from tb_roofline_plugin.xspace.profile_reader import GPU_PLANE, read_profile

BERT = "field/tf_v100_bert/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb"
AMD = ("tracelens/jax08_gemm", "tracelens/jax08_attention", "tracelens/jax08_elementwise")


def _raw_streams(path: Path) -> dict[int, tuple[int, int]]:
    """{GPU number: (summed duration ps, union ps)} of its stream lines' events."""
    return {gpu: (summed, union) for gpu, (_, summed, union) in _raw_lines(path).items()}


def _raw_lines(path: Path) -> dict[int, tuple[int, int, int]]:
    """{GPU number: (stream lines with events, summed duration ps, union ps)}."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    out = {}
    for plane in space.planes:
        if not plane.name.startswith("/device:GPU:"):
            continue
        spans = sorted(
            (line.timestamp_ns * 1000 + e.offset_ps, line.timestamp_ns * 1000 + e.offset_ps
             + e.duration_ps)
            for line in plane.lines if line.name.startswith("Stream #") for e in line.events
        )  # fmt: skip
        if not spans:
            continue
        union, reach_begin, reach_end = 0, *spans[0]
        for begin, end in spans[1:]:
            if begin > reach_end:
                union += reach_end - reach_begin
                reach_begin, reach_end = begin, end
            else:
                reach_end = max(reach_end, end)
        union += reach_end - reach_begin
        streams = sum(1 for line in plane.lines if line.name.startswith("Stream #") and line.events)
        out[int(plane.name.rsplit(":", 1)[1])] = (streams, sum(e - b for b, e in spans), union)
    return out


def _measured(path: Path) -> dict[int, tuple[int, int]]:
    planes = read_profile(path).planes_matching(GPU_PLANE)
    summed, overlap = stream_overlap(read_kernels(planes), len(planes))
    numbers = [int(p.name.rsplit(":", 1)[1]) for p in planes]
    return {n: (int(s), int(o)) for n, s, o in zip(numbers, summed, overlap) if s > 0}


def test_bert_copies_overlap_compute_by_94_us_and_a_note_says_so(shared_data):
    path = shared_data / BERT
    assert {g: n for g, (n, _, _) in _raw_lines(path).items()} == {1: 1, 4: 4, 6: 4}
    raw = _raw_streams(path)
    measured = _measured(path)
    assert sorted(measured) == sorted(raw) == [1, 4, 6]
    for gpu, (summed, union) in raw.items():
        assert measured[gpu] == (summed, summed - union), gpu
    assert [measured[g][1] for g in (1, 4, 6)] == [0, 40_192_000, 54_048_000]  # ps
    stats = analyze_file(path)
    (note,) = [n for n in stats.notes if "concurrent streams" in n]
    assert note.startswith(
        "34.83.195.179_6003: events on concurrent streams overlap for 94.2 us on GPUs 4 and 6 "
        "(0.31 % of 30,128.3 us of kernels and copies there)"
    )
    # The kernels' self times stay each kernel's own time (XProf's rule): they sum to the
    # stream events' durations, more than the GPUs' busy time by the overlap, and the
    # shares of the device time stay below 100 % (the GPUs are mostly idle).
    kernels_ps = int(stats.unattributed.self_time_ps.sum())
    assert kernels_ps == sum(s for s, _ in raw.values())
    assert kernels_ps - sum(u for _, u in raw.values()) == 94_240_000
    assert kernels_ps < stats.all_db.total_time_ps
    one = analyze_file(path, device=6)
    (note,) = [n for n in one.notes if "concurrent streams" in n]
    assert "overlap for 54.0 us on GPU 6 (0.36 % of 15,104.5 us" in note


@pytest.mark.parametrize("folder", AMD)
def test_amd_kernels_never_overlap_and_keep_xprofs_self_times(shared_data, folder):
    (path,) = (shared_data / folder).glob("*.xplane.pb")
    raw = _raw_streams(path)
    assert raw and all(summed == union for summed, union in raw.values())
    assert all(overlap == 0 for _, overlap in _measured(path).values())
    stats = analyze_file(path)
    assert not [n for n in stats.notes if "concurrent streams" in n]
    records = build_database(stats).roofline_model_record
    ops = [r for r in records if r.record_type == roofline_model_pb2.ALL and r.rank > 0]
    assert sum(r.total_self_time_as_fraction for r in ops) <= 1.0


@pytest.mark.parametrize("graphs", ["", "launch"])
def test_demo_gpu_streams_never_overlap(tmp_path, graphs):
    path = write_profile(tmp_path / "gpu.xplane.pb", gpu_xspace(GpuSpec(graph_launches=graphs)))
    assert [n for n, _, _ in _raw_lines(path).values()] == [2, 2]  # two streams per GPU
    raw = _raw_streams(path)
    assert all(summed == union for summed, union in raw.values())
    assert _measured(path) == {g: (s, 0) for g, (s, _) in raw.items()}
    assert not [n for n in analyze_file(path).notes if "concurrent streams" in n]
