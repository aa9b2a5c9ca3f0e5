"""Finding profile runs and hosts: ``<logdir>/**/plugins/profile/<run>/<host>.xplane.pb``,
and PyTorch profiler traces ``<logdir>/**/<run>/<worker>.<timestamp>.pt.trace.json[.gz]``.

XSpace run names are XProf's: ``<run>`` for runs right under ``<logdir>/plugins/profile``,
``<tb_run>/<run>`` deeper. A folder holding PyTorch traces (as
``torch.profiler.tensorboard_trace_handler`` writes them) is a run named by its path under
the logdir; each worker is a host, and several captures of one worker are told apart by
their timestamps. Other files in run folders (XProf's caches, JAX's traces, HLO dumps) are
ignored. Local paths use ``os``; other schemes (``gs://``, ...) go through TensorBoard's
filesystem layer.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Iterator

PROFILE_SUFFIX = ".xplane.pb"
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")  # torch.profiler traces
PROFILE_DIR = ("plugins", "profile")
MAX_DIRS = 100_000  # bound on one walk, so a huge logdir cannot hang a request


@dataclass(frozen=True)
class HostFile:
    host: str
    path: str


@dataclass
class Run:
    name: str
    path: str
    hosts: dict[str, HostFile] = field(default_factory=dict)


def is_pytorch_trace(path: str | os.PathLike) -> bool:
    """A PyTorch profiler (Kineto) trace, by its name (``*.pt.trace.json[.gz]``)."""
    return os.fspath(path).endswith(TRACE_SUFFIXES)


def trace_worker(path: str | os.PathLike) -> tuple[str, str]:
    """``<worker>.<timestamp>.pt.trace.json[.gz]`` -> (worker, timestamp); a name without a
    timestamp (a renamed trace) is all worker. Worker names may hold dots (host names)."""
    name = os.path.basename(os.fspath(path))
    stem = next((name[: -len(s)] for s in TRACE_SUFFIXES if name.endswith(s)), name)
    worker, _, stamp = stem.rpartition(".")
    return (worker, stamp) if worker and stamp.isdigit() else (stem, "")


def host_name(path: str | os.PathLike) -> str:
    """``.../<host>.xplane.pb`` -> ``<host>`` (the host is named by its file, as XProf does);
    a PyTorch trace's host is its worker."""
    name = os.path.basename(os.fspath(path))
    if is_pytorch_trace(name):
        return trace_worker(name)[0]
    return name[: -len(PROFILE_SUFFIX)] if name.endswith(PROFILE_SUFFIX) else name


def trace_hosts(filenames: list[str]) -> dict[str, str]:
    """{host: file name} of a folder's PyTorch traces: the worker, or ``<worker>.<timestamp>``
    for each capture of a worker that has several."""
    by_worker: dict[str, list[str]] = {}
    for filename in sorted(filenames):
        by_worker.setdefault(trace_worker(filename)[0], []).append(filename)
    hosts = {}
    for worker, files in by_worker.items():
        if len(files) == 1:
            hosts[worker] = files[0]
        else:
            for filename in sorted(files, key=lambda f: (int(trace_worker(f)[1] or 0), f)):
                stamp = trace_worker(filename)[1]
                hosts[f"{worker}.{stamp}" if stamp else filename] = filename
    return hosts


def _is_remote(path: str) -> bool:
    return "://" in path


class _Fs:
    """The few filesystem calls discovery needs, for local or remote logdirs."""

    def __init__(self, logdir: str):
        self.remote = _is_remote(logdir)
        self.join = posixpath.join if self.remote else os.path.join
        if self.remote:
            from tensorboard.compat import tf

            self._gfile = tf.io.gfile

    def walk(self, top: str) -> Iterator[tuple[str, list[str], list[str]]]:
        if self.remote:
            yield from self._gfile.walk(top)
        else:
            yield from os.walk(top, followlinks=False)

    def stat(self, path: str) -> tuple[int, float]:
        """(size in bytes, mtime) of a file."""
        if self.remote:
            st = self._gfile.stat(path)
            return int(st.length), float(getattr(st, "mtime_nsec", 0))
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns

    def read(self, path: str) -> bytes:
        if self.remote:
            with self._gfile.GFile(path, "rb") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()


def filesystem(logdir: str) -> _Fs:
    return _Fs(logdir)


def _run_name(logdir: str, run_dir: str, fs: _Fs) -> str | None:
    """XProf's name for the run in ``run_dir`` (None unless it is ``.../plugins/profile/<run>``)."""
    rel = run_dir[len(logdir) :].strip("/\\")
    parts = rel.replace("\\", "/").split("/")
    if len(parts) < 3 or tuple(parts[-3:-1]) != PROFILE_DIR:
        return None
    prefix = "/".join(parts[:-3])
    return f"{prefix}/{parts[-1]}" if prefix else parts[-1]


def _trace_run_name(logdir: str, run_dir: str, fs: _Fs) -> str:
    """A PyTorch trace folder's run: XProf's name under ``plugins/profile``, else its path
    under the logdir (``.`` for the logdir itself, as TensorBoard names it)."""
    xprof_name = _run_name(logdir, run_dir, fs)
    if xprof_name is not None:
        return xprof_name
    rel = run_dir[len(logdir) :].strip("/\\").replace("\\", "/")
    return rel or "."


def discover(logdir: str, max_dirs: int = MAX_DIRS) -> dict[str, Run]:
    """Every profile run under ``logdir`` with its hosts; runs without profiles are left out."""
    if not logdir:
        return {}
    fs = filesystem(logdir)
    runs: dict[str, Run] = {}
    for visited, (dirpath, dirnames, filenames) in enumerate(fs.walk(logdir)):
        if visited >= max_dirs:
            break
        dirnames.sort()
        found: dict[str, str] = {}
        name = None
        traces = [f for f in filenames if is_pytorch_trace(f)]
        if traces:
            name = _trace_run_name(logdir, dirpath, fs)
            found.update(trace_hosts(traces))
        xspace = sorted(f for f in filenames if f.endswith(PROFILE_SUFFIX))
        if xspace and _run_name(logdir, dirpath, fs) is not None:
            name = _run_name(logdir, dirpath, fs)
            found.update((host_name(f), f) for f in xspace)  # a host of both: the XSpace
        if name is None or not found:
            continue
        run = runs.setdefault(name, Run(name=name, path=dirpath))
        for host, filename in found.items():
            if host:
                run.hosts[host] = HostFile(host, fs.join(dirpath, filename))
    return dict(sorted(runs.items()))


def has_profiles(logdir: str, max_dirs: int = MAX_DIRS) -> bool:
    """True as soon as one run folder with a profile is found (a bounded walk)."""
    if not logdir:
        return False
    fs = filesystem(logdir)
    for visited, (dirpath, _, filenames) in enumerate(fs.walk(logdir)):
        if visited >= max_dirs:
            return False
        if any(is_pytorch_trace(f) for f in filenames):
            return True
        if any(f.endswith(PROFILE_SUFFIX) for f in filenames):
            if _run_name(logdir, dirpath, fs) is not None:
                return True
    return False
