"""Discovery of profile runs and hosts in temporary logdirs."""

from __future__ import annotations

import pytest

from tb_roofline_plugin.xspace.discovery import discover, has_profiles


def _touch(path, data=b"x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_runs_are_named_as_xprof_names_them(tmp_path):
    _touch(tmp_path / "plugins/profile/2026_01_01/host0.xplane.pb")
    _touch(tmp_path / "train/plugins/profile/r1/host0.xplane.pb")
    _touch(tmp_path / "train/plugins/profile/r1/host1.xplane.pb")
    _touch(tmp_path / "exp/a/plugins/profile/r2/h.xplane.pb")
    runs = discover(str(tmp_path))
    assert list(runs) == ["2026_01_01", "exp/a/r2", "train/r1"]
    assert list(runs["train/r1"].hosts) == ["host0", "host1"]
    assert runs["train/r1"].hosts["host1"].path == str(
        tmp_path / "train/plugins/profile/r1/host1.xplane.pb"
    )


def test_other_files_and_empty_runs_are_ignored(tmp_path):
    run = tmp_path / "plugins/profile/r1"
    for name in (
        "h.xplane.pb",
        "h.trace.json.gz",
        "jit_f.hlo_proto.pb",
        "ALL_HOSTS.op_stats_v2.pb",
        ".cached_tools.json",
        "cache_version.txt",
        "h.xplane.pb.tmp",
    ):
        _touch(run / name)
    (tmp_path / "plugins/profile/empty_run").mkdir(parents=True)
    _touch(tmp_path / "plugins/profile/only_traces/h.trace.json.gz")
    _touch(tmp_path / "not_a_profile_dir/x.xplane.pb")
    _touch(tmp_path / "plugins/profile/r1/nested/deeper.xplane.pb")
    runs = discover(str(tmp_path))
    assert list(runs) == ["r1"]
    assert list(runs["r1"].hosts) == ["h"]


def test_has_profiles_is_true_only_with_a_profile(tmp_path):
    assert not has_profiles(str(tmp_path))
    _touch(tmp_path / "plugins/profile/r/trace.json.gz")
    assert not has_profiles(str(tmp_path))
    _touch(tmp_path / "deep/er/plugins/profile/r/h.xplane.pb")
    assert has_profiles(str(tmp_path))


def test_walk_is_bounded(tmp_path):
    for i in range(5):
        (tmp_path / f"d{i}").mkdir()
    _touch(tmp_path / "z/plugins/profile/r/h.xplane.pb")
    assert discover(str(tmp_path), max_dirs=3) == {}
    assert not has_profiles(str(tmp_path), max_dirs=3)
    assert list(discover(str(tmp_path))) == ["z/r"]


def test_empty_or_missing_logdir(tmp_path):
    assert discover("") == {}
    assert discover(str(tmp_path / "missing")) == {}
    assert not has_profiles("")


def test_remote_logdir_through_tensorboards_filesystem_layer():
    fsspec = pytest.importorskip("fsspec")
    from tiny_tpu import tiny_tpu

    from tb_roofline_plugin.serve.service import RooflineService

    fs = fsspec.filesystem("memory")
    with fs.open("memory://tbr-logdir/exp/plugins/profile/r1/h.xplane.pb", "wb") as f:
        f.write(tiny_tpu().SerializeToString())
    try:
        assert has_profiles("memory://tbr-logdir")
        runs = discover("memory://tbr-logdir")
        assert list(runs) == ["exp/r1"]
        assert (
            runs["exp/r1"].hosts["h"].path
            == "memory://tbr-logdir/exp/plugins/profile/r1/h.xplane.pb"
        )
        service = RooflineService("memory://tbr-logdir")
        table = service.result("exp/r1", "h").database
        assert table.device_type == "TPU test"
    finally:
        fs.rm("memory://tbr-logdir", recursive=True)
