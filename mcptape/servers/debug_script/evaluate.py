"""Evaluate the user's expression in a paused call frame and type its value.

The expression is evaluated exactly once per hit (``Debugger.evaluateOnCallFrame``
on the top frame, so locals and closures are visible). An expression with side
effects (``i++``, ``queue.shift()``) therefore changes the program once, as it
would in the source. From the one resulting RemoteObject:

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
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from mcptape.servers.debug_script.cdp import CdpConnection

OBJECT_GROUP: Final = "mcptape-debug-script"
_STRINGIFY_THIS: Final = "function () { return JSON.stringify(this); }"


@dataclass(frozen=True, slots=True)
class HitValue:
    """The value of the expression at one breakpoint hit.

    ``described`` is True when ``value`` is a description (a function's source, a
    BigInt's text) rather than the JSON value itself, so readers print it bare.
    """

    type: str
    value: Any
    described: bool = False

    def as_json(self) -> dict[str, Any]:
        """The ``{"type", "value"}`` object of the tool's structured result."""
        return {"type": self.type, "value": self.value}


async def evaluate_on_frame(cdp: CdpConnection, call_frame_id: str, expression: str) -> HitValue:
    """Evaluate ``expression`` once in the paused frame ``call_frame_id`` and describe the value."""
    # Parentheses make `{a: 1}` an object rather than a block and keep a comma
    # expression whole; the newlines keep a trailing `// comment` from eating them.
    response = await _evaluate(cdp, call_frame_id, f"(\n{expression}\n)")
    if _is_syntax_error(response):
        # Not an expression on its own (`x; y`): let V8 evaluate it as written.
        response = await _evaluate(cdp, call_frame_id, expression)
    if "exceptionDetails" in response:
        return HitValue("error", _exception_text(response["exceptionDetails"]), described=True)
    return await describe_remote_object(cdp, response["result"])


async def describe_remote_object(cdp: CdpConnection, remote: dict[str, Any]) -> HitValue:
    """Turn a RemoteObject into a typed value, stringifying objects to JSON inside the debuggee."""
    kind = str(remote.get("type", "undefined"))
    if "unserializableValue" in remote:
        return HitValue(kind, remote["unserializableValue"], described=True)
    if kind in ("string", "number", "boolean"):
        return HitValue(kind, remote.get("value"))
    if kind == "undefined":
        return HitValue(kind, None)
    if kind == "object" and remote.get("subtype") == "null":
        return HitValue(kind, None)
    if kind == "object" and "objectId" in remote:
        as_json = await _stringify(cdp, remote["objectId"])
        if as_json is not None:
            return HitValue(kind, json.loads(as_json))
    # Functions, symbols, circular structures, objects holding a BigInt, objects whose
    # toJSON gives undefined: JSON cannot say what they are, the description can.
    return HitValue(kind, remote.get("description", kind), described=True)


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


async def _stringify(cdp: CdpConnection, object_id: str) -> str | None:
    response = await cdp.send(
        "Runtime.callFunctionOn",
        {
            "objectId": object_id,
            "functionDeclaration": _STRINGIFY_THIS,
            "returnByValue": True,
            "silent": True,
            "objectGroup": OBJECT_GROUP,
        },
    )
    if "exceptionDetails" in response:
        return None
    value = response.get("result", {}).get("value")
    return value if isinstance(value, str) else None


def _is_syntax_error(response: dict[str, Any]) -> bool:
    details = response.get("exceptionDetails")
    if not details:
        return False
    exception = details.get("exception") or {}
    return exception.get("className") == "SyntaxError"


def _exception_text(details: dict[str, Any]) -> str:
    exception = details.get("exception") or {}
    description = exception.get("description")
    if isinstance(description, str) and description:
        # The first line is "ReferenceError: x is not defined"; the rest is a stack into our wrapper.
        return description.splitlines()[0]
    if "value" in exception:
        return json.dumps(exception["value"])
    return str(details.get("text") or "exception")
