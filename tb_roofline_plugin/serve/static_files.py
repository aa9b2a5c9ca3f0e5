"""The frontend's files as HTTP answers: validators, caching and gzip done once per file version.

Two kinds of file, two caching rules:

- ``plotly.min.js`` (4.8 MB) changes only with the installed ``plotly`` package. Asked for
  under its versioned URL (``plotly.min.js?v=<plotly version>``, what the tab uses) it may be
  kept for a year and never revalidated (``immutable``), so the browser also keeps its compiled
  code; under any other URL it is revalidated like our modules.
- Our modules change with the plugin (and, in a checkout, with every edit). Asked for under
  the frontend's current version (``index.js?v=<folder_version>``, the URL TensorBoard is
  given), a module is immutable too, with its imports of its neighbours (``'./api.js'``)
  written with the same ``?v=``: a warm page load asks for none of them again (revalidating
  each, a 304 apiece, took ~0.3 s of a warm load through TensorBoard's server). Under any other
  URL: ``no-cache`` plus an ``ETag`` of (plugin version, modification time, size), revalidated
  with a cheap ``304 Not Modified``.

Each file is read and gzipped once per (path, modification time, size) and kept in memory
(the frontend is a few dozen files), so a request costs no compression.
"""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import hashlib
import os
import re
import threading
import wsgiref.handlers

from tensorboard.backend import http_util
from werkzeug import http as werkzeug_http
from werkzeug import wrappers

from .. import __version__

PLOTLY_NAME = "plotly.min.js"
YEAR_S = 365 * 24 * 3600
IMMUTABLE = f"public, max-age={YEAR_S}, immutable"
REVALIDATE = "no-cache"


@dataclasses.dataclass(frozen=True)
class StaticFile:
    """One file version: its gzipped bytes and its validators."""

    content_type: str
    gzipped: bytes
    etag: str  # without quotes
    mtime: float


_lock = threading.Lock()
# By (path, versioned): a file's plain answer and its answer under the frontend's current
# version, each replaced when the file or the version changes (two per file at most).
_files: dict[tuple[str, bool], tuple[tuple[int, int, str], StaticFile]] = {}
# A module's import of a neighbour: './name.js' in quotes (our modules import no others).
_NEIGHBOUR = re.compile(rb"""(['"])\./([A-Za-z0-9_]+\.js)\1""")


def folder_version(folder: str) -> str:
    """The version of the files in ``folder``: a digest of the plugin's version and each
    file's name, modification time and size (an edit is a new version)."""
    digest = hashlib.sha256(__version__.encode())
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_file():
                stat = entry.stat()
                digest.update(f"{entry.name}:{stat.st_mtime_ns}:{stat.st_size};".encode())
    return digest.hexdigest()[:16]


def load(path: str, content_type: str, version: str, imports_version: str = "") -> StaticFile:
    """The file at ``path`` (read and gzipped once per modification time and size);
    ``imports_version``: a module's imports of its neighbours written with ``?v=`` it."""
    stat = os.stat(path)
    key = (stat.st_mtime_ns, stat.st_size, imports_version)
    with _lock:
        hit = _files.get((path, bool(imports_version)))
    if hit is not None and hit[0] == key:
        return hit[1]
    with open(path, "rb") as f:
        content = f.read()
    if imports_version and path.endswith(".js"):
        suffix = f"?v={imports_version}".encode()
        content = _NEIGHBOUR.sub(lambda m: m[1] + b"./" + m[2] + suffix + m[1], content)
    tag = f"{version}:{key[0]}:{key[1]}:{path}:{imports_version}"
    tag = hashlib.sha256(tag.encode()).hexdigest()[:24]
    found = StaticFile(
        content_type=content_type,
        gzipped=gzip.compress(content, compresslevel=6, mtime=0),
        etag=tag,
        mtime=stat.st_mtime,
    )
    with _lock:
        _files[(path, bool(imports_version))] = (key, found)
    return found


def plotly_version() -> str | None:
    """The installed ``plotly`` package's version (what the versioned URL names)."""
    try:
        import plotly
    except ImportError:
        return None
    return getattr(plotly, "__version__", None)


class _NotModified(wrappers.Response):
    """A 304 that keeps its Content-Type: werkzeug drops it as an entity header, and
    TensorBoard's security validator then logs "Content-Type is required on a Response" for
    every revalidated file."""

    def get_wsgi_headers(self, environ):
        headers = super().get_wsgi_headers(environ)
        if "Content-Type" not in headers and "Content-Type" in self.headers:
            headers["Content-Type"] = self.headers["Content-Type"]
        return headers


def respond(
    request,
    path: str,
    content_type: str,
    *,
    immutable_version: str | None = None,
    modules_version: str | None = None,
):
    """The file as an answer: 304 when the browser's copy is current, else 200 (gzip).

    ``immutable_version``: the version the file's URL must carry in ``v`` for the answer to be
    cacheable for a year (plotly.min.js); without it, or with another ``v``, ``no-cache``.
    ``modules_version``: the same for one of our files, whose imports then carry it too.
    """
    version = immutable_version or __version__
    asked = request.args.get("v")
    ours = modules_version is not None and asked == modules_version
    static = load(path, content_type, version, (modules_version or "") if ours else "")
    immutable = ours or (immutable_version is not None and asked == immutable_version)
    headers = [
        ("ETag", f'"{static.etag}"'),
        ("Last-Modified", wsgiref.handlers.format_date_time(static.mtime)),
        ("Vary", "Accept-Encoding"),
    ]
    cache_control = IMMUTABLE if immutable else REVALIDATE
    modified = datetime.datetime.fromtimestamp(static.mtime, tz=datetime.timezone.utc)
    if not werkzeug_http.is_resource_modified(
        request.environ, etag=static.etag, last_modified=modified
    ):
        response = _NotModified(status=304)
        response.headers["Content-Type"] = static.content_type
        for name, value in headers:
            response.headers[name] = value
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Cache-Control"] = cache_control
        return response
    response = http_util.Respond(
        request,
        static.gzipped,
        content_type,
        expires=YEAR_S if immutable else 0,
        content_encoding="gzip",
        headers=headers,
    )
    response.headers["Cache-Control"] = cache_control  # one header, replacing Respond's
    if not immutable:
        response.headers["Expires"] = "0"
    return response
