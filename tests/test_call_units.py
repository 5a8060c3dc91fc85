"""The pure parts of `call`: argument coercion, scripts and references, params, gating, output."""

from __future__ import annotations

from typing import Any

import pytest

from mcptape.client.coerce import coerce_arguments, coerce_value, split_pairs
from mcptape.client.errors import ClientTimeout, ToolError, TransportError, ValidationError
from mcptape.client.methods import Call, build_params, missing_capability, tool_text
from mcptape.client.output import envelope, error_line, log_line
from mcptape.client.runner import call_from_step
from mcptape.client.script import parse_script, pointer, resolve


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("3", {"type": "integer"}, 3),
        ("3.0", {"type": "integer"}, 3),
        ("2.5", {"type": "number"}, 2.5),
        ("7", {"type": "number"}, 7),
        ("No", {"type": "boolean"}, False),
        ("1", {"type": "boolean"}, True),
        ('{"a": [1]}', {"type": "object"}, {"a": [1]}),
        ("[1, 2]", {"type": "array"}, [1, 2]),
        ("null", {"type": ["integer", "null"]}, None),
        ("5", {"type": ["integer", "null"]}, 5),
        ("007", {"type": "string"}, "007"),
        ("12", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, 12),
        ("twelve", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "twelve"),
        ("b", {"enum": ["a", "b"]}, "b"),
        ('{"x": 1}', None, {"x": 1}),
        ("plain words", None, "plain words"),
    ],
)
def test_values_are_coerced_by_their_schema(text: str, schema: Any, value: Any) -> None:
    assert coerce_value("k", text, schema) == value


