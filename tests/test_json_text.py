"""JSON text written column-wise is byte for byte what ``json.dumps`` writes."""

from __future__ import annotations

import json

import numpy as np
import pytest

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
    monkeypatch.setattr(json_text, "placeholder_id", lambda: "fixed")
    document = {"a": [1], "note": "tb-roofline-fixed"}
    assert dumps_with(document, {("a",): "[2]"}, None) is None


# --- the compiled row writer (_text.c) against the Python path -------------------------------

compiled = pytest.mark.skipif(
    json_text._text is None, reason="the compiled row writer (_text.c) is not built"
)


def _floats_of_every_kind() -> np.ndarray:
    """Special values, random bit patterns and the families shortest-digit algorithms get
    wrong first: powers of two and ten and their neighbours, subnormals, rounded decimals."""
    rng = np.random.default_rng(15)
    special = [0.0, -0.0, 0.1, 0.3, 1 / 3, 2.5, 1e-5, 1e-4, 0.001, 1e15, 1e16, 1e17, 1e22, 1e23]
    special += [2.0**53, 2.0**53 + 2, 9007199254740993.0, 123456789012345678.0, 5e-324]
    special += [2.2250738585072014e-308, 1.7976931348623157e308, np.nan, np.inf, -np.inf]
    bits = rng.integers(0, 2**63, 100_000, dtype=np.int64) * rng.choice([1, -1], 100_000)
    powers = np.concatenate([np.ldexp(1.0, np.arange(-1074, 1024)), 10.0 ** np.arange(-300, 300)])
    scale = 10.0 ** rng.integers(0, 12, 50_000)
    return np.concatenate(
        [
            special,
            bits.view(np.float64),
            powers,
            np.nextafter(powers, 0),
            np.nextafter(powers, np.inf),
            rng.integers(1, 2**52, 20_000).view(np.float64),  # subnormals
            np.round(rng.random(50_000) * 1e6 * scale) / scale,
            rng.integers(-(2**62), 2**62, 50_000).astype(np.float64),
        ]
    )


@compiled
def test_compiled_floats_are_written_as_repr_and_json_dumps_write_them():
    values = _floats_of_every_kind()
    reprs = json_text.rows_text([json_text.float_field("", values, "repr")], "", "\n")
    assert reprs.split("\n") == list(map(float.__repr__, values.tolist()))
    numbers = json_text.rows_text([json_text.float_field("", values)], "", "\n").split("\n")
    assert numbers == [json.dumps(v) for v in values.tolist()]
    assert numbers[:10] == ["0.0", "-0.0", "0.1", "0.3", "0.3333333333333333", "2.5"] + [
        "1e-05",
        "0.0001",
        "0.001",
        "1000000000000000.0",
    ]
    assert numbers[10:15] == ["1e+16", "1e+17", "1e+22", "1e+23", "9007199254740992.0"]
    assert numbers[15:18] == ["9007199254740994.0", "9007199254740992.0", "1.2345678901234568e+17"]
    assert numbers[18:24] == ["5e-324", "2.2250738585072014e-308", "1.7976931348623157e+308"] + [
        "NaN",
        "Infinity",
        "-Infinity",
    ]


@compiled
def test_compiled_cells_of_every_kind_in_a_row_template():
    ints = np.array([0, -1, 9, 10, -(2**63)], np.int64)
    fields = [
        json_text.int_field("[", ints),
        json_text.int_field(", ", np.array([0, 2**64 - 1, 10**19, 7, 1], np.uint64), quoted=True),
        json_text.int_field(", ", np.array([-128, 127, 0, 1, 2], np.int8)),
        json_text.bool_field(", ", np.array([True, False, True, False, True])),
        json_text.table_field(", ", np.array([2, 0, 1, 1, 0], np.int32), ['"a"', "b", "{}"]),
        json_text.str_field(", ", ['q"b\\s', "\n\t\x01\x7f", "naïve", "\U0001f642", ""]),
        json_text.float_field(", m=", np.array([0.5, 0.0, 0.0, 1e300, 3.0]), mask=ints >= 0),
    ]
    text = json_text.rows_text(fields, "]", "; ")
    assert text.split("; ") == [
        '[0, "0", -128, true, {}, "q\\"b\\\\s", m=0.5]',
        '[-1, "18446744073709551615", 127, false, "a", "\\n\\t\\u0001\\u007f"]',
        '[9, "10000000000000000000", 0, true, b, "na\\u00efve", m=0.0]',
        '[10, "7", 1, false, b, "\\ud83d\\ude42", m=1e+300]',
        '[-9223372036854775808, "1", 2, true, "a", ""]',
    ]
    assert json_text.rows_text(fields, "]", "; ", start=2, stop=4) == "; ".join(
        text.split("; ")[2:4]
    )
    assert json_text.rows_text(fields, "]", "; ", start=3, stop=3) == ""
    csv_strings = [json_text.str_field('"', ['a"b', "é\r\n", ""], "csv")]
    assert json_text.rows_text(csv_strings, '"\n', "") == '"a""b"\n"é\r\n"\n""\n'


@compiled
def test_compiled_writer_rejects_columns_it_cannot_write():
    rows = json_text._text.rows
    with pytest.raises(ValueError, match="float column"):
        rows([(b"", json_text.FLOAT, np.zeros(3, np.float32), 0, None)], 0, 3, b"", b"")
    with pytest.raises(ValueError, match="float column"):
        rows([(b"", json_text.FLOAT, np.zeros(2), 0, None)], 0, 3, b"", b"")  # too short
    with pytest.raises(ValueError, match="code outside the table"):
        rows([(b"", json_text.TABLE, np.array([0, 2]), (b"x", b"y"), None)], 0, 2, b"", b"")
    with pytest.raises(TypeError, match="not a str"):
        rows([(b"", json_text.STR, ["a", 1], 0, None)], 0, 2, b"", b"")
    with pytest.raises(ValueError, match="mask"):
        rows([(b"", json_text.INT, np.zeros(2, int), 0, np.zeros(2, int))], 0, 2, b"", b"")
    with pytest.raises(ValueError, match="start"):
        rows([], 2, 1, b"", b"")


def test_pure_env_and_a_missing_extension_select_the_python_path(monkeypatch):
    monkeypatch.setenv(json_text.PURE_ENV, "1")
    assert not json_text.compiled_writer()
    monkeypatch.setenv(json_text.PURE_ENV, "0")
    assert json_text.compiled_writer() == (json_text._text is not None)
    monkeypatch.delenv(json_text.PURE_ENV)
    monkeypatch.setattr(json_text, "_text", None)
    assert not json_text.compiled_writer()


@pytest.mark.parametrize("pure", ["0", "1"], ids=["compiled", "pure"])
def test_write_pieces_writes_each_piece_as_utf8(tmp_path, monkeypatch, pure):
    """What ``cli export -o`` writes: the pieces' UTF-8, ASCII or not, an empty one too."""
    monkeypatch.setenv(json_text.PURE_ENV, pure)
    pieces = ['[{"v": 1.5}', "", ', {"v": "caf\u00e9 \u540d \U0001f600"}', "]" * 70_000]
    path = tmp_path / "out.json"
    with open(path, "wb", buffering=0) as f:
        json_text.write_pieces(f, iter(pieces))
    assert path.read_bytes() == "".join(pieces).encode("utf-8")


@pytest.mark.skipif(not json_text.compiled_writer(), reason="the compiled writer is not built")
def test_compiled_write_to_a_bad_descriptor_is_an_os_error():
    with pytest.raises(OSError, match="Bad file descriptor"):
        json_text._text.write_fd(-1, "text")
