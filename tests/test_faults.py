"""Faults while serving: profiles truncated, replaced, deleted, unreadable, too large or still
being written, between requests and during a conversion.

Each fault must give a clear error for that run only (4xx JSON, one line naming the file or
run), other runs keep working, and the first request after the file is good again gets fresh
data (the cache keys on size and mtime). Every request also checks (``serving_support.Served``)
that the plugin wrote nothing into the logdir and that the response has no 5xx and ``nosniff``.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import io
import os
import threading
from pathlib import Path

import fuzz_support as fs
import pytest
from serving_support import (
    Served,
    assert_error,
    chmod_blocks_reads,
    patch_everywhere,
    tree,
    watch_opens,
)

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace
from tb_roofline_plugin.xspace import profile_reader

REPO = Path(__file__).resolve().parents[1]
GOOD, VICTIM = "good/r", "victim/r"


def _profile(name: str) -> bytes:
    return dict(fs.demo_profiles())[name]


@pytest.fixture
def logdir(tmp_path):
    """Two runs: ``good/r`` (a v6e inference profile) and ``victim/r`` (tiny TPU, two steps)."""
    for run, name in ((GOOD, "demo_v6e.xplane.pb"), (VICTIM, "tiny.xplane.pb")):
        tb_run, profile_run = run.split("/")
        path = tmp_path / tb_run / "plugins" / "profile" / profile_run / "h.xplane.pb"
        path.parent.mkdir(parents=True)
        path.write_bytes(_profile(name))
    return tmp_path


def _victim(logdir: Path) -> Path:
    return logdir / "victim" / "plugins" / "profile" / "r" / "h.xplane.pb"


def _good_still_works(served: Served) -> None:
    response, body = served.data(GOOD, "h")
    assert response.status_code == 200 and body[0]["rows"]


def _all_routes_fail(served: Served, statuses, *names) -> None:
    """data, json, steps, csv and compare of the victim all give the same clear error."""
    for route, params in (
        ("data", {"run": VICTIM, "host": "h"}),
        ("data", {"run": VICTIM, "host": "h", "format": "json", "step": "average"}),
        ("steps", {"run": VICTIM, "host": "h"}),
        ("data_csv", {"run": VICTIM, "host": "h"}),
        ("compare", {"a_run": GOOD, "a_host": "h", "b_run": VICTIM, "b_host": "h"}),
    ):
        response, body = served.get(route, **params)
        assert_error(response, body, statuses, *names)


def _touch_later(path: Path) -> None:
    """Moves the mtime on by 1 s, so the change is seen even on coarse-mtime filesystems."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


# --- between requests --------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 1, 100, 0.5])
def test_truncated_between_requests(logdir, keep):
    served = Served(logdir)
    path = _victim(logdir)
    original = path.read_bytes()
    first = served.data(VICTIM, "h")[1]
    cut = int(len(original) * keep) if isinstance(keep, float) else keep
    path.write_bytes(original[:cut])
    _touch_later(path)
    _all_routes_fail(served, {422}, str(path))
    _good_still_works(served)
    path.write_bytes(original)
    _touch_later(path)
    response, body = served.data(VICTIM, "h")
    assert response.status_code == 200 and body == first


def test_replaced_between_requests(logdir):
    served = Served(logdir)
    path = _victim(logdir)
    original = path.read_bytes()
    first = served.data(VICTIM, "h")[1]
    # Another valid profile: its data, not the cached one.
    path.write_bytes(fs._tiny(program_id=99).SerializeToString())
    _touch_later(path)
    response, body = served.data(VICTIM, "h")
    assert response.status_code == 200 and body != first
    assert {row["c"][35]["v"] for row in body[0]["rows"][1:3]} == {"99"}
    # Something that is not a profile at all.
    for foreign in (b'{"a": 1}', b"\x1f\x8b\x08\x00", b"<html>", b"PK\x03\x04"):
        path.write_bytes(foreign)
        _touch_later(path)
        message = assert_error(*served.data(VICTIM, "h"), {422}, str(path))
        assert "XSpace profile" in message
        _good_still_works(served)
    path.write_bytes(original)
    _touch_later(path)
    assert served.data(VICTIM, "h")[1] == first


