"""Forms from JSON Schema (what both interactive clients draw), URI templates, and the terminal's rendering: pure."""

from __future__ import annotations

from typing import Any

import pytest

from mcptape.client.schemaform import (
    MAX_DEPTH,
    FormError,
    expand_template,
    form_of,
    initial_value,
    missing_required,
    parse_text,
    prompt_form,
    template_form,
)


def _by_name(fields: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in fields}


def test_scalars_keep_required_defaults_descriptions_formats_and_bounds() -> None:
    fields = _by_name(form_of({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Your name", "format": "email", "maxLength": 40},
            "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
            "ratio": {"type": "number"},
            "ok": {"type": "boolean", "title": "Agree"},
        },
        "required": ["name", "ok"],
    }))  # fmt: skip
    assert fields["name"] == {"name": "name", "kind": "string", "required": True, "description": "Your name",
                              "format": "email", "maxLength": 40}  # fmt: skip
    assert (
        fields["age"]["kind"] == "integer"
        and fields["age"]["default"] == 30
        and fields["age"]["maximum"] == 150
    )
    assert fields["ratio"]["kind"] == "number" and not fields["ratio"]["required"]
    assert fields["ok"] == {"name": "ok", "kind": "boolean", "required": True, "title": "Agree"}


def test_enums_in_every_spelling_and_multiple_choices() -> None:
    fields = _by_name(form_of({
        "type": "object",
        "properties": {
            "plain": {"type": "string", "enum": ["a", "b"]},
            "titled": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}, {"const": "h2", "title": "Batman"}]},
            "legacy": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
            "numbers": {"enum": [1, 2]},
            "many": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "default": ["x"]},
            "many_titled": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}},
        },
    }))  # fmt: skip
    assert fields["plain"]["options"] == [{"value": "a", "label": "a"}, {"value": "b", "label": "b"}]
    assert [o["label"] for o in fields["titled"]["options"]] == ["Superman", "Batman"]
    assert fields["legacy"]["options"] == [{"value": "p1", "label": "Cats"}, {"value": "p2", "label": "Dogs"}]
    assert fields["numbers"]["options"][1] == {"value": 2, "label": "2"}
    assert fields["many"]["kind"] == "multienum" and fields["many"]["default"] == ["x"]
    assert fields["many_titled"]["options"] == [{"value": "f1", "label": "Tuna"}]


def test_arrays_nested_objects_refs_and_nullable_types() -> None:
    schema = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"$ref": "#/$defs/Point", "description": "a place"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "either": {"type": ["string", "null"]},
            "shape": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "anything": {},
        },
        "required": ["where", "maybe", "either"],
    }
    fields = _by_name(form_of(schema))
    assert fields["tags"]["kind"] == "array" and fields["tags"]["items"]["kind"] == "string"
    assert fields["where"]["kind"] == "object" and fields["where"]["description"] == "a place"
    assert fields["where"]["fields"] == [{"name": "x", "kind": "number", "required": True}]
    assert fields["maybe"]["kind"] == "integer" and fields["maybe"]["required"] is False  # null allowed
    assert fields["either"]["kind"] == "string" and fields["either"]["required"] is False
    assert fields["shape"]["kind"] == "json" and fields["anything"]["kind"] == "json"  # the raw-JSON fallback


def test_a_recursive_schema_ends_in_raw_json() -> None:
    schema = {"type": "object", "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
              "properties": {"head": {"$ref": "#/$defs/Node"}}}  # fmt: skip
    field = form_of(schema)[0]
    depth = 0
    while field["kind"] == "object":
        field, depth = field["fields"][0], depth + 1
    assert field["kind"] == "json" and depth == MAX_DEPTH


@pytest.mark.parametrize(
    "schema", [None, "x", {"type": "object"}, {"properties": []}, {"$ref": "http://elsewhere"}]
)
def test_what_is_not_an_object_schema_has_no_fields(schema: Any) -> None:
    assert form_of(schema) == []


def test_typed_text_is_parsed_by_kind_and_mistakes_name_the_field() -> None:
    assert parse_text({"name": "n", "kind": "integer"}, " 42 ") == 42
    assert (
        parse_text({"name": "n", "kind": "number"}, "3") == 3
        and parse_text({"name": "n", "kind": "number"}, "2.5") == 2.5
    )
    assert parse_text({"name": "n", "kind": "boolean"}, "yes") is True
    assert parse_text({"name": "n", "kind": "json"}, '{"a": [1]}') == {"a": [1]}
    assert parse_text({"name": "n", "kind": "string"}, " keep spaces ") == " keep spaces "
    for kind, text in (("integer", "4.5"), ("number", "x"), ("boolean", "maybe"), ("json", "{")):
        with pytest.raises(FormError, match=r"^n: "):
            parse_text({"name": "n", "kind": kind}, text)


def test_missing_required_fields_are_named_with_their_path() -> None:
    fields = form_of({"type": "object", "required": ["a", "o"], "properties": {
        "a": {"type": "string"}, "o": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}}}})  # fmt: skip
    assert missing_required(fields, {}) == ["a", "o"]
    assert missing_required(fields, {"a": "", "o": {}}) == ["a", "o.x"]
    assert missing_required(fields, {"a": "1", "o": {"x": "2"}}) == []
    assert initial_value({"name": "b", "kind": "boolean", "required": True}) is False


def test_prompt_arguments_and_template_variables_are_string_fields() -> None:
    assert prompt_form(
        [{"name": "code", "required": True, "description": "the code"}, {"name": "lang"}, "junk"]
    ) == [
        {"name": "code", "kind": "string", "required": True, "description": "the code"},
        {"name": "lang", "kind": "string", "required": False},
    ]
    assert [f["name"] for f in template_form("file:///{+path}{?q,lang}{#frag}/{id*}")] == [
        "path",
        "q",
        "lang",
        "frag",
        "id",
    ]


def test_uri_templates_are_expanded_as_rfc_6570_says() -> None:
    assert expand_template("demo://greeting/{name}", {"name": "Ada L/x"}) == "demo://greeting/Ada%20L%2Fx"
    assert expand_template("file:///{+path}", {"path": "a b/c"}) == "file:///a%20b/c"
    assert expand_template("s://x{?q,lang}", {"q": "1 2", "lang": ""}) == "s://x?q=1%202"
    assert expand_template("s://x{/a,b}{.ext}", {"a": "1", "b": "2", "ext": "json"}) == "s://x/1/2.json"
    assert expand_template("s://x{;p}{&more}", {"p": "v"}) == "s://x;p=v"


def test_the_terminal_shows_server_text_escaped_never_as_markup() -> None:
    from mcptape.tui import render

    shown = render.outcome({"status": "tool-error", "method": "tools/call", "ms": 1.5, "result": {
        "isError": True, "content": [{"type": "text", "text": "[bold]hi[/bold] \x1b[31mred"},
                                      {"type": "image", "mimeType": "image/png", "data": "aGVsbG8="}]}})  # fmt: skip
    plain = shown.plain
    assert plain.startswith("tool error (isError) tools/call · 1.5 ms")
    assert "[bold]hi[/bold]" in plain and "\x1b" not in plain  # markup as text, escapes escaped
    assert "[image image/png, 5 bytes]" in plain
    line = render.log_line({"level": "error", "logger": "db", "data": {"n": 1}})
    assert line.plain == 'error     db: {"n":1}' and line.style == "red"
