"""Which profile files a command-line PATH names: one file, or every host of a run folder."""

from __future__ import annotations

import os

from ..errors import NotFound, ProfileError
from .discovery import PROFILE_SUFFIX, host_name, is_pytorch_trace, trace_hosts


def folder_hosts(folder: str) -> dict[str, str]:
    """{host: path} of the profiles in one run folder (XSpace hosts, PyTorch workers)."""
    names = sorted(f for f in os.listdir(folder) if os.path.isfile(os.path.join(folder, f)))
    hosts = trace_hosts([f for f in names if is_pytorch_trace(f)])
    hosts.update((host_name(f), f) for f in names if f.endswith(PROFILE_SUFFIX))
    return {host: os.path.join(folder, f) for host, f in sorted(hosts.items())}


def profile_files(path: str | os.PathLike, host: str | None = None) -> list[str]:
    """``path`` is a profile file (``.xplane.pb``, ``.pt.trace.json[.gz]``) or a run folder
    (``.../plugins/profile/<run>/``, or a folder of PyTorch traces)."""
    name = os.fspath(path)
    if os.path.isdir(name):
        hosts = folder_hosts(name)
        if not hosts:
            raise ProfileError(
                name, f"directory contains no *{PROFILE_SUFFIX} or *.pt.trace.json profiles"
            )
    elif os.path.exists(name):
        hosts = {host_name(name): name}
    else:
        raise ProfileError(name, "no such file or directory")
    if host is None:
        return list(hosts.values())
    if host not in hosts:
        raise NotFound(f"{name}: no host {host!r} (hosts: {', '.join(hosts)})")
    return [hosts[host]]
