"""Security properties of the HTTP API and the frontend (see SECURITY.md).

* request values never become paths: traversal, absolute paths, NUL bytes, very long values,
  URL-encoded variants and backslashes give a 4xx JSON error, and no file outside the logdir,
  the plugin's own files and the Python installation is touched while answering;
* run, host and op names with HTML/JS come back as JSON strings (or escaped), never HTML;
* every response has ``X-Content-Type-Options: nosniff``; HTML would carry a CSP;
* the frontend has no inline script, ``eval``, ``innerHTML`` or URL to another host;
* the plugin writes nothing into the logdir, whatever is asked (checked around every request
  by ``serving_support.Served`` and once over the whole module at its end).
"""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import sys
import urllib.parse
from pathlib import Path

import fuzz_support as fs
import pytest
from serving_support import BASE, Served, assert_error, tree
from tiny_tpu import CORE_EVENTS, OPS, tiny_tpu

from tb_roofline_plugin.serve import plugin as plugin_module

REPO = Path(__file__).resolve().parents[1]
RUN_HTML = "<img src=x onerror=alert(1)>"
HOST_HTML = "<svg onload=alert(2)>"
OP_HTML = "<script>alert(3)</script>"
SOURCE_HTML = "<img src=y onerror=alert(4)>.py"
CATEGORY_HTML = "<b onmouseover=alert(5)>fusion</b>"


def _html_profile() -> bytes:
    """tiny_tpu with an op named ``<script>…``, an HTML category and an HTML source file."""
    ops = {OP_HTML if k == "conv" else k: v for k, v in OPS.items()}
    ops[OP_HTML] = (CATEGORY_HTML, *ops[OP_HTML][1:])
    events = [[(OP_HTML if n == "conv" else n, b, d) for n, b, d in core] for core in CORE_EVENTS]
    space = tiny_tpu(core_events=events, ops=ops)
    for plane in space.planes:
        names = {m.name: k for k, m in plane.stat_metadata.items()}
        for meta in plane.event_metadata.values():
            if meta.name.startswith(f"%{OP_HTML}"):
                for stat in meta.stats:
                    if stat.metadata_id == names.get("source"):
                        stat.str_value = f"{SOURCE_HTML}:12"
    return space.SerializeToString()


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("security_logdir")
    demo = dict(fs.demo_profiles())
    files = {
        "train/plugins/profile/r1/host0.xplane.pb": demo["demo_v5p.xplane.pb"],
        "train/plugins/profile/r1/host1.xplane.pb": demo["demo_v5p.xplane.pb"],
        "plugins/profile/tiny/tiny.xplane.pb": demo["tiny.xplane.pb"],
        "plugins/profile/broken/h.xplane.pb": b"\x0a\x09/device:",
    }
    try:  # a run folder and a host file named with HTML, where the filesystem allows it
        html = root / "xss" / "plugins" / "profile" / RUN_HTML
        html.mkdir(parents=True)
        (html / f"{HOST_HTML}.xplane.pb").write_bytes(_html_profile())
    except OSError:
        pass
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


@pytest.fixture(scope="module")
def served(logdir):
    return Served(logdir)


@pytest.fixture(scope="module", autouse=True)
def untouched(logdir):
    """The whole module (every route, every error) leaves the logdir as it was."""
    before = tree(logdir)
    yield
    assert tree(logdir) == before


# --- request values never become paths --------------------------------------------------------

