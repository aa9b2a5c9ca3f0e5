"""Every route through TensorBoard's real routing stack (TensorBoardWSGI + werkzeug Client)."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import threading

import plotly
import pytest
from conftest import run_cli
from tensorboard.backend import application  # noqa: E402  (after our imports: warnings)
from tensorboard.plugins import base_plugin
from tiny_tpu import tiny_tpu
from werkzeug import test as wtest
from werkzeug import wrappers

from tb_roofline_plugin.demo import TpuSpec, tpu_xspace
from tb_roofline_plugin.serve import plugin as plugin_module
from tb_roofline_plugin.serve import static_files
from tb_roofline_plugin.serve.plugin import RooflinePlugin, plotly_js_path
from tb_roofline_plugin.serve.service import RooflineService

BASE = "/data/plugin/roofline"


def _write(path, space):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(space.SerializeToString())
    return path


@pytest.fixture
def logdir(tmp_path):
    _write(tmp_path / "train/plugins/profile/r1/host0.xplane.pb", tpu_xspace(TpuSpec(host="host0")))
    _write(
        tmp_path / "train/plugins/profile/r1/host1.xplane.pb",
        tpu_xspace(TpuSpec(host="host1", seed=1)),
    )
    _write(tmp_path / "plugins/profile/tiny/tiny.xplane.pb", tiny_tpu())
    bad = tmp_path / "plugins/profile/broken/h.xplane.pb"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\x0a\x09/device:")
    return tmp_path


def _client(logdir, **flags):
    ns = argparse.Namespace(
        logdir=str(logdir), roofline_cache_mb=None, roofline_max_file_mb=None, **flags
    )
    context = base_plugin.TBContext(logdir=str(logdir), flags=ns)
    plugin = RooflinePlugin(context)
    app = application.TensorBoardWSGI([plugin])
    return wtest.Client(app, wrappers.Response), plugin


def _get(client, route, **params):
    response = client.get(f"{BASE}/{route}", query_string=params)
    return response, (
        json.loads(response.get_data()) if response.mimetype == "application/json" else None
    )


def test_runs_and_hosts(logdir):
    client, _ = _client(logdir)
    response, runs = _get(client, "runs")
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert runs == ["broken", "tiny", "train/r1"]
    assert _get(client, "hosts", run="train/r1")[1] == ["ALL_HOSTS", "host0", "host1"]
    assert _get(client, "hosts", run="tiny")[1] == ["tiny"]


def test_steps_route(logdir):
    client, _ = _client(logdir)
    response, body = _get(client, "steps", run="train/r1", host="host0")
    assert response.status_code == 200
    assert body["has_step_markers"] is True
    assert [s["step_num"] for s in body["steps"]] == [0, 1, 2, 3, 4]
    assert [s["complete"] for s in body["steps"]] == [False, True, True, True, True]
    assert body["steps"][1]["duration_us"] > 0


def test_data_route_equals_the_cli_export(logdir):
    client, _ = _client(logdir)
    response, body = _get(client, "data", run="tiny", host="tiny", tag="roofline_model")
    assert response.status_code == 200
    cli = json.loads(
        run_cli("export", logdir / "plugins/profile/tiny/tiny.xplane.pb", check=True).stdout
    )
    assert body == cli
    assert len(body[0]["cols"]) == 37


def test_all_hosts_equals_the_cli_on_the_run_folder(logdir):
    client, _ = _client(logdir)
    _, body = _get(client, "data", run="train/r1", host="ALL_HOSTS", tag="roofline_model")
    cli = json.loads(run_cli("export", logdir / "train/plugins/profile/r1", check=True).stdout)
    assert body == cli


def test_json_format(logdir):
    client, _ = _client(logdir)
    _, body = _get(client, "data", run="tiny", host="tiny", tag="roofline_model", format="json")
    assert body["format"] == "tb-roofline/1"
    assert body["device"]["device_type"] == "TPU test"
    assert body["database"]["roofline_model_record"][0]["hlo_name"] == "Program"


def test_a_step_without_its_step_list_is_the_same_answer_less_the_list(logdir):
    """The tab asks for a step with step_list=0: the list (megabytes for 50,000 steps) is
    in the whole profile's answer already; every other key is the same."""
    client, _ = _client(logdir)
    query = {"run": "train/r1", "host": "host0", "format": "json", "step": "2"}
    _, full = _get(client, "data", **query)
    response, light = _get(client, "data", **query, step_list="0")
    assert response.status_code == 200 and "steps" not in light
    assert len(full["steps"]) > 2 and {**light, "steps": full["steps"]} == full
    assert _get(client, "data", **query, step_list="1")[1] == full
    for value, fmt in (("yes", "json"), ("0", "datatable")):
        asked = {**query, "step": "total", "format": fmt, "step_list": value}
        bad, body = _get(client, "data", **asked)
        assert bad.status_code == 400 and "step_list" in body["error"]


