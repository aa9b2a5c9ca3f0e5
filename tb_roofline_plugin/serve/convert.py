"""Converting one host's profile file: the unit of work of worker processes and Dask tasks."""

from __future__ import annotations

import os

from ..errors import ProfileError, UnreadableProfile
from ..files import DEFAULT_MAX_BYTES
from ..ops.op_stats import OpStats
from ..ops.selection import check_device
from ..platforms.analysis import analyze_decoded
from ..xspace.discovery import SNIFF_BYTES, filesystem, is_trace_file
from ..xspace.profile_reader import decode_profile
from . import stats_store


def convert_file(
    path: str,
    peaks: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    device: int | None = None,
) -> OpStats:
    """OpStats of one host's file, ``<host>.xplane.pb`` or a PyTorch trace (local or
    remote), the file and a trace's unpacked text at most ``max_bytes``; ProfileError for
    bad input (a FIFO or a device is refused unopened). ``device``: one of the host's
    devices (None: all)."""
    fs = filesystem(path)
    perf_env = None
    if peaks:
        from ..peaks.devices import load_perf_env

        perf_env = load_perf_env(peaks)
    try:
        data = fs.read(path, max_bytes)
    except OSError as exc:
        raise UnreadableProfile(path, f"cannot be read ({exc.strerror or exc})") from None
    if is_trace_file(path, data[:SNIFF_BYTES]):
        check_device(device, [])
        from ..kineto import analyze_trace  # only for PyTorch traces: not imported otherwise

        return analyze_trace(path, perf_env, data, max_bytes)
    profile = decode_profile(data, path)  # the bytes live in the profile only
    del data
    profile.release_lines = True
    return analyze_decoded(profile, path, perf_env, device)


def convert_or_none(
    path: str, peaks: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> OpStats | None:
    """``convert_file`` in a worker process: None for any failure, whose error the parent
    makes again (exceptions need not survive pickling)."""
    try:
        return convert_file(path, peaks, max_bytes)
    except Exception:
        return None


def convert_to_store(path: str, cache_dir: str, peaks: str | None = None) -> tuple[str, str]:
    """Converts ``path`` into ``cache_dir``; returns (path, "ok" | "cached" | the error)."""
    fs = filesystem(path)
    size, mtime = fs.stat(path)
    key = stats_store.cache_key(path, size, mtime, peaks)
    if os.path.exists(os.path.join(cache_dir, f"{key}.npz")):
        return path, "cached"
    try:
        stats_store.save(cache_dir, key, convert_file(path, peaks))
    except ProfileError as exc:
        return path, str(exc)
    return path, "ok"