HOSTILE = [
    "../../etc/passwd",
    "../" * 30 + "etc/passwd",
    "/etc/passwd",
    "//etc/passwd",
    "train/../../../../etc/passwd",
    "train/r1/../../tiny",
    "..",
    ".",
    "./tiny",
    "tiny/",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%252e%252e%252fetc%252fpasswd",
    "..%2f..%2fetc%2fpasswd",
    "..\\..\\etc\\passwd",
    "C:\\Windows\\win.ini",
    "\\\\server\\share\\x",
    "tiny\x00.xplane.pb",
    "\x00",
    "a\nb",
    "a\rb",
    "a\tb",
    "x" * 1025,
    "x" * 100_000,
    "file:///etc/passwd",
    "gs://bucket/profile",
    "memory://x",
    "~",
    "~root/.ssh/id_rsa",
    "$HOME",
    "tiny.xplane.pb",
    "plugins/profile/tiny",
    "plugins/profile/tiny/tiny.xplane.pb",
]
PARAMS = [
    ("hosts", "run", {}),
    ("steps", "run", {"host": "tiny"}),
    ("steps", "host", {"run": "tiny"}),
    ("data", "run", {"host": "tiny"}),
    ("data", "host", {"run": "tiny"}),
    ("data", "tag", {"run": "tiny", "host": "tiny"}),
    ("data", "format", {"run": "tiny", "host": "tiny"}),
    ("data", "step", {"run": "tiny", "host": "tiny", "format": "json"}),
    ("data_csv", "host", {"run": "tiny"}),
    ("compare", "a_run", {"a_host": "tiny", "b_run": "tiny", "b_host": "tiny"}),
    ("compare", "b_host", {"a_run": "tiny", "a_host": "tiny", "b_run": "tiny"}),
    ("compare", "b_step", {"a_run": "tiny", "a_host": "tiny", "b_run": "tiny", "b_host": "tiny"}),
    ("data", "peaks", {"run": "tiny", "host": "tiny", "format": "json"}),
    ("data_csv", "peaks", {"run": "tiny", "host": "tiny"}),
    ("compare", "peaks", {"a_run": "tiny", "a_host": "tiny", "b_run": "tiny", "b_host": "tiny"}),
]


def _allowed(path: str, logdir: Path) -> bool:
    """Inside the logdir, this checkout or the Python installation, or a sys.path entry."""
    if path in sys.path or not os.path.isabs(path):
        return path in sys.path or path in ("", ".")
    real = os.path.realpath(path)
    roots = [logdir, REPO, Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    return any(
        real == os.path.realpath(r) or real.startswith(os.path.realpath(r) + os.sep) for r in roots
    )


@pytest.fixture
def touched(monkeypatch):
    """Every path opened, statted or listed while the test runs."""
    seen: list[str] = []
    real = {"open": builtins.open, "stat": os.stat, "lstat": os.lstat, "scandir": os.scandir}

    def spy(kind):
        def call(name=".", *args, **kwargs):
            if isinstance(name, (str, bytes, os.PathLike)):
                seen.append(os.fsdecode(name))
            return real[kind](name, *args, **kwargs)

        return call

    monkeypatch.setattr(builtins, "open", spy("open"))
    monkeypatch.setattr(io, "open", spy("open"))
    for kind in ("stat", "lstat", "scandir"):
        monkeypatch.setattr(os, kind, spy(kind))
    return seen


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: repr(v[:40]))
def test_request_values_never_become_paths(served, logdir, touched, value):
    for route, name, others in PARAMS:
        touched.clear()
        response, body = served.get(route, **others, **{name: value})
        side = name.split("_")[-1]  # a_run -> run: the message names the parameter's kind
        message = assert_error(response, body, {400, 404}, name, side, repr(value)[:30])
        assert "root:" not in response.get_data(as_text=True)
        assert len(message) < 2000
        paths = list(touched)  # a copy: checking them stats them too
        outside = [p for p in paths if not _allowed(p, logdir)]
        assert not outside, f"{route}?{name}={value!r} touched {outside}"
        assert not [p for p in paths if "passwd" in p or "win.ini" in p or "id_rsa" in p]


@pytest.mark.parametrize(
    ("value", "status", "words"),
    [
        ("x" * 1024, 404, "unknown run"),
        ("x" * 1025, 400, "longer than 1024 characters"),
        ("a\x00b", 400, "control characters"),
        ("a\x1fb", 400, "control characters"),
        ("", 400, "missing query parameter"),
    ],
)
def test_query_value_limits(served, value, status, words):
    assert words in assert_error(*served.get("hosts", run=value), {status}, "run")


