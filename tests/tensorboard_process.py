"""A real ``tensorboard`` process on 127.0.0.1 for the tests that need one (smoke, browser)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_tensorboard(
    logdir: Path,
    log_path: Path,
    timeout_s: float = 90,
    extra_args: tuple[str, ...] = (),
    command: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Starts ``tensorboard --logdir LOGDIR [extra_args]`` on a free port; yields its base URL,
    then stops it. ``command``: what to run instead of the ``tensorboard`` script (e.g. a
    test wrapper, ``python tests/slow_tensorboard.py``), given the same arguments; ``env``:
    variables added to this process's environment for it.

    Waits until ``/data/plugins_listing`` answers; if the process dies or stays silent for
    ``timeout_s``, fails with the end of its log.
    """
    exe = command or (str(Path(sys.executable).with_name("tensorboard")),)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [*exe, "--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)]
            + list(extra_args),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                if proc.poll() is not None:
                    text = log_path.read_text(errors="replace")
                    raise AssertionError(f"tensorboard exited: {text[-2000:]}")
                try:
                    with urllib.request.urlopen(f"{base}/data/plugins_listing", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError(f"tensorboard did not answer within {timeout_s:g} s")
                time.sleep(0.2)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
