"""Top-level members of a large JSON object, found without building its value.

Parsing a 64 MiB frame to learn that it is a response to id 7 builds the whole value
(a 64 MiB string at least, many times the frame for many small objects) only to drop
it. :func:`scan_members` walks the top level of a JSON object with regular expressions
doing the per-character work: strings are matched whole, containers are skipped by
counting brackets outside strings, and only the small values callers ask for (``id``,
``method``) are read. It checks the structure of the top level, not the grammar inside
skipped values (a stray comma deep in ``result`` is not seen).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

_WS: Final = re.compile(rb"[ \t\n\r]*+")
_STRING: Final = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.S)
# Inside a container: everything but brackets, strings matched whole (so brackets in them
# do not count). Possessive: no backtracking over megabytes.
_RUN: Final = re.compile(rb'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.S)
_SCALAR: Final = re.compile(rb"-?[0-9][0-9.eE+-]*+|true|false|null")
MAX_BRACKETS: Final = 200_000  # beyond this many brackets, scanning costs more than parsing

__all__ = ["MAX_BRACKETS", "Member", "TooComplex", "scan_members"]


class TooComplex(Exception):
    """The object has more brackets than :data:`MAX_BRACKETS`: parse it instead."""


class Member(NamedTuple):
    """A top-level member: its key (raw JSON string text, quotes included) and its value's span."""

    key: bytes
    start: int
    end: int


def _skip_container(data: bytes, i: int, budget: list[int]) -> int | None:
    """The end of the array or object starting at ``data[i]``, None when it does not close."""
    depth = 0
    n = len(data)
    while i < n:
        c = data[i]
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
            if depth == 0:
                return i + 1
        else:  # a quote that starts no complete string
            return None
        budget[0] -= 1
        if budget[0] < 0:
            raise TooComplex
        m = _RUN.match(data, i + 1)
        i = m.end() if m else i + 1
    return None


def _value_end(data: bytes, i: int, budget: list[int]) -> int | None:
    if i >= len(data):
        return None
    c = data[i]
    if c == 0x22:  # '"'
        m = _STRING.match(data, i)
        return m.end() if m else None
    if c in b"[{":
        return _skip_container(data, i, budget)
    m = _SCALAR.match(data, i)
    return m.end() if m else None


def scan_members(data: bytes) -> list[Member] | None:
    """The top-level members of the JSON object ``data``, in order; None when it is not one.

    Raises :class:`TooComplex` for values with more than :data:`MAX_BRACKETS` brackets.
    """
    budget = [MAX_BRACKETS]
    n = len(data)
    i = _ws_end(data, 0)
    if i >= n or data[i] != 0x7B:  # '{'
        return None
    members: list[Member] = []
    i = _ws_end(data, i + 1)
    if i < n and data[i] == 0x7D:  # '{}'
        return members if _ws_end(data, i + 1) == n else None
    while True:
        key = _STRING.match(data, i)
        if key is None:
            return None
        i = _ws_end(data, key.end())
        if i >= n or data[i] != 0x3A:  # ':'
            return None
        start = _ws_end(data, i + 1)
        end = _value_end(data, start, budget)
        if end is None:
            return None
        members.append(Member(key.group(), start, end))
        i = _ws_end(data, end)
        if i < n and data[i] == 0x2C:  # ','
            i = _ws_end(data, i + 1)
            continue
        if i < n and data[i] == 0x7D:  # '}'
            return members if _ws_end(data, i + 1) == n else None
        return None


def _ws_end(data: bytes, i: int) -> int:
    m = _WS.match(data, i)
    return m.end() if m else i
