"""``tb-roofline export`` as a user runs it: formats, run folders, hosts, and bad input."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import run_cli
from tiny_tpu import tiny_tpu

from tb_roofline_plugin import cli
from tb_roofline_plugin.demo.xspace_builder import plane
from tb_roofline_plugin.protos import xplane_pb2


@pytest.fixture
def run_dir(tmp_path):
    """A run folder with two hosts of the tiny TPU profile and files XProf leaves around."""
    folder = tmp_path / "plugins" / "profile" / "run1"
    folder.mkdir(parents=True)
    data = tiny_tpu().SerializeToString()
    (folder / "host_a.xplane.pb").write_bytes(data)
    (folder / "host_b.xplane.pb").write_bytes(data)
    (folder / "host_a.trace.json.gz").write_bytes(b"not a profile")
    (folder / "ALL_HOSTS.op_stats_v2.pb").write_bytes(b"xprof cache")
    return folder


def _rows(stdout: str) -> list[dict]:
    table = json.loads(stdout)[0]
    ids = [c["id"] for c in table["cols"]]
    return [dict(zip(ids, [c["v"] for c in r["c"]])) for r in table["rows"]]


def test_run_folder_combines_hosts_and_host_selects_one(run_dir):
    both = _rows(run_cli("export", run_dir, check=True).stdout)
    one = _rows(run_cli("export", run_dir, "--host", "host_a", check=True).stdout)
    assert both[0]["operation"] == one[0]["operation"] == "Program"
    assert both[0]["total_time"] == pytest.approx(2 * one[0]["total_time"])
    assert both[0]["total_time_per_core"] == pytest.approx(one[0]["total_time_per_core"])
    conv = [r for r in both if r["operation"] == "conv"][0]
    assert conv["occurrences"] == 4.0


def test_json_format_is_complete(run_dir):
    doc = json.loads(
        run_cli("export", run_dir / "host_a.xplane.pb", "--format", "json", check=True).stdout
    )
    assert doc["format"] == "tb-roofline/1"
    assert doc["device"]["device_type"] == "TPU test"
    assert doc["device"]["peak_flop_rate_gflops"] == 100_000.0
    assert doc["device"]["peaks_source"] == "profile"
    records = doc["database"]["roofline_model_record"]
    assert records[0]["hlo_name"] == "Program" and records[0]["record_type"] == "ALL"
    assert doc["hosts"] == ["host_a"]


def test_csv_format_has_a_header_and_one_line_per_record(run_dir, tmp_path):
    out = tmp_path / "out.csv"
    run_cli("export", run_dir / "host_a.xplane.pb", "--format", "csv", "--output", out, check=True)
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert rows[0][:4] == ["Step", "Rank", "Category", "Operation"]
    datatable = _rows(run_cli("export", run_dir / "host_a.xplane.pb", check=True).stdout)
    assert len(rows) == 1 + len(datatable)
    assert rows[1][3] == "Program" and rows[1][5] == str(datatable[0]["total_time"])


def test_cpu_profile_gives_an_empty_result_that_says_why(tmp_path):
    space = xplane_pb2.XSpace()
    plane(space, "/host:CPU").line("python")
    plane(space, "/host:metadata")
    path = tmp_path / "cpu.xplane.pb"
    path.write_bytes(space.SerializeToString())
    table, diagnostics = json.loads(run_cli("export", path, check=True).stdout)
    assert table["rows"] == [] and len(table["cols"]) == 37
    assert table["p"]["device_type"] == "" and table["p"]["peak_flop_rate"] == "0"
    assert diagnostics["rows"][0]["c"][0]["v"] == "INFO"
    assert "no TPU or GPU device planes" in diagnostics["rows"][0]["c"][1]["v"]


def _bad(*args: str) -> str:
    proc = run_cli(*args)
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    return lines[0]


def test_corrupt_real_sample_is_one_line_exit_2(shared_data):
    path = shared_data / "xprof" / "tpu_inference_2.CORRUPT_utf8_mangled.xplane.pb"
    line = _bad("export", str(path))
    assert line == (
        f"tb-roofline: error: {path}: not a valid XSpace profile: "
        "wire format is corrupt or truncated (a field runs past the end of the data)"
    )


def test_truncated_profile(tmp_path, shared_data):
    path = tmp_path / "cut.xplane.pb"
    data = (shared_data / "xprof" / "tpu_inference_2.xplane.pb").read_bytes()
    path.write_bytes(data[: len(data) // 3])
    assert "corrupt or truncated" in _bad("export", str(path))


def test_empty_file(tmp_path):
    path = tmp_path / "empty.xplane.pb"
    path.write_bytes(b"")
    assert (
        _bad("export", str(path))
        == f"tb-roofline: error: {path}: empty file (0 bytes), not an XSpace profile"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"traceEvents": []}', "not an XSpace profile: it looks like a PyTorch profiler trace"),
        (b"\x1f\x8b\x08\x00\x00\x00", "not an XSpace profile: it looks like a gzip file"),
        (b"\x08\x96\x01", "not an XSpace profile: no profile planes found"),
    ],
)
def test_foreign_files(tmp_path, content, expected):
    path = tmp_path / "foreign.xplane.pb"
    path.write_bytes(content)
    line = _bad("export", str(path))
    assert str(path) in line and expected in line


def test_directory_without_profiles_and_missing_path(tmp_path):
    assert _bad("export", str(tmp_path)).endswith(
        "directory contains no *.xplane.pb profiles or PyTorch profiler traces (*.json[.gz])"
    )
    assert _bad("export", str(tmp_path / "nope")).endswith("nope: no such file or directory")


def test_unknown_host_lists_the_hosts(run_dir):
    line = _bad("export", str(run_dir), "--host", "host_z")
    assert line.endswith("no host 'host_z' (hosts: host_a, host_b)")


def test_one_corrupt_host_in_a_run_names_that_file(run_dir):
    shutil.copy(run_dir / "host_a.xplane.pb", run_dir / "host_c.xplane.pb")
    (run_dir / "host_c.xplane.pb").write_bytes(b"\x0a\x05abc")
    line = _bad("export", str(run_dir))
    assert "host_c.xplane.pb: not a valid XSpace profile" in line


def test_unwritable_output(run_dir, tmp_path):
    line = _bad("export", str(run_dir), "--output", str(tmp_path / "no" / "such" / "dir.json"))
    assert "cannot write" in line


def test_device_planes_without_ops_say_so(tmp_path):
    from tiny_tpu import PEAKS

    space = xplane_pb2.XSpace()
    plane(space, "/device:TPU:0", stats=PEAKS).line("XLA Ops")
    path = tmp_path / "idle.xplane.pb"
    path.write_bytes(space.SerializeToString())
    table, diagnostics = json.loads(run_cli("export", path, check=True).stdout)
    messages = [r["c"][1]["v"] for r in diagnostics["rows"] if r["c"][0]["v"] == "INFO"]
    assert any("have no XLA op events" in m for m in messages)
    assert [r["c"][3]["v"] for r in table["rows"]] == ["Program", "Program", "Program", "Program"]


MODULES_PROBE = (
    "import sys; from tb_roofline_plugin import cli; code = cli.main(sys.argv[1:]); "
    "print(code, *sorted(m for m in sys.modules if m.startswith('tb_roofline_plugin.') or "
    "m in ('csv', 'uuid', 'html', '_hashlib', 'pkg_resources', 'importlib.metadata')))"
)


@pytest.mark.parametrize(
    ("fmt", "json_sections"), [("datatable", False), ("csv", False), ("json", True)]
)
def test_export_imports_what_its_format_needs(shared_data, fmt, json_sections):
    """A start-up cost: the datatable and CSV of a TPU profile import neither the json's
    sections (renderers, classes, layers) nor other platforms' readers, nor any package
    metadata; the same export, the same text."""
    path = shared_data / "xprof" / "tpu_inference_2.xplane.pb"
    done = subprocess.run(
        [sys.executable, "-c", MODULES_PROBE, "export", str(path), "--format", fmt, "-o",
         os.devnull],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    code, *modules = done.stdout.split()
    assert code == "0", done.stderr
    assert "tb_roofline_plugin.platforms.tpu" in modules
    ours = [m.split(".", 1)[1] for m in modules if m.startswith("tb_roofline_plugin.")]
    never = ("platforms.gpu", "platforms.cpu", "kineto.ops", "serve", "demo", "api")
    assert not [m for m in ours if m.startswith(never)]
    # No package metadata, no OpenSSL (the planes' digest is hashlib's own BLAKE2), no html
    assert not {"pkg_resources", "importlib.metadata", "uuid", "html", "_hashlib"} & set(modules)
    json_only = {
        "tb_roofline_plugin.render.advice",
        "tb_roofline_plugin.render.hardware",
        "tb_roofline_plugin.render.layers",
        "tb_roofline_plugin.roofline.classes",
        "tb_roofline_plugin.kineto.aten_cost",
    }
    assert (json_only <= set(modules)) == json_sections
    assert json_sections or not json_only & set(modules)
    assert ("csv" in modules) == (fmt != "datatable")  # the json's layers have a CSV too


BLAS_PROBE = (
    "import os, sys; from tb_roofline_plugin import cli; "
    "code = cli.main(sys.argv[1:]); "
    "import numpy; print(code, os.environ.get('OPENBLAS_NUM_THREADS'))"
)


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_export_imports_numpy_with_one_blas_thread_unless_told_otherwise(
    shared_data, given, expected
):
    """Idle BLAS threads spin for ~0.1 CPU s at numpy's import; export multiplies no matrix.
    A BLAS setting of the caller's is kept."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("NUM_THREADS")}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    path = shared_data / "xprof" / "tpu_inference_2.xplane.pb"
    done = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE, "export", str(path), "-o", os.devnull],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.stdout.split() == ["0", expected], done.stderr