def test_csv_download(logdir):
    client, _ = _client(logdir)
    response = client.get(
        f"{BASE}/data_csv",
        query_string={"run": "train/r1", "host": "host-a-1", "tag": "roofline_model"},
    )
    assert response.status_code == 404
    response = client.get(
        f"{BASE}/data_csv",
        query_string={"run": "train/r1", "host": "host0", "tag": "roofline_model"},
    )
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert (
        response.headers["Content-Disposition"]
        == 'attachment; filename="roofline_model_train_r1_host0.csv"'
    )
    lines = response.get_data(as_text=True).splitlines()
    assert lines[0].startswith('"Step","Rank","Category","Operation"')
    assert lines[1].startswith('"Total","0.0","Program","Program"')


@pytest.mark.parametrize(
    ("route", "params", "status", "message"),
    [
        ("hosts", {"run": "nope"}, 404, "unknown run 'nope'"),
        ("hosts", {"run": "../../etc"}, 404, "unknown run '../../etc'"),
        ("hosts", {"run": "/etc/passwd"}, 404, "unknown run '/etc/passwd'"),
        ("hosts", {}, 400, "missing query parameter 'run'"),
        ("hosts", {"run": "a\x00b"}, 400, "control characters"),
        ("hosts", {"run": "x" * 5000}, 400, "longer than 1024"),
        ("steps", {"run": "tiny", "host": "../tiny"}, 404, "unknown host '../tiny'"),
        ("data", {"run": "tiny", "host": "tiny", "tag": "overview_page"}, 404, "unknown tag"),
        ("data", {"run": "tiny", "host": "tiny", "format": "xml"}, 400, "unknown format 'xml'"),
    ],
)
def test_bad_requests_get_json_4xx(logdir, route, params, status, message):
    client, _ = _client(logdir)
    response, body = _get(client, route, **params)
    assert response.status_code == status
    assert response.mimetype == "application/json"
    assert message in body["error"]
    assert "Traceback" not in response.get_data(as_text=True)


def test_corrupt_profile_is_an_error_for_that_run_only(logdir):
    client, _ = _client(logdir)
    response, body = _get(client, "data", run="broken", host="h", tag="roofline_model")
    assert response.status_code == 422
    # The file named under the logdir, not by the server's absolute path.
    assert body["error"].startswith("plugins/profile/broken/h.xplane.pb: ")
    assert "not a valid XSpace profile" in body["error"]
    assert _get(client, "data", run="tiny", host="tiny", tag="roofline_model")[0].status_code == 200


def test_static_files_and_traversal(logdir):
    client, _ = _client(logdir)
    response = client.get(f"{BASE}/static/index.js")
    assert response.status_code == 200 and response.mimetype == "text/javascript"
    assert b"export async function render" in response.get_data()
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert client.get(f"{BASE}/static/style.css").mimetype == "text/css"
    plotly = client.get(f"{BASE}/static/plotly.min.js")
    assert plotly.status_code == 200 and len(plotly.get_data()) > 1_000_000
    for bad in (
        "../plugin.py",
        "%2e%2e/setup.py",
        "..%5cplugin.py",
        ".hidden.js",
        "a%00.js",
        "nope.js",
        "x.py",
    ):
        assert client.get(f"{BASE}/static/{bad}").status_code == 404, bad


