"""This machine's measured peaks for the tab: ``calibrate`` run once on request, in the
background, its result kept as JSON in a per-user cache folder outside the logdir.

Nothing runs until a request asks for it (never from the plugin's constructor); one
measurement at a time; the result is written atomically, so a reader sees the old file or
the new one, never half of one. The measurement runs in a child process by default (its
arrays, ~1.5 GB, and its BLAS threads stay out of the server); tests inject a fast fake.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable

from ..peaks.devices import DevicePeaks, load_peaks
from ..peaks.perf_env import PerfEnv

CALIBRATED = "calibrated"
CALIBRATE_TIMEOUT_S = 300.0
# idle: never measured here; running; done: a result is cached; failed: the last try failed.
STATES = ("idle", "running", "done", "failed")


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/tb-roofline`` (``~/.cache/tb-roofline`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tb-roofline")


def calibration_file(cache_dir: str) -> str:
    """One file per machine: a home folder shared between machines keeps each one's figures."""
    host = "".join(c if c.isalnum() or c in "-_." else "_" for c in socket.gethostname())
    return os.path.join(cache_dir, f"calibration-{host or 'localhost'}.json")


def inside(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or below it (both resolved)."""
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def run_calibrate_process(output: str, quick: bool = False) -> None:
    """``tb-roofline calibrate --output OUTPUT`` in a child process; RuntimeError on failure."""
    command = [sys.executable, "-m", "tb_roofline_plugin.cli", "calibrate", "--output", output]
    if quick:
        command.append("--quick")
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=CALIBRATE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"calibrate did not finish within {CALIBRATE_TIMEOUT_S:g} s") from None
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"calibrate exited with {proc.returncode}")


@dataclass(frozen=True)
class Calibration:
    """A cached measurement: its peaks and an id that changes when it is measured again."""

    peaks: DevicePeaks
    perf_env: PerfEnv
    version: str  # a hash of the file's content: part of every cache key that uses it


class Calibrator:
    """Runs ``calibrate`` on request (once at a time) and serves its cached result.

    ``measure(output_path)`` writes a peak file (the default runs the CLI in a child
    process); ``cache_dir`` is where the result is kept (``default_cache_dir()``).
    ``disabled`` is a reason the tab is told instead (e.g. a cache folder inside the logdir).
    """

    def __init__(
        self,
        cache_dir: str | None = None,
        *,
        measure: Callable[[str], None] = run_calibrate_process,
        disabled: str = "",
        clock: Callable[[], float] = time.time,
    ):
        self.cache_dir = cache_dir or default_cache_dir()
        self.path = calibration_file(self.cache_dir)
        self._measure = measure
        self.disabled = disabled
        self._clock = clock
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._error = ""
        self._started_at: float | None = None
        self._generation = 0  # measurements finished here: a rewrite within one mtime tick
        # (file identity, result, error) of the last read
        self._loaded: tuple[tuple, Calibration | None, str] | None = None

    # --- the cached result --------------------------------------------------------------------

    def current(self) -> Calibration | None:
        """The cached measurement of this machine, or None (absent or unreadable)."""
        return self._read()[0]

    def _read(self) -> tuple[Calibration | None, str]:
        try:
            info = os.stat(self.path)
        except OSError:
            return None, ""
        with self._lock:
            identity = (info.st_mtime_ns, info.st_size, self._generation)
            if self._loaded is not None and self._loaded[0] == identity:
                return self._loaded[1], self._loaded[2]
        try:
            with open(self.path, "rb") as f:
                version = hashlib.sha256(f.read()).hexdigest()[:16]
            peaks = load_peaks(self.path)
            result = Calibration(
                peaks,
                peaks.to_perf_env("calibration of this machine", listed_dtypes_only=True),
                version,
            )
            error = ""
        except OSError as exc:
            result, error = None, f"the cached calibration cannot be read ({exc.strerror or exc})"
        except (KeyError, ValueError) as exc:
            result, error = None, f"the cached calibration is unusable: {exc}"
        with self._lock:
            self._loaded = (identity, result, error)
        return result, error

    # --- running it ---------------------------------------------------------------------------

    def start(self) -> dict:
        """Starts a measurement unless one is running; returns the status."""
        if self.disabled:
            return self.status()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._error = ""
                self._started_at = self._clock()
                self._thread = threading.Thread(
                    target=self._run, name="tb-roofline-calibrate", daemon=True
                )
                self._thread.start()
        return self.status()

    def _run(self) -> None:
        error = ""
        try:
            os.makedirs(self.cache_dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".calibration-", suffix=".json", dir=self.cache_dir)
            os.close(fd)
            try:
                self._measure(tmp)
                try:
                    load_peaks(tmp)  # only a loadable file replaces the old one
                except ValueError as exc:
                    problem = str(exc).removeprefix(f"{tmp}: ")
                    message = f"the measurement gave an unusable peak file: {problem}"
                    raise RuntimeError(message) from None
                os.replace(tmp, self.path)
                with self._lock:
                    self._generation += 1
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError as exc:
            error = f"{self.cache_dir}: cannot write ({exc.strerror or exc})"
        except Exception as exc:  # the child's or the file's problem, said in the tab
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        with self._lock:
            self._error = error

    def wait(self, timeout_s: float | None = None) -> None:
        """Waits for a running measurement (tests, shutdown)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def status(self) -> dict:
        """What the tab shows and polls: state, the measured figures, the last error."""
        current, unreadable = self._read()
        with self._lock:
            running = self._thread is not None and self._thread.is_alive()
            error = self._error or unreadable
            started = self._started_at
        if running:
            state = "running"
        elif error:
            state = "failed"
        elif current is not None:
            state = "done"
        else:
            state = "idle"
        body: dict = {"state": state, "available": current is not None and not self.disabled}
        if running and started is not None:
            body["running_s"] = round(max(self._clock() - started, 0.0), 1)
        if error:
            body["error"] = error
        if self.disabled:
            body["disabled"] = self.disabled
        if current is not None:
            body["peaks"] = _figures(current.peaks)
        return body


def _figures(peaks: DevicePeaks) -> dict:
    """The measured figures the tab shows (no file paths)."""
    return {
        "name": peaks.name,
        "dtype_tflops": dict(peaks.dtype_tflops),
        "memory_gbps": peaks.hbm_gbps,
        "source": peaks.source,
    }