def test_deleted_between_requests(logdir):
    served = Served(logdir)
    path = _victim(logdir)
    original = path.read_bytes()
    first = served.data(VICTIM, "h")[1]
    path.unlink()
    # Within discovery's TTL the host is still listed (422, cannot be read); after a
    # refresh the run is gone (404, unknown run): both are clear and name it.
    assert_error(*served.data(VICTIM, "h"), {404, 422}, str(path), VICTIM)
    assert VICTIM not in served.get("runs")[1]  # `runs` always walks the logdir again
    assert_error(*served.data(VICTIM, "h"), {404}, VICTIM)
    _good_still_works(served)
    path.write_bytes(original)
    assert VICTIM in served.get("runs")[1]
    assert served.data(VICTIM, "h")[1] == first


def test_a_whole_run_folder_deleted_and_recreated(logdir):
    served = Served(logdir)
    folder = _victim(logdir).parent
    first = served.data(VICTIM, "h")[1]
    original = _victim(logdir).read_bytes()
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    served.get("runs")
    assert_error(*served.get("hosts", run=VICTIM), {404}, VICTIM)
    _good_still_works(served)
    folder.mkdir()
    _victim(logdir).write_bytes(original)
    served.get("runs")
    assert served.data(VICTIM, "h")[1] == first


# --- during a conversion -----------------------------------------------------------------------


