"""Finding profile runs and hosts: ``<logdir>/**/plugins/profile/<run>/<host>.xplane.pb``,
and PyTorch profiler traces ``<logdir>/**/<run>/<worker>.<timestamp>.pt.trace.json[.gz]``.

XSpace run names are XProf's: ``<run>`` for runs right under ``<logdir>/plugins/profile``,
``<tb_run>/<run>`` deeper. A folder holding PyTorch traces (as
``torch.profiler.tensorboard_trace_handler`` writes them) is a run named by its path under
the logdir; each worker is a host, and several captures of one worker are told apart by
their timestamps. Other files in run folders (XProf's caches, JAX's traces, HLO dumps) are
ignored. Local paths use ``os``; other schemes (``gs://``, ...) go through TensorBoard's
filesystem layer.

A trace under another name (``prof.export_chrome_trace("trace.json")``) is read when named
on the command line (``looks_like_trace`` tells it by its first bytes), but a logdir's other
JSON files are not read as runs (configs, JAX's own traces, ...): ``scan`` reports those that
look like traces in folders without XSpace, so the user can be told to rename them.
"""

from __future__ import annotations

import os
import posixpath
import re
import zlib
from dataclasses import dataclass, field
from typing import Iterator

from ..files import DEFAULT_MAX_BYTES, GZIP_MAGIC, FileTooLarge, head_regular, read_regular
from ..wording import counted

PROFILE_SUFFIX = ".xplane.pb"
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")  # torch.profiler traces
JSON_SUFFIXES = (".json.gz", ".json")  # other names a trace is given (export_chrome_trace)
TRACE_NAME = "<worker>.<timestamp>.pt.trace.json[.gz]"  # what tensorboard_trace_handler writes
SNIFF_BYTES = 4096  # of a file (and of its gunzipped text) that tell a JSON trace
SNIFF_PER_FOLDER = 20  # JSON files of one logdir folder looked into for a skipped-trace note
SNIFF_PER_WALK = 200  # ... and of one whole walk
# A JSON object's start, up to its first key's colon. An XSpace never matches: its first
# byte (0x0a) is JSON whitespace, but no XPlane field's tag is ``{`` (0x7b) and a varint
# length byte of 0x7b is followed by a field tag, not by a JSON key and ``:``.
_JSON_OBJECT_START = re.compile(rb'[ \t\r\n]*\{[ \t\r\n]*"(?:[^"\\\x00-\x1f]|\\.)*"[ \t\r\n]*:')
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


def looks_like_trace(head: bytes) -> bool:
    """Whether a file's first bytes (``SNIFF_BYTES`` of them) may be a Kineto/Chrome JSON
    trace: a JSON object, after any whitespace, gzip-compressed or not (only the first
    ``SNIFF_BYTES`` of the gunzipped text are made)."""
    if head[:2] == GZIP_MAGIC:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return False
    return _JSON_OBJECT_START.match(head) is not None


def is_trace_file(path: str | os.PathLike, head: bytes) -> bool:
    """A PyTorch profiler trace to read: named ``*.pt.trace.json[.gz]``, or under any name
    but ``*.xplane.pb`` (always XSpace) when its first bytes ``head`` look like one."""
    name = os.fspath(path)
    if name.endswith(PROFILE_SUFFIX):
        return False
    return is_pytorch_trace(name) or looks_like_trace(head)


def file_head(path: str | os.PathLike) -> bytes:
    """A local file's first ``SNIFF_BYTES`` (empty when it cannot be read: the reader that
    follows reports why)."""
    return head_regular(path, SNIFF_BYTES)  # never opens a FIFO or a device


def trace_worker(path: str | os.PathLike) -> tuple[str, str]:
    """``<worker>.<timestamp>.pt.trace.json[.gz]`` -> (worker, timestamp); a name without a
    timestamp (a renamed trace) is all worker. Worker names may hold dots (host names).
    Other ``*.json[.gz]`` names are split the same way."""
    name = os.path.basename(os.fspath(path))
    suffixes = TRACE_SUFFIXES + JSON_SUFFIXES
    stem = next((name[: -len(s)] for s in suffixes if name.endswith(s)), name)
    worker, _, stamp = stem.rpartition(".")
    return (worker, stamp) if worker and stamp.isdigit() else (stem, "")


