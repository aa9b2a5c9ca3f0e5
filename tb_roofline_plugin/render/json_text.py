"""JSON text written column by column, identical to ``json.dumps`` of the row dicts.

Tens of thousands of records are too many to render through a dict per row and
``json.dumps``. With the compiled writer (``_text.c``, built by setup.py where a compiler is
available) whole rows are written from the columns in one C pass: ``rows_text`` of a row
template of ``Field`` cells. Without it (or with ``TB_ROOFLINE_PURE=1``; tests compare the
two) each column becomes JSON text once (``float.__repr__`` runs once per distinct number) and
each row is one ``%`` format of a template. The text is what ``json.dumps`` writes with its
defaults (ASCII, ``NaN``/``Infinity``), with or without ``indent``.
"""

from __future__ import annotations

import json
import os
from json.encoder import encode_basestring_ascii
from typing import Any, BinaryIO, Callable, Iterable, Iterator, NamedTuple

import numpy as np

from ..platforms.in_threads import thread_map
from ..xspace.event_table import PURE_ENV  # the switch of every compiled part

_text: Any
try:
    from . import _text  # type: ignore[attr-defined,no-redef]
except ImportError:  # built without a C compiler: the renderers write their text in Python
    _text = None

_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
ROWS_IN_THREADS = 512  # rows of one JSON list worth writing in two threads at once


def compiled_writer() -> bool:
    """Whether rows are written by the compiled writer (built, and not turned off)."""
    return _text is not None and os.environ.get(PURE_ENV, "") in ("", "0")


def write_pieces(file: BinaryIO, pieces: Iterable[str]) -> None:
    """Writes text pieces as UTF-8 to an unbuffered binary file, one after the other as they
    are made; with the compiled writer straight from each str's bytes (``_text.write_fd``:
    a big datatable's pieces are never encoded into copies)."""
    compiled = compiled_writer() and hasattr(_text, "write_fd")
    for piece in pieces:
        if compiled:
            _text.write_fd(file.fileno(), piece)
            continue
        data = memoryview(piece.encode("utf-8"))
        while data:  # an unbuffered write may take only part
            data = data[file.write(data) or 0 :]


# --- the compiled writer's row templates --------------------------------------------------------

FLOAT, INT, BOOL, TABLE, STR = 1, 2, 3, 4, 5  # cell kinds of _text.rows


class Field(NamedTuple):
    """One cell of a row template, after its ``literal``; present in the rows where ``mask``
    is true (None: every row)."""

    literal: str
    kind: int
    values: Any  # a numpy column, or for STR a list of str
    extra: Any = None  # the kind's form or texts (see the helpers below)
    mask: np.ndarray | None = None


def _mask(mask: np.ndarray | None) -> np.ndarray | None:
    return None if mask is None else np.ascontiguousarray(mask, bool)


def float_field(literal: str, values: np.ndarray, form: str = "json", mask=None) -> Field:
    """float64 numbers as ``json.dumps`` (``json``) or ``repr`` (``repr``) writes them."""
    values = np.ascontiguousarray(values, np.float64)
    return Field(literal, FLOAT, values, 0 if form == "json" else 1, _mask(mask))


def int_field(literal: str, values: np.ndarray, quoted: bool = False, mask=None) -> Field:
    """Integers in decimal; ``quoted``: as JSON strings (protobuf JSON's 64-bit integers)."""
    return Field(literal, INT, np.ascontiguousarray(values), 1 if quoted else 0, _mask(mask))


def bool_field(literal: str, values: np.ndarray, texts=("true", "false"), mask=None) -> Field:
    """Booleans as ``texts`` (true, false): JSON's, or ``("True", "False")`` for CSV."""
    values = np.ascontiguousarray(values, bool)
    return Field(literal, BOOL, values, tuple(t.encode() for t in texts), _mask(mask))


def table_field(literal: str, codes: np.ndarray, texts: list[str], mask=None) -> Field:
    """Each row's text from ``texts`` (already written: JSON text, CSV field) by its code."""
    codes = np.ascontiguousarray(codes)
    return Field(literal, TABLE, codes, [t.encode() for t in texts], _mask(mask))


def str_field(literal: str, values, form: str = "json", mask=None) -> Field:
    """str values as JSON strings (``json``) or CSV fields with ``"`` doubled (``csv``)."""
    values = values.tolist() if isinstance(values, np.ndarray) else list(values)
    return Field(literal, STR, values, 0 if form == "json" else 1, _mask(mask))


