"""One real ``tensorboard`` process with the installed plugin: listed, serves data, stops."""

from __future__ import annotations

import json
import urllib.request

import pytest
from tensorboard_process import running_tensorboard
from tiny_tpu import tiny_tpu


def _get(url: str, timeout: float = 10.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read()


@pytest.fixture
def tensorboard_server(tmp_path):
    logdir = tmp_path / "logdir"
    profile = logdir / "plugins/profile/run1/tiny.xplane.pb"
    profile.parent.mkdir(parents=True)
    profile.write_bytes(tiny_tpu().SerializeToString())
    with running_tensorboard(logdir, tmp_path / "tensorboard.log") as base:
        yield base


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
