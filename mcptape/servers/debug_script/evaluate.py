"""Evaluate the user's expression in a paused call frame and type its value.

The expression is evaluated exactly once per hit (``Debugger.evaluateOnCallFrame``
on the top frame, so locals and closures are visible). An expression with side
effects (``i++``, ``queue.shift()``) therefore changes the program once, as it
would in the source. Whether it is sent wrapped in parentheses (so ``{a: 1}`` is
an object, not a block) or as written (``x; y`` is no expression) is decided once
per run by compiling both forms without running them (:func:`choose_form`), never
by retrying after an evaluation failed: a SyntaxError thrown *while running*
(``JSON.parse('{not json')``) is a value of that hit, not a reason to run again.

From the one resulting RemoteObject:

- ``type`` is the RemoteObject's ``type``, which V8 fills with ``typeof``
  semantics: ``"object"`` for null and arrays, ``"undefined"``, ``"function"``,
  ``"bigint"``, ``"symbol"``...
- ``value`` is the JSON value when ``JSON.stringify`` of the value works (run on
  the already evaluated object, so the expression is not evaluated again), else
  what the RemoteObject describes: the ``description`` of a circular object, a
  function's source, a symbol, or the ``unserializableValue`` of a BigInt
  (``"100000000000000000000n"``) and of NaN, ±Infinity and -0, which JSON cannot
  hold (it would turn them into null or 0).
- an expression that throws gives ``{"type": "error", "value": <the exception>}``
  for that hit, and the run goes on.

A value longer than the hit's ``limit`` is cut (a string to its first ``limit``
characters, an object to the first ``limit`` characters of its JSON text, cut
inside the debuggee so megabytes never cross the socket) and ``truncated`` says
how many characters went. A string holding half a UTF-16 surrogate pair cannot be
sent as UTF-8: each such half is written as the six characters ``\\udXXX`` and
``escaped`` says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from mcptape.servers.debug_script.cdp import CdpConnection

OBJECT_GROUP: Final = "mcptape-debug-script"
_ERROR_TEXT_FLOOR: Final = 300
# The JSON text, or [its length, its first `limit` characters] when it is longer.
_STRINGIFY_THIS: Final = (
    "function (limit) { const text = JSON.stringify(this); "
    "return typeof text === 'string' && text.length > limit ? [text.length, text.slice(0, limit)] : text; }"
)
# JSON.stringify writes a lone surrogate as a lowercase escape; a pair stays raw.
_ESCAPED_SURROGATE: Final = re.compile(r"\\ud[89a-f]", re.IGNORECASE)
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class HitValue:
    """The value of the expression at one breakpoint hit.

    ``described`` is True when ``value`` is a description (a function's source, a
    BigInt's text, the cut JSON text of an object) rather than the JSON value
    itself. ``truncated`` counts the characters cut; ``escaped`` says lone
    surrogates were written as ``\\uXXXX``.
    """

    type: str
    value: Any
    described: bool = False
    truncated: int = 0
    escaped: bool = False

    def as_json(self) -> dict[str, Any]:
        """The ``{"type", "value"}`` object of the tool's structured result (plus what was cut or escaped)."""
        result: dict[str, Any] = {"type": self.type, "value": self.value}
        if self.truncated:
            result["truncated"] = self.truncated
        if self.escaped:
            result["escaped"] = True
        return result

    def length(self) -> int:
        """Characters of text this value carries, counted against the response's budget."""
        if isinstance(self.value, str):
            return len(self.value)
        if self.value is None or isinstance(self.value, (bool, int, float)):
            return 0
        return len(json.dumps(self.value, ensure_ascii=False))


async def choose_form(cdp: CdpConnection, expression: str) -> str:
    """The text to evaluate at every hit: the expression in parentheses unless only the bare form compiles.

    Parentheses make ``{a: 1}`` an object rather than a block and keep a comma
    expression whole; the newlines keep a trailing ``// comment`` from eating them.
    """
    wrapped = f"(\n{expression}\n)"
    if await _compiles(cdp, wrapped) or not await _compiles(cdp, expression):
        # When neither compiles as a script (`new.target` is legal only inside a
        # function), the frame may still accept the wrapped form.
        return wrapped
    return expression


async def _compiles(cdp: CdpConnection, source: str) -> bool:
    response = await cdp.send(
        "Runtime.compileScript", {"expression": source, "sourceURL": "", "persistScript": False}
    )
    return "exceptionDetails" not in response


async def evaluate_on_frame(cdp: CdpConnection, call_frame_id: str, form: str, limit: int) -> HitValue:
    """Evaluate ``form`` once in the paused frame ``call_frame_id`` and describe its value."""
    response = await _evaluate(cdp, call_frame_id, form)
    details = response.get("exceptionDetails")
    try:
        if details is not None:
            # An error stays readable even once the response's budget is spent.
            return _bounded("error", _exception_text(details), max(limit, _ERROR_TEXT_FLOOR), described=True)
        return await describe_remote_object(cdp, response["result"], limit)
    finally:
        # A primitive leaves nothing behind in the debuggee: no round trip to release it.
        remote = (details or {}).get("exception") or response.get("result") or {}
        if "objectId" in remote:
            await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP})


