"""What makes a pod (many hosts of one program) fast gives the same results: hosts analyzed in
worker processes and this one, TPU op tables read once for planes with the same metadata,
self times without a sort for lines in time order, per-host roofline models only on use."""

from __future__ import annotations

import io
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace, write_profile
from tb_roofline_plugin.errors import ProfileError
from tb_roofline_plugin.ops import op_metrics, op_stats
from tb_roofline_plugin.ops.op_stats import combine_hosts
from tb_roofline_plugin.platforms import analysis, in_threads, tpu
from tb_roofline_plugin.platforms.analysis import analyze_file, analyze_files, shared_in_order
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.serve.service import RooflineService
from tb_roofline_plugin.xspace import profile_reader
from tb_roofline_plugin.xspace.profile_reader import TPU_CORE_PLANE, read_profile


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    """A run folder of 5 hosts of one program (same metadata), another program's host."""
    root = tmp_path_factory.mktemp("pod")
    run = root / "plugins" / "profile" / "r"
    for i in range(5):
        spec = TpuSpec(steps=4, ops_per_step=40, host=f"p{i}", seed=i)
        write_profile(run / f"p{i}.xplane.pb", tpu_xspace(spec))
    other = TpuSpec(steps=4, ops_per_step=30, host="q", seed=9, cores=2)
    write_profile(run / "q.xplane.pb", tpu_xspace(other))
    return root


def _files(pod):
    return sorted(str(p) for p in (pod / "plugins/profile/r").glob("*.xplane.pb"))


def test_planes_of_one_program_share_their_op_table_and_results_stay(pod, monkeypatch):
    files = _files(pod)
    digests = {
        path: {
            plane.metadata_digest for plane in read_profile(path).planes_matching(TPU_CORE_PLANE)
        }
        for path in files
    }
    p0, p1, q = digests[files[0]], digests[files[1]], digests[files[-1]]
    assert len(p0) == 1 and p0 == p1 and not p0 & q  # cores and hosts alike; q differs
    tpu._OP_TABLES.clear()
    kept = [render(analyze_file(p), "json", [p]) for p in files]
    assert len(tpu._OP_TABLES) == 2  # one per program
    read = []
    original = tpu._op_table
    monkeypatch.setattr(tpu, "_op_table", lambda *a: read.append(1) or original(*a))
    monkeypatch.setattr(tpu, "_OP_TABLES_KEPT", 0)  # nothing kept: every plane read
    tpu._OP_TABLES.clear()
    fresh = [render(analyze_file(p), "json", [p]) for p in files]
    assert fresh == kept and len(read) == 4 * 5 + 2


def _core_planes(path):
    return read_profile(path).planes_matching(TPU_CORE_PLANE)


def test_planes_of_one_program_share_their_decoded_metadata(pod, monkeypatch):
    """A core plane whose metadata equals one read before (of any file) takes that plane's
    decoded message and digest, with its own id and name; the answers are those of a plane
    decoded on its own."""
    files = _files(pod)
    profile_reader._shared.clear()
    planes = [p for path in files for p in _core_planes(path)]
    monkeypatch.setattr(profile_reader, "_SHARED_KEPT", 0)  # nothing kept: each decoded
    profile_reader._shared.clear()
    alone = [p for path in files for p in _core_planes(path)]
    messages = {id(p._message) for p in planes}
    assert len(messages) == 2 and len({id(p._message) for p in alone}) == len(alone)
    for shared, own in zip(planes, alone):
        assert (shared.id, shared.name) == (own.id, own.name) == (own._message.id, own.name)
        assert shared.metadata_digest == own.metadata_digest
        assert shared.event_metadata == own.event_metadata and shared.stats == own.stats
    assert [p.name for p in planes[:4]] == [f"/device:TPU:{n}" for n in range(4)]
    # A byte of the metadata changed: decoded on its own; the same bytes again: shared.
    rest = bytearray(planes[0]._message.SerializeToString())
    monkeypatch.setattr(profile_reader, "_SHARED_KEPT", 4)
    profile_reader._shared.clear()

    def view(data: bytes, shareable: bool = True):
        return profile_reader._plane_view(memoryview(data), 0, len(data), None, shareable)

    first = view(bytes(rest))
    assert view(bytes(rest))._message is first._message
    assert view(bytes(rest), shareable=False)._message is not first._message
    rest[-1] ^= 1
    changed = view(bytes(rest))
    assert changed._message is not first._message
    assert changed.metadata_digest != first.metadata_digest


