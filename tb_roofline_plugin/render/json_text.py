"""JSON text written column by column, identical to ``json.dumps`` of the row dicts.

Tens of thousands of records are too many to render through a dict per row and
``json.dumps``: here each column becomes JSON text once (``float.__repr__`` runs on the
non-zero numbers only) and each row is one ``%`` format of a template. The text is what
``json.dumps`` writes with its defaults (ASCII, ``NaN``/``Infinity``), with or without
``indent``.
"""

from __future__ import annotations

import json
import uuid
from json.encoder import encode_basestring_ascii

import numpy as np

_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


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


def dumps_pieces(document, parts: dict[tuple, str | list[str]], indent: int | None):
    """The pieces of ``json.dumps(document)`` with the value at each path of ``parts`` (keys
    or indices) replaced by its text (that value's JSON at its nesting level, one str or
    pieces of it); None if a placeholder is not unique in the text.

    The big parts are written column-wise, the small rest by ``json.dumps``; kept as pieces,
    a big text is never copied whole to be put together.
    """
    tokens = {}
    originals = []
    for path, text in parts.items():
        token = f'"tb-roofline-{uuid.uuid4().hex}"'
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
    pieces, start = [], 0
    for place, token in places:
        text = tokens[token]
        pieces += [skeleton[start:place], *([text] if isinstance(text, str) else text)]
        start = place + len(token)
    pieces.append(skeleton[start:])
    return pieces


def dumps_with(document, parts: dict[tuple, str | list[str]], indent: int | None) -> str | None:
    """``json.dumps(document)`` with the text of ``parts`` at their paths (``dumps_pieces``)."""
    pieces = dumps_pieces(document, parts, indent)
    return None if pieces is None else "".join(pieces)