@pytest.mark.parametrize(
    "name",
    [
        "../plugin.py",
        "..%2fplugin.py",
        "%2e%2e%2fplugin.py",
        "%2e%2e/%2e%2e/setup.py",
        "..%5cplugin.py",
        "..\\plugin.py",
        "/etc/passwd",
        "%2fetc%2fpasswd",
        "//etc/passwd",
        ".hidden.js",
        "index.js%00.png",
        "index.js/",
        "index.js/.",
        "x/../index.js",
        "plotly.min.js/../../setup.py",
        "../../tb_roofline_plugin/plugin.py",
        "../../tb_roofline_plugin/serve/plugin.py",
        "a" * 300 + ".js",
        "index.py",
        "http_api.md",
        "%00",
        "",
    ],
)
def test_static_files_only_by_plain_name(served, logdir, touched, name):
    response = served.client.get(f"{BASE}/static/{name}")
    assert response.status_code == 404, name
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.mimetype in ("application/json", "text/plain")
    paths = list(touched)  # a copy: checking them stats them too
    assert not [p for p in paths if not _allowed(p, logdir)]
    assert not [p for p in paths if p.endswith(("setup.py", "plugin.py", "passwd"))]


# --- names with HTML come back as JSON strings ------------------------------------------------


def _html_run(served) -> str:
    runs = served.get("runs")[1]
    found = [r for r in runs if RUN_HTML in r]
    if not found:
        pytest.skip("this filesystem refuses the HTML file names")
    return found[0]


def test_html_run_and_host_names_are_json_strings(served):
    run = _html_run(served)
    assert run == f"xss/{RUN_HTML}"
    response, hosts = served.get("hosts", run=run)
    assert response.mimetype == "application/json" and hosts == [HOST_HTML]
    response, steps = served.get("steps", run=run, host=HOST_HTML)
    assert response.status_code == 200
    for fmt in ("datatable", "json"):
        response, _ = served.data(run, HOST_HTML, format=fmt)
        assert response.status_code == 200 and response.mimetype == "application/json"
    response, body = served.data(run, HOST_HTML, format="json")
    assert any(RUN_HTML in s and HOST_HTML in s for s in body["sources"])


def test_html_op_names_are_json_strings_and_source_cells_are_escaped(served):
    run = _html_run(served)
    response, table = served.data(run, HOST_HTML)
    cols = [c["id"] for c in table[0]["cols"]]
    rows = [dict(zip(cols, (c["v"] for c in row["c"]))) for row in table[0]["rows"]]
    ops = [r for r in rows if r["operation"] == OP_HTML]
    assert ops and all(r["category"] == CATEGORY_HTML for r in ops)
    for r in ops:  # XProf's source cell is an HTML fragment: the profile's text is escaped
        cell = r["source_info"]
        assert "&lt;img src=y onerror=alert(4)&gt;.py:12" in cell
        assert "<img" not in cell and "<script" not in cell
    response, body = served.data(run, HOST_HTML, format="json")
    names = {r["hlo_name"] for r in body["database"]["roofline_model_record"]}
    assert OP_HTML in names
    assert OP_HTML in {op["hlo_name"] for op in body["ops"]}
    raw = response.get_data(as_text=True)
    assert json.loads(raw) == body  # the markup is only ever inside JSON strings
    response, body = served.get("compare", a_run=run, a_host=HOST_HTML, b_run="tiny", b_host="tiny")
    assert response.mimetype == "application/json"
    assert OP_HTML in {op["operation"] for op in body["ops"]}


def test_csv_of_html_names_is_csv_with_a_safe_file_name(served):
    run = _html_run(served)
    response, _ = served.get("data_csv", run=run, host=HOST_HTML)
    assert response.status_code == 200 and response.mimetype == "text/csv"
    disposition = response.headers["Content-Disposition"]
    match = re.fullmatch(r'attachment; filename="([A-Za-z0-9_.-]+)"', disposition)
    assert match, disposition
    assert OP_HTML in response.get_data(as_text=True)


@pytest.mark.parametrize("value", [OP_HTML, RUN_HTML, "</script><script>alert(1)</script>"])
def test_html_in_error_messages_stays_in_json(served, value):
    for route, params in (
        ("hosts", {"run": value}),
        ("data", {"run": "tiny", "host": value}),
        ("data", {"run": "tiny", "host": "tiny", "tag": value}),
        ("data", {"run": "tiny", "host": "tiny", "format": value}),
        ("compare", {"a_run": "tiny", "a_host": "tiny", "b_run": value, "b_host": "x"}),
        ("data_csv", {"run": value, "host": "x"}),
    ):
        response, body = served.get(route, **params)
        assert response.mimetype == "application/json", route
        assert value in body["error"]


# --- headers --------------------------------------------------------------------------------------