@pytest.mark.parametrize(
    ("text", "schema", "message"),
    [
        ("2.5", {"type": "integer"}, "expected integer"),
        ("maybe", {"type": "boolean"}, "expected boolean"),
        ("[1]", {"type": "object"}, "expected object"),
        ("c", {"enum": ["a", "b"]}, 'one of ["a", "b"]'),
    ],
)
def test_values_the_schema_refuses_are_validation_errors(text: str, schema: Any, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        coerce_value("k", text, schema)
    assert message in caught.value.message


def test_pairs_and_whole_arguments() -> None:
    assert split_pairs(["a=1", "b==2", "c="]) == [("a", "1"), ("b", "=2"), ("c", "")]
    with pytest.raises(ValidationError, match="expected NAME=VALUE"):
        split_pairs(["=1"])
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert coerce_arguments([("a", "1"), ("b", "true")], schema) == {"a": 1, "b": True}


def test_script_steps_are_checked_before_anything_runs() -> None:
    steps = parse_script(
        '[{"method": "tools/list"}, {"method": "ping", "onError": "continue"}, {"method": "ping"}]'
    )
    assert [(s.index, s.on_error) for s in steps] == [(0, "stop"), (1, "continue"), (2, "stop")]
    cases = {
        "{": "not valid JSON",
        "[]": "non-empty JSON array",
        "[1]": "step 0: a step must be a JSON object",
        '[{"params": {}}]': "step 0: no 'method'",
        '[{"method": "x", "tool": "y"}]': "step 0: unknown field 'tool'",
        '[{"method": "x", "toolArgs": []}]': "step 0: 'toolArgs' must be a dict",
        '[{"method": "x", "onError": "retry"}]': "onError must be stop, continue or skip-to:N",
        '[{"method": "x", "onError": "skip-to:0"}]': "must name a later step",
        '[{"method": "x"}, {"method": "y", "uri": {"$ref": "1/a"}}]': "step 1: $ref '1/a' must start",
    }
    for text, message in cases.items():
        with pytest.raises(ValidationError) as caught:
            parse_script(text)
        assert message in caught.value.message, (text, caught.value.message)


def test_references_are_json_pointers_into_earlier_results() -> None:
    results = {0: {"tools": [{"name": "echo"}], "a/b": {"~x": 1}}}
    assert pointer(results[0], "tools/0/name") == "echo"
    assert pointer(results[0], "a~1b/~0x") == 1
    assert resolve({"toolName": {"$ref": "0/tools/0/name"}, "keep": [{"$ref": "0/a~1b"}]}, results, "s") == {
        "toolName": "echo",
        "keep": [{"~x": 1}],
    }
    with pytest.raises(ValidationError, match="no 'nothing'"):
        resolve({"$ref": "0/nothing"}, results, "step 1")
    with pytest.raises(ValidationError, match="step 3 has no result"):
        resolve({"$ref": "3/x"}, results, "step 4")


def test_a_script_step_becomes_a_call_with_the_flags_defaults() -> None:
    base = Call("ping", fail_on_error=True, poll_interval=0.5)
    call = call_from_step(
        {"method": "tools/call", "toolName": "t", "toolArg": {"n": "1", "o": {"a": 1}}}, base
    )
    assert (call.method, call.tool_name, call.fail_on_error, call.poll_interval) == (
        "tools/call",
        "t",
        True,
        0.5,
    )
    assert call.tool_arg_pairs == [("n", "1"), ("o", '{"a":1}')]


def test_params_built_from_flags() -> None:
    assert build_params(Call("tools/call", tool_name="t", tool_args={"a": 1})) == {
        "name": "t",
        "arguments": {"a": 1},
    }
    assert build_params(Call("tools/list", cursor="c")) == {"cursor": "c"}
    assert build_params(Call("prompts/get", prompt_name="p", prompt_args={"x": "1"})) == {
        "name": "p",
        "arguments": {"x": "1"},
    }
    assert build_params(Call("completion/complete", ref="ref/resource/file:///a/b", argument_name="n")) == {
        "ref": {"type": "ref/resource", "uri": "file:///a/b"},
        "argument": {"name": "n", "value": ""},
    }
    assert build_params(Call("tools/call", tool_name="t", run_as_task=True))["task"] == {}  # type: ignore[index]
    assert build_params(Call("x/y", params={"k": 1})) == {"k": 1}
    assert build_params(Call("ping")) is None
    for call, flag in [
        (Call("tools/call"), "--tool-name"),
        (Call("resources/read"), "--uri"),
        (Call("tasks/get"), "--task-id"),
        (Call("completion/complete", ref="ref/other/x", argument_name="a"), "ref/prompt/NAME"),
        (Call("ping", run_as_task=True), "tools/call only"),
    ]:
        with pytest.raises(ValidationError, match=flag):
            build_params(call)


def test_capability_gating_table() -> None:
    caps = {"tools": {}, "resources": {"subscribe": False}}
    assert missing_capability("tools/call", caps) is None
    assert missing_capability("prompts/get", caps) == "prompts"
    assert missing_capability("resources/subscribe", caps) == "resources.subscribe"
    assert missing_capability("some/extension", caps) is None


def test_envelope_and_lines() -> None:
    failed = ToolError("it failed", result={"isError": True})
    env = envelope("tools/call", 0.0123, None, failed, [], [], [])
    assert env["success"] is False and env["result"] == {"isError": True}
    assert env["error"] == {"category": "application", "code": None, "message": "it failed", "data": None}
    assert env["durationMs"] == 12.3
    assert log_line({"level": "warning", "logger": "db", "data": {"n": 1}}) == 'log warning [db]: {"n":1}'
    assert error_line(ClientTimeout("slow")) == "error (timeout): slow"
    assert error_line(failed) == "warning (application): it failed"
    assert error_line(ToolError("no", fail=True)) == "error (application): no"
    # A link's own answer says "mcptape: ..."; the line does not say it twice.
    assert error_line(TransportError("mcptape: the MCP server answered HTTP 400")) == (
        "error (transport): the MCP server answered HTTP 400"
    )
    assert (
        tool_text(
            {"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}
        )
        == "a\nb"
    )


def test_script_fields_are_the_flags_in_camel_case_completion_ref_included() -> None:
    fields = {"method": "completion/complete", "completionRef": "ref/prompt/p", "argumentName": "a"}
    [step] = parse_script(
        '[{"method": "completion/complete", "completionRef": "ref/prompt/p", "argumentName": "a"}]'
    )
    assert step.fields == fields
    call = call_from_step(fields, Call("ping"))
    assert (call.ref, call.argument_name) == ("ref/prompt/p", "a")
    assert (
        call_from_step({"method": "completion/complete", "ref": "ref/prompt/q"}, Call("ping")).ref
        == "ref/prompt/q"
    )
    with pytest.raises(ValidationError, match="step 0: give 'completionRef' or 'ref'"):
        parse_script(
            '[{"method": "completion/complete", "completionRef": "ref/prompt/p", "ref": "ref/prompt/q"}]'
        )
