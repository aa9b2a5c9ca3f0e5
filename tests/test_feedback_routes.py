"""What the server tells the tab while it works and about what it does not read: the
``progress`` route (stage and time so far of a conversion in flight) and the
``logdir_notes`` route (``*.xplane.pb`` files outside ``plugins/profile/<run>/``)."""

from __future__ import annotations

import logging
import shutil
import threading
import time

import pytest
from serving_support import Served

from tb_roofline_plugin.serve import convert, service
from tb_roofline_plugin.serve.progress import ANALYSING, READING, RENDERING, Progress
from tb_roofline_plugin.serve.service import RooflineService
from tb_roofline_plugin.xspace.discovery import scan, stray_note

RUN = "plugins/profile/r1"


def _sample(shared_data):
    return shared_data / "xprof/tpu_inference_2.xplane.pb"


def test_progress_counts_tasks_by_stage_and_forgets_them_when_done():
    now = [100.0]
    progress = Progress(clock=lambda: now[0])
    assert progress.of(["a"]) == {"busy": False, "stage": "", "elapsed_s": 0.0, "stages": {}}
    with progress.task("a", READING) as first:
        now[0] = 101.5
        with progress.task("b", READING):
            first.enter(ANALYSING)
            now[0] = 103.0
            state = progress.of(["a", "b"])
            assert state == {
                "busy": True,
                "stage": ANALYSING,  # the furthest stage reached
                "elapsed_s": 3.0,  # since the oldest task began
                "stages": {READING: 1, ANALYSING: 1},
            }
            assert progress.of(["b"])["elapsed_s"] == 1.5
    assert progress.of(["a", "b"])["busy"] is False


def test_the_progress_route_follows_a_conversion_through_its_stages(
    tmp_path, shared_data, monkeypatch
):
    """A conversion held at each stage in turn: the route says that stage, with the time so
    far, and nothing once the answer is sent."""
    (tmp_path / RUN).mkdir(parents=True)
    shutil.copyfile(_sample(shared_data), tmp_path / RUN / "h.xplane.pb")
    served = Served(tmp_path)
    entered: dict[str, threading.Event] = {s: threading.Event() for s in (READING, ANALYSING)}
    go: dict[str, threading.Event] = {s: threading.Event() for s in (READING, ANALYSING)}
    real = convert.convert_file

    def held(path, peaks=None, max_bytes=None, device=None, on_stage=None):
        def stage(name):
            on_stage(name)
            entered[name].set()
            assert go[name].wait(30)

        return real(path, peaks, max_bytes, device=device, on_stage=stage)

    monkeypatch.setattr(service, "convert_file", held)
    rendering = threading.Event()
    real_render = service.Result.render

    def slow_render(self, fmt, step="total", step_list=True):
        rendering.set()
        time.sleep(0.3)
        return real_render(self, fmt, step, step_list)

    monkeypatch.setattr(service.Result, "render", slow_render)
    answers = []
    request = threading.Thread(
        target=lambda: answers.append(
            served.data("r1", "h", check_tree=False, format="json")[0].status_code
        )
    )
    request.start()
    try:
        for stage in (READING, ANALYSING):
            assert entered[stage].wait(30)
            time.sleep(0.05)
            _, body = served.get("progress", run="r1", host="h")
            assert body["busy"] is True and body["stage"] == stage, body
            assert body["stages"] == {stage: 1} and body["hosts"] == 1
            assert body["elapsed_s"] >= 0.05
            go[stage].set()
        assert rendering.wait(30)
        _, body = served.get("progress", run="r1", host="h")
        assert body["stage"] == RENDERING, body
    finally:
        for event in go.values():
            event.set()
        request.join(60)
    assert answers == [200]
    _, body = served.get("progress", run="r1", host="h")
    assert body == {"busy": False, "stage": "", "elapsed_s": 0.0, "stages": {}, "hosts": 1}