def _frontend_files() -> list[Path]:
    folder = Path(plugin_module.frontend_dir())
    return sorted(p for p in folder.iterdir() if p.suffix in (".js", ".css", ".html"))


def test_every_response_has_nosniff_and_html_has_a_csp(served):
    urls = [f"{BASE}/static/{p.name}" for p in _frontend_files()]
    urls += [f"{BASE}/static/plotly.min.js", f"{BASE}/nope", "/data/plugins_listing", "/nope"]
    urls += [f"{BASE}/runs", f"{BASE}/hosts", f"{BASE}/data?run=broken&host=h"]
    urls += [f"{BASE}/data?run=tiny&host=tiny&format=json&step=7"]
    for url in urls:
        response = served.client.get(url)
        assert response.headers.get("X-Content-Type-Options") == "nosniff", url
        if response.mimetype == "text/html":
            assert "Content-Security-Policy" in response.headers, url
    assert served.responses, "no request went through Served.get"
    for response in served.responses:  # everything this module asked before
        assert response.headers.get("X-Content-Type-Options") == "nosniff"
        assert response.mimetype != "text/html"


def test_frontend_files_are_served_with_their_types(served):
    types = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
    for path in _frontend_files():
        response = served.client.get(f"{BASE}/static/{path.name}")
        assert response.status_code == 200 and response.mimetype == types[path.suffix]


# --- the frontend ---------------------------------------------------------------------------------

FORBIDDEN = [
    (r"\beval\s*\(", "eval("),
    (r"\bnew\s+Function\s*\(", "new Function("),
    (r"\bset(?:Timeout|Interval)\s*\(\s*['\"`]", "setTimeout/setInterval with a string"),
    (r"\.innerHTML\b", "innerHTML"),
    (r"\.outerHTML\b", "outerHTML"),
    (r"\binsertAdjacentHTML\b", "insertAdjacentHTML"),
    (r"\bdocument\.write(?:ln)?\s*\(", "document.write"),
    (r"\bcreateContextualFragment\b", "createContextualFragment"),
    (r"\bsrcdoc\b", "srcdoc"),
    (r"javascript:", "javascript: URL"),
    (r"<script(?![^>]*\bsrc\b)", "inline <script>"),
    (r"<[a-z][^>\n]*\son[a-z]+\s*=", "inline event handler attribute"),
    # The SVG namespace is a name (createElementNS), never fetched.
    (
        r"\bhttps?://(?!(?:127\.0\.0\.1|localhost)\b)(?!www\.w3\.org/2000/svg['\"])[^\s'\"`)]+",
        "URL to another host",
    ),
    (r"\bimport\s*\(\s*['\"`]https?:", "import from another host"),
]


def test_frontend_has_no_inline_script_eval_innerhtml_or_foreign_urls():
    hits = []
    for path in _frontend_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for pattern, what in FORBIDDEN:
                if re.search(pattern, line):
                    hits.append(f"{path.name}:{number}: {what}: {line.strip()[:120]}")
    assert not hits, "frontend hits:\n" + "\n".join(hits)


def test_plotly_is_loaded_from_the_plugin_not_a_cdn():
    texts = {p.name: p.read_text(encoding="utf-8") for p in _frontend_files()}
    assert any("plotly.min.js" in t for t in texts.values())
    assert not any(re.search(r"cdn\.|unpkg|jsdelivr|cdnjs", t) for t in texts.values())


# --- the same, percent-encoded by hand -------------------------------------------------------


def test_everything_again_through_one_url_encoder(served):
    """The same hostile values, percent-encoded by hand (as a browser would send them)."""
    for value in HOSTILE[:16]:
        query = "run=" + urllib.parse.quote(value, safe="") + "&host=tiny"
        response = served.client.get(f"{BASE}/data", query_string=query)
        fs.check_response(response, query)
        assert response.status_code in (400, 404)


@pytest.mark.parametrize("route", ["data", "compare"])
def test_a_step_of_unicode_digits_is_a_400(served, route):
    if route == "data":
        response, body = served.data("tiny", "tiny", format="json", step="²")
    else:
        response, body = served.get(
            "compare", a_run="tiny", a_host="tiny", a_step="⑵", b_run="tiny", b_host="tiny"
        )
    assert_error(response, body, {400}, "step")
