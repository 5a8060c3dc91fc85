"""A form from a JSON Schema (a tool's ``inputSchema``, an elicitation's ``requestedSchema``): pure.

:func:`form_of` reads the schema once into fields both interactive clients draw (the
web page renders the description as JSON, the terminal client as widgets), so the two
agree on what a schema asks for. A field has a ``kind``:

- ``string`` (``format`` kept: email, uri, date…), ``number``, ``integer``, ``boolean``;
- ``enum``: one of ``options`` (``enum``, ``oneOf``/``anyOf`` of ``const`` with titles,
  the legacy ``enumNames``); ``multienum``: an array of those;
- ``array``: a list of ``items`` (itself a field); ``object``: named ``fields``;
- ``json``: anything this reader does not draw (``anyOf`` of shapes, recursion past
  :data:`MAX_DEPTH`, no type at all), typed as raw JSON.

Each field keeps ``required``, ``default`` (when the schema gives one), ``description``,
``title`` and the bounds it states. Local ``$ref`` (``#/$defs/…``, ``#/definitions/…``) is
followed; a nullable type (``["string", "null"]``, ``anyOf`` with ``{"type": "null"}``) is
its other type, not required. :func:`parse_text` turns what a person typed into a value
of the field's kind (the terminal client; the page does the same in its script).
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

MAX_DEPTH: Final = 6
SCALARS: Final = ("string", "number", "integer", "boolean")


class FormError(ValueError):
    """What a person typed does not fit the field; the message says which field and why."""


def form_of(schema: Any) -> list[dict[str, Any]]:
    """The fields of an object schema, in the order of its ``properties``."""
    if not isinstance(schema, dict):
        return []
    root = schema
    resolved = _resolve(schema, root, 0)
    properties = resolved.get("properties") if isinstance(resolved, dict) else None
    if not isinstance(properties, dict):
        return []
    required = resolved.get("required") if isinstance(resolved.get("required"), list) else []
    return [_field(name, sub, root, name in required, 1) for name, sub in properties.items()]


def _resolve(schema: Any, root: dict[str, Any], depth: int) -> Any:
    """``schema`` with a local ``$ref`` followed (a few hops at most)."""
    for _ in range(8):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return schema
        ref: str = schema["$ref"]
        if not ref.startswith("#/"):
            return {}
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return {}
        # Keywords beside a $ref (a description, a default) win over the target's.
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _options(schema: dict[str, Any]) -> list[dict[str, Any]] | None:
    if isinstance(schema.get("enum"), list):
        names = schema.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(schema["enum"]) else None
        return [
            {"value": value, "label": str(labels[i]) if labels else _label(value)}
            for i, value in enumerate(schema["enum"])
        ]
    for key in ("oneOf", "anyOf"):
        choices = schema.get(key)
        if (
            isinstance(choices, list)
            and choices
            and all(isinstance(c, dict) and "const" in c for c in choices)
        ):
            return [
                {"value": c["const"], "label": str(c.get("title") or _label(c["const"]))} for c in choices
            ]
    return None


def _label(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _type_of(schema: dict[str, Any]) -> tuple[str | None, bool]:
    """The one type ``schema`` is, and whether it may also be null."""
    kind = schema.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return (others[0] if len(others) == 1 else None), "null" in kind
    if isinstance(kind, str):
        return kind, False
    return None, False


def _unwrap_nullable(schema: dict[str, Any], root: dict[str, Any], depth: int) -> tuple[dict[str, Any], bool]:
    for key in ("anyOf", "oneOf"):
        choices = schema.get(key)
        if isinstance(choices, list) and len(choices) == 2:
            kept = [c for c in choices if not (isinstance(c, dict) and c.get("type") == "null")]
            if len(kept) == 1 and isinstance(kept[0], dict):
                inner = _resolve(kept[0], root, depth)
                merged = {**inner, **{k: v for k, v in schema.items() if k != key}}
                return merged, True
    return schema, False


def _field(name: str, schema: Any, root: dict[str, Any], required: bool, depth: int) -> dict[str, Any]:
    schema = _resolve(schema, root, depth)
    if not isinstance(schema, dict):
        schema = {}
    schema, nullable = _unwrap_nullable(schema, root, depth)
    kind, null_too = _type_of(schema)
    field: dict[str, Any] = {
        "name": name,
        "kind": "json",
        "required": required and not (nullable or null_too),
    }
    for key in ("title", "description", "format"):
        if isinstance(schema.get(key), str):
            field[key] = schema[key]
    for key in ("minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength"):
        if isinstance(schema.get(key), int | float) and not isinstance(schema.get(key), bool):
            field[key] = schema[key]
    if "default" in schema:
        field["default"] = schema["default"]
    options = _options(schema)
    if options is not None:
        field["kind"] = "enum"
        field["options"] = options
        return field
    if depth > MAX_DEPTH:
        return field
    if kind in SCALARS:
        field["kind"] = kind
    elif kind == "array":
        items = _resolve(schema.get("items"), root, depth)
        item_options = _options(items) if isinstance(items, dict) else None
        if item_options is not None:
            field["kind"] = "multienum"
            field["options"] = item_options
        elif isinstance(items, dict):
            field["kind"] = "array"
            field["items"] = _field("item", items, root, True, depth + 1)
    elif kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        properties = schema.get("properties")
        if isinstance(properties, dict) and properties:
            inner_required = schema.get("required") if isinstance(schema.get("required"), list) else []
            field["kind"] = "object"
            field["fields"] = [
                _field(key, sub, root, key in inner_required, depth + 1) for key, sub in properties.items()
            ]
    return field


def parse_text(field: dict[str, Any], text: str) -> Any:
    """What a person typed for a scalar or JSON field, as a value of its kind; FormError when it is not."""
    kind = field["kind"]
    name = field["name"]
    if kind == "string":
        return text
    stripped = text.strip()
    if kind == "integer":
        try:
            return int(stripped)
        except ValueError:
            raise FormError(f"{name}: {text!r} is not an integer") from None
    if kind == "number":
        try:
            number = float(stripped)
        except ValueError:
            raise FormError(f"{name}: {text!r} is not a number") from None
        return (
            int(number)
            if number.is_integer() and "." not in stripped and "e" not in stripped.lower()
            else number
        )
    if kind == "boolean":
        if stripped.lower() in ("true", "yes", "1", "on"):
            return True
        if stripped.lower() in ("false", "no", "0", "off"):
            return False
        raise FormError(f"{name}: {text!r} is not true or false")
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError as exc:
        raise FormError(f"{name}: not JSON ({exc})") from None


def initial_value(field: dict[str, Any]) -> Any:
    """The value a fresh form shows: the default, else nothing (None) for an optional field."""
    if "default" in field:
        return field["default"]
    if field["kind"] == "boolean" and field.get("required"):
        return False
    if field["kind"] == "object":
        return {f["name"]: initial_value(f) for f in field.get("fields", []) if initial_value(f) is not None}
    return None


def missing_required(fields: list[dict[str, Any]], values: dict[str, Any]) -> list[str]:
    """The required fields (dotted names, nested objects included) that ``values`` lacks."""
    out: list[str] = []
    for field in fields:
        value = values.get(field["name"]) if isinstance(values, dict) else None
        if value is None or value == "":
            if field.get("required"):
                out.append(field["name"])
            continue
        if field["kind"] == "object":
            out.extend(
                f"{field['name']}.{inner}" for inner in missing_required(field.get("fields", []), value)
            )
    return out


def prompt_form(arguments: Any) -> list[dict[str, Any]]:
    """A prompt's ``arguments`` (name, description, required; always strings) as fields."""
    out: list[dict[str, Any]] = []
    for argument in arguments if isinstance(arguments, list) else []:
        if isinstance(argument, dict) and isinstance(argument.get("name"), str):
            field: dict[str, Any] = {
                "name": argument["name"],
                "kind": "string",
                "required": argument.get("required") is True,
            }
            for key in ("title", "description"):
                if isinstance(argument.get(key), str):
                    field[key] = argument[key]
            out.append(field)
    return out


