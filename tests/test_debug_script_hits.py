"""debug-script end to end (real node, the real mcp client): only hits at the requested line count,
TypeScript under tsx, values that are awkward to deliver, one evaluation per hit."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from mcp import Client

from mcptape.servers.debug_script.errors import PROCESS_EXITED
from tests.helpers.debug_script import (
    DATA,
    SERVER_ARGS,
    args,
    call,
    error,
    hits,
    results,
    text_of,
    with_client,
)
from tests.helpers.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("node")]

TSX_LOADER = ROOT / "tests" / "npm" / "node_modules" / "tsx" / "dist" / "loader.mjs"


def test_breakpoint_in_a_function_that_never_runs_is_not_counted_where_v8_moves_it() -> None:
    # V8 resolves line 2 (inside neverCalled) to line 5, inside called(): that is not line 2.
    expression = "typeof n === 'number' ? 'paused in called(), n=' + n : 'paused elsewhere'"
    message = error(call(args("node --inspect-brk=0 never-called.js", "never-called.js", 2, expression)))
    assert message.startswith(PROCESS_EXITED)
    assert "line 5, column 13, in called()" in message
    assert "not counted" in message


def test_breakpoint_in_a_function_after_the_last_statement_times_out_instead_of_a_false_hit() -> None:
    message = error(call(args("node --inspect-brk=0 after-last.js", "after-last.js", 4, "n", timeout=1500)))
    assert message.startswith("Timeout waiting for breakpoint after 1500 ms.")
    assert "V8 placed the breakpoint for line 4 at line 5" in message


def test_breakpoint_on_a_comment_line_slides_to_the_next_code_line_and_says_so() -> None:
    result = call(args("node --inspect-brk=0 slide.js", "slide.js", 4, "doubled"))
    assert results(result) == [{"type": "number", "value": 0}, {"type": "number", "value": 2}]
    assert {(hit["line"], hit["function"]) for hit in hits(result)} == {(6, "step")}
    assert result.structured_content is not None
    assert result.structured_content["notes"] == [
        "Line 4 holds no code; the breakpoint stops at line 6, the next line with code."
    ]


def test_typescript_run_by_tsx_stops_on_a_code_line_of_an_imported_module() -> None:
    # tsx serves util.ts under its own URL, compiled onto one line with an inline map.
    command = f"node --inspect-brk=0 --import {TSX_LOADER} tsx/app.ts"
    result = call(args(command, "tsx/util.ts", 9, "scaled"))
    assert hits(result) == [
        {"type": "object", "value": {"x": 10 * n, "y": 20 * n}, "line": 9, "column": 3, "function": "scale"}
        for n in (1, 2, 3)
    ]


def test_typescript_interface_line_under_tsx_is_no_hit_and_says_why() -> None:
    command = f"node --inspect-brk=0 --import {TSX_LOADER} tsx/app.ts"
    message = error(call(args(command, "tsx/util.ts", 2, "point")))
    assert message.startswith(PROCESS_EXITED)
    assert message == (
        f"{PROCESS_EXITED}. Line 2 compiles to no JavaScript (a type-only line such as an interface or type "
        "declaration), so there is nothing to stop at; the next line with code is 7."
    )


def test_lone_surrogate_in_a_value_is_escaped_and_the_server_keeps_answering() -> None:
    async def body(client: Client) -> tuple[Any, Any]:
        first = await client.call_tool(
            "debug-script", args("node --inspect-brk=0 surrogate.js", "surrogate.js", 4, "s")
        )
        await client.list_tools()
        second = await client.call_tool(
            "debug-script", args("node --inspect-brk=0 count.js 1", "count.js", 5, "i")
        )
        return first, second

    first, second = with_client(body)
    assert results(first)[0] == {"type": "string", "value": "\\ud83d"}
    assert hits(first)[0]["escaped"] is True
    assert "Lone UTF-16 surrogates are written as \\uXXXX text" in text_of(first)
    assert results(second) == [{"type": "number", "value": 0}]


def test_lone_surrogate_object_keys_and_values_are_escaped_and_pairs_kept() -> None:
    result = call(args("node --inspect-brk=0 surrogate.js", "surrogate.js", 4, "holder"))
    assert hits(result)[0]["value"] == {"\\ud83d": "\\ud83d", "whole": "\U0001f600"}
    assert hits(result)[0]["escaped"] is True


def test_lone_surrogate_in_the_arguments_gets_an_error_answer() -> None:
    # The Python SDK cannot even send such a string: speak raw JSON-RPC, as other clients can.
    arguments = json.dumps(args("node --inspect-brk=0 count.js 1", "count.js", 5, "'X'")).replace(
        "X", "\\ud83d"
    )
    call_line = (
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "debug-script", '
        f'"arguments": {arguments}}}}}'
    )
    answer, after = raw_exchange([call_line, '{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}'])
    assert answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["error"].startswith(
        "expression holds a lone UTF-16 surrogate (half of a pair"
    )
    assert after["result"]["tools"][0]["name"] == "debug-script"


def raw_exchange(lines: list[str]) -> list[dict[str, Any]]:
    """Send each line after the handshake to a server on raw stdio; the answer to each, in order."""
    process = subprocess.Popen(
        [sys.executable, *SERVER_ARGS],
        cwd=DATA,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    handshake = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    try:
        process.stdin.write("\n".join([*handshake, *lines]).encode() + b"\n")
        process.stdin.flush()
        answers = [json.loads(process.stdout.readline()) for _ in range(len(lines) + 1)]
    finally:
        process.kill()
        process.wait()
    return answers[1:]


def test_expression_throwing_a_syntax_error_while_running_is_evaluated_once_per_hit() -> None:
    result = call(args("node --inspect-brk=0 queue.js", "queue.js", 4, "JSON.parse(queue.shift())"))
    values = results(result)
    assert values[0]["type"] == "error" and values[0]["value"].startswith("SyntaxError")
    assert values[1] == {"type": "object", "value": {"ok": 1}}
    assert len(values) == 2


def test_statements_that_are_no_expression_still_evaluate_once() -> None:
    result = call(args("node --inspect-brk=0 queue.js", "queue.js", 4, "queue.shift(); queue.length"))
    assert results(result) == [{"type": "number", "value": 2}, {"type": "number", "value": 1}]


def test_a_6_mib_string_is_cut_to_the_limit_and_says_how_much() -> None:
    result = call(args("node --inspect-brk=0 big.js", "big.js", 5, "text"))
    [hit] = hits(result)
    assert hit["value"] == "x" * 10_000
    assert hit["truncated"] == 6 * 1024 * 1024 - 10_000
    # Each value travels once: the text is a summary, not a second copy.
    assert len(text_of(result)) < 1000
    assert "1 value was cut" in text_of(result)


def test_the_caller_can_raise_the_value_limit_and_objects_are_cut_as_json_text() -> None:
    arguments = {**args("node --inspect-brk=0 big.js 50", "big.js", 5, "[text]"), "max_value_length": 30}
    [cut] = hits(call(arguments))
    assert cut["value"] == '["' + "x" * 28 and cut["truncated"] == 54 - 30
    arguments["max_value_length"] = 100
    assert results(call(arguments)) == [{"type": "object", "value": ["x" * 50]}]


def test_values_of_many_hits_share_one_response_budget() -> None:
    arguments = {
        **args("node --inspect-brk=0 big.js 6000 20", "big.js", 5, "text"),
        "max_total_length": 30_000,
    }
    values = hits(call(arguments))
    assert len(values) == 20
    assert sum(len(hit["value"]) for hit in values) == 30_000
    assert [len(hit["value"]) for hit in values[:5]] == [6000] * 5
    assert all(hit["value"] == "" and hit["truncated"] == 6000 for hit in values[5:])


def test_many_hits_arrive_in_order() -> None:
    values = results(call(args("node --inspect-brk=0 count.js 300", "count.js", 5, "i")))
    assert values == [{"type": "number", "value": i} for i in range(300)]


def test_two_calls_in_flight_share_the_server() -> None:
    async def body(client: Client) -> list[Any]:
        return list(
            await asyncio.gather(
                *(
                    client.call_tool(
                        "debug-script", args(f"node --inspect-brk=0 count.js {n}", "count.js", 5, "i")
                    )
                    for n in (1, 2)
                )
            )
        )

    one, two = with_client(body)
    assert len(results(one)) == 1 and len(results(two)) == 2
    assert DATA.is_dir()
