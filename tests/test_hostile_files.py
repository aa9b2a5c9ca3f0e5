"""A hostile logdir cannot take the server (or the CLI) down: issue 22's file attacks.

Each attack's input is built in tmp_path and served by the plugin inside TensorBoard's
WSGI stack (``serving_support.Served``, which also asserts that no request changes the
logdir and that every response is a one-line JSON error or data, never a 5xx) in a child
interpreter under a 2 GB address-space cap and a timeout; the child reports each answer,
how long it took, and its peak RSS.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path

import pytest
from conftest import REPO, run_cli

AS_CAP_BYTES = 2 << 30  # the child's address space: past it, an allocation fails
TESTS = Path(__file__).resolve().parent

# The child: serve LOGDIR with FLAGS, make each request, print what came back.
_CHILD = textwrap.dedent(
    """
    import json, logging, resource, sys, time
    # The cap is set here, not by a preexec_fn: a fork that runs Python in a process that
    # imported JAX (earlier tests) warns, and pytest makes that warning an error.
    cap = int(sys.argv[5])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sys.path[:0] = [sys.argv[1]]

    def peak_rss_mb():
        # VmHWM is this process's own peak; ru_maxrss keeps the forking parent's across exec.
        with open("/proc/self/status") as status:
            line = next(l for l in status if l.startswith("VmHWM:"))
        return int(line.split()[1]) / 1e3
    from serving_support import Served
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    logdir, flags, requests = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    served = Served(logdir, **flags)
    out = []
    for route, params in requests:
        start = time.monotonic()
        response, body = served.get(route, **params)
        seconds = time.monotonic() - start
        served.responses.clear()  # the harness keeps no response: only the server's memory
        error = body.get("error") if isinstance(body, dict) else None
        out.append({"status": response.status_code, "error": error, "seconds": seconds,
                    "rss_mb": peak_rss_mb()})
    service = served.service
    print(json.dumps({"answers": out, "computations": service.cache.computations}))
    """
)


def _serve(logdir: Path, requests: list, timeout_s: float = 60, **flags) -> dict:
    """The child's report: {"answers": [{status, error, seconds, rss_mb}], "computations"};
    its server log is under "log"."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(TESTS), str(logdir), json.dumps(flags),
         json.dumps(requests), str(AS_CAP_BYTES)],
        capture_output=True, text=True, timeout=timeout_s, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    report["log"] = proc.stderr
    return report


def _data(run: str, host: str, **params) -> list:
    return ["data", {"run": run, "host": host, "tag": "roofline_model", **params}]


def _good_run(logdir: Path, run: str = "good") -> None:
    from tiny_tpu import tiny_tpu

    folder = logdir / "plugins" / "profile" / run
    folder.mkdir(parents=True)
    (folder / "tiny.xplane.pb").write_bytes(tiny_tpu().SerializeToString())


def _run_folder(logdir: Path, run: str) -> Path:
    folder = logdir / "plugins" / "profile" / run
    folder.mkdir(parents=True)
    return folder


def _one_line(message: str | None, *parts: str) -> None:
    assert isinstance(message, str) and "\n" not in message, message
    for part in parts:
        assert part in message, (part, message)


# --- 1: links to devices ------------------------------------------------------------------------


def test_links_to_dev_zero_and_urandom_are_refused_unopened(tmp_path):
    _good_run(tmp_path)
    folder = _run_folder(tmp_path, "bad")
    (folder / "zero.xplane.pb").symlink_to("/dev/zero")
    (folder / "rand.1.pt.trace.json").symlink_to("/dev/urandom")
    report = _serve(
        tmp_path,
        [_data("bad", "zero"), _data("bad", "rand"), _data("good", "tiny")],
        roofline_max_file_mb=100,
    )
    zero, rand, good = report["answers"]
    assert zero["status"] == 422 and rand["status"] == 422
    _one_line(zero["error"], "zero.xplane.pb", "not a regular file (a character device)")
    _one_line(rand["error"], "rand.1.pt.trace.json", "not a regular file")
    assert good["status"] == 200
    assert max(a["seconds"] for a in (zero, rand)) < 1.0
    assert good["rss_mb"] < 400  # before: 5,036 MB in 5 s, reading /dev/zero


