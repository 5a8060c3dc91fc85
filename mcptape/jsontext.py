"""JSON source text: where a member or element of an already validated JSON text lies.

Parsers give values, not the text they came from; an id must go back to a peer as the
peer wrote it (``1.0``, ``"\\u00e9"``, ``18446744073709551617``). These scanners find
spans in text that a JSON parser has already accepted, without recursion (nesting of
any depth) and with regular expressions doing the per-character work.
"""

from __future__ import annotations

import json
import re
from typing import Final

_WS: Final = re.compile(r"[ \t\n\r]*")
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# The tokens that matter when skipping a container: whole strings (so brackets inside
# them are ignored) and brackets.
_TOKEN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)
_SCALAR_END: Final = re.compile(r"[ \t\n\r,\]}]")
_SCALAR = r'(?:"[^"\\]*(?:\\.[^"\\]*)*"|-?[0-9][0-9.eE+-]*|true|false|null)'
# Where JSON-RPC peers put the id: first, after "jsonrpc" (and "method"), or last (the
# TypeScript SDK writes responses as {"result":...,"jsonrpc":"2.0","id":...}).
_HEAD_ID: Final = re.compile(
    r'[ \t\n\r]*\{[ \t\n\r]*(?:"(?:jsonrpc|method)"[ \t\n\r]*:[ \t\n\r]*"[^"\\]*"[ \t\n\r]*,[ \t\n\r]*){0,2}'
    r'"id"[ \t\n\r]*:[ \t\n\r]*(' + _SCALAR + r")[ \t\n\r]*[,}]"
)
_TAIL_ID: Final = re.compile(
    r'[{,][ \t\n\r]*"id"[ \t\n\r]*:[ \t\n\r]*(' + _SCALAR + r")[ \t\n\r]*\}[ \t\n\r]*\Z"
)
TAIL_CHARS: Final = 4096
_COMPACT: Final = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|[ \t\n\r]+', re.S)


def _ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


def skip_value(text: str, i: int) -> int:
    """The end of the JSON value starting at ``text[i]`` (valid JSON assumed)."""
    c = text[i]
    if c == '"':
        m = _STRING.match(text, i)
        if m is None:
            raise ValueError("unterminated string")
        return m.end()
    if c in "[{":
        depth = 0
        for m in _TOKEN.finditer(text, i):
            ch = text[m.start()]
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
                if depth == 0:
                    return m.end()
        raise ValueError("unterminated container")
    m = _SCALAR_END.search(text, i)
    return m.start() if m else len(text)


def member_span(text: str, key: str) -> tuple[int, int] | None:
    """The span of member ``key``'s value in the JSON object ``text`` (the last one wins,
    as parsers do with duplicate keys); None when ``text`` is no object or lacks ``key``."""
    i = _ws(text, 0)
    if not text.startswith("{", i):
        return None
    found = None
    i = _ws(text, i + 1)
    while i < len(text) and text[i] != "}":
        m = _STRING.match(text, i)
        if m is None:
            return found
        name = m.group()
        i = _ws(text, m.end())
        if not text.startswith(":", i):
            return found
        start = _ws(text, i + 1)
        end = skip_value(text, start)
        if ("\\" in name and json.loads(name) == key) or name[1:-1] == key:
            found = (start, end)
        i = _ws(text, end)
        if text.startswith(",", i):
            i = _ws(text, i + 1)
    return found


def id_candidate(text: str) -> str | None:
    """The text of a scalar ``id`` member where peers usually put it, or None.

    Cheap (no scan of the whole text) but not authoritative with duplicate keys:
    callers check it against the parsed id and fall back to :func:`member_span`.
    """
    m = _HEAD_ID.match(text)
    if m is None:
        m = _TAIL_ID.search(text, max(0, len(text) - TAIL_CHARS))
    return m.group(1) if m else None


def element_spans(text: str) -> list[tuple[int, int]] | None:
    """The spans of the elements of the JSON array ``text``; None when it is no array."""
    i = _ws(text, 0)
    if not text.startswith("[", i):
        return None
    spans = []
    i = _ws(text, i + 1)
    while i < len(text) and text[i] != "]":
        end = skip_value(text, i)
        spans.append((i, end))
        i = _ws(text, end)
        if text.startswith(",", i):
            i = _ws(text, i + 1)
    return spans


def compact_json(text: str) -> str:
    """``text`` without whitespace outside strings."""
    return _COMPACT.sub(lambda m: m.group(1) or "", text)
