"""What the HTTP routes do, as plain functions over a logdir: no HTTP in here.

Request values are only ever looked up among the runs and hosts discovery found; a
request never names a filesystem path. Conversions are cached per (file, size,
mtime) in a bounded single-flight LRU; nothing is written anywhere.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

import numpy as np

from ..arrays import held_bytes
from ..errors import NotFound, ProfileError, RooflineError, UnreadableProfile
from ..files import FileTooLarge, not_regular
from ..metadata import ALL_HOSTS, DEFAULT_CACHE_MB, DEFAULT_MAX_FILE_MB, TAG
from ..ops.op_stats import OpStats, combine_hosts, step_nbytes
from ..ops.selection import (
    TOTAL,
    BadStep,
    check_device,
    parse_device,
    parse_step,
    per_step_selection,
    select,
)
from ..peaks.perf_env import PerfEnv
from ..platforms.analysis import READERS, WorkerPool, default_start_method, shared_in_order
from ..protos import roofline_model_pb2
from ..render.datatable import csv_file_name, csv_text, datatable_text
from ..render.export import complete_json_text, selection_model, step_dicts, time_meaning
from ..roofline.compare import Side, compare
from ..roofline.model import RooflineModel, roofline_model
from ..roofline.records import MAX_OP_RECORDS
from ..xspace import discovery
from . import stats_store
from .cache import DoNotCache, SingleFlightCache, Transient
from .calibrator import CALIBRATED, Calibrator, inside
from .convert import convert_file, convert_or_none
from .peak_choice import PeaksChoice, UnknownPeaks, builtin_choice, builtin_devices, with_peaks
from .progress import COMBINING, CONVERTING, READING, RENDERING, Progress

_LOG = logging.getLogger(__name__)
FORMATS = ("datatable", "json")
MAX_VALUE_CHARS = 1024
DISCOVERY_TTL_S = 5.0  # a known run is looked up in a listing at most this old
# An unknown run name walks the logdir again only when the listing is older than this: a
# flood of made-up names costs one walk every few seconds, not one walk each.
RESCAN_MIN_S = 2.0
RECORD_BYTES = 512  # about a record's share of a model (numbers and strings)
RECORD_OVERHEAD = 1.25  # the records' Python objects beyond their numbers and characters
STEP_BYTES = 96  # a StepInfo object
WORKERS_MIN_BYTES = 256_000_000  # hosts to convert together before starting workers pays


class RequestError(RooflineError):
    """A request the service cannot answer; ``status`` is the HTTP status to send."""

    status = 400


class BadRequest(RequestError):
    status = 400


class TooLarge(RequestError):
    status = 413


class BadPeaks(RequestError):
    """The server's --roofline_peaks cannot be used (a configuration problem, not the user's)."""

    status = 503


class Conflict(RequestError):
    """The request is valid but needs something first (e.g. a calibration of this machine)."""

    status = 409


class Forbidden(RequestError):
    status = 403


class Result:
    """One converted selection (a host or all hosts of a run), as kept in the cache.

    The roofline model is made on first use: hosts converted for ``ALL_HOSTS`` need only
    their stats, for the combination.
    """

    def __init__(
        self, stats: OpStats, sources: list[str], model: RooflineModel | None = None
    ) -> None:
        self.stats = stats
        self.sources = sources
        self._model = model
        self._lock = threading.Lock()

    @property
    def model(self) -> RooflineModel:
        with self._lock:
            if self._model is None:
                self._model = roofline_model(self.stats)
            return self._model

    @property
    def database(self) -> roofline_model_pb2.RooflineModelDatabase:
        """The whole profile's database message (built on every call: the API's form)."""
        return self.model.database()

    def render(self, fmt: str, step: str | int = TOTAL, step_list: bool = True) -> str:
        """The response text of a format (and, for json, a step, with or without the list
        of steps); the service keeps it in its payload cache, within --roofline_cache_mb,
        never here."""
        if fmt == "datatable":
            return datatable_text(self.model)
        if fmt == "csv":
            return csv_text(self.model)
        selection = select(self.stats, step)
        model = self.model if step == TOTAL else selection_model(self.stats, selection)
        return complete_json_text(model, self.stats, self.sources, selection, step_list=step_list)

    def size_bytes(self) -> int:
        """About the memory the result holds (measured with tracemalloc on profiles of 1 to
        300 MB: within a fifth), so that a big profile's result stays cached."""
        all_db = self.stats.all_db
        numeric = held_bytes([v for v in all_db.__dict__.values() if isinstance(v, np.ndarray)])
        numeric += step_nbytes(self.stats.steps)
        if self._model is not None:
            records = self._model.records.approx_bytes()
        else:  # about what the model will hold: both record sets, ops up to the records cap
            ops = min(len(all_db), MAX_OP_RECORDS) + 2 + len(self.stats.steps)
            records = 2 * ops * RECORD_BYTES
        steps = STEP_BYTES * len(self.stats.steps)
        return int(RECORD_OVERHEAD * records) + numeric + steps + 64 * 1024


