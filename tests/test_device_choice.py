"""One device of a host with several (XLA:CPU devices, GPUs, TensorCores): its own Program
time, FLOPs and op rows, which add up over the devices to the all-devices figures; served as
``device=N`` (HTTP) and ``--device N`` (CLI), an unknown device said in one line.

Oracles from the raw XSpace (``xplane_pb2``): each device's op events, kernels and spans.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import run_cli
from serving_support import Served
from test_busy_shares import raw_flights

from tb_roofline_plugin.ops.op_metrics import IDLE_NAME
from tb_roofline_plugin.ops.selection import BadDevice
from tb_roofline_plugin.platforms.analysis import analyze_file
from tb_roofline_plugin.protos import xplane_pb2

SHARDED = "new-producers/jax_sharded4_jit"
TPU = "xprof/tpu_inference_2.xplane.pb"
BERT_RUN = "field/tf_v100_bert/plugins/profile/GPU-multi-worker"
BERT = f"{BERT_RUN}/34.83.195.179_6003.xplane.pb"


def _sharded(shared_data: Path) -> Path:
    (path,) = (shared_data / SHARDED).glob("plugins/profile/*/*.xplane.pb")
    return path


def _rows(db) -> dict[tuple[int, str], tuple]:
    """(occurrences, time, self time, FLOPs, bytes) of each op row (IDLE aside)."""
    return {
        (int(p), str(n)): (int(o), int(t), int(s), float(f), float(b))
        for p, n, o, t, s, f, b in zip(
            db.program_id,
            db.name,
            db.occurrences,
            db.time_ps,
            db.self_time_ps,
            db.flops,
            db.bytes_accessed,
        )  # fmt: skip
        if n != IDLE_NAME
    }


def _summed(dbs) -> dict[tuple[int, str], tuple]:
    out: dict[tuple[int, str], list] = defaultdict(lambda: [0, 0, 0, 0.0, 0.0])
    for db in dbs:
        for key, values in _rows(db).items():
            out[key] = [a + b for a, b in zip(out[key], values)]
    return {k: tuple(v) for k, v in out.items()}


def _assert_devices_add_up(whole, parts) -> None:
    """Program time, FLOPs and op rows of Total and of each step: the devices' sum is all."""
    assert sum(p.all_db.total_time_ps for p in parts) == whole.all_db.total_time_ps
    assert sum(p.all_db.flops.sum() for p in parts) == pytest.approx(whole.all_db.flops.sum())
    summed, rows = _summed([p.all_db for p in parts]), _rows(whole.all_db)
    assert summed.keys() == rows.keys()
    for key, values in rows.items():
        assert summed[key][:3] == values[:3], key  # occurrences and times, in ps: exactly
        assert summed[key][3:] == pytest.approx(values[3:], rel=1e-12), key
    for i, step in enumerate(whole.steps):
        mine = [p.steps[i] for p in parts]
        assert {s.step_num for s in mine} == {step.step_num}
        assert sum(s.db.total_time_ps for s in mine) == step.db.total_time_ps
        assert sum(s.db.flops.sum() for s in mine) == pytest.approx(step.db.flops.sum())
        assert _summed([s.db for s in mine]).keys() == _rows(step.db).keys()


# --- XLA:CPU devices -----------------------------------------------------------------------


def _step_window(path: Path) -> tuple[int, int]:
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    spans = []
    for line in plane.lines:
        for e in line.events:
            if any(names[s.metadata_id] == "step_num" for s in e.stats):
                begin = line.timestamp_ns * 1000 + e.offset_ps
                spans.append((begin, begin + e.duration_ps))
    return min(b for b, _ in spans), max(e for _, e in spans)


def test_each_cpu_device_has_its_own_ops_and_time_and_they_add_up(shared_data):
    path = _sharded(shared_data)
    whole = analyze_file(path)
    assert whole.devices == [0, 1, 2, 3] and whole.device is None
    parts = [analyze_file(path, device=d) for d in whole.devices]
    _assert_devices_add_up(whole, parts)
    flights = raw_flights(path)
    window = _step_window(path)
    for device, part in zip(whole.devices, parts):
        assert part.device == device and part.devices == whole.devices
        assert part.run_env.device_core_count == part.run_env.active_core_count == 1
        mine = [(p, n, b, e) for d, p, n, b, e in flights if d == device]
        # The device's span widened to the steps' window, and its op events and no others.
        span = max(max(e for *_, e in mine), window[1]) - min(
            min(b for _, _, b, _ in mine), window[0]
        )
        assert part.all_db.total_time_ps == span
        ops = part.all_db.name != IDLE_NAME
        assert int(part.all_db.occurrences.sum()) == len(mine)
        assert int(part.all_db.time_ps[ops].sum()) == sum(e - b for _, _, b, e in mine)
        assert part.all_db.self_time_ps[ops].sum() <= part.all_db.total_time_ps
        assert [s.step_num for s in part.steps] == [0, 1, 2, 3, 4]
        assert all(s.complete for s in part.steps)