_TEMPLATE_VARIABLE: Final = re.compile(r"\{([+#./;?&]?)([^}]*)\}")


def template_form(uri_template: Any) -> list[dict[str, Any]]:
    """The variables of an RFC 6570 URI template (``{name}``, ``{+path}``, ``{?q,lang}``) as string fields."""
    names: list[str] = []
    for match in _TEMPLATE_VARIABLE.finditer(uri_template if isinstance(uri_template, str) else ""):
        for spec in match.group(2).split(","):
            name = spec.strip().rstrip("*").split(":")[0]
            if name and name not in names:
                names.append(name)
    return [{"name": name, "kind": "string", "required": True} for name in names]


def expand_template(uri_template: str, values: dict[str, Any]) -> str:
    """An RFC 6570 template (the operators resource templates use) with ``values`` put in."""
    from urllib.parse import quote

    def one(match: re.Match[str]) -> str:
        op = match.group(1)
        names = [spec.strip().rstrip("*").split(":")[0] for spec in match.group(2).split(",")]
        present = [n for n in names if n and values.get(n) not in (None, "")]
        safe_chars = ":/?#[]@!$&'()*+,;=" if op in ("+", "#") else ""

        def enc(name: str) -> str:
            return quote(str(values[name]), safe=safe_chars)

        if not present:
            return ""
        if op in ("?", "&"):
            return op + "&".join(f"{n}={enc(n)}" for n in present)
        if op == ";":
            return "".join(f";{n}={enc(n)}" for n in present)
        sep = {"/": "/", ".": "."}.get(op, ",")
        return ("" if op in ("", "+") else op) + sep.join(enc(n) for n in present)

    return _TEMPLATE_VARIABLE.sub(one, uri_template)
