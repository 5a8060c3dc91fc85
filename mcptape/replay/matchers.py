"""Matching messages: structural differences, redacted placeholders, request keys, near misses.

Pure functions over plain JSON values. A recorded string holding a redaction
placeholder (``«redacted:1a2b3c4d»``, see :mod:`mcptape.redact`) matches any value in
its place: the secret was never stored, and placeholders differ between processes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from mcptape.redact import PLACEHOLDER
from mcptape.replay.normalise import format_pointer

ABSENT: Final = "(absent)"
MAX_DIFFERENCES: Final = 50


@dataclass(frozen=True, slots=True)
class Difference:
    """One place where two messages differ: a JSON Pointer and both values (``ABSENT`` when missing)."""

    pointer: str
    recorded: Any
    replayed: Any


def placeholder_matches(recorded: str, replayed: Any) -> bool | None:
    """True/False when ``recorded`` holds a placeholder (it stands for anything); None otherwise."""
    if "«redacted:" not in recorded or PLACEHOLDER.search(recorded) is None:
        return None
    if PLACEHOLDER.fullmatch(recorded):
        return True
    if not isinstance(replayed, str):
        return False
    pattern = ".*?".join(re.escape(part) for part in PLACEHOLDER.split(recorded))
    return re.fullmatch(pattern, replayed, re.DOTALL) is not None


def _same_scalar(a: Any, b: Any) -> bool:
    # JSON has one number type: 1 and 1.0 are the same value; true is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def differences(recorded: Any, replayed: Any, limit: int = MAX_DIFFERENCES) -> list[Difference]:
    """Where ``replayed`` differs from ``recorded``, as JSON Pointers, at most ``limit`` of them."""
    out: list[Difference] = []
    _walk(recorded, replayed, [], out, limit)
    return out


def _walk(a: Any, b: Any, path: list[str | int], out: list[Difference], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, str):
        verdict = placeholder_matches(a, b)
        if verdict is not None:
            if not verdict:
                out.append(Difference(format_pointer(path), a, b))
            return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key in b:
                _walk(a[key], b[key], [*path, key], out, limit)
            else:
                out.append(Difference(format_pointer([*path, key]), a[key], ABSENT))
            if len(out) >= limit:
                return
        for key in b:
            if key not in a and len(out) < limit:
                out.append(Difference(format_pointer([*path, key]), ABSENT, b[key]))
        return
    if isinstance(a, list) and isinstance(b, list):
        key = _list_key(a, b)
        if key is not None:
            _walk_named(a, b, key, path, out, limit)
            return
        for i in range(max(len(a), len(b))):
            if i >= len(a):
                out.append(Difference(format_pointer([*path, i]), ABSENT, b[i]))
            elif i >= len(b):
                out.append(Difference(format_pointer([*path, i]), a[i], ABSENT))
            else:
                _walk(a[i], b[i], [*path, i], out, limit)
            if len(out) >= limit:
                return
        return
    if not _same_scalar(a, b):
        out.append(Difference(format_pointer(path), a, b))


def _list_key(a: list[Any], b: list[Any]) -> str | None:
    """``name`` or ``uri`` when both lists hold objects told apart by it (tools, prompts, resources)."""
    for key in ("name", "uri"):
        names_a = [x.get(key) if isinstance(x, dict) else None for x in a]
        names_b = [x.get(key) if isinstance(x, dict) else None for x in b]
        if not names_a or not names_b:
            return None
        if all(isinstance(n, str) for n in names_a + names_b) and (
            len(set(names_a)) == len(names_a) and len(set(names_b)) == len(names_b)
        ):
            return key
    return None


def _walk_named(
    a: list[Any], b: list[Any], key: str, path: list[str | int], out: list[Difference], limit: int
) -> None:
    """Lists of named objects compare by name, so a tool added in the middle is one difference."""
    by_name = {x[key]: (i, x) for i, x in enumerate(b)}
    before = len(out)
    seen = set()
    for i, x in enumerate(a):
        name = x[key]
        seen.add(name)
        if name in by_name:
            _walk(x, by_name[name][1], [*path, i], out, limit)
        else:
            out.append(Difference(format_pointer([*path, i]), x, ABSENT))
        if len(out) >= limit:
            return
    for j, y in enumerate(b):
        if y[key] not in seen and len(out) < limit:
            out.append(Difference(format_pointer([*path, j]), ABSENT, y))
    if len(out) == before and [x[key] for x in a] != [y[key] for y in b]:
        out.append(
            Difference(format_pointer(path) + f" (order of {key}s)", [x[key] for x in a], [y[key] for y in b])
        )


def matches(recorded: Any, replayed: Any) -> bool:
    """Whether two (normalised) values are the same, placeholders in ``recorded`` matching anything."""
    return not differences(recorded, replayed, limit=1)


def canonical(value: Any) -> bytes:
    """A value's canonical JSON (sorted keys, compact): equal values give equal bytes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers beyond 64 bits
        import json

        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def request_body(normalised: dict[str, Any]) -> dict[str, Any]:
    """A request as matching sees it, from its normalised ``{"params": ...}``: absent, ``null`` and
    empty params are the same request (the TypeScript SDK sends none on ``tools/list``, the
    Inspector ``{}``, and params holding only ``_meta`` are empty once normalised)."""
    if "params" in normalised and normalised["params"] in (None, {}):
        return {k: v for k, v in normalised.items() if k != "params"}
    return normalised


def request_key(method: str | None, body: Any) -> bytes:
    """What identifies a request when ids do not: its method and canonical :func:`request_body`."""
    return (method or "").encode() + b"\x00" + canonical(body)


@dataclass(frozen=True, slots=True)
class NearMiss:
    """A recorded request close to one that matched nothing, and the fields that differ."""

    index: int
    method: str | None
    fields: tuple[str, ...]

    def describe(self) -> str:
        """``#3 tools/call (differs at /params/arguments/city)``."""
        if not self.fields:
            return f"#{self.index} {self.method} (already used up)"
        shown = ", ".join(self.fields[:4]) + (", ..." if len(self.fields) > 4 else "")
        return f"#{self.index} {self.method} (differs at {shown})"


def nearest(
    method: str | None,
    body: Any,
    candidates: Iterable[tuple[int, str | None, Any]],
    k: int = 3,
) -> list[NearMiss]:
    """The ``k`` candidates ``(index, method, body)`` closest to a request, fewest differences first.

    Bodies are :func:`request_body` values, so the fields are JSON Pointers into the request
    (``/params/arguments/city``), as ``--ignore`` takes them. A different method counts as a
    difference at ``/method`` and ranks after every candidate of the same method.
    """
    scored: list[tuple[int, int, NearMiss]] = []
    for index, cand_method, cand_body in candidates:
        fields = [d.pointer for d in differences(cand_body, body, limit=20)]
        other_method = cand_method != method
        if other_method:
            fields.insert(0, "/method")
        scored.append((int(other_method), len(fields), NearMiss(index, cand_method, tuple(fields))))
    scored.sort(key=lambda s: (s[0], s[1], s[2].index))
    return [s[2] for s in scored[:k]]


def miss_message(method: str | None, near: Sequence[NearMiss]) -> str:
    """The message of the JSON-RPC error a request with no recorded match gets."""
    head = f"mcptape serve: no recorded response matches this {method or 'request'} request"
    if not near:
        return head + " (the recording has no requests)"
    return head + "; nearest recorded: " + "; ".join(n.describe() for n in near)
