"""Which profile files a command-line PATH names: one file, or every host of a run folder."""

from __future__ import annotations

import os

from ..errors import NotFound, ProfileError
from ..files import check_regular, is_regular
from .discovery import (
    JSON_SUFFIXES,
    PROFILE_SUFFIX,
    file_head,
    host_name,
    is_pytorch_trace,
    looks_like_trace,
    trace_hosts,
)


def folder_hosts(folder: str) -> dict[str, str]:
    """{host: path} of the profiles in one run folder (XSpace hosts, PyTorch workers). A
    folder with neither, named by the user, is read for its ``*.json[.gz]`` files that look
    like traces (``prof.export_chrome_trace`` names them as it is told)."""
    names = sorted(f for f in os.listdir(folder) if is_regular(os.path.join(folder, f)))
    traces = [f for f in names if is_pytorch_trace(f)]
    xspace = [f for f in names if f.endswith(PROFILE_SUFFIX)]
    if not traces and not xspace:
        traces = [
            f
            for f in names
            if f.endswith(JSON_SUFFIXES) and looks_like_trace(file_head(os.path.join(folder, f)))
        ]
    hosts = trace_hosts(traces)
    hosts.update((host_name(f), f) for f in xspace)
    return {host: os.path.join(folder, f) for host, f in sorted(hosts.items())}


def profile_files(path: str | os.PathLike, host: str | None = None) -> list[str]:
    """``path`` is a profile file (``.xplane.pb``, a PyTorch trace of any name) or a run
    folder (``.../plugins/profile/<run>/``, or a folder of PyTorch traces)."""
    name = os.fspath(path)
    if os.path.isdir(name):
        hosts = folder_hosts(name)
        if not hosts:
            raise ProfileError(
                name,
                f"directory contains no *{PROFILE_SUFFIX} profiles or PyTorch profiler traces "
                "(*.json[.gz])",
            )
    elif os.path.exists(name):
        check_regular(name)  # a FIFO would block, /dev/zero never end: refused unopened
        hosts = {host_name(name): name}
    else:
        raise ProfileError(name, "no such file or directory")
    if host is None:
        return list(hosts.values())
    if host not in hosts:
        raise NotFound(f"{name}: no host {host!r} (hosts: {', '.join(hosts)})")
    return [hosts[host]]
