"""``--tool-arg k=v`` values turned into the types a tool's input schema asks for (pure).

A value is text on the command line; the schema says what it should be: ``number``
and ``integer`` parse as numbers, ``boolean`` accepts true/false/yes/no/1/0, ``object``
and ``array`` parse as JSON, ``null`` accepts ``null``, and a ``string`` stays as it
is. A property whose schema allows several types takes the first that parses (string
last). A property the schema does not name is parsed as JSON when it is JSON, else
kept as a string.

Numbers go out as they were given: an integer exactly whatever its size (never through
a double: ``9007199254740993`` stays itself), and what JSON cannot carry (``NaN``,
``inf``, ``1e400``) is a ValidationError, never a ``null`` sent in its place.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from mcptape.client.errors import ValidationError
from mcptape.wire.jsontext import loads_finite

_INTEGER = re.compile(r"\s*[-+]?[0-9]+\s*")

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


def _number(text: str) -> float | None:
    """A finite number written as ``text``; None for anything else (NaN and infinities included)."""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _not_finite(text: str) -> bool:
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


def _as(kind: str, text: str, schema: Any) -> tuple[bool, Any]:
    """(parsed, value) for one candidate type."""
    if kind in ("integer", "number") and _INTEGER.fullmatch(text):
        return True, int(text)  # exact, never through a double
    if kind == "integer":
        number = _number(text)
        return (True, int(number)) if number is not None and number.is_integer() else (False, None)
    if kind == "number":
        number = _number(text)
        return (True, number) if number is not None else (False, None)
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
            value = loads_finite(text)
        except ValueError:
            return False, None
        return (True, value) if isinstance(value, dict if kind == "object" else list) else (False, None)
    if kind == "enum":
        allowed = schema.get("enum", [schema.get("const")])
        if text in allowed:
            return True, text
        try:
            value = loads_finite(text)
        except ValueError:
            return False, None
        return (True, value) if value in allowed else (False, None)
    if kind == "string":
        return True, text
    return False, None


def _unsendable(name: str, text: str, numeric: bool) -> ValidationError | None:
    """The error for a value JSON cannot carry (NaN, infinity, past double range), if it is one.

    ``numeric``: the schema wants a number, so ``nan`` and ``inf`` however spelt mean one;
    else only what reads as JSON does (``NaN``, ``Infinity``, ``1e400``): ``nan`` is text.
    """
    if numeric and _not_finite(text):
        why = "JSON has no NaN or infinity, nor numbers beyond about 1.8e308"
    else:
        try:
            loads_finite(text)
            return None
        except ValueError as exc:
            try:
                json.loads(text)
            except ValueError:
                return None  # not JSON at all: nothing JSON could not carry
            why = str(exc)
    word = text.strip()
    text_hint = (
        f", or {name}='\"{word}\"' for the text" if word.replace("-", "").replace("+", "").isalnum() else ""
    )
    return ValidationError(f"--tool-arg {name}={text!r}: {why}; give a finite number{text_hint}")


def coerce_value(name: str, text: str, schema: Any) -> Any:
    """One ``--tool-arg`` value typed by its property's schema (``None`` schema: unknown property)."""
    kinds = _types(schema)
    if not kinds:
        try:
            return loads_finite(text)
        except ValueError:
            refused = _unsendable(name, text, numeric=False)
            if refused is not None:
                raise refused from None
            return text
    ordered = [k for k in kinds if k != "string"] + [k for k in kinds if k == "string"]
    for kind in ordered:
        ok, value = _as(kind, text, schema)
        if ok:
            return value
    refused = _unsendable(name, text, numeric=bool({"number", "integer"} & set(kinds)))
    if refused is not None:
        raise refused
    wanted = " or ".join(kinds).replace("enum", "one of " + json.dumps(schema.get("enum", [])))
    raise ValidationError(f"--tool-arg {name}={text!r}: expected {wanted}")


def coerce_arguments(pairs: Iterable[tuple[str, str]], input_schema: Any) -> dict[str, Any]:
    """Every ``(name, text)`` pair typed by ``input_schema``'s properties."""
    props = input_schema.get("properties") if isinstance(input_schema, dict) else None
    props = props if isinstance(props, dict) else {}
    return {name: coerce_value(name, text, props.get(name)) for name, text in pairs}