def test_the_progress_route_of_an_unknown_run_is_a_404(tmp_path, shared_data):
    (tmp_path / RUN).mkdir(parents=True)
    shutil.copyfile(_sample(shared_data), tmp_path / RUN / "h.xplane.pb")
    served = Served(tmp_path)
    response, body = served.get("progress", run="nope", host="h")
    assert response.status_code == 404 and body["error"] == "unknown run 'nope'"
    response, body = served.get("progress", run="r1")
    assert response.status_code == 400 and "host" in body["error"]


def test_xplane_files_outside_the_run_layout_are_named_with_how_to_lay_them_out(
    tmp_path, shared_data, caplog
):
    sample = _sample(shared_data)
    (tmp_path / RUN).mkdir(parents=True)
    shutil.copyfile(sample, tmp_path / RUN / "h.xplane.pb")  # read: a run
    shutil.copyfile(sample, tmp_path / "loose.xplane.pb")  # at the top
    (tmp_path / "plugins/profile/flat.xplane.pb").write_bytes(sample.read_bytes())  # no run
    (tmp_path / "exp/deep").mkdir(parents=True)
    shutil.copyfile(sample, tmp_path / "exp/deep/w.xplane.pb")
    found = scan(str(tmp_path))
    assert list(found.runs) == ["r1"]
    strays = sorted(p.replace(str(tmp_path), "") for p in found.stray)
    assert strays == [
        "/exp/deep/w.xplane.pb",
        "/loose.xplane.pb",
        "/plugins/profile/flat.xplane.pb",
    ]
    assert found.stray_count == 3
    served = Served(tmp_path)
    with caplog.at_level(logging.WARNING):
        _, runs = served.get("runs")
        served.get("runs")
    assert runs == ["r1"]
    logged = [r.getMessage() for r in caplog.records if "outside the" in r.getMessage()]
    assert len(logged) == 1  # said once, not on every walk
    _, body = served.get("logdir_notes")
    (note,) = body["notes"]
    assert note.startswith("3 *.xplane.pb files outside the plugins/profile/<run>/ layout are not")
    # In the order of the walk: the logdir first, then its folders by name.
    assert "(loose.xplane.pb, exp/deep/w.xplane.pb, plugins/profile/flat.xplane.pb)" in note
    assert str(tmp_path) not in note  # under the logdir, never the server's path
    assert "<logdir>/[<name>/]plugins/profile/<run>/<host>.xplane.pb" in note
    assert "plugins/profile/run1/<host>.xplane.pb" in note


def test_one_stray_file_is_said_in_the_singular_and_many_are_counted():
    one = stray_note("/logs", ["/logs/a.xplane.pb"])
    assert one.startswith("1 *.xplane.pb file outside the plugins/profile/<run>/ layout is not")
    assert "move it into" in one
    many = stray_note("/logs", [f"/logs/{i}.xplane.pb" for i in range(20)], 250)
    assert many.startswith("250 *.xplane.pb files") and "0.xplane.pb, 1.xplane.pb, 2.xplane" in many
    assert "and 247 more" in many


def test_a_logdir_with_only_stray_files_has_no_runs_and_says_why(tmp_path, shared_data):
    shutil.copyfile(_sample(shared_data), tmp_path / "host0.xplane.pb")
    svc = RooflineService(str(tmp_path))
    assert svc.runs() == []
    (note,) = svc.logdir_notes()["notes"]
    assert note.startswith("1 *.xplane.pb file outside") and "(host0.xplane.pb)" in note


@pytest.mark.parametrize(
    "layout", ["plugins/profile/r1/h.xplane.pb", "t/plugins/profile/r/h.xplane.pb"]
)
def test_a_logdir_laid_out_right_has_no_notes(tmp_path, shared_data, layout):
    (tmp_path / layout).parent.mkdir(parents=True)
    shutil.copyfile(_sample(shared_data), tmp_path / layout)
    assert RooflineService(str(tmp_path)).logdir_notes() == {"notes": []}