# --- 2: gzip bombs ------------------------------------------------------------------------------


def _gzip_bomb(path: Path, unpacked_mb: int) -> int:
    """A trace of ``unpacked_mb`` MB of spaces: gzip members of 100 MB each, concatenated."""
    member = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    spaces = member.compress(b" " * (100 << 20)) + member.flush()
    head, tail = (gzip.compress(text) for text in (b'{"traceEvents": [', b"]}"))
    path.write_bytes(head + spaces * (unpacked_mb // 100) + tail)
    return path.stat().st_size


def test_gzip_bomb_stops_at_the_unpacked_limit(tmp_path):
    folder = tmp_path / "torch"
    folder.mkdir()
    size = _gzip_bomb(folder / "bomb.1.pt.trace.json.gz", unpacked_mb=2000)
    assert 1.9e6 < size < 2.2e6  # 2 MB that unpack to 2 GB
    (report,) = [_serve(tmp_path, [_data("torch", "bomb")], roofline_max_file_mb=3)]
    (answer,) = report["answers"]
    assert answer["status"] == 413
    _one_line(answer["error"], "bomb.1.pt.trace.json.gz", "unpacks to more than 3.0 MB")
    _one_line(answer["error"], f"({size / 1e6:.1f} MB compressed)", "--roofline_max_file_mb")
    assert answer["seconds"] < 2.0 and answer["rss_mb"] < 400  # before: 4,149 MB


# --- 3: FIFOs -----------------------------------------------------------------------------------


def test_fifo_named_like_a_profile_answers_at_once(tmp_path):
    _good_run(tmp_path)
    folder = _run_folder(tmp_path, "fifo")
    os.mkfifo(folder / "stuck.xplane.pb")
    os.mkfifo(folder / "stuck2.1.pt.trace.json")
    from tiny_tpu import tiny_tpu

    (folder / "fine.xplane.pb").write_bytes(tiny_tpu().SerializeToString())
    plain = tmp_path / "notes"  # a folder discovery looks into for misnamed traces
    plain.mkdir()
    os.mkfifo(plain / "config.json")
    requests = [_data("fifo", "stuck"), _data("fifo", "stuck2")] * 5
    requests += [_data("fifo", "ALL_HOSTS"), _data("fifo", "fine"), _data("good", "tiny")]
    report = _serve(tmp_path, [["runs", {}], *requests], timeout_s=30, roofline_workers=3)
    runs, *answers = report["answers"]
    assert runs["status"] == 200
    *stuck, every, fine, good = answers
    for answer in stuck + [every]:
        assert answer["status"] == 422 and answer["seconds"] < 1.0
        _one_line(answer["error"], "not a regular file (a FIFO)")
    assert fine["status"] == 200 and good["status"] == 200


def test_cli_refuses_a_fifo_or_dev_zero_as_path_or_peaks(tmp_path):
    fifo = tmp_path / "host.xplane.pb"
    os.mkfifo(fifo)
    link = tmp_path / "zero.pt.trace.json"
    link.symlink_to("/dev/zero")
    from tiny_tpu import tiny_tpu

    good = tmp_path / "good.xplane.pb"
    good.write_bytes(tiny_tpu().SerializeToString())
    cases = [
        (("summary", fifo), f"{fifo}: not a regular file (a FIFO)"),
        (("summary", "/dev/zero"), "/dev/zero: not a regular file (a character device)"),
        (("summary", link), f"{link}: not a regular file (a character device)"),
        (("summary", good, "--peaks", "/dev/zero"), "--peaks: /dev/zero: not a regular file"),
        (("summary", good, "--peaks", str(fifo)), "not a regular file (a FIFO)"),
    ]
    for args, expected in cases:
        start = time.monotonic()
        proc = run_cli(*map(str, args))
        assert time.monotonic() - start < 10
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (args, proc.stderr)


# --- 4: the cache bound -------------------------------------------------------------------------


def test_walking_every_step_stays_within_the_cache_bound(tmp_path):
    from tb_roofline_plugin.demo.tpu import TpuSpec, tpu_xspace

    folder = _run_folder(tmp_path, "steps")
    space = tpu_xspace(TpuSpec(steps=300, cores=1, ops_per_step=60))
    (folder / "h.xplane.pb").write_bytes(space.SerializeToString())
    walk = [_data("steps", "h", format="json", step=str(n)) for n in range(1, 300)]
    report = _serve(tmp_path, [_data("steps", "h"), *walk], roofline_cache_mb=20)
    first, *rest = report["answers"]
    assert all(a["status"] == 200 for a in rest)
    assert report["computations"] == 1  # converted once, the steps rendered from the cache
    # Each step's payload is ~0.3 MB (90 MB for the walk); 20 MB of cache, plus slack for
    # the allocator, is all the walk may add. Before: RSS grew linearly, 5 GB for 2,500 steps.
    assert rest[-1]["rss_mb"] - first["rss_mb"] < 20 + 25


# --- 5: pathological shapes ---------------------------------------------------------------------


def test_a_million_empty_planes_is_refused_before_decoding(tmp_path):
    _good_run(tmp_path)
    folder = _run_folder(tmp_path, "planes")
    (folder / "many.xplane.pb").write_bytes(b"\x0a\x00" * 1_000_000)  # 1M empty XPlanes
    report = _serve(tmp_path, [_data("planes", "many"), _data("good", "tiny")])
    many, good = report["answers"]
    assert many["status"] == 422 and many["seconds"] < 2.0
    _one_line(many["error"], "many.xplane.pb", "more than 10,000 planes")
    assert good["status"] == 200 and good["rss_mb"] < 400  # before: 4,808 MB for 25.9 MB


# --- 10: one-line errors of the peaks files -----------------------------------------------------


def _peaks_file(path: Path, tflops: str) -> Path:
    path.write_text(f'{{"name": "x", "dtype_tflops": {{"fp32": {tflops}}}, "hbm_gbps": 1}}')
    return path


def test_peaks_beyond_float_range_or_nested_deep_give_one_line(tmp_path):
    from tiny_tpu import tiny_tpu

    good = tmp_path / "good.xplane.pb"
    good.write_bytes(tiny_tpu().SerializeToString())
    digits = _peaks_file(tmp_path / "digits.json", "1" + "0" * 400)
    huge = _peaks_file(tmp_path / "huge.json", "9" * 5000)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    cases = [
        (digits, "must be a finite number >= 0, got 1000"),
        (huge, "not valid JSON (Exceeds the limit"),
        (deep, "not valid JSON (maximum recursion depth"),
    ]
    for path, expected in cases:
        proc = run_cli("summary", good, "--peaks", path)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert f"--peaks: {path}: " in lines[0] and expected in lines[0], lines[0]
        assert len(lines[0]) < 300


def test_roofline_peaks_flag_of_400_digits_is_a_flags_error(tmp_path):
    import argparse

    from tensorboard.plugins import base_plugin

    from tb_roofline_plugin.serve.loader import RooflineLoader

    digits = _peaks_file(tmp_path / "digits.json", "1" + "0" * 400)
    flags = argparse.Namespace(
        roofline_peaks=str(digits), roofline_cache_mb=None, roofline_max_file_mb=None,
        roofline_workers=None,
    )  # fmt: skip
    with pytest.raises(base_plugin.FlagsError) as raised:
        RooflineLoader().fix_flags(flags)
    message = str(raised.value)
    assert "\n" not in message and f"--roofline_peaks: {digits}: " in message


# --- 11: damaged cache files --------------------------------------------------------------------


def _cached(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A logdir with one host, its conversion in a cache dir: (logdir, cache dir, npz)."""
    logdir = tmp_path / "logdir"
    _good_run(logdir, "r")
    cache = tmp_path / "cache"
    proc = run_cli("export", logdir, "--cache-dir", cache)
    assert proc.returncode == 0, proc.stderr
    (npz,) = cache.glob("*.npz")
    return logdir, cache, npz


def test_truncated_cache_file_is_absent_with_a_warning(tmp_path):
    logdir, cache, npz = _cached(tmp_path)
    fresh = _serve(logdir, [_data("r", "tiny", format="json")], roofline_cache_dir=str(cache))
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    report = _serve(logdir, [_data("r", "tiny", format="json")], roofline_cache_dir=str(cache))
    (answer,) = report["answers"]
    assert answer["status"] == 200  # before: HTTP 500 (BadZipFile)
    assert f"{npz}: damaged cache file, converted again" in report["log"]
    assert "damaged" not in fresh["log"]


def test_cache_file_with_shortened_arrays_is_not_served(tmp_path):
    import io

    import numpy as np

    logdir, cache, npz = _cached(tmp_path)
    with np.load(npz, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    assert len(arrays["all.time_ps"]) >= 2
    arrays["all.time_ps"] = arrays["all.time_ps"][:1]  # one op's time: the others' lost
    out = io.BytesIO()
    np.savez(out, **arrays)
    npz.write_bytes(out.getvalue())
    report = _serve(logdir, [_data("r", "tiny", format="json")], roofline_cache_dir=str(cache))
    (answer,) = report["answers"]
    assert answer["status"] == 200
    assert "arrays of inconsistent lengths" in report["log"]


# --- 12: workers die with the server ------------------------------------------------------------

_POOL_OWNER = textwrap.dedent(
    """
    import os, sys, time
    from tb_roofline_plugin.platforms.analysis import READERS, WorkerPool
    if __name__ == "__main__":
        pool = WorkerPool(2, "forkserver", [*READERS]).start()
        pool._up.wait()
        print(os.getpid(), flush=True)
        time.sleep(60)
    """
)


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_fork_server_and_tracker_end_when_the_server_is_killed(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(_POOL_OWNER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, env=env)
    try:
        assert owner.stdout is not None
        assert int(owner.stdout.readline()) == owner.pid
        helpers = _descendants(owner.pid)  # 2 workers, the fork server, the resource tracker
        assert len(helpers) >= 4
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        deadline = time.monotonic() + 8
        while any(_alive(p) for p in helpers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in helpers if _alive(p)]  # before: all reparented to PID 1
    finally:
        if owner.stdout is not None:
            owner.stdout.close()
        for pid in _descendants(owner.pid) if owner.poll() is None else ():
            os.kill(pid, signal.SIGKILL)
        if owner.poll() is None:
            owner.kill()


def test_export_removes_temporaries_of_a_killed_export(tmp_path):
    from tb_roofline_plugin.serve.stats_store import TEMP_PREFIX, _host_tag

    logdir, cache, _ = _cached(tmp_path)
    host = _host_tag()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = cache / f"{TEMP_PREFIX}{host}-{dead.pid}-abc.npz"  # a killed export's
    live = cache / f"{TEMP_PREFIX}{host}-{os.getpid()}-def.npz"  # one being written now
    left.write_bytes(b"partial")
    live.write_bytes(b"partial")
    proc = run_cli("export", logdir, "--cache-dir", cache)
    assert proc.returncode == 0, proc.stderr
    assert not left.exists() and live.exists()


def test_many_metadata_entries_cost_a_bounded_multiple_of_the_file(tmp_path):
    """Metadata entries are a few bytes each on disk and a few hundred in memory: a plane
    with 200,000 of them (and no event) converts within 20x its file size (measured: a
    4.7 MB file, 36 MB more)."""
    from tb_roofline_plugin.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name="/device:TPU:0")
    for i in range(1, 200_001):
        plane.event_metadata[i].id = i
        plane.stat_metadata[i].id = i
    data = space.SerializeToString()
    folder = _run_folder(tmp_path, "meta")
    (folder / "wide.xplane.pb").write_bytes(data)
    baseline = _serve(tmp_path, [["runs", {}]])["answers"][0]["rss_mb"]
    (answer,) = _serve(tmp_path, [_data("meta", "wide")])["answers"]
    assert answer["status"] in (200, 422) and answer["seconds"] < 10
    assert answer["rss_mb"] - baseline < 20 * len(data) / 1e6, (answer, baseline, len(data))