def test_one_device_of_a_sharded_step_is_a_quarter_of_its_flops(shared_data):
    """Every step runs the SPMD program once on each of the 4 devices: the same FLOPs."""
    path = _sharded(shared_data)
    whole = analyze_file(path)
    for device in whole.devices:
        part = analyze_file(path, device=device)
        for mine, step in zip(part.steps, whole.steps):
            assert mine.db.flops.sum() == pytest.approx(step.db.flops.sum() / 4, rel=1e-12)


def test_an_unknown_device_is_named_in_one_line(shared_data):
    with pytest.raises(BadDevice, match=r"^no device 7 on this host \(devices: 0, 1, 2, 3\)$"):
        analyze_file(_sharded(shared_data), device=7)
    trace = next((shared_data / "new-producers/torch_lstm").glob("*.json"))
    with pytest.raises(BadDevice, match="^no device 0 to show"):
        analyze_file(trace, device=0)


# --- TPU cores and GPUs ----------------------------------------------------------------------


def _device_planes(path: Path, prefix: str) -> dict[int, list[tuple[str, int, int]]]:
    """{N of <prefix>N: [(line name, begin, end) of every event]}; a TPU op's device clock
    (its ``device_offset_ps`` and ``device_duration_ps`` stats) wins over the host's."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    out = {}
    for plane in space.planes:
        if not (plane.name.startswith(prefix) and plane.name[len(prefix) :].isdigit()):
            continue
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        events = []
        for line in plane.lines:
            for e in line.events:
                stats = {names[s.metadata_id]: s.int64_value or s.uint64_value for s in e.stats}
                begin, duration = line.timestamp_ns * 1000 + e.offset_ps, e.duration_ps
                if "device_offset_ps" in stats and "device_duration_ps" in stats:
                    begin, duration = stats["device_offset_ps"], stats["device_duration_ps"]
                events.append((line.name, begin, begin + duration))
        out[int(plane.name[len(prefix) :])] = events
    return out


def test_each_tpu_core_is_its_own_device(shared_data):
    path = shared_data / TPU
    cores = _device_planes(path, "/device:TPU:")
    whole = analyze_file(path)
    assert whole.devices == sorted(cores) == [0, 1, 2, 3]
    parts = [analyze_file(path, device=d) for d in whole.devices]
    _assert_devices_add_up(whole, parts)
    for core, part in zip(whole.devices, parts):
        ops = [(b, e) for line, b, e in cores[core] if line == "XLA Ops"]
        assert part.all_db.total_time_ps == max(e for _, e in ops) - min(b for b, _ in ops)
        assert int(part.all_db.occurrences.sum()) == len(ops)


def test_each_gpu_with_kernels_is_its_own_device(shared_data):
    path = shared_data / BERT
    gpus = _device_planes(path, "/device:GPU:")
    streams = {
        n: [(b, e) for line, b, e in ev if line.startswith("Stream #")] for n, ev in gpus.items()
    }
    ran = sorted(n for n, kernels in streams.items() if kernels)
    whole = analyze_file(path)
    assert whole.run_env.device_core_count == len(gpus) == 8
    assert whole.devices == ran == [1, 4, 6]
    parts = [analyze_file(path, device=d) for d in whole.devices]
    _assert_devices_add_up(whole, parts)
    for gpu, part in zip(ran, parts):
        kernels = streams[gpu]
        assert part.all_db.total_time_ps == max(e for _, e in kernels) - min(b for b, _ in kernels)
        # TensorFlow without XLA: the GPU's kernels are all unattributed.
        assert int(part.unattributed.occurrences.sum()) == len(kernels)
        assert int(part.unattributed.time_ps.sum()) == sum(e - b for b, e in kernels)
        # Step 0 on this GPU: its Steps span, to the end of the kernels starting in it (0 for
        # a GPU whose Steps line is empty: its kernels are in Total only).
        (step,) = part.steps
        spans = [(b, e) for line, b, e in gpus[gpu] if line == "Steps"]
        held = [e for b, e in kernels if any(sb <= b < se for sb, se in spans)]
        expected = max([e for _, e in spans] + held) - min(b for b, _ in spans) if spans else 0
        assert step.db.total_time_ps == expected
    with pytest.raises(BadDevice, match=r"^no device 0 on this host \(devices: 1, 4, 6\)$"):
        analyze_file(path, device=0)  # GPU 0 ran no kernel


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_summary_and_export_show_one_device(shared_data):
    path = _sharded(shared_data)
    part = analyze_file(path, device=2)
    text = run_cli("summary", "--device", "2", path, check=True).stdout
    assert "device 2 only (1 of 4 devices with ops)" in text.splitlines()[1]
    total = next(line for line in text.splitlines() if line.startswith("Total"))
    assert f"{part.all_db.total_time_ps / 1e6:,.1f}" in total
    body = json.loads(
        run_cli("export", "--format", "json", "--device", "2", path, check=True).stdout
    )
    assert body["device"]["devices"] == [0, 1, 2, 3]
    assert body["device"]["selected_device"] == 2
    assert _program_us(body) == pytest.approx(part.all_db.total_time_ps / 1e6)
    whole = json.loads(run_cli("export", "--format", "json", path, check=True).stdout)
    assert whole["device"]["selected_device"] is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["summary", "--device", "9"], "no device 9 on this host (devices: 0, 1, 2, 3)"),
        (["export", "--device", "one"], "device must be 'all' or a device number, not 'one'"),
    ],
)
def test_cli_bad_device_is_one_line(shared_data, args, message):
    proc = run_cli(*args, _sharded(shared_data))
    assert proc.returncode == 2
    assert proc.stderr == f"tb-roofline: error: {message}\n"


def test_cli_device_needs_one_host(shared_data):
    proc = run_cli("summary", "--device", "1", shared_data / BERT_RUN)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--device 1 shows a device of one host" in proc.stderr
    ok = run_cli("summary", "--device", "1", "--host", "34.83.195.179_6003", shared_data / BERT_RUN)
    assert ok.returncode == 0 and "GPU 1 only (1 of 3 GPUs with ops)" in ok.stdout


# --- the HTTP routes -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(shared_data, tmp_path_factory):
    logdir = tmp_path_factory.mktemp("devices")
    for run, source in (("sharded", _sharded(shared_data)), ("bert", shared_data / BERT_RUN)):
        folder = logdir / run / "plugins" / "profile" / "r1"
        folder.mkdir(parents=True)
        sources = [source] if source.is_file() else sorted(source.glob("*.xplane.pb"))
        for file in sources:
            os.symlink(file, folder / file.name)
    return Served(logdir)


def _program_us(body: dict) -> float:
    (program,) = [
        r
        for r in body["database"]["roofline_model_record"]
        if r.get("record_type") == "ALL" and r["hlo_name"] == "Program"
        and r["include_infeed_outfeed"]
    ]  # fmt: skip
    return program["total_time_in_us"]


def test_data_route_shows_one_device_cached_like_a_step(served, shared_data):
    path = _sharded(shared_data)
    response, steps = served.get("steps", run="sharded/r1", host="vm")
    assert response.status_code == 200 and steps["devices"] == [0, 1, 2, 3]
    _, whole = served.data("sharded/r1", "vm", format="json")
    assert whole["device"]["devices"] == [0, 1, 2, 3] and whole["device"]["selected_device"] is None
    times = []
    for device in (0, 1, 2, 3):
        response, body = served.data("sharded/r1", "vm", format="json", device=str(device))
        assert response.status_code == 200
        assert body["device"]["selected_device"] == device
        expected = analyze_file(path, device=device).all_db.total_time_ps / 1e6
        assert _program_us(body) == pytest.approx(expected)
        times.append(_program_us(body))
    assert sum(times) == pytest.approx(_program_us(whole), rel=1e-12)
    # The device's steps are its own; its step payloads and its conversion are cached.
    _, mine = served.get("steps", run="sharded/r1", host="vm", device="2")
    part = analyze_file(path, device=2)
    assert [s["duration_us"] for s in mine["steps"]] == pytest.approx(
        [s.duration_ps / 1e6 for s in part.steps]
    )
    conversions = served.service.cache.computations
    rendered = served.service.payloads.computations
    for _ in range(2):
        response, body = served.data("sharded/r1", "vm", format="json", device="2", step="3")
        assert response.status_code == 200 and body["step"] == "3"
    assert served.service.cache.computations == conversions
    assert served.service.payloads.computations == rendered + 1
    response, table = served.data("sharded/r1", "vm", device="2")
    assert response.status_code == 200 and table[0]["rows"]
    response = served.get(
        "data_csv", run="sharded/r1", host="vm", tag="roofline_model", device="2"
    )[0]
    assert response.status_code == 200 and response.mimetype == "text/csv"


@pytest.mark.parametrize(
    "run, host, device, message",
    [
        ("sharded/r1", "vm", "7", "no device 7 on this host (devices: 0, 1, 2, 3)"),
        ("sharded/r1", "vm", "-1", "device must be 'all' or a device number, not '-1'"),
        ("bert/r1", "34.83.195.179_6003", "0", "no device 0 on this host (devices: 1, 4, 6)"),
        ("bert/r1", "ALL_HOSTS", "1",
         "device 1 is a device of one host; ALL_HOSTS combines 2 hosts: choose one"),
    ],
)  # fmt: skip
def test_a_bad_device_is_a_400_that_names_it(served, run, host, device, message):
    for route in ("data", "steps"):
        response, body = served.get(route, run=run, host=host, tag="roofline_model", device=device)
        assert response.status_code == 400, route
        assert body == {"error": message}


def test_all_hosts_have_no_device_choice(served):
    _, steps = served.get("steps", run="bert/r1", host="ALL_HOSTS")
    assert steps["devices"] == []
    _, steps = served.get("steps", run="bert/r1", host="34.83.195.179_6003")
    assert steps["devices"] == [1, 4, 6]
