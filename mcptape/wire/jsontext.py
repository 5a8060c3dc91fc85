"""JSON source text: where a member or element of an already validated JSON text lies.

Parsers give values, not the text they came from; an id must go back to a peer as the
peer wrote it (``1.0``, ``"\\u00e9"``, ``18446744073709551617``). These scanners find
spans in text that a JSON parser has already accepted, without recursion (nesting of
any depth) and with regular expressions doing the per-character work.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final, NamedTuple

import orjson

# Comments count as whitespace (VS Code's mcp.json is JSON with comments); a text a
# strict JSON parser accepted has none outside strings, so this costs frames nothing.
COMMENT: Final = r"//[^\n]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/"
_WS: Final = re.compile(r"(?:[ \t\n\r]+|" + COMMENT + r")*")
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# The tokens that matter when skipping a container: whole strings and comments (so
# brackets inside them are ignored) and brackets.
_TOKEN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|' + COMMENT + r"|[\[\]{}]", re.S)
_SCALAR_END: Final = re.compile(r"[ \t\n\r,\]}/]")
# For blank_jsonc: strings pass, comments and trailing commas go.
_JSONC_COMMENT: Final = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|' + COMMENT, re.S)
_TRAILING_COMMA: Final = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|,(?=[ \t\n\r]*[\]}])', re.S)
_NOT_NEWLINE: Final = re.compile(r"[^\n]")
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
_COMPACT_BYTES: Final = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*")|[ \t\n\r]+', re.S)


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


class Member(NamedTuple):
    """One member of a JSON object in its text: the key, where its key starts, where its
    value starts and ends."""

    key: str
    key_start: int
    value_start: int
    value_end: int


def object_members(text: str, start: int = 0) -> list[Member] | None:
    """The members of the JSON object starting at ``text[start]`` (after whitespace), in
    text order, duplicates included; None when no object starts there."""
    i = _ws(text, start)
    if not text.startswith("{", i):
        return None
    members: list[Member] = []
    i = _ws(text, i + 1)
    while i < len(text) and text[i] != "}":
        m = _STRING.match(text, i)
        if m is None:
            return None
        name = m.group()
        colon = _ws(text, m.end())
        if not text.startswith(":", colon):
            return None
        value_start = _ws(text, colon + 1)
        value_end = skip_value(text, value_start)
        members.append(Member(json.loads(name) if "\\" in name else name[1:-1], i, value_start, value_end))
        i = _ws(text, value_end)
        if text.startswith(",", i):
            i = _ws(text, i + 1)
    return members


def member_span(text: str, key: str) -> tuple[int, int] | None:
    """The span of member ``key``'s value in the JSON object ``text`` (the last one wins,
    as parsers do with duplicate keys); None when ``text`` is no object or lacks ``key``."""
    found = None
    for member in object_members(text) or ():
        if member.key == key:
            found = (member.value_start, member.value_end)
    return found


_HEAD_ID_BYTES: Final = re.compile(_HEAD_ID.pattern.encode())
_TAIL_ID_BYTES: Final = re.compile(_TAIL_ID.pattern.encode())


def id_candidate(text: str | bytes) -> str | None:
    """The text of a scalar ``id`` member where peers usually put it, or None.

    Cheap (no scan of the whole text, no decoding of bytes beyond the id) but not
    authoritative with duplicate keys: callers check it against the parsed id and fall
    back to :func:`member_span`.
    """
    if isinstance(text, bytes):
        found = _HEAD_ID_BYTES.match(text) or _TAIL_ID_BYTES.search(text, max(0, len(text) - TAIL_CHARS))
        return found.group(1).decode("utf-8", errors="replace") if found else None
    m = _HEAD_ID.match(text) or _TAIL_ID.search(text, max(0, len(text) - TAIL_CHARS))
    return m.group(1) if m else None


def element_spans(text: str, start: int = 0) -> list[tuple[int, int]] | None:
    """The spans of the elements of the JSON array starting at ``text[start]`` (after
    whitespace); None when no array starts there."""
    i = _ws(text, start)
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


def blank_jsonc(text: str) -> str:
    """``text`` with its comments and trailing commas turned into spaces (line feeds kept).

    The result has the same length, so every position in it (a parser's line and column,
    a member's span) is the same position in ``text``. JSON with comments is what VS
    Code's mcp.json allows.
    """

    def blank(m: re.Match[str]) -> str:
        return m.group(1) or _NOT_NEWLINE.sub(" ", m.group())

    return _TRAILING_COMMA.sub(blank, _JSONC_COMMENT.sub(blank, text))


def loads_jsonc(text: str) -> Any:
    """Parse JSON, or JSON with comments and trailing commas; raises json.JSONDecodeError
    (positions hold for ``text``) and RecursionError as json.loads does."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        blanked = blank_jsonc(text)
        if blanked == text:
            raise
    return json.loads(blanked)


def compact_json(text: str) -> str:
    """``text`` without whitespace outside strings."""
    return _COMPACT.sub(lambda m: m.group(1) or "", text)


def one_line(data: bytes) -> bytes:
    """A message for a line-delimited stream (stdio): ``data`` itself when it holds no line
    feed; else, when it is JSON, without whitespace outside strings, every other byte as
    it was (valid JSON has line feeds only between tokens, so it means the same, numbers
    and strings written exactly as the peer wrote them); else with each line feed written
    ``\\n``, so the peer still sees one message (a string holding a raw line feed, which
    lenient writers produce, then reads as they meant it), never fragments of it.
    """
    if b"\n" not in data:
        return data
    if _is_json(data):
        # Unmatched groups expand to nothing: strings stay, whitespace between tokens goes.
        return _COMPACT_BYTES.sub(rb"\1", data)
    return data.replace(b"\n", b"\\n")


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
        return True
    except orjson.JSONDecodeError:
        pass
    try:  # what orjson refuses and JSON allows: integers past 64 bits, deep nesting
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (JSON has no NaN or infinity)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond what a JSON number can carry (a double, up to about 1.8e308)")
    return value


def loads_finite(text: str | bytes) -> Any:
    """``json.loads`` refusing what JSON cannot carry to a peer: ``NaN``, ``Infinity`` (which
    Python reads) and numbers past double range (which it reads as infinity); each would go
    out as ``null``. Integers stay exact whatever their size. ValueError says what is wrong."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def loads_or_none(text: str | None) -> Any:
    """A stored JSON text parsed (orjson); None when there is none or it is not JSON."""
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
