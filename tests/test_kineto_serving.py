"""PyTorch profiler traces where XSpace runs are: discovery, the HTTP routes and the CLI."""

from __future__ import annotations

import json
import shutil

from conftest import run_cli
from serving_support import Served

from tb_roofline_plugin.xspace.discovery import discover, has_profiles, host_name, trace_worker

A100 = "pytorch/a100_recsys/control.pt.trace.json.gz"
CNN = "pytorch/cpu_cnn/worker0.1796108550851685382.pt.trace.json"


def _touch(path, data=b"{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_a_folder_of_traces_is_a_run_and_each_worker_a_host(tmp_path):
    _touch(tmp_path / "resnet/host-a.example.com_77.1700000000000000001.pt.trace.json")
    _touch(tmp_path / "resnet/worker0.1700000000000000002.pt.trace.json.gz")
    _touch(tmp_path / "resnet/worker0.1700000000000000001.pt.trace.json.gz")  # a second capture
    _touch(tmp_path / "resnet/notes.json")
    _touch(tmp_path / "control.pt.trace.json.gz")  # at the logdir root, renamed
    _touch(tmp_path / "jax/plugins/profile/r1/vm.xplane.pb")
    _touch(tmp_path / "jax/plugins/profile/r1/vm.trace.json.gz")  # JAX's trace: not a host
    runs = discover(str(tmp_path))
    assert list(runs) == [".", "jax/r1", "resnet"]
    assert list(runs["."].hosts) == ["control"]
    assert list(runs["jax/r1"].hosts) == ["vm"]
    assert list(runs["resnet"].hosts) == [
        "host-a.example.com_77",
        "worker0.1700000000000000001",
        "worker0.1700000000000000002",
    ]
    assert (
        runs["resnet"]
        .hosts["worker0.1700000000000000001"]
        .path.endswith("worker0.1700000000000000001.pt.trace.json.gz")
    )
    assert trace_worker("w.1.2.345.pt.trace.json") == ("w.1.2", "345")
    assert host_name("x/worker0.1796108550851685382.pt.trace.json") == "worker0"
    assert has_profiles(str(tmp_path / "resnet"))


def test_routes_serve_a_pytorch_run_beside_an_xspace_run(shared_data, tmp_path):
    logdir = tmp_path / "logdir"
    for rel in (A100, CNN):
        target = logdir / "torch" / rel.split("/")[1] / rel.split("/")[-1]
        target.parent.mkdir(parents=True)
        shutil.copy(shared_data / rel, target)
    (xspace,) = (shared_data / "jax-cpu/jax_mlp").glob("plugins/profile/*")
    shutil.copytree(xspace, logdir / "jax/plugins/profile" / xspace.name)
    served = Served(logdir)
    _, runs = served.get("runs")
    assert runs == [f"jax/{xspace.name}", "torch/a100_recsys", "torch/cpu_cnn"]
    _, hosts = served.get("hosts", run="torch/a100_recsys")
    assert hosts == ["control"]
    _, steps = served.get("steps", run="torch/a100_recsys", host="control")
    assert [s["step_num"] for s in steps["steps"]] == [1009, 1010, 1011, 1012, 1013, 1014]
    response, body = served.data("torch/a100_recsys", "control", format="json")
    assert response.status_code == 200
    assert body["device"]["hardware_type"] == "GPU"
    names = {r["hlo_name"] for r in body["database"]["roofline_model_record"]}
    assert {"aten::mm", "aten::addmm", "aten::bmm"} <= names
    response, body = served.data("torch/cpu_cnn", "worker0", format="json", step="3")
    assert response.status_code == 200 and body["step"] == "3"
    _, compare = served.get(
        "compare",
        a_run="torch/cpu_cnn",
        a_host="worker0",
        a_step="2",
        b_run="torch/cpu_cnn",
        b_host="worker0",
        b_step="5",
    )
    assert any(op["operation"] == "aten::addmm" for op in compare["ops"])


def test_cli_reads_a_trace_folder_and_tells_a_trace_from_a_corrupt_profile(shared_data, tmp_path):
    folder = shared_data / "pytorch/cpu_cnn"
    doc = json.loads(run_cli("export", str(folder), "--format", "json", check=True).stdout)
    assert doc["hosts"] == ["worker0"]
    assert [s["step_num"] for s in doc["steps"]] == [2, 3, 4, 5]
    misnamed = tmp_path / "control.xplane.pb"
    shutil.copy(shared_data / A100, misnamed)
    proc = run_cli("export", str(misnamed))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"tb-roofline: error: {misnamed}: not an XSpace profile: it looks like a PyTorch "
        "profiler trace (JSON), but a file named *.xplane.pb is read as XSpace: name it "
        "<worker>.<timestamp>.pt.trace.json[.gz]"
    )
    empty = tmp_path / "w.1.pt.trace.json"
    empty.write_bytes(b"")
    proc = run_cli("summary", str(empty))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "empty file, not a PyTorch profiler trace" in proc.stderr
