"""The TensorBoard plugin: thin HTTP handlers over ``RooflineService``.

Every response goes through TensorBoard's ``http_util.Respond`` (CSP, nosniff,
gzip); errors are JSON ``{"error": ...}`` with a 4xx status, never a traceback.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import time
import urllib.parse

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from ..errors import RooflineError
from ..metadata import DEFAULT_CACHE_MB, DEFAULT_MAX_FILE_MB, PLUGIN_NAME
from ..xspace.discovery import has_profiles
from . import static_files
from .calibrator import Calibrator
from .host_check import HostCheck, allowed_hosts_flag
from .service import Forbidden, RooflineService

RUNS_ROUTE = "/runs"
HOSTS_ROUTE = "/hosts"
STEPS_ROUTE = "/steps"
DATA_ROUTE = "/data"
DATA_CSV_ROUTE = "/data_csv"
COMPARE_ROUTE = "/compare"
PEAKS_ROUTE = "/peaks"
CALIBRATE_ROUTE = "/calibrate"
PROGRESS_ROUTE = "/progress"
LOGDIR_NOTES_ROUTE = "/logdir_notes"
# A header only same-origin scripts can send (a cross-origin one needs a CORS preflight that
# TensorBoard never grants), so another web page cannot start a measurement.
CALIBRATE_HEADER = "X-Roofline-Calibrate"
STATIC_ROUTE = "/static/*"
ES_MODULE_PATH = "/static/index.js"
ACTIVE_TTL_S = 30.0

_FRONTEND_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,100}$")


def frontend_dir() -> str:
    """The frontend files: inside the installed package, or ``frontend/`` of a checkout."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package
    for candidate in (os.path.join(here, "frontend"), os.path.join(here, os.pardir, "frontend")):
        if os.path.isfile(os.path.join(candidate, "index.js")):
            return os.path.normpath(candidate)
    return os.path.join(here, "frontend")


def plotly_js_path() -> str | None:
    """plotly.min.js as shipped inside the installed ``plotly`` package (served, never fetched)."""
    try:
        import plotly
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")
    return path if os.path.isfile(path) else None


def _route(handler):
    """werkzeug's ``Request.application`` on a method (its stub types it for functions),
    answering only requests whose ``Host`` the server was started for (``host_check``)."""

    @functools.wraps(handler)
    def checked(self: RooflinePlugin, request):
        state_changing = request.method not in ("GET", "HEAD", "OPTIONS")
        refusal = self._hosts.refusal(request.headers, state_changing)
        if refusal is not None:
            return self._error(request, Forbidden(refusal))
        return handler(self, request)

    return wrappers.Request.application(checked)  # type: ignore[arg-type]


def xprof_installed() -> bool:
    """True when XProf's ``profile`` plugin is installed (then our tab says "Roofline")."""
    try:
        points = importlib.metadata.entry_points()
        group = (
            points.select(group="tensorboard_plugins")
            if hasattr(points, "select")
            else points.get("tensorboard_plugins", [])  # type: ignore[arg-type]  # Python 3.9
        )
        return any(ep.name == "profile" for ep in group)
    except Exception:  # a broken distribution must not break our tab
        return False


def _flag(context: base_plugin.TBContext, name: str, default):
    value = getattr(context.flags, name, None) if context.flags is not None else None
    return default if value is None else value


def _logdir(context: base_plugin.TBContext) -> str:
    if context.logdir:
        return context.logdir
    spec = getattr(context.flags, "logdir_spec", "") if context.flags is not None else ""
    first = spec.split(",")[0] if spec else ""
    return first.split(":", 1)[1] if ":" in first and "://" not in first else first