def rows_text(
    fields: list[Field], tail: str, separator: str, start: int = 0, stop: int | None = None
) -> str:
    """Rows ``start`` to ``stop`` (default: all) of a template, joined by ``separator``: each
    row is, for each field present in it, the field's literal and its cell, then ``tail``."""
    if stop is None:
        stop = min((len(f.values) for f in fields), default=0)
    specs = [(f.literal.encode(), f.kind, f.values, f.extra, f.mask) for f in fields]
    return _text.rows(specs, start, stop, separator.encode(), tail.encode())


def object_literals(keys: list[str], indent: int | None, level: int) -> tuple[list[str], str]:
    """The literal before each key's value in one dict at nesting ``level`` (as
    ``json.dumps`` lays it out), and the dict's closing text; the first key is in every row."""
    inner = _pad(indent, level + 1)
    between = "," + inner if indent is not None else ", "
    names = [encode_basestring_ascii(k) + ": " for k in keys]
    literals = ["{" + inner + names[0]] + [between + name for name in names[1:]]
    return literals, _pad(indent, level) + "}"


def nested_object_fields(
    literal: str,
    items: list[tuple[str, Callable[[str, np.ndarray], Field]]],
    present: list[np.ndarray],
    mask: np.ndarray,
    indent: int | None,
    level: int,
) -> list[Field]:
    """A dict value at ``level``, after ``literal``, in the rows where ``mask`` is true; each of
    its keys only where ``present`` says (``{}`` where none is): ``items`` are (key, the
    field of its value given a literal and a mask)."""
    inner = _pad(indent, level + 1)
    between = "," + inner if indent is not None else ", "
    before = np.zeros(len(mask), bool)  # a key was written before, in each row
    fields = [_nothing(literal + "{}", mask & ~np.logical_or.reduce(present, initial=False))]
    for (key, make), here in zip(items, present):
        here = mask & here
        name = encode_basestring_ascii(key) + ": "
        fields.append(make(literal + "{" + inner + name, here & ~before))
        fields.append(make(between + name, here & before))
        before = before | here
    fields.append(_nothing(_pad(indent, level) + "}", before))
    return fields


def _nothing(literal: str, mask: np.ndarray) -> Field:
    """Only ``literal``, in the rows of ``mask``."""
    return table_field(literal, np.zeros(len(mask), np.int8), [""], mask)


