"""Helpers of the fault and security tests: an in-process plugin that checks every response.

``Served(logdir)`` builds the plugin inside TensorBoard's real WSGI stack (one conversion
worker, so conversions run in this process where tests can observe them) and, around every
request, snapshots the logdir tree (names, sizes, mtimes) and asserts the request left it
unchanged; every response must also pass ``fuzz_support.check_response`` (no 5xx, nosniff,
JSON errors of one line, finite numbers).
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sys
from pathlib import Path

import fuzz_support as fs

BASE = fs.BASE


def tree(root: str | os.PathLike) -> list[tuple[str, int, int, bool]]:
    """(relative path, size, mtime ns, is dir) of everything under ``root``, sorted."""
    root = Path(root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            out.append((str(path.relative_to(root)), st.st_size, st.st_mtime_ns, path.is_dir()))
    return sorted(out)


class Served:
    """The plugin over ``logdir``; ``get`` checks the response and that nothing was written."""

    def __init__(self, logdir: str | os.PathLike, **flags):
        self.logdir = Path(logdir)
        self.target = fs.HttpTarget(logdir, **flags)
        self.client = self.target.client
        self.plugin = self.target.plugin
        self.responses = []

    @property
    def service(self):
        return self.plugin.service

    def get(self, route: str, check_tree: bool = True, **params):
        """(response, parsed JSON body or None).

        ``check_tree=False`` for requests racing a test that changes the logdir itself.
        """
        before = tree(self.logdir) if check_tree else None
        client = self.client if check_tree else self._thread_client()
        response = client.get(f"{BASE}/{route}", query_string=params)
        if check_tree:
            assert tree(self.logdir) == before, f"GET {route} {params} changed the logdir"
        fs.check_response(response, f"GET {route} {params}")
        self.responses.append(response)
        body = None
        if response.mimetype == "application/json":
            body = json.loads(response.get_data(as_text=True))
        return response, body

    def data(self, run: str, host: str, check_tree: bool = True, **params):
        return self.get("data", check_tree, run=run, host=host, tag="roofline_model", **params)

    def _thread_client(self):
        """A client of its own (for a request from another thread), on the same plugin."""
        from tensorboard.backend import application
        from werkzeug import test as wtest
        from werkzeug import wrappers

        return wtest.Client(application.TensorBoardWSGI([self.plugin]), wrappers.Response)


def assert_error(response, body, statuses, *names: str) -> str:
    """A JSON error with one of ``statuses`` whose one-line message contains one of ``names``."""
    assert response.status_code in statuses, (response.status_code, body)
    assert response.mimetype == "application/json"
    message = body["error"]
    assert isinstance(message, str) and message and "\n" not in message
    # A file is named under the logdir, never by the server's absolute path.
    assert not any(os.path.isabs(n) and n in message for n in names), message
    shown = [n.replace(os.sep, "/").split("/plugins/", 1)[-1] for n in names]
    assert any(n in message or s in message for n, s in zip(names, shown)), (message, names)
    return message


def patch_everywhere(monkeypatch, module, name: str, replacement) -> None:
    """Replaces ``module.name`` and every ``tb_roofline_plugin`` module's import of it."""
    original = getattr(module, name)
    for mod in list(sys.modules.values()):
        if mod is None or not getattr(mod, "__name__", "").startswith("tb_roofline_plugin"):
            continue
        if getattr(mod, name, None) is original:
            monkeypatch.setattr(mod, name, replacement)


@contextlib.contextmanager
def watch_opens(monkeypatch):
    """Records the path of every ``open()`` (builtins and io) while active."""
    opened: list[str] = []
    real_open = builtins.open

    def spy(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)):
            opened.append(os.fsdecode(file))
        return real_open(file, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", spy)
        import io

        m.setattr(io, "open", spy)
        yield opened


def chmod_blocks_reads() -> bool:
    """Does mode 000 stop this process from reading a file? (Not as root, as in CI.)"""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe"
        probe.write_bytes(b"x")
        probe.chmod(0)
        try:
            probe.read_bytes()
        except PermissionError:
            return True
        finally:
            probe.chmod(0o600)
    return False
