"""What the HTTP routes do, as plain functions over a logdir: no HTTP in here.

Request values are only ever looked up among the runs and hosts discovery found; a
request never names a filesystem path. Conversions are cached per (file, size,
mtime) in a bounded single-flight LRU; nothing is written anywhere.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import discovery
from .analysis import analyze_profile
from .cache import SingleFlightCache
from .datatable import csv_file_name, to_csv, to_datatable
from .errors import ProfileError, RooflineError
from .export import to_json
from .op_stats import OpStats, combine_hosts
from .profile_reader import decode_profile
from .protos import roofline_model_pb2 as rm
from .roofline import build_database

ALL_HOSTS = "ALL_HOSTS"
TAG = "roofline_model"
FORMATS = ("datatable", "json")
MAX_VALUE_CHARS = 1024
DISCOVERY_TTL_S = 5.0


class RequestError(RooflineError):
    """A request the service cannot answer; ``status`` is the HTTP status to send."""

    status = 400


class BadRequest(RequestError):
    status = 400


class NotFoundError(RequestError):
    status = 404


class TooLarge(RequestError):
    status = 413


class BadProfile(RequestError):
    """The profile exists but cannot be used (corrupt, truncated, foreign, unreadable)."""

    status = 422


@dataclass
class Result:
    """One converted selection (a host or all hosts of a run), as kept in the cache."""

    stats: OpStats
    database: rm.RooflineModelDatabase
    sources: list[str]
    _rendered: dict[str, str] = field(default_factory=dict)

    def rendered(self, fmt: str) -> str:
        """The response text of a format, rendered once."""
        if fmt not in self._rendered:
            if fmt == "datatable":
                self._rendered[fmt] = json.dumps(to_datatable(self.database))
            elif fmt == "json":
                self._rendered[fmt] = json.dumps(to_json(self.database, self.stats, self.sources))
            elif fmt == "csv":
                self._rendered[fmt] = to_csv(to_datatable(self.database))
        return self._rendered[fmt]

    def size_bytes(self) -> int:
        arrays = [self.stats.all_db] + [s.db for s in self.stats.steps]
        numeric = sum(
            v.nbytes for db in arrays for v in db.__dict__.values() if isinstance(v, np.ndarray)
        )
        return 4 * self.database.ByteSize() + 2 * numeric + 64 * 1024


def check_value(name: str, value: str | None, required: bool = True) -> str | None:
    """A query value as given, or BadRequest: missing, too long or with control characters."""
    if value is None or value == "":
        if required:
            raise BadRequest(f"missing query parameter {name!r}")
        return None
    if len(value) > MAX_VALUE_CHARS:
        raise BadRequest(f"query parameter {name!r} is longer than {MAX_VALUE_CHARS} characters")
    if any(ord(c) < 32 for c in value):
        raise BadRequest(f"query parameter {name!r} contains control characters")
    return value


class RooflineService:
    """Runs, hosts, steps and roofline data of one logdir."""

    def __init__(
        self,
        logdir: str,
        *,
        cache_mb: float = 512,
        max_file_mb: float = 4096,
        discover: Callable[[str], dict[str, discovery.Run]] = discovery.discover,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.logdir = logdir
        self.max_file_bytes = int(max_file_mb * 1e6)
        self.cache: SingleFlightCache[Result] = SingleFlightCache(int(cache_mb * 1e6))
        self._discover = discover
        self._clock = clock
        self._runs: dict[str, discovery.Run] = {}
        self._runs_at = -float("inf")
        self._lock = threading.Lock()

    # --- discovery ----------------------------------------------------------------------------

    def _all_runs(self, refresh: bool = False) -> dict[str, discovery.Run]:
        with self._lock:
            stale = self._clock() - self._runs_at > DISCOVERY_TTL_S
            if refresh or stale:
                self._runs = self._discover(self.logdir)
                self._runs_at = self._clock()
            return self._runs

    def _run(self, run: str | None) -> discovery.Run:
        run = check_value("run", run)
        found = self._all_runs().get(run) or self._all_runs(refresh=True).get(run)
        if found is None:
            raise NotFoundError(f"unknown run {run!r}")
        return found

    def _host_files(self, run: str | None, host: str | None) -> list[discovery.HostFile]:
        found = self._run(run)
        host = check_value("host", host)
        if host == ALL_HOSTS:
            return list(found.hosts.values())
        if host not in found.hosts:
            raise NotFoundError(f"unknown host {host!r} in run {found.name!r}")
        return [found.hosts[host]]

    def runs(self) -> list[str]:
        return list(self._all_runs(refresh=True))

    def hosts(self, run: str | None) -> list[str]:
        """The run's hosts; ``ALL_HOSTS`` first when there is more than one."""
        names = list(self._run(run).hosts)
        return ([ALL_HOSTS] if len(names) > 1 else []) + names

    # --- conversion ---------------------------------------------------------------------------

    def _host_result(self, fs: discovery._Fs, host: discovery.HostFile) -> tuple[Result, tuple]:
        try:
            size, mtime = fs.stat(host.path)
        except OSError as exc:
            raise BadProfile(f"{host.path}: cannot be read ({exc.strerror or exc})") from None
        if size > self.max_file_bytes:
            raise TooLarge(
                f"{host.path}: {size / 1e6:.1f} MB is larger than --roofline_max_file_mb="
                f"{self.max_file_bytes / 1e6:g}; not loaded"
            )
        key = ("host", host.path, size, mtime)

        def convert() -> Result:
            try:
                data = fs.read(host.path)
            except OSError as exc:
                raise BadProfile(f"{host.path}: cannot be read ({exc.strerror or exc})") from None
            try:
                stats = analyze_profile(decode_profile(data, host.path), host.host)
            except ProfileError as exc:
                raise BadProfile(str(exc)) from None
            return Result(stats, build_database(stats), [host.path])

        return self.cache.get(key, convert, Result.size_bytes), key

    def result(self, run: str | None, host: str | None) -> Result:
        """The converted selection: one host, or all hosts of the run combined."""
        files = self._host_files(run, host)
        fs = discovery.filesystem(self.logdir)
        parts = [self._host_result(fs, f) for f in files]
        if len(parts) == 1:
            return parts[0][0]
        key = ("all", tuple(k for _, k in parts))

        def combine() -> Result:
            stats = combine_hosts([r.stats for r, _ in parts])
            return Result(stats, build_database(stats), [f.path for f in files])

        return self.cache.get(key, combine, Result.size_bytes)

    def steps(self, run: str | None, host: str | None) -> dict:
        stats = self.result(run, host).stats
        return {
            "has_step_markers": stats.has_step_markers,
            "steps": [
                {"step_num": s.step_num, "complete": s.complete, "duration_us": s.duration_ps / 1e6}
                for s in stats.steps
            ],
        }

    def data(self, run: str | None, host: str | None, tag: str | None, fmt: str | None) -> str:
        """The roofline of a selection as JSON text (``datatable`` or ``json``)."""
        self._check_tag(tag)
        fmt = check_value("format", fmt, required=False) or "datatable"
        if fmt not in FORMATS:
            raise BadRequest(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        return self.result(run, host).rendered(fmt)

    def data_csv(self, run: str | None, host: str | None, tag: str | None) -> tuple[str, str]:
        """(CSV text, download file name) of a selection, as XProf's ``data_csv``."""
        tag = self._check_tag(tag)
        text = self.result(run, host).rendered("csv")
        return text, csv_file_name(tag, run or "", host or "")

    @staticmethod
    def _check_tag(tag: str | None) -> str:
        tag = check_value("tag", tag, required=False) or TAG
        if tag != TAG:
            raise NotFoundError(f"unknown tag {tag!r}; this plugin serves {TAG!r}")
        return tag
