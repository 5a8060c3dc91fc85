"""Result templates of injection rules: the minimal valid answers (``auto``) and their checks.

Pure. :mod:`mcptape.rules.rules` builds rules from flags and files; this module knows what
a valid ``sampling/createMessage``, ``elicitation/create`` and ``roots/list`` result
looks like: :func:`auto_result` makes one, :func:`result_problem` says what is wrong
with one a user wrote (a sentence naming the missing field, or None).
"""

from __future__ import annotations

from typing import Any

from mcptape.wire.protocol import ELICITATION, ROOTS_LIST, SAMPLING

ROOTS = ROOTS_LIST

# What the spec's own example answers a refused sampling request with.
SAMPLING_REJECTED = {"code": -1, "message": "User rejected sampling request"}
AUTO_MODEL = "mcptape-auto"
AUTO_TEXT = "mcptape: automatic sampling response"


def auto_result(method: str, params: Any) -> Any:
    """A minimal valid result for ``method`` given the request's params."""
    if method == SAMPLING:
        return {
            "role": "assistant",
            "content": {"type": "text", "text": AUTO_TEXT},
            "model": AUTO_MODEL,
            "stopReason": "endTurn",
        }
    if method == ELICITATION:
        p = params if isinstance(params, dict) else {}
        if p.get("mode") == "url":
            return {"action": "accept"}
        return {"action": "accept", "content": auto_form(p.get("requestedSchema"))}
    if method == ROOTS:
        return {"roots": []}
    return {}


def auto_form(schema: Any) -> dict[str, Any]:
    """Values for an elicitation form: each property's default, else the simplest valid value."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}
    return {name: _auto_value(prop) for name, prop in props.items() if isinstance(prop, dict)}


def _auto_value(prop: dict[str, Any]) -> Any:
    if "default" in prop:
        return prop["default"]
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    one_of = prop.get("oneOf")
    if isinstance(one_of, list) and one_of and isinstance(one_of[0], dict) and "const" in one_of[0]:
        return one_of[0]["const"]
    kind = prop.get("type")
    if kind == "boolean":
        return False
    if kind in ("number", "integer"):
        low = prop.get("minimum", 0)
        return int(low) if kind == "integer" else low
    if kind == "array":
        items = prop.get("items")
        if isinstance(items, dict) and isinstance(items.get("enum"), list) and items["enum"]:
            return [items["enum"][0]] * int(prop.get("minItems", 0) or 0)
        return []
    fmt = prop.get("format")
    if fmt == "email":
        return "mcptape@example.com"
    if fmt == "uri":
        return "https://example.com"
    if fmt == "date":
        return "2000-01-01"
    if fmt == "date-time":
        return "2000-01-01T00:00:00Z"
    return "x" * int(prop.get("minLength", 0) or 0)


def result_problem(method: str, result: Any) -> str | None:
    """What makes ``result`` an invalid result for ``method`` (one sentence), or None."""
    if not isinstance(result, dict):
        return f"the {method} result must be a JSON object"
    if method == SAMPLING:
        for name in ("role", "content", "model"):
            if name not in result:
                return f"the sampling result has no {name!r} field (it needs role, content, model)"
        if result["role"] not in ("user", "assistant"):
            return "the sampling result's 'role' must be 'user' or 'assistant'"
        blocks = result["content"] if isinstance(result["content"], list) else [result["content"]]
        for block in blocks:
            if not isinstance(block, dict) or "type" not in block:
                return "the sampling result's 'content' needs a 'type' field"
            if block["type"] == "text" and "text" not in block:
                return "the sampling result's text content has no 'text' field"
        if not isinstance(result["model"], str):
            return "the sampling result's 'model' must be a string"
    elif method == ELICITATION:
        action = result.get("action")
        if action is None:
            return "the elicitation result has no 'action' field (accept, decline or cancel)"
        if action not in ("accept", "decline", "cancel"):
            return "the elicitation result's 'action' must be accept, decline or cancel"
        if action == "accept" and not isinstance(result.get("content"), dict):
            return "the elicitation result accepts but has no 'content' object"
    elif method == ROOTS:
        roots = result.get("roots")
        if not isinstance(roots, list):
            return "the roots result has no 'roots' list"
        for root in roots:
            if not isinstance(root, dict) or not isinstance(root.get("uri"), str):
                return "every root needs a 'uri' field"
    return None


def error_problem(error: Any) -> str | None:
    """What makes ``error`` an invalid JSON-RPC error object (one sentence), or None."""
    if not isinstance(error, dict):
        return "'error' must be an object with 'code' and 'message'"
    for name in ("code", "message"):
        if name not in error:
            return f"the error has no {name!r} field"
    if not isinstance(error["code"], int) or isinstance(error["code"], bool):
        return "the error's 'code' must be an integer"
    if not isinstance(error["message"], str):
        return "the error's 'message' must be a string"
    return None
