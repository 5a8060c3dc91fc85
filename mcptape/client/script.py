"""``call --script``: a JSON array of steps on one connection, checked before anything is sent (pure).

A step is an object with ``method`` and the method's inputs under the same names as
the flags (camelCase)::

    [{"method": "tools/list"},
     {"method": "tools/call", "toolName": {"$ref": "0/tools/0/name"}, "toolArgs": {"message": "hi"}},
     {"method": "resources/read", "uri": "test://static/resource/1", "onError": "continue"},
     {"method": "ping", "onError": "skip-to:0"}]

References: anywhere in a step, ``{"$ref": "N/json/pointer"}`` is replaced by the value
at that JSON Pointer (RFC 6901, ``~0`` and ``~1`` escapes) inside the result of step
``N``, an earlier step. ``onError``: ``stop`` (the default: later steps are not run),
``continue``, or ``skip-to:N`` (run step ``N`` next; it must come later).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcptape.client.errors import ValidationError
from mcptape.wire.jsontext import loads_finite

STEP_FIELDS = {
    "method": str,
    "params": dict,
    "toolName": str,
    "toolArgs": dict,
    "toolArg": dict,
    "promptName": str,
    "promptArgs": dict,
    "uri": str,
    "cursor": str,
    "level": str,
    "taskId": str,
    "ref": str,
    "completionRef": str,  # --completion-ref; "ref" is the older name
    "argumentName": str,
    "argumentValue": str,
    "runAsTask": bool,
    "poll": bool,
    "onError": str,
    "comment": str,
}


@dataclass
class ScriptStep:
    """One checked step: its fields as given, and what to do when it fails."""

    index: int
    fields: dict[str, Any]
    on_error: str = "stop"
    skip_to: int | None = None


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            return [value["$ref"]] if isinstance(value["$ref"], str) else [""]
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def parse_script(text: str, source: str = "--script") -> list[ScriptStep]:
    """The steps of a script; a ValidationError naming the step for anything wrong."""
    try:
        data = loads_finite(text)  # NaN and infinities would go out as null
    except ValueError as exc:
        raise ValidationError(f"{source}: not valid JSON: {exc}") from None
    if not isinstance(data, list) or not data:
        raise ValidationError(f"{source}: expected a non-empty JSON array of steps")
    steps = []
    for index, item in enumerate(data):
        where = f"{source}: step {index}"
        if not isinstance(item, dict):
            raise ValidationError(f"{where}: a step must be a JSON object")
        if not isinstance(item.get("method"), str) or not item["method"]:
            raise ValidationError(f"{where}: no 'method'")
        for key, value in item.items():
            wanted = STEP_FIELDS.get(key)
            if wanted is None:
                raise ValidationError(
                    f"{where}: unknown field {key!r} (fields: {', '.join(sorted(STEP_FIELDS))})"
                )
            if not isinstance(value, wanted) and not _refs(value):
                raise ValidationError(f"{where}: {key!r} must be a {wanted.__name__}")
        if "ref" in item and "completionRef" in item:
            raise ValidationError(f"{where}: give 'completionRef' or 'ref' (the same thing), not both")
        for ref in _refs(item):
            head, _, _ = ref.partition("/")
            if not head.isdigit() or int(head) >= index:
                raise ValidationError(f"{where}: $ref {ref!r} must start with the number of an earlier step")
        on_error = item.get("onError", "stop")
        skip_to = None
        if on_error.startswith("skip-to:"):
            target = on_error.removeprefix("skip-to:")
            if not target.isdigit() or not index < int(target) < len(data):
                raise ValidationError(f"{where}: onError {on_error!r} must name a later step (< {len(data)})")
            skip_to = int(target)
        elif on_error not in ("stop", "continue"):
            raise ValidationError(f"{where}: onError must be stop, continue or skip-to:N, not {on_error!r}")
        steps.append(ScriptStep(index, item, on_error, skip_to))
    return steps


def pointer(document: Any, path: str, where: str = "$ref") -> Any:
    """The value at JSON Pointer ``path`` (without its leading ``/``) in ``document``."""
    value = document
    if not path:
        return value
    for raw in path.split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        elif isinstance(value, dict) and token in value:
            value = value[token]
        else:
            raise ValidationError(f"{where}: no {token!r} in the referenced result")
    return value


def resolve(value: Any, results: dict[int, Any], where: str) -> Any:
    """``value`` with every ``{"$ref": "N/pointer"}`` replaced by what it points at."""
    if isinstance(value, dict):
        if set(value) == {"$ref"} and isinstance(value["$ref"], str):
            ref = value["$ref"]
            head, _, rest = ref.partition("/")
            step = int(head)
            if step not in results:
                raise ValidationError(
                    f"{where}: $ref {ref!r}: step {step} has no result (it failed or was skipped)"
                )
            return pointer(results[step], rest, f"{where}: $ref {ref!r}")
        return {k: resolve(v, results, where) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results, where) for v in value]
    return value
