"""JSON text written column-wise is byte for byte what ``json.dumps`` writes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np

from tb_roofline_plugin.render import json_text
from tb_roofline_plugin.render.json_text import (
    dumps_with,
    float_columns_text,
    list_text,
    objects_text,
    string_texts,
)


def test_floats_are_written_as_json_dumps_and_repr_write_them():
    values = np.array([0.0, -0.0, 0.1, 1e-300, 2.0**70, np.nan, np.inf, -np.inf, 5.0, 0.1])
    (texts,) = float_columns_text([values])
    assert texts == [json.dumps(v) for v in values.tolist()]
    assert texts[1] == "-0.0" and texts[5:8] == ["NaN", "Infinity", "-Infinity"]
    (reprs,) = float_columns_text([values], "repr")
    assert reprs == [str(v) for v in values.tolist()]


def test_columns_sharing_values_are_each_written_whole():
    a, b = np.array([1.5, 0.0, 3.0]), np.array([3.0, 1.5, -0.0])
    assert float_columns_text([a, b]) == [["1.5", "0.0", "3.0"], ["3.0", "1.5", "-0.0"]]


def test_objects_and_lists_match_json_dumps_at_any_nesting_level():
    rows = [{"a%": 1.5, "b": "x\u00e9\n"}, {"a%": -0.0, "b": ""}]
    columns = [float_columns_text([np.array([1.5, -0.0])])[0], string_texts(["x\u00e9\n", ""])]
    for indent in (None, 1, 2):
        items = objects_text(["a%", "b"], columns, indent, 2)
        text = list_text(items, indent, 1)
        expected = json.dumps({"k": rows}, indent=indent)
        assert json.dumps({"k": "@"}, indent=indent).replace('"@"', text) == expected
    assert list_text([], 1, 3) == "[]"


def test_parts_are_spliced_in_place_of_their_values():
    document = {"a": [1, 2], "b": {"c": "small", "d": 0}, "e": True}
    parts = {("a",): "[7, 8]", ("b", "c"): '"big"'}
    assert dumps_with(document, parts, None) == json.dumps(
        {"a": [7, 8], "b": {"c": "big", "d": 0}, "e": True}
    )
    assert document == {"a": [1, 2], "b": {"c": "small", "d": 0}, "e": True}


def test_a_placeholder_found_in_the_document_gives_none(monkeypatch):
    monkeypatch.setattr(json_text.uuid, "uuid4", lambda: SimpleNamespace(hex="fixed"))
    document = {"a": [1], "note": "tb-roofline-fixed"}
    assert dumps_with(document, {("a",): "[2]"}, None) is None
