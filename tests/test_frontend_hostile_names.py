"""The tab shows hostile names as text: a right-to-left override in a host name cannot mirror
the header or the legend, an op name's terminal escapes are shown, not passed on."""

from __future__ import annotations

import json

import pytest
from test_frontend import opened_tab, plugin_tensorboard, wait_view

RLO_HOST = "host\u202eevil"  # shown mirrored: "hostlive"
RUN = "rtl"
ESCAPE_OP = "\x1b]0;pwned\x07aten::evil"
SHOWN_HOST = "host\\u202eevil"
SHOWN_OP = "\\x1b]0;pwned\\x07aten::evil"

PAGE_TEXT = """() => [document.body.innerText, document.body.textContent,
  [...document.querySelectorAll('svg text')].map((t) => t.textContent).join(' ')]"""


def _write_trace(path) -> None:
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 0, "dur": 1000},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
    ]  # fmt: skip
    for i, name in enumerate((ESCAPE_OP, "aten::add")):
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10 + 200 * i,
             "dur": 100, "args": {"Input Dims": [[64, 64], [64, 64]],
                                  "Input type": ["float", "float"]}}
        )  # fmt: skip
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"traceEvents": events}))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("hostile_names")
    _write_trace(logdir / RUN / f"{RLO_HOST}.1.pt.trace.json")
    with plugin_tensorboard(logdir) as base, opened_tab(base) as session:
        yield session


def test_bidi_overrides_and_escapes_in_names_are_shown_as_text(page):
    frame = page.frame()
    wait_view(frame, run=RUN, host=RLO_HOST)
    frame.wait_for_selector("#op-table tbody tr")
    frame.wait_for_function(
        "() => { const gd = document.getElementById('op-chart'); return gd && gd.data; }"
    )
    header = frame.locator("#model-view .selection-label").text_content()
    assert SHOWN_HOST in header and "\u202e" not in header
    # The name sits in an isolating element: nothing around it can be reordered by it.
    assert (
        frame.evaluate(
            "() => getComputedStyle(document.querySelector('.selection-label bdi')).unicodeBidi"
        )
        == "isolate"
    )
    options = frame.locator("#host-select option").all_text_contents()
    assert options == [SHOWN_HOST]
    assert frame.locator("#host-select").input_value() == RLO_HOST  # the value stays the name
    names = frame.locator("#op-table .op-name").all_text_contents()
    assert SHOWN_OP in names and "aten::add" in names
    for text in frame.evaluate(PAGE_TEXT):
        for hidden in ("\u202e", "\x1b", "\x07"):
            assert hidden not in text, (hidden, text[:200])
    assert page.errors == [] and page.dialogs == []