def host_name(path: str | os.PathLike) -> str:
    """``.../<host>.xplane.pb`` -> ``<host>`` (the host is named by its file, as XProf does);
    a PyTorch trace's host is its worker."""
    name = os.path.basename(os.fspath(path))
    if name.endswith(PROFILE_SUFFIX):
        return name[: -len(PROFILE_SUFFIX)]
    if name.endswith(JSON_SUFFIXES):  # ``*.pt.trace.json[.gz]`` among them
        return trace_worker(name)[0]
    return name


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
        """(size in bytes, mtime) of a file (links followed)."""
        if self.remote:
            st = self._gfile.stat(path)
            return int(st.length), float(getattr(st, "mtime_nsec", 0))
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns

    def mode(self, path: str) -> int | None:
        """A local file's ``st_mode`` (links followed); None for remote files."""
        return None if self.remote else os.stat(path).st_mode

    def read(self, path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        """A file's bytes, at most ``max_bytes`` (FileTooLarge past them); a local file only
        when regular (ProfileError otherwise: a FIFO or a device is never opened)."""
        if not self.remote:
            return read_regular(path, max_bytes)
        with self._gfile.GFile(path, "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise FileTooLarge(path, f"larger than the {max_bytes / 1e6:g} MB limit")
        return data

    def head(self, path: str) -> bytes:
        """The first ``SNIFF_BYTES`` of a file (empty when it cannot be read)."""
        try:
            if self.remote:
                with self._gfile.GFile(path, "rb") as f:
                    return f.read(SNIFF_BYTES)
            return head_regular(path, SNIFF_BYTES)
        except Exception:  # any filesystem's error: the file is only not looked into
            return b""


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


@dataclass
class Scan:
    """What a walk of a logdir found: its runs, per folder the ``*.json[.gz]`` files that
    look like PyTorch traces but are not read, for their names (``skipped_note``), and the
    ``*.xplane.pb`` files outside the ``plugins/profile/<run>/`` layout (``stray_note``; the
    first STRAY_LISTED of them, ``stray_count`` in all)."""

    runs: dict[str, Run]
    skipped: dict[str, list[str]] = field(default_factory=dict)
    stray: list[str] = field(default_factory=list)
    stray_count: int = 0


STRAY_LISTED = 20  # stray XSpace files a walk keeps by name (the rest are counted)
STRAY_NAMED = 3  # ... and a note names


def stray_note(logdir: str, paths: list[str], count: int | None = None) -> str:
    """The advice for ``*.xplane.pb`` files a logdir holds outside ``plugins/profile/<run>/``
    (paths shown under the logdir): where to move them so they are read."""
    count = len(paths) if count is None else count
    shown = [_under(logdir, p) for p in paths[:STRAY_NAMED]]
    listed = ", ".join(shown) + (f" and {count - len(shown):,} more" if count > len(shown) else "")
    return (
        f"{count:,} *{PROFILE_SUFFIX} file{'' if count == 1 else 's'} outside the "
        f"plugins/profile/<run>/ layout {'is' if count == 1 else 'are'} not read ({listed}): a "
        f"logdir's profiles are read from <logdir>/[<name>/]plugins/profile/<run>/<host>"
        f"{PROFILE_SUFFIX}, as jax.profiler.trace and tf.profiler write them; move "
        f"{'it' if count == 1 else 'them'} into such a folder, e.g. "
        f"plugins/profile/run1/<host>{PROFILE_SUFFIX} (one folder per run, one file per host)"
    )


def _under(logdir: str, path: str) -> str:
    """``path`` as shown: under the logdir, with ``/`` separators."""
    rel = path[len(logdir) :] if logdir and path.startswith(logdir) else path
    return rel.lstrip("/\\").replace("\\", "/") or path


def skipped_note(folder: str, names: list[str]) -> str:
    """The advice for traces a logdir folder holds under names discovery does not read."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    one = len(names) == 1
    what = (
        "looks like a PyTorch profiler trace is" if one else "look like PyTorch profiler traces are"
    )
    return (
        f"{folder}: {counted(len(names), 'JSON file')} that {what} not read ({shown}): a "
        f"logdir's traces are read from files named {TRACE_NAME} (as "
        f"torch.profiler.tensorboard_trace_handler writes them); rename {'it' if one else 'them'} "
        "so, e.g. worker0.1.pt.trace.json, or give the file to the tb-roofline command line"
    )


def discover(logdir: str, max_dirs: int = MAX_DIRS) -> dict[str, Run]:
    """Every profile run under ``logdir`` with its hosts; runs without profiles are left out."""
    return scan(logdir, max_dirs).runs


def scan(logdir: str, max_dirs: int = MAX_DIRS) -> Scan:
    """``discover``'s runs, and the JSON traces under other names it skipped (in folders
    without XSpace, at most SNIFF_PER_FOLDER files a folder looked into, SNIFF_BYTES each)."""
    if not logdir:
        return Scan({})
    fs = filesystem(logdir)
    runs: dict[str, Run] = {}
    skipped: dict[str, list[str]] = {}
    sniffs_left = SNIFF_PER_WALK
    stray: list[str] = []
    stray_count = 0
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
        elif xspace:  # not in a run folder: never read, but said (stray_note)
            stray_count += len(xspace)
            stray.extend(fs.join(dirpath, f) for f in xspace[: max(STRAY_LISTED - len(stray), 0)])
        if not xspace and sniffs_left > 0:  # beside an XSpace, JSON is its producer's trace
            others = sorted(f for f in filenames if f.endswith(JSON_SUFFIXES) and f not in traces)
            others = others[: min(SNIFF_PER_FOLDER, sniffs_left)]
            sniffs_left -= len(others)
            looked = [f for f in others if looks_like_trace(fs.head(fs.join(dirpath, f)))]
            if looked:
                skipped[dirpath] = looked
        if name is None or not found:
            continue
        run = runs.setdefault(name, Run(name=name, path=dirpath))
        for host, filename in found.items():
            if host:
                run.hosts[host] = HostFile(host, fs.join(dirpath, filename))
    return Scan(dict(sorted(runs.items())), skipped, stray, stray_count)


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