def test_plugin_entry_and_listing(logdir):
    client, plugin = _client(logdir)
    listing = json.loads(client.get("/data/plugins_listing").get_data())
    entry = listing["roofline"]
    assert entry["enabled"] is True
    assert entry["tab_name"] in ("Profile", "Roofline")
    # The module's URL names the plotly version: the tab asks for plotly by a versioned URL.
    own = static_files.folder_version(plugin_module.frontend_dir())
    assert entry["loading_mechanism"]["module_path"].endswith(
        f"/data/plugin/roofline/static/index.js?plotly={plotly.__version__}&v={own}"
    )
    assert plugin.is_active()


def test_inactive_without_profiles(tmp_path):
    client, plugin = _client(tmp_path)
    assert not plugin.is_active()
    assert (
        json.loads(client.get("/data/plugins_listing").get_data())["roofline"]["enabled"] is False
    )
    assert _get(client, "runs")[1] == []


def test_twenty_parallel_requests_convert_once(logdir):
    client, plugin = _client(logdir)
    barrier = threading.Barrier(20)
    statuses = []

    def fetch():
        barrier.wait()
        local = wtest.Client(application.TensorBoardWSGI([plugin]), wrappers.Response)
        statuses.append(
            _get(local, "data", run="train/r1", host="host0", tag="roofline_model")[0].status_code
        )

    threads = [threading.Thread(target=fetch) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert statuses == [200] * 20
    assert plugin.service.cache.computations == 1


def test_cached_results_serve_other_formats_without_parsing_again(logdir):
    client, plugin = _client(logdir)
    for fmt in ("datatable", "json", "datatable"):
        _get(client, "data", run="tiny", host="tiny", tag="roofline_model", format=fmt)
    _get(client, "steps", run="tiny", host="tiny")
    client.get(f"{BASE}/data_csv", query_string={"run": "tiny", "host": "tiny"})
    assert plugin.service.cache.computations == 1


def test_a_changed_file_is_converted_again(logdir):
    client, plugin = _client(logdir)
    path = logdir / "plugins/profile/tiny/tiny.xplane.pb"
    first = _get(client, "data", run="tiny", host="tiny", tag="roofline_model")[1]
    _write(path, tiny_tpu(program_id=99))
    os.utime(path, ns=(1, 1))
    second = _get(client, "data", run="tiny", host="tiny", tag="roofline_model")[1]
    assert plugin.service.cache.computations == 2
    assert first[0]["rows"][1]["c"][35]["v"] == "7" and second[0]["rows"][1]["c"][35]["v"] == "99"


def test_cache_is_bounded(logdir):
    service = RooflineService(str(logdir), cache_mb=0.001)
    service.data("tiny", "tiny", None, None)
    service.data("tiny", "tiny", None, None)
    assert service.cache.computations == 2 and len(service.cache) == 0


def _tree(root):
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    )


def test_serving_every_route_leaves_the_logdir_untouched(logdir):
    before = _tree(logdir)
    client, plugin = _client(logdir)
    plugin.is_active()
    for run in _get(client, "runs")[1]:
        for host in _get(client, "hosts", run=run)[1]:
            _get(client, "steps", run=run, host=host)
            for fmt in ("datatable", "json"):
                _get(client, "data", run=run, host=host, tag="roofline_model", format=fmt)
            client.get(f"{BASE}/data_csv", query_string={"run": run, "host": host})
    client.get(f"{BASE}/static/index.js")
    client.get("/data/plugins_listing")
    assert _tree(logdir) == before


