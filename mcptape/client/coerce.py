"""``--tool-arg k=v`` values turned into the types a tool's input schema asks for (pure).

A value is text on the command line; the schema says what it should be: ``number``
and ``integer`` parse as numbers, ``boolean`` accepts true/false/yes/no/1/0, ``object``
and ``array`` parse as JSON, ``null`` accepts ``null``, and a ``string`` stays as it
is. A property whose schema allows several types takes the first that parses (string
last). A property the schema does not name is parsed as JSON when it is JSON, else
kept as a string.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mcptape.client.errors import ValidationError

TRUE = {"true", "yes", "on", "1"}
FALSE = {"false", "no", "off", "0"}


def split_pairs(pairs: Iterable[str], flag: str = "--tool-arg") -> list[tuple[str, str]]:
    """``["k=v", ...]`` as ``[(k, v), ...]``; a pair without ``=`` or a key is a ValidationError."""
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValidationError(f"{flag} {pair!r}: expected NAME=VALUE")
        out.append((key, value))
    return out


def _types(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return [t for option in options for t in _types(option)]
    if "enum" in schema or "const" in schema:
        return ["enum"]
    return []


def _as(kind: str, text: str, schema: Any) -> tuple[bool, Any]:
    """(parsed, value) for one candidate type."""
    if kind == "integer":
        try:
            return True, int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return False, None
            return (True, int(number)) if number.is_integer() else (False, None)
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return False, None
        return True, int(
            number
        ) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    if kind == "boolean":
        low = text.strip().lower()
        if low in TRUE:
            return True, True
        if low in FALSE:
            return True, False
        return False, None
    if kind == "null":
        return (True, None) if text.strip() == "null" else (False, None)
    if kind in ("object", "array"):
        try:
            value = json.loads(text)
        except ValueError:
            return False, None
        return (True, value) if isinstance(value, dict if kind == "object" else list) else (False, None)
    if kind == "enum":
        allowed = schema.get("enum", [schema.get("const")])
        if text in allowed:
            return True, text
        try:
            value = json.loads(text)
        except ValueError:
            return False, None
        return (True, value) if value in allowed else (False, None)
    if kind == "string":
        return True, text
    return False, None


def coerce_value(name: str, text: str, schema: Any) -> Any:
    """One ``--tool-arg`` value typed by its property's schema (``None`` schema: unknown property)."""
    kinds = _types(schema)
    if not kinds:
        try:
            return json.loads(text)
        except ValueError:
            return text
    ordered = [k for k in kinds if k != "string"] + [k for k in kinds if k == "string"]
    for kind in ordered:
        ok, value = _as(kind, text, schema)
        if ok:
            return value
    wanted = " or ".join(kinds).replace("enum", "one of " + json.dumps(schema.get("enum", [])))
    raise ValidationError(f"--tool-arg {name}={text!r}: expected {wanted}")


def coerce_arguments(pairs: Iterable[tuple[str, str]], input_schema: Any) -> dict[str, Any]:
    """Every ``(name, text)`` pair typed by ``input_schema``'s properties."""
    props = input_schema.get("properties") if isinstance(input_schema, dict) else None
    props = props if isinstance(props, dict) else {}
    return {name: coerce_value(name, text, props.get(name)) for name, text in pairs}