def list_rows_pieces(fields: list[Field], tail: str, indent: int | None, level: int) -> list[str]:
    """A JSON list at ``level`` of one row of ``fields`` (items at ``level + 1``) per row, in
    pieces (the rows are a piece or two, never copied to be put together): from
    ROWS_IN_THREADS rows, two halves written at once in two threads (``_text`` lets the GIL
    go), as a step's ~2,000 records are."""
    count = min((len(f.values) for f in fields), default=0)
    if not count:
        return ["[]"]
    separator = "," + _pad(indent, level + 1) if indent is not None else ", "
    parts = 2 if count >= ROWS_IN_THREADS else 1
    bounds = [count * k // parts for k in range(parts + 1)]
    texts = thread_map(
        lambda span: rows_text(fields, tail, separator, *span), list(zip(bounds, bounds[1:]))
    )
    pieces = ["[" + _pad(indent, level + 1)]
    for i, text in enumerate(texts):
        pieces += [separator, text] if i else [text]
    return pieces + [_pad(indent, level) + "]"]


def column_field(literal: str, values: np.ndarray | list) -> Field:
    """A column as the JSON values of its Python items: str, float, bool or int."""
    if isinstance(values, list) or values.dtype == object:
        return str_field(literal, values)
    if values.dtype == np.float64:
        return float_field(literal, values)
    if values.dtype == bool:
        return bool_field(literal, values)
    return int_field(literal, values)


def float_columns_text(columns: list[np.ndarray], form: str = "json") -> list[list[str]]:
    """Several float64 columns as text: ``json`` (as ``json.dumps`` writes numbers) or
    ``repr`` (also ``str``, so what csv writes).

    Shortest-repr formatting is the cost of rendering, so each distinct value (by its
    bits: -0.0 is not 0.0) is formatted once over all the columns: the two
    include_infeed_outfeed sets of records share most of their values, and zeros abound.
    """
    if not columns:
        return []
    stacked = np.stack([np.asarray(c, np.float64) for c in columns])
    bits, inverse = np.unique(stacked.view(np.int64).ravel(), return_inverse=True)
    distinct = bits.view(np.float64)
    texts = list(map(float.__repr__, distinct.tolist()))
    if form == "json":
        for i in np.flatnonzero(~np.isfinite(distinct)).tolist():
            texts[i] = _NON_FINITE[texts[i]]
    table = np.array(texts, object)[inverse.reshape(stacked.shape)]
    return [row.tolist() for row in table]


def float_texts(values: np.ndarray) -> list[str]:
    """JSON numbers of float64 values, as ``json.dumps`` writes them."""
    return float_columns_text([values])[0]


def int_texts(values: np.ndarray) -> list[str]:
    return list(map(str, np.asarray(values).tolist()))


def string_texts(values) -> list[str]:
    """JSON strings (ASCII, escaped) of a column of str."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    return list(map(encode_basestring_ascii, values))


def bool_texts(values: np.ndarray) -> list[str]:
    return np.where(np.asarray(values, bool), "true", "false").tolist()


def _pad(indent: int | None, level: int) -> str:
    return "\n" + " " * (indent * level) if indent is not None else ""


def _bracketed(opening: str, items: list[str], closing: str, indent: int | None, level: int):
    """Items between brackets, laid out as ``json.dumps`` lays out a container at ``level``."""
    if not items:
        return opening + closing
    if indent is None:
        return opening + ", ".join(items) + closing
    inner = _pad(indent, level + 1)
    return opening + inner + ("," + inner).join(items) + _pad(indent, level) + closing


def object_template(keys: list[str], indent: int | None, level: int) -> str:
    """A ``%`` template of one dict with ``keys`` at nesting ``level``, values as ``%s``."""
    items = [encode_basestring_ascii(k).replace("%", "%%") + ": %s" for k in keys]
    return _bracketed("{", items, "}", indent, level)


def objects_text(keys: list[str], columns: list[list[str]], indent: int | None, level: int):
    """The JSON text of one dict per row (``columns``: each key's values as JSON text)."""
    template = object_template(keys, indent, level)
    return [template % row for row in zip(*columns)]


def list_text(items: list[str], indent: int | None, level: int) -> str:
    """A JSON list of items already written as JSON text at ``level + 1``."""
    return _bracketed("[", items, "]", indent, level)


def value_text(value, indent: int | None, level: int) -> str:
    """``json.dumps`` of a small value, nested at ``level``."""
    text = json.dumps(value, indent=indent)
    return text.replace("\n", _pad(indent, level)) if indent is not None else text


def placeholder_id() -> str:
    """A random name for a placeholder no profile's text holds (128 bits)."""
    return os.urandom(16).hex()


def dumps_pieces(
    document, parts: dict[tuple, str | Iterable[str]], indent: int | None
) -> Iterator[str] | None:
    """The pieces of ``json.dumps(document)`` with the value at each path of ``parts`` (keys
    or indices) replaced by its text (that value's JSON at its nesting level, one str or
    pieces of it); None if a placeholder is not unique in the text.

    The big parts are written column-wise, the small rest by ``json.dumps``; kept as pieces,
    a big text is never copied whole to be put together, and a part given as an iterator
    is made piece by piece as the pieces are written (never all held at once).
    """
    tokens = {}
    originals = []
    for path, text in parts.items():
        token = f'"tb-roofline-{placeholder_id()}"'
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        originals.append((parent, path[-1], parent[path[-1]]))
        parent[path[-1]] = token[1:-1]
        tokens[token] = text
    try:
        skeleton = json.dumps(document, indent=indent)
    finally:
        for parent, key, value in reversed(originals):
            parent[key] = value
    places = sorted((skeleton.find(token), token) for token in tokens)
    if any(skeleton.count(token) != 1 for token in tokens):
        return None
    return _spliced(skeleton, places, tokens)


def _spliced(skeleton: str, places: list, tokens: dict) -> Iterator[str]:
    start = 0
    for place, token in places:
        text = tokens[token]
        yield skeleton[start:place]
        if isinstance(text, str):
            yield text
        else:
            yield from text
        start = place + len(token)
    yield skeleton[start:]


def dumps_with(document, parts: dict[tuple, str | Iterable[str]], indent: int | None) -> str | None:
    """``json.dumps(document)`` with the text of ``parts`` at their paths (``dumps_pieces``)."""
    pieces = dumps_pieces(document, parts, indent)
    return None if pieces is None else "".join(pieces)