def test_step_selection_and_compare_routes(logdir):
    client, plugin = _client(logdir)
    run = "train/r1"
    response, body = _get(
        client, "data", run=run, host="host0", tag="roofline_model", format="json", step="2"
    )
    assert response.status_code == 200 and body["step"] == "2"
    assert {r["record_type"] for r in body["database"]["roofline_model_record"]} == {"PER_STEP"}
    response, body = _get(client, "data", run=run, host="host0", format="json", step="average")
    assert body["step"] == "average"
    assert (
        _get(client, "data", run=run, host="host0", format="json", step="99")[0].status_code == 404
    )
    assert (
        _get(client, "data", run=run, host="host0", format="json", step="x")[0].status_code == 400
    )
    assert _get(client, "data", run=run, host="host0", step="2")[0].status_code == 400
    response, body = _get(
        client,
        "compare",
        a_run=run,
        a_host="host0",
        a_step="1",
        b_run=run,
        b_host="host1",
        b_step="average",
    )
    assert response.status_code == 200
    assert body["a"] == "train/r1 host0 step 1" and body["b"] == "train/r1 host1 step average"
    assert body["ops"] and "time_us_delta" in body["ops"][0]
    response, body = _get(client, "compare", a_run=run, a_host="host0", b_run=run, b_host="host0")
    assert all(op["time_us_delta"] == 0 for op in body["ops"])
    response, body = _get(
        client, "compare", a_run=run, a_host="host0", a_step="77", b_run="tiny", b_host="tiny"
    )
    assert response.status_code == 404 and body["error"].startswith("a: no step 77")
    assert _get(client, "compare", a_run=run)[0].status_code == 400
    assert plugin.service.cache.computations == 2  # host0 and host1, each converted once


def test_all_hosts_keep_the_per_dtype_peaks(logdir):
    client, _ = _client(logdir)
    _, one = _get(client, "data", run="train/r1", host="host0", format="json")
    _, both = _get(client, "data", run="train/r1", host="ALL_HOSTS", format="json")
    assert one["device"]["dtype_peak_gflops"]["bf16"] > 0
    assert both["device"]["dtype_peak_gflops"] == one["device"]["dtype_peak_gflops"]


