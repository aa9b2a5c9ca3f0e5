"""Finding profile runs and hosts: ``<logdir>/**/plugins/profile/<run>/<host>.xplane.pb``.

Run names are XProf's: ``<run>`` for runs right under ``<logdir>/plugins/profile``,
``<tb_run>/<run>`` deeper. Other files in run folders (XProf's caches, traces, HLO
dumps) are ignored. Local paths use ``os``; other schemes (``gs://``, ...) go through
TensorBoard's filesystem layer.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Iterator

PROFILE_SUFFIX = ".xplane.pb"
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


def host_name(path: str | os.PathLike) -> str:
    """``.../<host>.xplane.pb`` -> ``<host>`` (the host is named by its file, as XProf does)."""
    name = os.path.basename(os.fspath(path))
    return name[: -len(PROFILE_SUFFIX)] if name.endswith(PROFILE_SUFFIX) else name


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
        hosts = sorted(f for f in filenames if f.endswith(PROFILE_SUFFIX))
        if not hosts:
            continue
        name = _run_name(logdir, dirpath, fs)
        if name is None:
            continue
        run = runs.setdefault(name, Run(name=name, path=dirpath))
        for filename in hosts:
            host = host_name(filename)
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
        if any(f.endswith(PROFILE_SUFFIX) for f in filenames):
            if _run_name(logdir, dirpath, fs) is not None:
                return True
    return False
