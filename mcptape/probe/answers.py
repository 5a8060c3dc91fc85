"""What the probe answers the server's requests (sampling, elicitation, roots) with, recognisably.

Each answer carries a marker the scenarios look for in the tool result that follows, so
a verdict says whether the answer made the whole way back to the server, not only
whether the request arrived.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptape.client.core import Reply
from mcptape.wire.protocol import ELICITATION, ROOTS_LIST, SAMPLING

SAMPLED = "mcptape probe sampled this"
FORM_NAME = "mcptape probe"
ROOT_URI = "file:///mcptape-probe/root"
CHANGED_ROOT_URI = "file:///mcptape-probe/changed"

CLIENT_CAPABILITIES: dict[str, Any] = {
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}
"""What the probe declares, so that a server offers everything it conditions on the client."""


def form_value(schema: Any) -> Any:
    """A value a form field's JSON schema accepts (its default when it has one)."""
    if not isinstance(schema, dict):
        return FORM_NAME
    if "default" in schema:
        return schema["default"]
    for key in ("enum", "oneOf", "anyOf"):
        choices = schema.get(key)
        if isinstance(choices, list) and choices:
            first = choices[0]
            return first.get("const") if isinstance(first, dict) else first
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        minimum = schema.get("minimum")
        return minimum if isinstance(minimum, int | float) else 1
    if kind == "array":
        return [form_value(schema.get("items"))]
    return {
        "email": "probe@example.com",
        "uri": "https://example.com/mcptape-probe",
        "date": "2026-01-01",
        "date-time": "2026-01-01T00:00:00Z",
    }.get(schema.get("format") or "", FORM_NAME)


def form_content(requested: Any) -> dict[str, Any]:
    """A filled-in form for an elicitation's ``requestedSchema``."""
    properties = requested.get("properties") if isinstance(requested, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {name: form_value(schema) for name, schema in properties.items()}


@dataclass
class ProbeAnswers:
    """The handler the client core calls for each server request; remembers what it was asked."""

    roots: list[dict[str, Any]] = field(default_factory=lambda: [{"uri": ROOT_URI, "name": "probe"}])
    asked: list[tuple[str, Any]] = field(default_factory=list)

    def __call__(self, method: str, params: Any, tool: str | None) -> Reply:
        self.asked.append((method, params))
        if method == SAMPLING:
            result = {
                "role": "assistant",
                "content": {"type": "text", "text": SAMPLED},
                "model": "mcptape-probe",
                "stopReason": "endTurn",
            }
            return Reply(result=result, by="probe")
        if method == ELICITATION:
            if isinstance(params, dict) and params.get("mode") == "url":
                return Reply(result={"action": "accept"}, by="probe")
            requested = params.get("requestedSchema") if isinstance(params, dict) else None
            return Reply(result={"action": "accept", "content": form_content(requested)}, by="probe")
        if method == ROOTS_LIST:
            return Reply(result={"roots": list(self.roots)}, by="probe")
        return Reply(error={"code": -32601, "message": f"Method not found: {method}"}, by="probe")

    def count(self, method: str, mode: str | None = None) -> int:
        """How many ``method`` requests (of elicitation ``mode``, if given) the server sent."""
        return sum(
            1
            for m, params in self.asked
            if m == method
            and (mode is None or (isinstance(params, dict) and (params.get("mode") or "form") == mode))
        )