class RooflinePlugin(base_plugin.TBPlugin):
    """Roofline models of the profile runs in the logdir."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext, *, service: RooflineService | None = None):
        self._logdir = _logdir(context)
        self._service = service or RooflineService(
            self._logdir,
            cache_mb=_flag(context, "roofline_cache_mb", DEFAULT_CACHE_MB),
            max_file_mb=_flag(context, "roofline_max_file_mb", DEFAULT_MAX_FILE_MB),
            peaks=_flag(context, "roofline_peaks", None),
            workers=_flag(context, "roofline_workers", os.cpu_count() or 1),
            cache_dir=_flag(context, "roofline_cache_dir", None),
            calibrator=Calibrator(_flag(context, "roofline_calibration_dir", None)),
        )
        self._active: tuple[float, bool] | None = None
        self._hosts = HostCheck(
            _flag(context, "host", None),
            bool(_flag(context, "bind_all", False)),
            allowed_hosts_flag(_flag(context, "roofline_allowed_hosts", None)),
        )

    @property
    def service(self) -> RooflineService:
        return self._service

    def get_plugin_apps(self):
        return {
            RUNS_ROUTE: self._runs_route,
            HOSTS_ROUTE: self._hosts_route,
            STEPS_ROUTE: self._steps_route,
            DATA_ROUTE: self._data_route,
            DATA_CSV_ROUTE: self._data_csv_route,
            COMPARE_ROUTE: self._compare_route,
            PEAKS_ROUTE: self._peaks_route,
            CALIBRATE_ROUTE: self._calibrate_route,
            PROGRESS_ROUTE: self._progress_route,
            LOGDIR_NOTES_ROUTE: self._logdir_notes_route,
            STATIC_ROUTE: self._static_route,
        }

    def is_active(self) -> bool:
        """A bounded, cached walk: positive answers are kept, negative ones for 30 s."""
        now = time.monotonic()
        if self._active is not None and (self._active[1] or now - self._active[0] < ACTIVE_TTL_S):
            return self._active[1]
        active = has_profiles(self._logdir)
        self._active = (now, active)
        return active

    def frontend_metadata(self):
        # The module's URL names the plotly version, so the tab asks for plotly.min.js by
        # its versioned URL (cached for a year) without a request to learn it, and the
        # frontend's version, under which our modules are cached for a year too.
        version = static_files.plotly_version() if plotly_js_path() else None
        params = {"plotly": version} if version else {}
        try:
            params["v"] = static_files.folder_version(frontend_dir())
        except OSError:
            pass  # no frontend folder: index.js answers 404 under any URL
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return base_plugin.FrontendMetadata(
            es_module_path=ES_MODULE_PATH + query,
            tab_name="Roofline" if xprof_installed() else "Profile",
            disable_reload=True,
        )

    # --- routes -------------------------------------------------------------------------------

    def _json(self, request, compute):
        """Runs ``compute`` and responds with its JSON, or with a JSON error."""
        try:
            body = compute()
        except RooflineError as exc:
            return self._error(request, exc)
        return http_util.Respond(request, body, "application/json")

    def _error(self, request, exc: RooflineError):
        status = exc.status
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        # Files as the logdir names them, never by the server's absolute path.
        logdir = self._service.logdir
        if logdir and "://" not in logdir:
            message = message.replace(os.path.join(logdir, ""), "")
        return http_util.Respond(request, {"error": message}, "application/json", code=status)

    @_route
    def _runs_route(self, request):
        return self._json(request, self._service.runs)

    @_route
    def _logdir_notes_route(self, request):
        return self._json(request, self._service.logdir_notes)

    @_route
    def _progress_route(self, request):
        args = request.args
        return self._json(
            request, lambda: self._service.progress_of(args.get("run"), args.get("host"))
        )

    @_route
    def _hosts_route(self, request):
        return self._json(request, lambda: self._service.hosts(request.args.get("run")))

    @_route
    def _steps_route(self, request):
        args = request.args
        return self._json(
            request,
            lambda: self._service.steps(args.get("run"), args.get("host"), args.get("device")),
        )

    @_route
    def _data_route(self, request):
        args = request.args
        return self._json(
            request,
            lambda: self._service.data(
                args.get("run"),
                args.get("host"),
                args.get("tag"),
                args.get("format"),
                args.get("step"),
                args.get("peaks"),
                args.get("device"),
                args.get("step_list"),
            ),
        )

    @_route
    def _compare_route(self, request):
        args = request.args
        a = (args.get("a_run"), args.get("a_host"), args.get("a_step"))
        b = (args.get("b_run"), args.get("b_host"), args.get("b_step"))
        return self._json(request, lambda: self._service.compare(a, b, args.get("peaks")))

    @_route
    def _peaks_route(self, request):
        return self._json(request, self._service.peaks_options)

    @_route
    def _calibrate_route(self, request):
        """GET: the measurement's status (polled); POST: start measuring this machine."""
        if request.method == "GET":
            return self._json(request, self._service.calibration)
        if request.method != "POST":
            return http_util.Respond(
                request, {"error": "use GET (status) or POST (start)"}, "application/json", code=405
            )
        if request.headers.get(CALIBRATE_HEADER) != "1":
            return self._error(
                request, Forbidden(f"POST calibrate needs the header {CALIBRATE_HEADER}: 1")
            )
        try:
            body = self._service.calibrate()
        except RooflineError as exc:
            return self._error(request, exc)
        return http_util.Respond(request, body, "application/json", code=202)

    @_route
    def _data_csv_route(self, request):
        args = request.args
        try:
            text, name = self._service.data_csv(
                args.get("run"),
                args.get("host"),
                args.get("tag"),
                args.get("peaks"),
                args.get("device"),
            )
        except RooflineError as exc:
            return self._error(request, exc)
        return http_util.Respond(
            request,
            text,
            "text/csv",
            headers=[("Content-Disposition", f'attachment; filename="{name}"')],
        )

    @_route
    def _static_route(self, request):
        prefix = f"/data/plugin/{PLUGIN_NAME}/static/"
        path = request.path
        name = path[path.find(prefix) + len(prefix) :] if prefix in path else ""
        return self._serve_file(request, name)

    def _serve_file(self, request, name: str):
        """A frontend file by its plain name (no folders), or plotly.min.js from its package."""
        if name == static_files.PLOTLY_NAME:
            path = plotly_js_path()
        elif _PLAIN_NAME.fullmatch(name):
            path = os.path.join(frontend_dir(), name)
        else:
            path = None
        kind = _FRONTEND_TYPES.get(os.path.splitext(name)[1])
        if path is None or kind is None or not os.path.isfile(path):
            return http_util.Respond(
                request, {"error": f"no such file {name!r}"}, "application/json", code=404
            )
        # plotly.min.js changes only with its package, our files with the frontend's
        # version: each kept a year under its versioned URL.
        if name == static_files.PLOTLY_NAME:
            return static_files.respond(
                request, path, kind, immutable_version=static_files.plotly_version()
            )
        modules = static_files.folder_version(frontend_dir())
        return static_files.respond(request, path, kind, modules_version=modules)
