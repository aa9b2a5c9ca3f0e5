"""Parallel host conversion, the on-disk stats store, Dask export and --roofline_cache_dir."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from conftest import run_cli

from tb_roofline_plugin.demo import GpuSpec, TpuSpec, gpu_xspace, tpu_xspace, write_profile
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.render.export import render
from tb_roofline_plugin.serve import convert, stats_store
from tb_roofline_plugin.serve.service import RooflineService


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    for i in range(3):
        write_profile(
            root / f"tpu/plugins/profile/r/h{i}.xplane.pb",
            tpu_xspace(TpuSpec(cores=2, seed=i, host=f"h{i}")),
        )
    write_profile(root / "gpu/plugins/profile/r/g0.xplane.pb", gpu_xspace(GpuSpec(host="g0")))
    return root


def test_stats_store_round_trips_exactly(logdir, tmp_path):
    for path in (
        logdir / "tpu/plugins/profile/r/h0.xplane.pb",
        logdir / "gpu/plugins/profile/r/g0.xplane.pb",
    ):
        stats = analyze_file(path)
        key = stats_store.cache_key(str(path), 1, 2.0)
        stats_store.save(str(tmp_path), key, stats)
        loaded = stats_store.load(str(tmp_path), key)
        for fmt in ("datatable", "json", "csv"):
            assert render(loaded, fmt, ["x"]) == render(stats, fmt, ["x"])
        assert render(loaded, "json", ["x"], 2) == render(stats, "json", ["x"], 2)
    assert stats_store.load(str(tmp_path), "absent") is None


def test_a_damaged_or_pickled_store_file_is_ignored(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert stats_store.load(str(tmp_path), "bad") is None
    np.savez(tmp_path / "evil.npz", meta=np.array([object()], dtype=object))  # needs pickle
    assert stats_store.load(str(tmp_path), "evil") is None
    (tmp_path / "pickle.npz").write_bytes(pickle.dumps({"a": 1}))
    assert stats_store.load(str(tmp_path), "pickle") is None


def test_parallel_workers_give_the_serial_result(logdir, monkeypatch):
    import tb_roofline_plugin.serve.service as service_module

    monkeypatch.setattr(service_module, "WORKERS_MIN_BYTES", 0)  # small hosts: workers too
    serial = RooflineService(str(logdir), workers=1)
    parallel = RooflineService(str(logdir), workers=2)
    assert parallel.data("tpu/r", "ALL_HOSTS", None, "json") == serial.data(
        "tpu/r", "ALL_HOSTS", None, "json"
    )
    assert parallel.data("tpu/r", "h1", None, None) == serial.data("tpu/r", "h1", None, None)
    assert parallel._pool is not None  # the hosts were converted in worker processes
    parallel._pool.shutdown()


def test_dask_local_cluster_export_equals_in_process(logdir, tmp_path, monkeypatch):
    pytest.importorskip("dask.distributed")
    import tb_roofline_plugin.serve.service as service_module

    cache = tmp_path / "cache"
    proc = run_cli("export", logdir, "--dask", "local", "--cache-dir", cache, check=True)
    assert proc.stdout.strip() == f"4 of 4 host profiles in {cache}"
    assert len(list(cache.glob("*.npz"))) == 4
    again = run_cli("export", logdir, "--dask", "local", "--cache-dir", cache, check=True)
    assert again.stdout.strip() == f"4 of 4 host profiles in {cache}"
    calls = []

    def counting(*args, **kwargs):
        calls.append(args[0])
        return convert.convert_file(*args, **kwargs)

    monkeypatch.setattr(service_module, "convert_file", counting)
    cached = RooflineService(str(logdir), cache_dir=str(cache), workers=1)
    for run, host in (("tpu/r", "ALL_HOSTS"), ("gpu/r", "g0")):
        from_cache = json.loads(cached.data(run, host, None, None))
        assert calls == []  # read from the Dask results, nothing converted
        fresh = RooflineService(str(logdir), workers=1)
        assert from_cache == json.loads(fresh.data(run, host, None, None))
        calls.clear()


def test_dask_cache_dir_inside_the_logdir_is_refused(logdir):
    proc = run_cli("export", logdir, "--dask", "local", "--cache-dir", logdir / "cache")
    assert proc.returncode == 2 and "is inside" in proc.stderr and "Traceback" not in proc.stderr
    assert not (logdir / "cache").exists()
