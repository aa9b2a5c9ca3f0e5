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


def test_a_file_read_ahead_is_what_the_read_then_gives_once(tmp_path, monkeypatch):
    import mmap

    from tb_roofline_plugin import files

    monkeypatch.setattr(files, "RELEASABLE_MIN_BYTES", mmap.PAGESIZE)
    reads = []
    original = files._read_regular
    monkeypatch.setattr(
        files, "_read_regular", lambda *a, **k: reads.append(a) or original(*a, **k)
    )
    content = b"xspace" * mmap.PAGESIZE
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(content)
    files.read_ahead(path)
    taken = files.read_releasable(path)
    assert isinstance(taken, mmap.mmap) and taken[:] == content
    assert len(reads) == 1  # the read ahead's, taken
    assert files.read_releasable(path)[:] == content and len(reads) == 2  # taken once only


def test_a_read_ahead_that_fails_leaves_the_error_to_the_read(tmp_path):
    from tb_roofline_plugin import files
    from tb_roofline_plugin.errors import ProfileError

    missing = tmp_path / "gone.xplane.pb"
    files.read_ahead(missing)
    with pytest.raises(ProfileError, match="gone.xplane.pb"):
        files.read_releasable(missing)
    big = tmp_path / "big.xplane.pb"
    big.write_bytes(b"0123456789")
    files.read_ahead(big, max_bytes=4)
    with pytest.raises(files.FileTooLarge, match="big.xplane.pb"):
        files.read_releasable(big, max_bytes=4)
    assert files.read_releasable(big) == b"0123456789"  # another limit: read anew


def test_export_reads_its_one_xspace_file_ahead_of_the_imports(tmp_path, monkeypatch):
    from tb_roofline_plugin import cli, files

    path = tmp_path / "h.xplane.pb"
    path.write_bytes(cpu_xspace(CpuSpec(steps=3)).SerializeToString())
    ahead = []
    monkeypatch.setattr(files, "read_ahead", lambda p, *a: ahead.append(p))
    out = tmp_path / "out.json"
    assert cli.main(["export", str(path), "-o", str(out)]) == 0
    assert ahead == [str(path)] and out.read_text().startswith("[")
    trace = tmp_path / "t.pt.trace.json"
    trace.write_text('{"traceEvents": []}')
    assert cli.main(["export", str(trace), "-o", str(tmp_path / "t.json")]) == 0
    assert ahead == [str(path)]  # a PyTorch trace is read as text: not ahead
    renamed = tmp_path / "host.pb"  # an XSpace file under another name: read ahead too
    renamed.write_bytes(path.read_bytes())
    assert cli.main(["export", str(renamed), "-o", str(out)]) == 0
    assert ahead == [str(path), str(renamed)]


def test_busy_shares_and_executions_at_once_give_the_serial_results(monkeypatch):
    data = cpu_xspace(CpuSpec(steps=6)).SerializeToString()
    at_once = render(analyze_bytes(data, "h.xplane.pb"), "json", ["h"])
    monkeypatch.setattr(cpu, "OVERLAP_MAX_EVENTS", 0)  # one after the other
    assert render(analyze_bytes(data, "h.xplane.pb"), "json", ["h"]) == at_once
    assert '"step_num": 5' in at_once