def test_plotly_is_kept_a_year_under_its_versioned_url_and_revalidates_with_304(logdir):
    client, _ = _client(logdir)
    url = f"{BASE}/static/plotly.min.js?v={plotly.__version__}"
    with open(plotly_js_path(), "rb") as f:
        original = f.read()
    response = client.get(url, headers={"Accept-Encoding": "gzip"})
    assert response.status_code == 200 and response.mimetype == "text/javascript"
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert response.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(response.get_data()) == original
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Vary"] == "Accept-Encoding"
    etag, modified = response.headers["ETag"], response.headers["Last-Modified"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 10
    # A client without gzip gets the same bytes, plain.
    plain = client.get(url)
    assert plain.get_data() == original and "Content-Encoding" not in plain.headers
    assert plain.headers["ETag"] == etag
    # Revalidation: 304, no body, the same validators and caching.
    for headers in ({"If-None-Match": etag}, {"If-Modified-Since": modified}):
        again = client.get(url, headers=headers)
        assert again.status_code == 304 and again.get_data() == b"", headers
        assert again.headers["ETag"] == etag
        assert again.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert again.headers["X-Content-Type-Options"] == "nosniff"
    assert client.get(url, headers={"If-None-Match": '"other"'}).status_code == 200
    # Any other URL of it (no version, another version) is revalidated on every use.
    for other in (f"{BASE}/static/plotly.min.js", f"{BASE}/static/plotly.min.js?v=0.0.1"):
        response = client.get(other)
        assert response.status_code == 200 and response.headers["Cache-Control"] == "no-cache"
        assert response.headers["ETag"] == etag


def test_our_modules_under_the_frontends_version_are_kept_a_year_their_imports_versioned(
    logdir, tmp_path, monkeypatch
):
    """Under ``?v=<the frontend's version>`` (the URL TensorBoard is given) a module is
    immutable and imports its neighbours under the same version, so a warm page load asks the
    server for none of them; an edit is a new version, and the old URL is revalidated."""
    client, _ = _client(logdir)
    own = static_files.folder_version(plugin_module.frontend_dir())
    plain = client.get(f"{BASE}/static/app.js").get_data().decode()
    response = client.get(f"{BASE}/static/app.js?v={own}")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    text = response.get_data().decode()
    imports = re.findall(r"from '(\./[a-z_]+\.js[^']*)'", text)
    assert "./api.js?v=" + own in imports and len(imports) == plain.count(" from './")
    assert all(spec.endswith(f".js?v={own}") for spec in imports)
    assert text.replace(f"?v={own}", "") == plain  # nothing else changed
    assert response.headers["ETag"] != client.get(f"{BASE}/static/app.js").headers["ETag"]
    index = client.get(f"{BASE}/static/index.js?v={own}").get_data().decode()
    assert f"import('./app.js?v={own}')" in index and f"import('./early.js?v={own}')" in index
    css = client.get(f"{BASE}/static/style.css?v={own}")
    assert css.headers["Cache-Control"] == "public, max-age=31536000, immutable"

    frontend = tmp_path / "frontend"
    frontend.mkdir()
    module = frontend / "index.js"
    module.write_text("import {a} from './a.js';\nexport async function render() {}\n")
    (frontend / "a.js").write_text("export const a = 1;\n")
    monkeypatch.setattr(plugin_module, "frontend_dir", lambda: str(frontend))
    first = static_files.folder_version(str(frontend))
    assert client.get(f"{BASE}/static/index.js?v={first}").get_data() == (
        f"import {{a}} from './a.js?v={first}';\nexport async function render() {{}}\n".encode()
    )
    os.utime(frontend / "a.js", ns=(1_700_000_001_000_000_000, 1_700_000_001_000_000_000))
    edited = static_files.folder_version(str(frontend))
    assert edited != first
    stale = client.get(f"{BASE}/static/index.js?v={first}")
    assert stale.headers["Cache-Control"] == "no-cache"
    assert stale.get_data() == module.read_bytes()  # its imports plain, revalidated too
    listing = json.loads(client.get("/data/plugins_listing").get_data())
    assert listing["roofline"]["loading_mechanism"]["module_path"].endswith(f"&v={edited}")


def test_frontend_modules_revalidate_with_an_etag_of_the_version_and_file(
    logdir, tmp_path, monkeypatch
):
    """Our modules: `no-cache` and an ETag, so a page load costs a 304 per module; an edit
    (a new modification time) is a new ETag, so the browser gets the new file."""
    client, _ = _client(logdir)
    response = client.get(f"{BASE}/static/index.js")
    assert response.headers["Cache-Control"] == "no-cache" and "max-age" not in str(
        response.headers
    )
    etag = response.headers["ETag"]
    again = client.get(f"{BASE}/static/index.js", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.get_data() == b""
    assert again.headers["Cache-Control"] == "no-cache"
    assert client.get(f"{BASE}/static/style.css").headers["ETag"] != etag

    frontend = tmp_path / "frontend"
    frontend.mkdir()
    module = frontend / "index.js"
    module.write_text("export async function render() {}\n")
    os.utime(module, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    monkeypatch.setattr(plugin_module, "frontend_dir", lambda: str(frontend))
    first = client.get(f"{BASE}/static/index.js")
    assert first.get_data() == module.read_bytes()
    module.write_text("export async function render() { return 1; }\n")
    os.utime(module, ns=(1_700_000_001_000_000_000, 1_700_000_001_000_000_000))
    edited = client.get(f"{BASE}/static/index.js", headers={"If-None-Match": first.headers["ETag"]})
    assert edited.status_code == 200 and edited.get_data() == module.read_bytes()
    assert edited.headers["ETag"] != first.headers["ETag"]
    # A missing file is still the JSON 404, with nosniff.
    missing = client.get(f"{BASE}/static/gone.js", headers={"If-None-Match": first.headers["ETag"]})
    assert missing.status_code == 404 and json.loads(missing.get_data())["error"]


def test_index_preloads_every_module_of_the_frontend():
    """index.js fetches the whole module graph at once (modulepreload): its list must name
    every module but itself, or a new module is fetched one level of imports late."""
    folder = plugin_module.frontend_dir()
    with open(os.path.join(folder, "index.js"), encoding="utf-8") as f:
        text = f.read()
    listed = re.search(r"export const MODULES = \[(.*?)\];", text, re.S)
    assert listed, "index.js has no MODULES list"
    names = re.findall(r"'([A-Za-z0-9_]+\.js)'", listed.group(1))
    modules = {n for n in os.listdir(folder) if n.endswith(".js") and n != "index.js"}
    assert sorted(names) == names and set(names) == modules
