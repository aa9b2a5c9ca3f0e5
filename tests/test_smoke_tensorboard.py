"""One real ``tensorboard`` process with the installed plugin: listed, serves data, stops."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from tiny_tpu import tiny_tpu


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, timeout: float = 10.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read()


@pytest.fixture
def tensorboard_server(tmp_path):
    profile = tmp_path / "plugins/profile/run1/tiny.xplane.pb"
    profile.parent.mkdir(parents=True)
    profile.write_bytes(tiny_tpu().SerializeToString())
    port = _free_port()
    exe = Path(sys.executable).with_name("tensorboard")
    log = open(tmp_path / "tensorboard.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [str(exe), "--logdir", str(tmp_path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                text = (tmp_path / "tensorboard.log").read_text(errors="replace")
                raise AssertionError(f"tensorboard exited: {text[-2000:]}")
            try:
                if _get(f"{base}/data/plugins_listing", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("tensorboard did not answer within 90 s")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()


def test_real_tensorboard_lists_the_plugin_and_serves_data(tensorboard_server):
    status, body = _get(f"{tensorboard_server}/data/plugins_listing")
    listing = json.loads(body)
    assert status == 200 and listing["roofline"]["enabled"] is True
    status, body = _get(
        f"{tensorboard_server}/data/plugin/roofline/data?run=run1&host=tiny&tag=roofline_model"
    )
    table, _ = json.loads(body)
    assert status == 200
    assert table["rows"][0]["c"][3]["v"] == "Program"
    assert table["p"]["device_type"] == "TPU test"