def test_changed_while_converting(logdir, monkeypatch):
    """The file is truncated after the conversion read it: that request gets the data it read
    or a clear 422 (never a result cached for bytes the file no longer has); the next one sees
    the truncated file; restoring it gives the original data again."""
    served = Served(logdir)
    path = _victim(logdir)
    original = path.read_bytes()
    reference = Served(logdir).data(VICTIM, "h")[1]
    read_done, go_on = threading.Event(), threading.Event()
    real = profile_reader.decode_profile

    def slow_decode(data, name="<bytes>", *args, **kwargs):
        if os.fspath(name) == str(path) and not read_done.is_set():
            read_done.set()
            assert go_on.wait(30)
        return real(data, name, *args, **kwargs)

    patch_everywhere(monkeypatch, profile_reader, "decode_profile", slow_decode)
    results = []
    worker = threading.Thread(target=lambda: results.append(served.data(VICTIM, "h", False)))
    worker.start()
    assert read_done.wait(30)
    path.write_bytes(original[: len(original) // 3])
    _touch_later(path)
    go_on.set()
    worker.join(30)
    response, body = results[0]
    if response.status_code == 200:  # the data it read, before the change
        assert body == reference
    else:  # or a clear error saying the file changed while it was read
        assert_error(response, body, {422}, str(path))
    assert_error(*served.data(VICTIM, "h"), {422}, str(path))
    _good_still_works(served)
    path.write_bytes(original)
    _touch_later(path)
    assert served.data(VICTIM, "h")[1] == reference


@pytest.mark.parametrize("change", ["truncate", "replace", "delete"])
def test_big_profile_changed_during_a_slow_conversion(tmp_path, change):
    """A real race: a ~3 MB profile (about half a second to convert) changes mid-request."""
    run = tmp_path / "big" / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    path = run / "h.xplane.pb"
    original = tpu_xspace(
        TpuSpec(cores=2, target_bytes=3_000_000, host_lines=1)
    ).SerializeToString()
    path.write_bytes(original)
    small = tmp_path / "small" / "plugins" / "profile" / "r" / "h.xplane.pb"
    small.parent.mkdir(parents=True)
    small.write_bytes(_profile("tiny.xplane.pb"))
    served = Served(tmp_path)
    results = []
    worker = threading.Thread(target=lambda: results.append(served.data("big/r", "h", False)))
    worker.start()
    threading.Event().wait(0.15)
    if change == "truncate":
        with open(path, "r+b") as f:
            f.truncate(len(original) // 2)
    elif change == "replace":
        path.write_bytes(_profile("tiny.xplane.pb"))
    else:
        path.unlink()
    worker.join(60)
    assert not worker.is_alive()
    response, _ = results[0]
    assert response.status_code in (200, 404, 422)  # whatever it read; never a 5xx
    response, body = served.data("big/r", "h")
    if change == "replace":
        assert response.status_code == 200
    else:
        assert_error(response, body, {404, 422}, str(path), "big/r")
    assert served.data("small/r", "h")[0].status_code == 200
    path.write_bytes(original)
    _touch_later(path)
    served.get("runs")
    response, body = served.data("big/r", "h")
    assert response.status_code == 200
    assert body == Served(tmp_path).data("big/r", "h")[1]


def test_a_change_between_stat_and_read_is_not_cached_under_the_old_key(logdir, monkeypatch):
    served = Served(logdir)
    path = _victim(logdir)
    original = path.read_bytes()
    st = path.stat()
    real_open = builtins.open
    changed = []

    def open_after_a_change(file, *args, **kwargs):
        if not changed and isinstance(file, (str, os.PathLike)) and os.fspath(file) == str(path):
            changed.append(True)
            with real_open(path, "wb") as f:  # the file changes right after the stat
                f.write(original[:10])
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", open_after_a_change)
    monkeypatch.setattr(io, "open", open_after_a_change)
    response, body = served.data(VICTIM, "h", check_tree=False)
    monkeypatch.undo()
    assert changed, "the profile was not opened"
    assert_error(response, body, {422}, str(path))
    # Restored as `cp -p`, `rsync -a` or a backup restore do: same bytes, same mtime.
    path.write_bytes(original)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    response, _ = served.data(VICTIM, "h")
    assert response.status_code == 200


# --- unreadable --------------------------------------------------------------------------------


@contextlib.contextmanager
def _unreadable(monkeypatch, path: Path):
    """Mode 000 on ``path`` (a file or a folder), or, as root (where chmod does not block
    reads), the errors the OS would give: PermissionError on opening the file, and on listing
    the folder and statting what is inside it."""
    if chmod_blocks_reads():
        mode = path.stat().st_mode
        path.chmod(0)
        try:
            yield "chmod"
        finally:
            path.chmod(mode)
        return
    target = os.fspath(path)
    is_dir = path.is_dir()

    def denied(name):
        return PermissionError(13, "Permission denied", name)

    def inside(name) -> bool:
        name = os.fspath(name) if isinstance(name, (str, bytes, os.PathLike)) else ""
        name = os.fsdecode(name)
        return name.startswith(target + os.sep) if is_dir else name == target

    real_open, real_stat, real_scandir = builtins.open, os.stat, os.scandir

    def fake_open(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and inside(file):
            raise denied(file)
        return real_open(file, *args, **kwargs)

    def fake_stat(name, *args, **kwargs):
        if is_dir and inside(name):
            raise denied(name)
        return real_stat(name, *args, **kwargs)

    def fake_scandir(name="."):
        if is_dir and os.fsdecode(os.fspath(name)) == target:
            raise denied(name)
        return real_scandir(name)

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", fake_open)
        m.setattr(io, "open", fake_open)
        m.setattr(os, "stat", fake_stat)
        m.setattr(os, "scandir", fake_scandir)
        yield "simulated (running as root: chmod does not block reads)"


def test_unreadable_run_folder(logdir, monkeypatch):
    served = Served(logdir)
    path = _victim(logdir)
    first = served.data(VICTIM, "h")[1]
    with _unreadable(monkeypatch, path.parent):
        assert_error(*served.data(VICTIM, "h"), {404, 422}, str(path), VICTIM)
        _good_still_works(served)
        served.get("runs")  # a walk that cannot list the folder leaves the run out
        assert_error(*served.data(VICTIM, "h"), {404, 422}, str(path), VICTIM)
        _good_still_works(served)
    served.get("runs")
    assert served.data(VICTIM, "h")[1] == first


def test_unreadable_file_then_readable_again(logdir, monkeypatch):
    served = Served(logdir)
    path = _victim(logdir)
    with _unreadable(monkeypatch, path):
        message = assert_error(*served.data(VICTIM, "h"), {422}, str(path))
        assert "cannot be read" in message
        _good_still_works(served)
    response, _ = served.data(VICTIM, "h")
    assert response.status_code == 200


# --- too large ----------------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_413_and_never_loaded(tmp_path, monkeypatch):
    big = tmp_path / "big" / "plugins" / "profile" / "r" / "big.xplane.pb"
    big.parent.mkdir(parents=True)
    big.write_bytes(b"\x00" * 2_000_000)  # junk: loading it would be a 422, not a 413
    (big.parent / "small.xplane.pb").write_bytes(_profile("tiny.xplane.pb"))
    small = tmp_path / "small" / "plugins" / "profile" / "r" / "h.xplane.pb"
    small.parent.mkdir(parents=True)
    small.write_bytes(_profile("tiny.xplane.pb"))
    served = Served(tmp_path, roofline_max_file_mb=1)
    decoded = []
    real = profile_reader.decode_profile

    def spy(data, name="<bytes>", *args, **kwargs):
        decoded.append(os.fspath(name))
        return real(data, name, *args, **kwargs)

    patch_everywhere(monkeypatch, profile_reader, "decode_profile", spy)
    with watch_opens(monkeypatch) as opened:
        for host in ("big", "ALL_HOSTS"):
            for route, params in (
                ("data", {"format": "json"}),
                ("data", {}),
                ("steps", {}),
                ("data_csv", {}),
            ):
                response, body = served.get(route, run="big/r", host=host, **params)
                message = assert_error(response, body, {413}, str(big))
                assert "2.0 MB is larger than --roofline_max_file_mb=1" in message
            response, body = served.get(
                "compare", a_run="small/r", a_host="h", b_run="big/r", b_host=host
            )
            assert_error(response, body, {413}, str(big))
        assert served.data("small/r", "h")[0].status_code == 200
        assert served.data("big/r", "small")[0].status_code == 200
    assert str(big) not in opened, "the oversized profile was opened"
    assert str(big) not in decoded, "the oversized profile was decoded"
    assert str(small) in decoded


# --- still being written -----------------------------------------------------------------------


def test_a_profile_still_being_written(logdir):
    """Each request sees the file as it is then (a new size is a new cache key); the finished
    file gives exactly the data of a fresh server."""
    path = _victim(logdir)
    full = _profile("demo_v5p.xplane.pb")
    reference_dir = logdir / "ref"
    ref = reference_dir / "plugins" / "profile" / "r" / "h.xplane.pb"
    ref.parent.mkdir(parents=True)
    ref.write_bytes(full)
    reference = Served(reference_dir).data("r", "h")[1]
    served = Served(logdir)
    _good_still_works(served)
    path.write_bytes(b"")
    statuses = []
    before = served.service.cache.computations
    cuts = [len(full) * k // 10 for k in range(1, 10)] + [len(full)]
    with open(path, "ab") as f:
        written = 0
        for n, cut in enumerate(cuts, start=1):
            f.write(full[written:cut])
            f.flush()
            written = cut
            os.utime(path, ns=(0, 10**18 + n))  # a distinct mtime per write
            response, body = served.data(VICTIM, "h")
            statuses.append(response.status_code)
            if response.status_code != 200:
                assert_error(response, body, {422}, str(path))
            _good_still_works(served)
    assert statuses[-1] == 200 and 422 in statuses[:-1]
    assert served.service.cache.computations - before == len(cuts)  # each size converted once
    assert served.data(VICTIM, "h")[1] == reference


# --- a bug the fuzzers found, through HTTP --------------------------------------------------------


def test_an_undecodable_stat_is_a_422_for_that_run_only(logdir):
    _victim(logdir).write_bytes(fs.bad_breakdown_profile())
    served = Served(logdir)
    assert_error(*served.data(VICTIM, "h"), {422}, str(_victim(logdir)))


# --- a short load against a real TensorBoard -----------------------------------------------------


def _load_module():
    spec = importlib.util.spec_from_file_location("load", REPO / "benchmarks" / "load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_short_load_against_a_real_tensorboard(tmp_path):
    load = _load_module()
    logdir = tmp_path / "logdir"
    load.write_logdir(logdir)
    before = tree(logdir)
    report = load.run_load(logdir, clients=8, seconds=5.0)
    assert report["requests"] > 20
    assert report["5xx"] == 0, report
    assert report["errors"] == 0, report
    assert report["peak_rss_mb"] > 0
    assert tree(logdir) == before
