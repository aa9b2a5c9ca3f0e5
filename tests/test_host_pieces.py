"""Lines read in pieces give the results of reading each line whole (CPU host ops, GPU
kernels and host launches), and the file's bytes go before the columns are joined (a 1 GB
CPU profile peaked at 3.7 GB)."""

from __future__ import annotations

import pytest
from conftest import SHARED_DATA

from tb_roofline_plugin.demo import CpuSpec, GpuSpec, cpu_xspace, gpu_xspace
from tb_roofline_plugin.platforms import cpu, gpu, host_steps
from tb_roofline_plugin.platforms.analysis import analyze_bytes, analyze_profile
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.xspace.profile_reader import decode_profile

REAL = sorted(SHARED_DATA.glob("jax-cpu/*/plugins/profile/*/*.xplane.pb"))[:2]


def _profiles() -> list[tuple[str, bytes]]:
    demo = cpu_xspace(CpuSpec(steps=6)).SerializeToString()
    return [("demo_cpu.xplane.pb", demo), *((p.name, p.read_bytes()) for p in REAL)]


@pytest.mark.parametrize("name", [n for n, _ in _profiles()])
def test_host_lines_in_small_pieces_give_the_whole_lines_results(name, monkeypatch):
    data = dict(_profiles())[name]
    whole = render(analyze_bytes(data, name), "json", [name])
    monkeypatch.setattr(cpu, "HOST_CHUNK_EVENTS", 7)  # pieces that cut through nested ops
    assert render(analyze_bytes(data, name), "json", [name]) == whole
    assert '"step_num"' in whole


def test_the_files_bytes_go_before_the_op_columns_are_joined(monkeypatch):
    profile = decode_profile(cpu_xspace(CpuSpec(steps=3)).SerializeToString(), "h.xplane.pb")
    profile.release_lines = True
    lines_then = []
    original = cpu.host_events
    monkeypatch.setattr(
        cpu,
        "host_events",
        lambda parts: (
            lines_then.append(sum(len(p.lines) for p in profile.planes)) or original(parts)
        ),
    )
    stats = analyze_profile(profile, "h")
    assert lines_then == [0] and len(stats.steps) == 3


def test_gpu_kernels_and_launches_in_small_pieces_give_the_whole_lines_results(monkeypatch):
    data = gpu_xspace(GpuSpec(gpus=2, steps=5)).SerializeToString()
    whole = render(analyze_bytes(data, "g.xplane.pb"), "json", ["g"])
    monkeypatch.setattr(gpu, "KERNEL_CHUNK_EVENTS", 5)
    monkeypatch.setattr(host_steps, "MARKER_CHUNK_EVENTS", 3)
    assert render(analyze_bytes(data, "g.xplane.pb"), "json", ["g"]) == whole
    assert '"step_num": 4' in whole
