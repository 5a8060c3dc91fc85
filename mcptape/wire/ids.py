"""JSON-RPC ids: the exact text a peer wrote, and the key peers compare ids by.

orjson reads integers of 2^64 and above as floats and every parser forgets how a number
or a string was spelled (``1.0``, ``1e0``, ``"\\u00e9"``), but a peer expects its id back
as it wrote it. :func:`id_text` recovers the wire text of a parsed id from the frame;
:func:`id_key` says when two id texts name the same request.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import orjson

from mcptape.wire.jsontext import compact_json, id_candidate, member_span

_MINUS_ZERO = re.compile(rb"-0[ \t\n\r,}\]]")


def encode_id(value: Any) -> str:
    """A parsed id re-encoded as compact JSON (not its wire text: see :func:`id_text`)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def id_text(value: Any, data: bytes | str) -> str:
    """The wire text of ``value``, the parsed ``id`` member of the JSON object ``data``
    (its bytes, or its text when already decoded).

    Exact: only an object or array id, which JSON-RPC does not allow, loses its
    whitespace outside strings. Cheap for the ids peers use (integers; strings in a
    frame without escapes; an id first or last in the object).
    """
    kind = type(value)
    if kind is int:
        # JSON spells every integer one way, but zero also as -0 (rare: look for it).
        if value != 0 or _MINUS_ZERO.search(data if isinstance(data, bytes) else data.encode()) is None:
            return str(value)
    elif value is None:
        return "null"
    elif kind is bool:
        return "true" if value else "false"
    elif kind is str and ("\\" not in data if isinstance(data, str) else b"\\" not in data):
        # Without a backslash in the frame no string is escaped: its text is its value.
        return '"' + value + '"'
    # Floats (orjson's reading of 2^64 as of 1e0), escaped strings, zero, objects, arrays.
    candidate = id_candidate(data)
    if candidate is not None and _same_id(candidate, value):
        return candidate
    source = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
    span = member_span(source, "id")
    if span is None:  # cannot happen for text a parser accepted; stay total anyway
        return encode_id(value)
    raw = source[span[0] : span[1]]
    return raw if raw[:1] not in ("{", "[") else compact_json(raw)


def _same_id(text: str, value: Any) -> bool:
    """Whether the id text ``text`` reads as ``value`` (orjson's reading, floats for 2^64)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    if isinstance(value, str) or isinstance(parsed, str):
        return isinstance(value, str) and parsed == value
    if isinstance(value, bool) or isinstance(parsed, bool):
        return parsed is value
    if type(value) is int:
        return type(parsed) is int and parsed == value
    if isinstance(value, float) and isinstance(parsed, int | float):
        return float(parsed) == value
    return False


def id_key(rpc_id_text: str) -> str:
    """The correlation key of an id's wire text: equal keys for ids peers take as equal.

    JSON-RPC peers compare ids by value after parsing: numbers numerically (``1``,
    ``1.0``, ``1e0`` and ``10e-1`` are one id; ``18446744073709551616`` and
    ``18446744073709551617`` are two, compared exactly as decimals, not as doubles),
    strings by their characters (``"\\u00e9"`` and ``"é"`` are one id), and a string
    never equals a number (``"1"`` is not ``1``). The key is JSON text too: a number
    in its shortest plain decimal form (``1``, ``1.5``, ``100``; a mantissa and
    exponent, ``15e99``, when plain would be long), a string as compact JSON, ``null``,
    ``true`` and ``false`` as they are; an object or array id (not allowed by JSON-RPC)
    is its text without whitespace. For the common ids (``7``, ``"abc"``) the key is the
    id text itself. Never raises: text that is no JSON value is its own key.
    """
    text = rpc_id_text.strip(" \t\n\r")
    first = text[:1]
    if first == '"':
        if "\\" not in text:
            return text  # unescaped JSON string text is already compact JSON
        try:
            value = json.loads(text)
        except ValueError:
            return text
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # lone surrogates: ASCII escapes keep the key valid UTF-8
            return json.dumps(value)
    if first == "-" or first.isdigit():
        # The common id, a plain integer (no sign, no leading zero), is its own key.
        if text.isdigit() and text.isascii() and (first != "0" or len(text) == 1):
            return text
        return _number_key(text)
    if first in ("{", "["):
        return compact_json(text)
    return text


def _number_key(text: str) -> str:
    try:
        number = Decimal(text)
    except (ArithmeticError, ValueError):
        return text
    if not number.is_finite():
        return text
    sign, digit_tuple, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    if not digits:
        return "0"  # -0, 0.0 and 0e5 are all zero
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    minus = "-" if sign else ""
    # Plain decimals while short; the cut-off keeps 1e999999999 from becoming a huge key.
    if 0 <= exponent <= 64:
        return minus + stripped + "0" * exponent
    if -64 <= exponent < 0:
        point = len(stripped) + exponent
        if point > 0:
            return f"{minus}{stripped[:point]}.{stripped[point:]}"
        return f"{minus}0.{'0' * -point}{stripped}"
    return f"{minus}{stripped}e{exponent}"