TEARDOWN_PROBE = (
    "import atexit, sys; from tb_roofline_plugin import cli; "
    "atexit.register(lambda: print('teardown ran', file=sys.stderr)); "
    "sys.argv[0] = 'tb-roofline'; cli.run()"
)


def _console(*args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", TEARDOWN_PROBE, *map(str, args)],
        stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
    )  # fmt: skip


def test_the_console_command_ends_a_conversion_without_the_interpreters_teardown(tmp_path):
    """A conversion's process ends once its output is flushed, skipping the teardown (atexit
    handlers, freeing every object): the whole output is there, and the exit status."""
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(tiny_tpu().SerializeToString())
    done = _console("export", path, "--format", "csv")
    assert done.returncode == 0 and done.stderr == ""
    assert cli.main(["export", str(path), "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    assert done.stdout == (tmp_path / "r.csv").read_text()
    assert next(csv.DictReader(io.StringIO(done.stdout)))["Operation"] == "Program"
    (tmp_path / "out").mkdir()
    written = _console("export", path, "-o", tmp_path / "out" / "r.json", "--format", "json")
    assert written.returncode == 0 and written.stderr == ""
    assert json.loads((tmp_path / "out" / "r.json").read_text())["database"]
    missing = _console("export", tmp_path / "missing.xplane.pb")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "missing.xplane.pb" in missing.stderr


def test_the_console_command_keeps_the_teardown_where_nothing_is_converted():
    """``--help`` and bad command lines exit as argparse does; the teardown runs."""
    done = _console("--help")
    assert done.returncode == 0 and "export" in done.stdout
    assert "teardown ran" in done.stderr
    bad = _console("export")
    assert bad.returncode == 2 and "teardown ran" in bad.stderr


def test_the_console_command_keeps_the_teardown_after_a_conversion_on_dask(tmp_path):
    """Dask's clients and finalizers end in the teardown: a ``--dask`` export keeps it."""
    pytest.importorskip("dask.distributed")
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(tiny_tpu().SerializeToString())
    done = _console("export", path, "--dask", "local", "--cache-dir", tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"1 of 1 host profiles in {tmp_path / 'cache'}"
    assert "teardown ran" in done.stderr
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1


def test_the_console_command_into_a_closed_pipe_ends_quietly(tmp_path):
    """Output into a pipe its reader closed (``| head``): no traceback, status 0, as before."""
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(tiny_tpu().SerializeToString())
    reader, writer = os.pipe()
    os.close(reader)
    with os.fdopen(writer, "w") as closed:
        done = _console("export", path, "--format", "json", stdout=closed)
    assert done.returncode == 0 and done.stderr == ""