def required_value(name: str, value: str | None) -> str:
    """A query value as given, or BadRequest: missing, too long or with control characters."""
    if value is None or value == "":
        raise BadRequest(f"missing query parameter {name!r}")
    return _checked(name, value)


def optional_value(name: str, value: str | None) -> str | None:
    """A query value as given (None when absent), or BadRequest as ``required_value``."""
    return None if value is None or value == "" else _checked(name, value)


def _checked(name: str, value: str) -> str:
    if len(value) > MAX_VALUE_CHARS:
        raise BadRequest(f"query parameter {name!r} is longer than {MAX_VALUE_CHARS} characters")
    if any(ord(c) < 32 for c in value):
        raise BadRequest(f"query parameter {name!r} contains control characters")
    return value


def _text_bytes(text: str) -> int:
    return sys.getsizeof(text)


def _constant(result: Result) -> Callable[[], Result]:
    """A computation that gives ``result`` (one made ahead, in a worker process)."""
    return lambda: result


class RooflineService:
    """Runs, hosts, steps and roofline data of one logdir."""

    def __init__(
        self,
        logdir: str,
        *,
        cache_mb: float = DEFAULT_CACHE_MB,
        max_file_mb: float = DEFAULT_MAX_FILE_MB,
        peaks: str | None = None,
        workers: int = 1,
        cache_dir: str | None = None,
        calibrator: Calibrator | None = None,
        discover: Callable[[str], dict[str, discovery.Run]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.logdir = logdir
        self.calibrator = calibrator or Calibrator()
        if logdir and "://" not in logdir and inside(self.calibrator.cache_dir, logdir):
            self.calibrator.disabled = (
                f"the calibration folder {self.calibrator.cache_dir} is inside the logdir, and "
                "the plugin never writes there: start TensorBoard with "
                "--roofline_calibration_dir DIR outside it"
            )
        self.peaks_spec = peaks
        self._peaks: PerfEnv | None = None
        self.workers = max(int(workers), 1)
        self.cache_dir = cache_dir
        self._pool: WorkerPool | None = None  # worker processes, started on first use
        self._prefetching = threading.Lock()  # one parallel conversion batch at a time
        self.max_file_bytes = int(max_file_mb * 1e6)
        # --roofline_cache_mb bounds both: converted profiles, and the response texts made
        # of them (a step's payload each), which have a share of their own so that walking
        # a profile's steps never evicts the profile itself.
        cache_bytes = int(cache_mb * 1e6)
        self.cache: SingleFlightCache[Result] = SingleFlightCache(cache_bytes - cache_bytes // 4)
        self.payloads: SingleFlightCache[str] = SingleFlightCache(cache_bytes // 4)
        self._discover = discover or self._scan
        # Folders of JSON traces under names discovery does not read -> their names; each
        # folder is told about once, in a server-log WARNING (skipped_note).
        self.skipped_traces: dict[str, list[str]] = {}
        # XSpace files outside plugins/profile/<run>/ (the first few) and how many: told in
        # a server-log WARNING when they change, and by ``logdir_notes`` (stray_note).
        self.stray_profiles: tuple[list[str], int] = ([], 0)
        self.progress = Progress(clock)
        self._clock = clock
        self._runs: dict[str, discovery.Run] = {}
        self._runs_at = -float("inf")
        self._walk: Future | None = None  # the walk in progress, which others wait for
        self._lock = threading.Lock()  # held only to read or swap the listing, never to walk

    # --- discovery ----------------------------------------------------------------------------

    def _all_runs(self, max_age_s: float = DISCOVERY_TTL_S) -> dict[str, discovery.Run]:
        """The runs of a listing at most ``max_age_s`` old (0: a walk now, or the walk in
        progress). One walk at a time: requests that need one meanwhile wait for its result
        instead of walking again, and no lock is held while it walks."""
        with self._lock:
            if self._clock() - self._runs_at < max_age_s:
                return self._runs
            walk, mine = self._walk, self._walk is None
            if mine:
                walk = self._walk = Future()
        assert walk is not None
        if not mine:
            return walk.result()
        try:
            runs = self._discover(self.logdir)
        except BaseException as exc:
            with self._lock:
                self._walk = None
            walk.set_exception(exc)
            raise
        with self._lock:
            self._runs, self._runs_at, self._walk = runs, self._clock(), None
        walk.set_result(runs)
        return runs

    def _scan(self, logdir: str) -> dict[str, discovery.Run]:
        """discovery's runs; a WARNING the first time a folder of misnamed traces is seen."""
        found = discovery.scan(logdir)
        for folder, names in found.skipped.items():
            if folder not in self.skipped_traces:
                _LOG.warning("tb-roofline: %s", discovery.skipped_note(folder, names))
            self.skipped_traces[folder] = names
        stray = (found.stray, found.stray_count)
        if found.stray_count and stray != self.stray_profiles:
            _LOG.warning("tb-roofline: %s", discovery.stray_note(logdir, *stray))
        self.stray_profiles = stray
        return found.runs

    def logdir_notes(self) -> dict:
        """What the last listing of the logdir found but does not read, in words: XSpace
        files outside plugins/profile/<run>/ and JSON traces under names not read."""
        self._all_runs()
        notes = []
        paths, count = self.stray_profiles
        if count:
            notes.append(discovery.stray_note(self.logdir, paths, count))
        for folder, names in sorted(self.skipped_traces.items()):
            notes.append(discovery.skipped_note(self.shown_path(folder), names))
        return {"notes": notes}

    def shown_path(self, path: str) -> str:
        """A profile's path as responses show it: under the logdir (``train/plugins/profile/
        r1/host0.xplane.pb``), never the server's absolute path."""
        if self.logdir and path.startswith(self.logdir):
            return path[len(self.logdir) :].lstrip("/\\").replace("\\", "/") or "."
        return path.replace("\\", "/").rsplit("/", 1)[-1]

    def _run(self, run: str | None) -> discovery.Run:
        run = required_value("run", run)
        found = self._all_runs().get(run) or self._all_runs(RESCAN_MIN_S).get(run)
        if found is None:
            raise NotFound(f"unknown run {run!r}")
        return found

    def _host_files(self, run: str | None, host: str | None) -> list[discovery.HostFile]:
        found = self._run(run)
        host = required_value("host", host)
        if host == ALL_HOSTS:
            return list(found.hosts.values())
        if host not in found.hosts:
            raise NotFound(f"unknown host {host!r} in run {found.name!r}")
        return [found.hosts[host]]

    def runs(self) -> list[str]:
        return list(self._all_runs(0.0))

    def hosts(self, run: str | None) -> list[str]:
        """The run's hosts; ``ALL_HOSTS`` first when there is more than one."""
        names = list(self._run(run).hosts)
        return ([ALL_HOSTS] if len(names) > 1 else []) + names

    # --- conversion ---------------------------------------------------------------------------

    def peaks(self) -> PerfEnv | None:
        """The ``--roofline_peaks`` PerfEnv, loaded on first use (None without the flag)."""
        if self.peaks_spec and self._peaks is None:
            from ..peaks.devices import load_perf_env

            try:
                self._peaks = load_perf_env(self.peaks_spec)
            except (KeyError, ValueError) as exc:
                message = exc.args[0] if exc.args else str(exc)
                raise BadPeaks(f"--roofline_peaks: {message}") from None
        return self._peaks

    def _host_result(
        self, fs: discovery._Fs, host: discovery.HostFile, device: int | None = None
    ) -> tuple[Result, tuple]:
        """A host's converted result and its cache key; ``device`` (None: all) one of its
        devices, converted on its own once the host's result says it has it (BadDevice)."""
        if device is not None:
            whole, _ = self._host_result(fs, host)
            check_device(device, whole.stats.devices)
        try:
            size, mtime = fs.stat(host.path)
            mode = fs.mode(host.path)
        except OSError as exc:
            raise ProfileError(host.path, f"cannot be read ({exc.strerror or exc})") from None
        problem = None if mode is None else not_regular(mode)
        if problem:  # a FIFO would block the request, /dev/zero (0 bytes) read forever
            raise ProfileError(host.path, problem)
        if size > self.max_file_bytes:
            raise TooLarge(
                f"{host.path}: {size / 1e6:.1f} MB is larger than --roofline_max_file_mb="
                f"{self.max_file_bytes / 1e6:g}; not loaded"
            )
        key: tuple = ("host", host.path, size, mtime)
        if device is not None:
            key = ("device", device, key)

        def convert() -> Result | Transient:
            self.peaks()  # a bad --roofline_peaks is the server's problem, said once
            stats = None
            if self.cache_dir and device is None:
                store_key = stats_store.cache_key(host.path, size, mtime, self.peaks_spec)
                stats = stats_store.load(self.cache_dir, store_key)
            if stats is None:
                try:
                    with self.progress.task(("file", host.path), READING) as task:
                        stats = convert_file(
                            host.path,
                            self.peaks_spec,
                            self.max_file_bytes,
                            device=device,
                            on_stage=task.enter,
                        )
                except UnreadableProfile as exc:
                    raise DoNotCache(exc) from None
                except FileTooLarge as exc:  # a gzip's unpacked text, or a file that grew
                    raise TooLarge(f"{exc} (--roofline_max_file_mb)") from None
                except ProfileError as exc:
                    if self._changed(fs, host.path, size, mtime):
                        raise DoNotCache(
                            ProfileError(
                                exc.path, f"{exc.problem} (the file changed while it was read)"
                            )
                        ) from None
                    raise
            result = Result(stats, [self.shown_path(host.path)])
            if self._changed(fs, host.path, size, mtime):
                return Transient(result)  # what was read, but not under this (size, mtime)
            return result

        return self.cache.get(key, convert, Result.size_bytes), key

    @staticmethod
    def _changed(fs: discovery._Fs, path: str, size: int, mtime: float) -> bool:
        try:
            return fs.stat(path) != (size, mtime)
        except OSError:
            return True

    def _prefetch(self, fs: discovery._Fs, files: list[discovery.HostFile]) -> None:
        """Converts the hosts that are not cached yet in parallel: in worker processes and
        in this thread (``shared_in_order``), once workers pay: when they are up already,
        or for WORKERS_MIN_BYTES or more (starting them takes about a fresh interpreter's
        imports, half a second of a core, in which this thread converts ~50 MB)."""
        if self.workers < 2 or len(files) < 2 or self.cache_dir:
            return
        missing, size = [], 0
        for host in files:
            try:
                host_size, mtime = fs.stat(host.path)
                mode = fs.mode(host.path)
            except OSError:
                continue
            if mode is not None and not_regular(mode):
                continue  # refused on its own path, never opened
            key = ("host", host.path, host_size, mtime)
            if host_size <= self.max_file_bytes and key not in self.cache:
                missing.append((host, key))
                size += host_size
        if len(missing) < 2 or (self._pool is None and size < WORKERS_MIN_BYTES):
            return
        with self._prefetching:
            missing = [(h, k) for h, k in missing if k not in self.cache]
            if len(missing) >= 2:
                self._convert_in_workers(fs, missing)

    def _convert_in_workers(
        self, fs: discovery._Fs, missing: list[tuple[discovery.HostFile, tuple]]
    ) -> None:
        pool = self._worker_pool()

        def here(i: int) -> None:
            try:
                self._host_result(fs, missing[i][0])  # converted and cached here
            except Exception:  # the per-host path reports it, with its message
                pass

        def submit(i: int) -> Future | None:
            path = missing[i][0].path
            task = self.progress.start(("file", path), CONVERTING)
            try:
                future = pool.submit(convert_or_none, path, self.peaks_spec, self.max_file_bytes)
            except BrokenProcessPool:
                self.progress.end(task)  # a worker died: a new pool next time, this one here
                with self._lock:
                    if self._pool is pool:
                        self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            if future is None:  # no worker is up yet: not given out
                self.progress.end(task)
                return None
            future.add_done_callback(lambda _: self.progress.end(task))
            return future

        outstanding = 2 * pool.processes  # one running and one waiting per worker
        done = shared_in_order(len(missing), here, submit, outstanding)
        for (host, key), stats in zip(missing, done):
            if stats is not None:  # converted in a worker
                self.cache.get(
                    key, _constant(Result(stats, [self.shown_path(host.path)])), Result.size_bytes
                )

    def _worker_pool(self) -> WorkerPool:
        """``workers - 1`` processes (the requests' threads convert too), started in the
        background, forked from a server process that has the converter imported: only its
        first start pays imports. Never forked from this threaded server itself."""
        with self._lock:
            if self._pool is None:
                preload = [convert_or_none.__module__, *READERS]
                self._pool = WorkerPool(self.workers - 1, default_start_method(), preload).start()
            return self._pool

    def peaks_choice(self, peaks: str | None) -> PeaksChoice | None:
        """The request's ``peaks``: None (the profile's, or --roofline_peaks), a built-in
        device, or ``calibrated`` (this machine's measurement; 409 before there is one)."""
        value = optional_value("peaks", peaks)
        if value is None:
            return None
        if value == CALIBRATED:
            if self.calibrator.disabled:
                raise Conflict(f"calibration is off: {self.calibrator.disabled}")
            current = self.calibrator.current()
            if current is None:
                raise Conflict(
                    "this machine has not been measured yet: POST calibrate (the tab's "
                    "'Measure this machine' button) and wait for it to finish"
                )
            return PeaksChoice(f"{CALIBRATED}:{current.version}", current.perf_env)
        try:
            return builtin_choice(value)
        except UnknownPeaks as exc:
            raise BadRequest(str(exc)) from None

    def _judged(self, part: tuple[Result, tuple], choice: PeaksChoice | None):
        """A host's result judged by the chosen peaks (cached under its own key)."""
        result, key = part
        if choice is None:
            return part
        peaks_key = ("peaks", choice.key, key)

        def judge() -> Result:
            stats = with_peaks(result.stats, choice.perf_env)
            return Result(stats, result.sources)

        return self.cache.get(peaks_key, judge, Result.size_bytes), peaks_key

    def result(
        self,
        run: str | None,
        host: str | None,
        peaks: str | None = None,
        device: str | None = None,
    ) -> Result:
        """The converted selection: one host, or all hosts of the run combined; ``peaks``
        (see ``peaks_choice``) judges it by other peaks; ``device`` (``all`` or a device
        number, see ``OpStats.devices``) shows one device of one host."""
        return self._selected(run, host, peaks, device)[0]

    def _selected(
        self,
        run: str | None,
        host: str | None,
        peaks: str | None = None,
        device: str | None = None,
    ) -> tuple[Result, tuple]:
        """``result`` and its cache key."""
        files = self._host_files(run, host)
        chosen = self._device(device)
        if chosen is not None and len(files) > 1:
            raise BadRequest(
                f"device {chosen} is a device of one host; {ALL_HOSTS} combines "
                f"{len(files):,} hosts: choose one"
            )
        choice = self.peaks_choice(peaks)
        fs = discovery.filesystem(self.logdir)
        self._prefetch(fs, files)
        parts = [self._judged(self._host_result(fs, f, chosen), choice) for f in files]
        if len(parts) == 1:
            return parts[0]
        key = ("all", tuple(k for _, k in parts))

        def combine() -> Result:
            stats = combine_hosts([r.stats for r, _ in parts])
            return Result(stats, [self.shown_path(f.path) for f in files])

        def combined() -> Result:
            with self.progress.task(("selection", run, host), COMBINING):
                return combine()

        return self.cache.get(key, combined, Result.size_bytes), key

    def _payload(
        self,
        part: tuple[Result, tuple],
        fmt: str,
        step: str | int = TOTAL,
        selection: tuple = (),
        step_list: bool = True,
    ) -> str:
        """A response text, rendered once while it fits the payload share of the cache;
        ``selection`` (run, host) names the work for ``progress``."""
        result, key = part

        def render() -> str:
            with self.progress.task(("selection", *selection), RENDERING):
                return result.render(fmt, step, step_list)

        return self.payloads.get(("text", key, fmt, step, step_list), render, _text_bytes)

    def progress_of(self, run: str | None, host: str | None) -> dict:
        """What the conversion of a selection is doing now (``Progress.of``) and how many
        host files it reads (``hosts``); never starts one."""
        files = self._host_files(run, host)
        keys = [("file", f.path) for f in files] + [("selection", run, host)]
        return {**self.progress.of(keys), "hosts": len(files)}

    def peaks_options(self) -> dict:
        """What the tab offers: built-in devices, this machine's calibration, the server's."""
        return {
            "builtin": builtin_devices(),
            "calibration": self.calibrator.status(),
            "server_peaks": bool(self.peaks_spec),
        }

    def calibration(self) -> dict:
        return self.calibrator.status()

    def calibrate(self) -> dict:
        """Starts measuring this machine (once at a time); 409 when calibration is off."""
        if self.calibrator.disabled:
            raise Conflict(f"calibration is off: {self.calibrator.disabled}")
        return self.calibrator.start()

    def steps(self, run: str | None, host: str | None, device: str | None = None) -> dict:
        """The steps of a selection (of one device: its durations there), and the host's
        devices a view can show one by one."""
        stats = self.result(run, host, device=device).stats
        return {
            "has_step_markers": stats.has_step_markers,
            "steps": step_dicts(stats.steps),
            "devices": list(stats.devices),
            "time_meaning": time_meaning(stats),
        }

    def data(
        self,
        run: str | None,
        host: str | None,
        tag: str | None,
        fmt: str | None,
        step: str | None = None,
        peaks: str | None = None,
        device: str | None = None,
        step_list: str | None = None,
    ) -> str:
        """The roofline of a selection as JSON text (``datatable`` or ``json``).

        ``step`` (json only) is ``total`` (default), ``average`` or a step number; ``peaks``
        see ``peaks_choice``; ``device`` see ``result``; ``step_list`` (json only) ``0``
        leaves the list of steps out (``1``, the default: in).
        """
        self._check_tag(tag)
        fmt = optional_value("format", fmt) or "datatable"
        if fmt not in FORMATS:
            raise BadRequest(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
        chosen = self._step(step)
        if fmt == "datatable" and chosen != TOTAL:
            raise BadRequest("step selects json records; the datatable holds every step")
        listed = optional_value("step_list", step_list) or "1"
        if listed not in ("0", "1"):
            raise BadRequest(f"step_list must be 0 or 1, not {listed!r}")
        if fmt == "datatable" and listed == "0":
            raise BadRequest("step_list is of the json format; the datatable holds every step")
        return self._payload(
            self._selected(run, host, peaks, device), fmt, chosen, (run, host), listed == "1"
        )

    @staticmethod
    def _device(device: str | None) -> int | None:
        return parse_device(optional_value("device", device))

    @staticmethod
    def _step(step: str | None) -> str | int:
        try:
            return parse_step(optional_value("step", step))
        except BadStep as exc:
            raise BadRequest(str(exc)) from None

    def compare(self, a: tuple, b: tuple, peaks: str | None = None) -> dict:
        """Compares two (run, host, step) selections, both judged by ``peaks``."""
        sides = []
        for name, (run, host, step) in (("a", a), ("b", b)):
            result = self.result(run, host, peaks)
            try:
                selection = per_step_selection(result.stats, self._step(step))
            except NotFound as exc:
                raise NotFound(f"{name}: {exc}") from None
            sides.append(Side(f"{run} {host} step {selection.label}", result.stats, selection))
        return compare(*sides)

    def data_csv(
        self,
        run: str | None,
        host: str | None,
        tag: str | None,
        peaks: str | None = None,
        device: str | None = None,
    ) -> tuple[str, str]:
        """(CSV text, download file name) of a selection, as XProf's ``data_csv``."""
        tag = self._check_tag(tag)
        text = self._payload(self._selected(run, host, peaks, device), "csv", TOTAL, (run, host))
        return text, csv_file_name(tag, run or "", host or "")

    @staticmethod
    def _check_tag(tag: str | None) -> str:
        tag = optional_value("tag", tag) or TAG
        if tag != TAG:
            raise NotFound(f"unknown tag {tag!r}; this plugin serves {TAG!r}")
        return tag
