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


def test_a_large_file_is_read_into_pages_that_are_handed_back_part_by_part(tmp_path, monkeypatch):
    import mmap

    from tb_roofline_plugin import files

    monkeypatch.setattr(files, "RELEASABLE_MIN_BYTES", 4 * mmap.PAGESIZE)
    content = bytes(range(256)) * (5 * mmap.PAGESIZE // 256) + b"tail"
    path = tmp_path / "big.xplane.pb"
    path.write_bytes(content)
    small = tmp_path / "small.xplane.pb"
    small.write_bytes(content[: mmap.PAGESIZE])
    assert isinstance(files.read_releasable(small), bytes)
    assert isinstance(files.read_regular(path), bytes)
    pages = files.read_releasable(path)
    assert isinstance(pages, mmap.mmap) and pages[:] == content
    # Pages wholly inside the range go (they read as zeros); the partial ones stay.
    start, end = mmap.PAGESIZE // 2, 3 * mmap.PAGESIZE + 10
    assert files.release_range(pages, start, end)
    assert pages[mmap.PAGESIZE : 3 * mmap.PAGESIZE] == bytes(2 * mmap.PAGESIZE)
    assert pages[: mmap.PAGESIZE] == content[: mmap.PAGESIZE]
    assert pages[3 * mmap.PAGESIZE :] == content[3 * mmap.PAGESIZE :]
    assert not files.release_range(content, 0, len(content))  # bytes: nothing to hand back


def test_host_lines_handed_back_as_they_are_read_give_the_same_roofline(tmp_path, monkeypatch):
    """A file read into pages loses each host line's pages once the line is read (the 1 GB
    CPU profile held the file and the columns made of it at once: 1.9x its size)."""
    from tb_roofline_plugin import files
    from tb_roofline_plugin.platforms.analysis import analyze_file
    from tb_roofline_plugin.xspace import profile_reader

    data = cpu_xspace(CpuSpec(steps=6)).SerializeToString()
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(data)
    whole = render(analyze_bytes(data, "h.xplane.pb"), "json", ["h.xplane.pb"])
    monkeypatch.setattr(files, "RELEASABLE_MIN_BYTES", 0)
    monkeypatch.setattr(cpu, "HOST_CHUNK_EVENTS", 7)  # the bytes of each piece go too
    released, pieces = [], []
    original = profile_reader.Profile.done_with_line

    def counted(self, line, end=None):
        original(self, line, end)
        (released if end is None else pieces).append(line.raw is None)

    monkeypatch.setattr(profile_reader.Profile, "done_with_line", counted)
    assert render(analyze_file(path), "json", ["h.xplane.pb"]) == whole
    assert len(released) >= 2 and all(released)  # every host line, once read
    assert len(pieces) > 5 and not any(pieces)  # a line read in part stays, its start goes