def test_hosts_of_one_program_are_added_row_for_row(pod, monkeypatch):
    """The hosts of one program meet the same cells in the same order: their sums are added
    as whole columns, to the bits of adding them cell by cell (and of combining the dbs)."""
    files = _files(pod)[:5]
    parts = [analyze_file(p) for p in files]
    seen = []
    original = op_stats.row_for_row
    monkeypatch.setattr(op_stats, "row_for_row", lambda *a: seen.append(original(*a)) or seen[-1])
    fast = render(combine_hosts(parts), "json", files)
    assert seen and all(seen)  # every host after the first: the whole profile and its steps
    monkeypatch.setattr(op_stats, "row_for_row", lambda *a: False)
    assert render(combine_hosts(parts), "json", files) == fast
    monkeypatch.setattr(op_stats, "_added", lambda *a: None)  # the general merge
    assert render(combine_hosts(parts), "json", files) == fast


def test_a_hosts_whole_and_step_sums_share_one_op_table(pod, monkeypatch):
    """A host whose cores all have events and steps keys its ops once for both sums; the
    text is that of each sum keying them on its own."""
    path = _files(pod)[0]
    calls = []
    keyed, windowed = tpu.keyed_ops, tpu.windowed_ops
    monkeypatch.setattr(tpu, "keyed_ops", lambda cores: calls.append(len(cores)) or keyed(cores))
    shared = render(analyze_file(path), "json", [path])
    assert calls == [4]
    monkeypatch.setattr(
        tpu, "windowed_ops", lambda cores, by_window=False, keyed=None: windowed(cores, by_window)
    )
    assert render(analyze_file(path), "json", [path]) == shared and calls == [4] * 4


def test_the_op_table_cores_share_is_read_only(pod):
    """The cores and hosts of one program read one op table, not a copy each: it cannot be
    written, and what a host keeps is its own (``test_a_host_owns_its_op_columns``)."""
    tpu._OP_TABLES.clear()
    analyze_file(_files(pod)[0])
    ((cols, rows, one_op_each),) = tpu._OP_TABLES.values()
    with pytest.raises(ValueError, match="read-only"):
        cols["name"][0] = "changed"
    assert not rows.flags.writeable and all(not c.flags.writeable for c in cols.values())
    assert one_op_each  # each (program, name) one op: no core checks its ops again


def test_hosts_of_one_program_share_one_read_only_keyed_table(pod, monkeypatch):
    """The second host of a program keys its cores' ops as the first did, without keying
    them again: the steps' op columns are the same read-only arrays; the text is that of
    keying every host anew."""
    files = _files(pod)[:3]
    tpu._KEYED.clear()
    a, b = (analyze_file(p) for p in files[:2])
    assert len(tpu._KEYED) == 1
    assert a.steps.table.static["name"] is b.steps.table.static["name"]
    with pytest.raises(ValueError, match="read-only"):
        b.steps.table.static["hlo_text"][0] = "changed"
    shared = render(analyze_files(files, workers=1), "json", files)
    monkeypatch.setattr(tpu, "keyed_ops", tpu._keyed_ops)
    assert render(analyze_files(files, workers=1), "json", files) == shared


def test_a_host_owns_its_op_columns(pod):
    """Hosts sharing a kept op table get copies: changing one leaves the others alone."""
    a, b = (analyze_file(p) for p in _files(pod)[:2])
    a.all_db.name[:] = "changed"
    assert "changed" not in set(analyze_file(_files(pod)[1]).all_db.name.tolist())
    assert "changed" not in set(b.all_db.name.tolist())