async def describe_remote_object(cdp: CdpConnection, remote: dict[str, Any], limit: int) -> HitValue:
    """Turn a RemoteObject into a typed value, stringifying objects to JSON inside the debuggee."""
    kind = str(remote.get("type", "undefined"))
    if "unserializableValue" in remote:
        return _bounded(kind, str(remote["unserializableValue"]), limit, described=True)
    if kind == "string":
        return _bounded(kind, str(remote.get("value", "")), limit)
    if kind in ("number", "boolean"):
        return HitValue(kind, remote.get("value"))
    if kind == "undefined":
        return HitValue(kind, None)
    if kind == "object" and remote.get("subtype") == "null":
        return HitValue(kind, None)
    if kind == "object" and "objectId" in remote:
        as_json = await _stringify(cdp, remote["objectId"], limit)
        if isinstance(as_json, list):
            length, head = as_json
            return _escaped(HitValue(kind, head, described=True, truncated=int(length) - len(head)))
        if as_json is not None:
            return _from_json(kind, as_json)
    # Functions, symbols, circular structures, objects holding a BigInt, objects whose
    # toJSON gives undefined: JSON cannot say what they are, the description can.
    return _bounded(kind, str(remote.get("description", kind)), limit, described=True)


def escape_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with every lone surrogate in its strings (and keys) written as ``\\udXXX``; True if any was."""
    if isinstance(value, str):
        if value.isascii():
            return value, False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", value), True
        return value, False
    if isinstance(value, list):
        items = [escape_lone_surrogates(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        changed = False
        escaped: dict[str, Any] = {}
        for key, item in value.items():
            new_key, key_changed = escape_lone_surrogates(key)
            new_item, item_changed = escape_lone_surrogates(item)
            escaped[new_key] = new_item
            changed = changed or key_changed or item_changed
        return escaped, changed
    return value, False


def _bounded(kind: str, text: str, limit: int, *, described: bool = False) -> HitValue:
    cut = max(0, len(text) - limit)
    return _escaped(HitValue(kind, text[:limit] if cut else text, described=described, truncated=cut))


def _escaped(hit: HitValue) -> HitValue:
    value, changed = escape_lone_surrogates(hit.value)
    if not changed:
        return hit
    return HitValue(hit.type, value, hit.described, hit.truncated, escaped=True)


def _from_json(kind: str, text: str) -> HitValue:
    try:
        value = json.loads(text)
    except RecursionError:
        # Nested deeper than Python's parser goes: the JSON text itself is still exact.
        return _escaped(HitValue(kind, text, described=True))
    if _ESCAPED_SURROGATE.search(text):
        return _escaped(HitValue(kind, value))
    return HitValue(kind, value)


async def _evaluate(cdp: CdpConnection, call_frame_id: str, expression: str) -> dict[str, Any]:
    return await cdp.send(
        "Debugger.evaluateOnCallFrame",
        {
            "callFrameId": call_frame_id,
            "expression": expression,
            "objectGroup": OBJECT_GROUP,
            # No pause on an exception the expression throws, no console noise.
            "silent": True,
            "returnByValue": False,
            "generatePreview": False,
        },
    )


async def _stringify(cdp: CdpConnection, object_id: str, limit: int) -> str | list[Any] | None:
    response = await cdp.send(
        "Runtime.callFunctionOn",
        {
            "objectId": object_id,
            "functionDeclaration": _STRINGIFY_THIS,
            "arguments": [{"value": limit}],
            "returnByValue": True,
            "silent": True,
            "objectGroup": OBJECT_GROUP,
        },
    )
    if "exceptionDetails" in response:
        return None
    value = response.get("result", {}).get("value")
    return value if isinstance(value, (str, list)) else None


def _exception_text(details: dict[str, Any]) -> str:
    exception = details.get("exception") or {}
    description = exception.get("description")
    if isinstance(description, str) and description:
        # The first line is "ReferenceError: x is not defined"; the rest is a stack into our wrapper.
        return description.splitlines()[0]
    if "value" in exception:
        return json.dumps(exception["value"])
    return str(details.get("text") or "exception")
