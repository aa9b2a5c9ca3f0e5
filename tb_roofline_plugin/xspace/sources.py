"""Which profile files a command-line PATH names: one file, or every host of a run folder."""

from __future__ import annotations

import os

from ..errors import NotFound, ProfileError
from .discovery import PROFILE_SUFFIX, host_name


def profile_files(path: str | os.PathLike, host: str | None = None) -> list[str]:
    """``path`` is an ``.xplane.pb`` file or a run folder (``.../plugins/profile/<run>/``)."""
    name = os.fspath(path)
    if os.path.isdir(name):
        files = sorted(
            os.path.join(name, f)
            for f in os.listdir(name)
            if f.endswith(PROFILE_SUFFIX) and os.path.isfile(os.path.join(name, f))
        )
        if not files:
            raise ProfileError(name, f"directory contains no *{PROFILE_SUFFIX} profiles")
    elif os.path.exists(name):
        files = [name]
    else:
        raise ProfileError(name, "no such file or directory")
    if host is None:
        return files
    chosen = [f for f in files if host_name(f) == host]
    if not chosen:
        hosts = ", ".join(host_name(f) for f in files)
        raise NotFound(f"{name}: no host {host!r} (hosts: {hosts})")
    return chosen