def _lexsorted_self_times(begin, end):
    duration = end - begin
    order = np.lexsort((-duration, begin))
    parent = op_metrics.nesting_parents(begin[order], end[order])
    child = np.zeros(len(begin), np.int64)
    nested = parent >= 0
    np.add.at(child, order[parent[nested]], duration[order[nested]])
    return duration - child


@pytest.mark.parametrize("seed", range(20))
def test_self_times_of_lines_in_order_or_not_are_the_sorted_ones(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    begin = rng.integers(0, 40, n).astype(np.int64)
    end = begin + rng.integers(0, 30, n)
    if seed % 2:  # in (begin, longest first) order, ties included
        order = np.lexsort((begin - end, begin))
        begin, end = begin[order], end[order]
    assert self_times(begin, end).tolist() == _lexsorted_self_times(begin, end).tolist()


self_times = op_metrics.self_times


def test_work_comes_back_in_order_wherever_it_was_done():
    """Work goes to a worker (a thread here) and, while the work due is not done, here;
    a worker's None or error is done here again; here's errors come in their turn."""
    done_here: list[int] = []
    release = threading.Event()

    def here(i: int) -> str:
        done_here.append(i)
        release.set()  # the worker's first work ends only once this process works too
        if i == 6:
            raise ValueError("six")
        return f"here {i}"

    def remote(i: int):
        assert release.wait(10)
        if i == 1:
            return None  # failed in the worker: done here again
        if i == 2:
            raise RuntimeError("worker died")
        return f"worker {i}"

    with ThreadPoolExecutor(1) as pool:
        results = shared_in_order(8, here, lambda i: pool.submit(remote, i), 3)
        got = [next(results) for _ in range(6)]
        with pytest.raises(ValueError, match="six"):
            next(results)
    assert got == ["worker 0"] + [f"here {i}" for i in range(1, 6)]
    assert sorted(done_here) == [1, 2, 3, 4, 5, 6, 7]


def test_finished_work_waiting_for_its_turn_leaves_room_for_more():
    """Results that wait for an earlier one to come back count as done, not as running: the
    worker is given the next work meanwhile (never more than ``outstanding`` running at a
    time), and none is left to this process."""
    first: Future = Future()

    def submit(i: int) -> Future:
        if i == 0:
            return first
        done: Future = Future()
        done.set_result(f"worker {i}")
        return done

    later = threading.Timer(0.2, first.set_result, ("worker 0",))
    later.start()
    done_here: list[int] = []
    results = list(shared_in_order(5, lambda i: done_here.append(i) or "here", submit, 2))
    later.join()
    assert results == [f"worker {i}" for i in range(5)] and done_here == []


def test_work_a_pool_cannot_take_is_done_here():
    def submit(i: int) -> Future:
        raise RuntimeError("a broken pool")

    assert list(shared_in_order(3, lambda i: i * 10, submit, 2)) == [0, 10, 20]


def test_parallel_export_is_the_serial_one(pod, tmp_path):
    run = pod / "plugins/profile/r"
    outputs = []
    for workers in ("1", "2", "3"):
        out = tmp_path / f"w{workers}.json"
        run_cli("export", run, "--format", "json", "--workers", workers, "-o", out, check=True)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
    files = _files(pod)
    assert render(analyze_files(files, workers=2), "json", files).encode() == outputs[0]


def test_a_bad_host_fails_the_parallel_export_as_the_serial_one(pod, tmp_path):
    run = tmp_path / "plugins/profile/r"
    run.mkdir(parents=True)
    for i, path in enumerate(_files(pod)):
        (run / f"h{i}.xplane.pb").write_bytes(Path(path).read_bytes())
    (run / "h3.xplane.pb").write_bytes(b"\x0a\xff\xff")  # truncated
    (run / "h5.xplane.pb").write_bytes(b"")
    serial = run_cli("export", run, "--workers", "1")
    parallel = run_cli("export", run, "--workers", "2")
    assert serial.returncode == parallel.returncode == 2
    assert parallel.stderr == serial.stderr and "h3.xplane.pb" in serial.stderr
    with pytest.raises(ProfileError, match="h3.xplane.pb"):
        analyze_files(sorted(str(p) for p in run.glob("*.xplane.pb")), workers=2)


def test_parallel_is_for_many_or_large_hosts(pod, monkeypatch):
    files = _files(pod)
    assert analysis.parallel_workers(files[:1]) == 1
    assert analysis.parallel_workers(files) == 1  # small: one process is as fast
    monkeypatch.setattr(analysis, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(analysis.os, "sched_getaffinity", lambda _: {0, 1, 2, 3, 4}, raising=False)
    monkeypatch.setattr(analysis, "running_elsewhere", lambda: 0.0)
    assert analysis.parallel_workers(files) == 5
    assert analysis.parallel_workers(files[:2]) == 2
    monkeypatch.setattr(analysis, "running_elsewhere", lambda: 1.0)
    assert analysis.parallel_workers(files) == 4
    monkeypatch.setattr(analysis, "running_elsewhere", lambda: 2.0)
    assert analysis.parallel_workers(files) == 1  # 3 idle cores: a host's threads take them
    monkeypatch.setattr(analysis.os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    monkeypatch.setattr(analysis, "running_elsewhere", lambda: 0.0)
    assert analysis.parallel_workers(files) == 1  # two cores: one process, as measured


def test_the_tasks_running_elsewhere_are_the_least_seen_now_not_the_last_minutes(
    tmp_path, monkeypatch
):
    stat = tmp_path / "stat"
    stat.write_bytes(b"cpu  1 2 3\nctxt 99\nprocs_running 3\nprocs_blocked 0\n")
    # 3 running, this thread one of them: 2 elsewhere, whatever the load average says.
    monkeypatch.setattr(in_threads.os, "getloadavg", lambda: (1.7, 0, 0), raising=False)
    assert in_threads.running_elsewhere(str(stat)) == 2.0
    looks = iter([b"procs_running 4\n", b"procs_running 1\n", b"procs_running 2\n"])
    monkeypatch.setattr(in_threads, "open", lambda *_: io.BytesIO(next(looks)), raising=False)
    assert in_threads.running_elsewhere(str(stat)) == 0.0  # the least of the looks: 1 - 1
    monkeypatch.delattr(in_threads, "open")
    stat.write_bytes(b"cpu  1 2 3\n")  # no such field (not Linux's): the load average
    assert in_threads.running_elsewhere(str(stat)) == 1.7
    assert in_threads.running_elsewhere(str(tmp_path / "missing")) == 1.7


def test_all_hosts_makes_no_roofline_per_host(pod, monkeypatch):
    import tb_roofline_plugin.serve.service as service_module

    monkeypatch.setattr(service_module, "WORKERS_MIN_BYTES", 0)
    service = RooflineService(str(pod), workers=2)
    serial = RooflineService(str(pod), workers=1)
    try:
        text = service.data("r", "ALL_HOSTS", None, "json")
        assert text == serial.data("r", "ALL_HOSTS", None, "json")
        hosts = [v for k, (v, _) in service.cache._entries.items() if k[0] == "host"]
        assert len(hosts) == 6 and all(r._model is None for r in hosts)
        assert service._pool is not None
        assert service.data("r", "p2", None, None) == serial.data("r", "p2", None, None)
    finally:
        if service._pool is not None:
            service._pool.shutdown()


def test_small_runs_convert_without_starting_workers(pod):
    """Starting workers costs more than converting a few MB here."""
    service = RooflineService(str(pod), workers=2)
    service.data("r", "ALL_HOSTS", None, None)
    assert service._pool is None
