"""The recording comparison (mcptape.replay.schema_diff) with plain values."""

from __future__ import annotations

from typing import Any

from mcptape.replay.answer_diff import ABSENT, json_differences, request_key
from mcptape.replay.schema_diff import Snapshot, compare, item_changes, schema_changes, snapshot


def tool(name: str, props: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "inputSchema": {"type": "object", "properties": props, "required": required},
        **extra,
    }


def session(
    tools: list[dict[str, Any]],
    calls: list[tuple[dict[str, Any], Any]] | None = None,
    caps: Any = None,
) -> list[tuple[str, Any]]:
    """A recording's messages: handshake, tools/list, then each call with its answer."""
    pairs: list[tuple[str, Any]] = [
        ("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
        (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "capabilities": caps or {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            },
        ),
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}),
    ]
    for i, (params, answer) in enumerate(calls or [], 2):
        pairs.append(("c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}))
        pairs.append(("s2c", {"jsonrpc": "2.0", "id": i, **answer}))
    return pairs


ADD = tool("add", {"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"])


def summary(changes: list[Any]) -> list[tuple[str, str, str]]:
    return [(c.severity, c.name, c.what) for c in changes]


def test_removed_tool_and_new_required_argument_are_breaking_additions_compatible() -> None:
    a = snapshot(session([ADD, tool("gone", {}, [])]))
    b_add = tool(
        "add", {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, ["a", "b", "c"]
    )
    b = snapshot(session([b_add, tool("new", {}, [])]))
    assert summary(compare(a, b).changes) == [
        ("breaking", "gone", "tool gone removed"),
        ("compatible", "new", "tool new added"),
        ("breaking", "add", "new required argument 'c'"),
    ]
    assert len(compare(a, b).breaking) == 2
    assert compare(a, a).changes == []


def test_input_schema_changes_are_classified() -> None:
    a = {
        "properties": {
            "x": {"type": "string"},
            "y": {"type": "string", "enum": ["p", "q"]},
            "z": {"type": "integer"},
            "w": {"type": "string"},
        },
        "required": ["x", "w"],
    }
    b = {
        "properties": {
            "x": {"type": "integer"},
            "y": {"type": "string", "enum": ["q", "r"]},
            "z": {"type": "integer", "description": "now documented"},
            "w": {"type": "string", "maxLength": 3},
            "o": {"type": "string"},
        },
        "required": ["z"],
    }
    assert schema_changes(a, b, "input") == [
        ("compatible", "new optional argument 'o'"),
        ("breaking", "argument 'x' is now optional")
        if False
        else ("compatible", "argument 'x' is now optional"),
        ("breaking", "argument 'x' type changed from string to integer"),
        ("breaking", "argument 'y' no longer allows \"p\""),
        ("compatible", "argument 'y' now allows \"r\""),
        ("breaking", "argument 'z' is now required"),
        ("compatible", "argument 'z' description changed"),
        ("compatible", "argument 'w' is now optional"),
        ("breaking", "argument 'w' constraints changed (maxLength)"),
    ]


def test_nested_object_arguments_are_compared_by_path() -> None:
    a = {"properties": {"opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}}}}
    b = {
        "properties": {
            "opts": {
                "type": "object",
                "properties": {"deep": {"type": "boolean"}, "must": {"type": "string"}},
                "required": ["must"],
            }
        }
    }
    assert schema_changes(a, b, "input") == [("breaking", "new required argument 'opts.must'")]


def test_output_schema_narrowing_is_compatible_and_widening_breaking() -> None:
    a = {
        "name": "t",
        "inputSchema": {},
        "outputSchema": {
            "properties": {"r": {"type": "string"}, "s": {"type": "string"}},
            "required": ["r", "s"],
        },
    }
    b = {
        "name": "t",
        "inputSchema": {},
        "outputSchema": {
            "properties": {"r": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["r"],
        },
    }
    assert item_changes("tool", a, b) == [
        ("breaking", "output field 's' removed"),
        ("compatible", "new optional output field 'n'"),
    ]
    assert item_changes("tool", a, {"name": "t", "inputSchema": {}}) == [
        ("breaking", "output schema removed")
    ]
    assert item_changes("tool", {"name": "t", "inputSchema": {}}, a) == [
        ("compatible", "output schema added")
    ]


def test_description_and_annotation_changes_are_compatible() -> None:
    a = tool("t", {}, [], description="old", annotations={"readOnlyHint": True})
    b = tool("t", {}, [], description="new", annotations={"readOnlyHint": False})
    assert item_changes("tool", a, b) == [("compatible", "annotations, description changed")]


def test_prompt_arguments_compare_like_input_schemas() -> None:
    a = {"name": "p", "arguments": [{"name": "city", "required": True}, {"name": "unit"}]}
    b = {
        "name": "p",
        "arguments": [{"name": "city", "required": True}, {"name": "country", "required": True}],
    }
    assert item_changes("prompt", a, b) == [
        ("breaking", "argument 'unit' removed"),
        ("breaking", "new required argument 'country'"),
    ]


def test_resources_compare_by_uri_and_mime_type() -> None:
    def recording(resources: list[dict[str, Any]]) -> Snapshot:
        return snapshot(
            [
                ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "resources/list"}),
                ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"resources": resources}}),
            ]
        )

    a = recording(
        [{"uri": "a://1", "name": "one", "mimeType": "text/plain"}, {"uri": "a://2", "name": "two"}]
    )
    b = recording([{"uri": "a://1", "name": "One", "mimeType": "application/json"}])
    assert summary(compare(a, b).changes) == [
        ("breaking", "a://2", "resource a://2 removed"),
        ("breaking", "a://1", "mimeType changed from text/plain to application/json"),
        ("compatible", "a://1", "name changed"),
    ]


def test_capabilities_removed_are_breaking() -> None:
    a = snapshot(session([ADD], caps={"tools": {}, "prompts": {}}))
    b = snapshot(session([ADD], caps={"tools": {}, "logging": {}}))
    assert summary(compare(a, b).changes) == [
        ("breaking", "prompts", "capability prompts removed"),
        ("compatible", "logging", "capability logging added"),
    ]


def test_surfaces_a_recording_never_listed_are_not_compared() -> None:
    listed = snapshot(session([ADD]))
    unlisted = snapshot([])
    assert unlisted.surfaces["tools/list"] is None
    assert compare(listed, unlisted).changes == []


def test_paginated_and_repeated_listings() -> None:
    pairs = [
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": [tool("old", {}, [])]}}),
        # listed again after a list_changed: the first page starts afresh
        ("c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
        ("s2c", {"jsonrpc": "2.0", "id": 2, "result": {"tools": [ADD], "nextCursor": "c"}}),
        ("c2s", {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "c"}}),
        ("s2c", {"jsonrpc": "2.0", "id": 3, "result": {"tools": [tool("second", {}, [])]}}),
    ]
    surface = snapshot(pairs).surfaces["tools/list"]
    assert surface is not None and sorted(surface) == ["add", "second"]


def test_answers_to_the_same_requests_are_compared_in_order_meta_aside() -> None:
    call = {"name": "echo", "arguments": {"m": "hi"}, "_meta": {"progressToken": 1}}
    a = snapshot(
        session(
            [ADD],
            [
                (call, {"result": {"content": [{"type": "text", "text": "hi"}], "_meta": {"t": 1}}}),
                (call, {"result": {"n": 1}}),
                ({"name": "only-a"}, {"result": {}}),
            ],
        )
    )
    other = {**call, "_meta": {"progressToken": 99}}
    b = snapshot(
        session(
            [ADD],
            [
                (other, {"result": {"content": [{"type": "text", "text": "hi"}], "_meta": {"t": 2}}}),
                (other, {"result": {"n": 2}}),
            ],
        )
    )
    report = compare(a, b)
    assert (report.compared, report.only_in_a, report.only_in_b) == (2, 1, 0)
    [change] = report.changes
    assert (change.severity, change.name) == ("differs", 'tools/call echo {"m": "hi"}')  # its arguments too
    assert change.pointers == [{"pointer": "/result/n", "a": 1, "b": 2}]


def test_an_answer_that_now_fails_is_breaking() -> None:
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    a = snapshot(
        session([ADD], [(call, {"result": {"content": [], "isError": False}}), (call, {"result": {}})])
    )
    b = snapshot(
        session(
            [ADD],
            [
                (call, {"result": {"content": [], "isError": True}}),
                (call, {"error": {"code": -32602, "message": "bad"}}),
            ],
        )
    )
    assert [(c.severity, c.what) for c in compare(a, b).changes] == [
        ("breaking", "now fails"),
        ("breaking", "now fails"),
    ]


def test_request_key_ignores_meta_and_request_state_and_key_order() -> None:
    assert request_key("m", {"b": 1, "a": {"_meta": 1, "x": 2}, "requestState": "s"}) == request_key(
        "m", {"a": {"x": 2}, "b": 1}
    )
    assert request_key("m", {"a": 1}) != request_key("n", {"a": 1})


def test_json_differences_name_each_pointer() -> None:
    a = {"a": [1, 2, 3], "b/c": {"d~": 1}, "same": True, "t": 1}
    b = {"a": [1, 5], "b/c": {"d~": 2}, "same": True, "t": 1.5, "new": None}
    assert list(json_differences(a, b)) == [
        ("/a/1", 2, 5),
        ("/a/2", 3, ABSENT),
        ("/b~1c/d~0", 1, 2),
        ("/t", 1, 1.5),
        ("/new", ABSENT, None),
    ]
    assert list(json_differences(1, True)) == [("", 1, True)]


def test_batches_and_proxy_copies_of_requests_are_handled() -> None:
    pairs: list[tuple[str, Any]] = [
        (
            "c2s",
            [
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                {"jsonrpc": "2.0", "method": "notifications/x"},
            ],
        ),
        (
            "c2s",
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        ),  # a proxy edit of the same request
        ("s2c", [{"jsonrpc": "2.0", "id": 1, "result": {"tools": [ADD]}}]),
        ("s2c", {"jsonrpc": "2.0", "id": 9, "result": {}}),  # answers nothing we saw
    ]
    snap = snapshot(pairs)
    assert snap.surfaces["tools/list"] == {"add": ADD}
    assert snap.exchanges == []


def test_answers_are_compared_after_the_replay_normalisation() -> None:
    from mcptape.replay.normalise import Normaliser

    info = {"name": "info", "arguments": {"path": "/a"}}
    weather = {"name": "weather", "arguments": {}}

    def answers(when: str, uuid: str, humidity: int) -> list[tuple[dict[str, Any], Any]]:
        text = {"content": [{"type": "text", "text": f"modified: {when}\nid {uuid}"}]}
        return [
            (info, {"result": text}),
            (weather, {"result": {"structuredContent": {"humidity": humidity}}}),
        ]

    a = snapshot(
        session(
            [], answers("Thu Nov 26 2026 15:30:01 GMT+0000 (UTC)", "123e4567-e89b-12d3-a456-426614174000", 45)
        )
    )
    b = snapshot(
        session(
            [], answers("Fri Nov 27 2026 09:00:00 GMT+0000 (UTC)", "00000000-e89b-12d3-a456-426614174000", 46)
        )
    )
    assert [c.name for c in compare(a, b).changes] == [
        'tools/call info {"path": "/a"}',
        "tools/call weather",
    ]  # no normaliser
    assert [c.name for c in compare(a, b, Normaliser()).changes] == ["tools/call weather"]
    ignored = Normaliser.from_options(ignores=["tools/call:weather=/result/structuredContent/humidity"])
    assert compare(a, b, ignored).changes == []
    kept = Normaliser.from_options(keep=["timestamps"])
    [info_change, _] = compare(a, b, kept).changes
    assert [p["pointer"] for p in info_change.pointers] == ["/result/content/0/text"]
