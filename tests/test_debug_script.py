"""The debug-script MCP server, driven through a real MCP client over stdio against real Node.js scripts."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult

from tests.helpers.debug_script import (
    DATA,
    SERVER_ARGS,
    args,
    call,
    error,
    hits,
    results,
    server,
    text_of,
    wait_until_gone,
    with_client,
)
from tests.helpers.http_servers import free_port
from tests.helpers.paths import MCPTAPE

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("node")]


def test_tool_is_listed_with_all_inputs_required_and_an_output_schema() -> None:
    tools = with_client(lambda client: client.list_tools()).tools
    assert [tool.name for tool in tools] == ["debug-script"]
    tool = tools[0]
    assert set(tool.input_schema["required"]) == {"command", "breakpoint", "expression", "timeout"}
    assert set(tool.input_schema["properties"]["breakpoint"]["required"]) == {"file", "line"}
    assert tool.output_schema is not None
    assert set(tool.output_schema["properties"]) == {"results", "notes", "error"}
    assert set(tool.output_schema["properties"]["results"]["items"]["required"]) == {
        "type",
        "value",
        "line",
        "column",
        "function",
    }


def test_loop_reports_a_value_of_every_type_in_hit_order() -> None:
    result = call(args("node --inspect-brk=0 loop.js", "loop.js", 21, "value"))
    assert results(result) == [
        {"type": "number", "value": 42},
        {"type": "string", "value": "text"},
        {"type": "object", "value": {"a": 1, "nested": {"b": [1, 2]}}},
        {"type": "object", "value": [1, "two", None]},
        {"type": "object", "value": None},
        {"type": "undefined", "value": None},
        {"type": "object", "value": "Object"},
        {"type": "function", "value": 'function greet() { return "hi"; }'},
        {"type": "bigint", "value": "100000000000000000000n"},
        {"type": "boolean", "value": True},
        {"type": "symbol", "value": "Symbol(tag)"},
    ]
    assert {(hit["line"], hit["column"], hit["function"]) for hit in hits(result)} == {(21, 19, "visit")}
    # The values travel once, in structuredContent; the text is one summary line.
    text = text_of(result)
    assert text.startswith(f"11 hits at {DATA / 'loop.js'}:21 (line 21); the process exited (status 0).")
    assert "100000000000000000000n" not in text


def test_local_variable_visible_only_in_the_paused_frame_is_evaluated() -> None:
    result = call(args("node --inspect-brk=0 loop.js", "loop.js", 21, "[onlyHere, index]"))
    values = results(result)
    assert len(values) == 11
    assert values[0] == {"type": "object", "value": ["item-0", 0]}
    assert values[10] == {"type": "object", "value": ["item-10", 10]}


def test_numbers_json_cannot_hold_keep_their_javascript_text() -> None:
    result = call(args("node --inspect-brk=0 count.js 3", "count.js", 5, "[0 / 0, -1 / 0, -0][i]"))
    assert results(result) == [
        {"type": "number", "value": "NaN"},
        {"type": "number", "value": "-Infinity"},
        {"type": "number", "value": "-0"},
    ]


def test_expression_is_evaluated_once_per_hit() -> None:
    # A side effect in the expression happens once per hit, not once per evaluation attempt.
    result = call(
        args("node --inspect-brk=0 loop.js", "loop.js", 21, "(globalThis.n = (globalThis.n || 0) + 1)")
    )
    assert [value["value"] for value in results(result)] == list(range(1, 12))


def test_es_module_breakpoint_matches_its_file_url() -> None:
    result = call(args("node --inspect-brk=0 module.mjs", "module.mjs", 7, "upper"))
    assert results(result) == [
        {"type": "string", "value": "ALPHA"},
        {"type": "string", "value": "BETA"},
        {"type": "string", "value": "GAMMA"},
    ]


def test_typescript_breakpoint_is_mapped_through_a_source_map_file() -> None:
    # Line 9 of src/test.ts is line 3 of out/test.js: the map, not the line number, decides.
    result = call(args("node --inspect-brk=0 ts/out/test.js", "ts/src/test.ts", 9, "squared"))
    assert results(result) == [{"type": "number", "value": 25}, {"type": "number", "value": 100}]


def test_lazily_required_script_with_an_inline_source_map_gets_every_hit() -> None:
    result = call(args("node --inspect-brk=0 load-inline.js", "ts/src/test.ts", 9, "point"))
    assert results(result) == [
        {"type": "object", "value": {"x": 3, "y": 4}},
        {"type": "object", "value": {"x": 6, "y": 8}},
    ]


def test_absolute_breakpoint_path_and_cwd_elsewhere_work(tmp_path: Path) -> None:
    script = DATA / "count.js"
    result = call(args(f"node --inspect-brk=0 {script} 2", str(script), 5, "total"), server(cwd=tmp_path))
    assert results(result) == [{"type": "number", "value": 0}, {"type": "number", "value": 0}]


def test_process_exiting_before_the_line_is_an_error() -> None:
    result = call(args("node --inspect-brk=0 count.js 0", "count.js", 5, "i"))
    assert error(result) == "Process exited before breakpoint was hit"


def test_endless_loop_times_out_and_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    result = call(
        args(f"node --inspect-brk=0 endless.js {pid_file}", "endless.js", 11, "ticks", timeout=1500)
    )
    assert error(result) == "Timeout waiting for breakpoint after 1500 ms"
    pid = int(pid_file.read_text())
    assert wait_until_gone(pid), f"node process {pid} is still running after the timeout"


def test_missing_executable_is_a_clear_error() -> None:
    message = error(call(args("/no/such/dir/node --inspect-brk=0 loop.js", "loop.js", 21, "value")))
    assert message.startswith("Cannot start command: '/no/such/dir/node' was not found")


def test_unbalanced_quote_in_the_command_is_a_clear_error() -> None:
    message = error(call(args("node --inspect-brk=0 'loop.js", "loop.js", 21, "value")))
    assert message.startswith("Cannot parse command")


def test_busy_port_is_reported_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        command = f"node --inspect-brk={port} endless.js {pid_file}"
        message = error(call(args(command, "endless.js", 11, "ticks", timeout=60000)))
    assert f"127.0.0.1:{port}" in message
    assert "address already in use" in message
    # Node runs the script anyway when its inspector fails: it must have been stopped.
    if pid_file.exists():
        assert wait_until_gone(int(pid_file.read_text()))


def test_inspect_brk_zero_and_an_explicit_port_both_work() -> None:
    async def both(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool(
                "debug-script", args("node --inspect-brk=0 count.js 1", "count.js", 5, "i")
            ),
            await client.call_tool(
                "debug-script", args(f"node --inspect-brk={free_port()} count.js 1", "count.js", 5, "i")
            ),
        ]

    zero, explicit = with_client(both)
    assert results(zero) == results(explicit) == [{"type": "number", "value": 0}]


def test_two_calls_at_once_on_different_ports_are_independent(tmp_path: Path) -> None:
    first, second = free_port(), free_port()
    finished: list[str] = []

    async def run(client: Client, name: str, arguments: dict[str, Any]) -> CallToolResult:
        result = await client.call_tool("debug-script", arguments)
        finished.append(name)
        return result

    async def both(client: Client) -> tuple[CallToolResult, CallToolResult]:
        # The endless script holds its call until the timeout; the other call must not wait for it.
        endless = args(
            f"node --inspect-brk={first} endless.js {tmp_path / 'pid'}", "endless.js", 11, "x", 4000
        )
        counting = args(f"node --inspect-brk={second} count.js 2", "count.js", 5, "i")
        return await asyncio.gather(run(client, "endless", endless), run(client, "count", counting))

    stuck, counted = with_client(both)
    assert error(stuck) == "Timeout waiting for breakpoint after 4000 ms"
    assert results(counted) == [{"type": "number", "value": 0}, {"type": "number", "value": 1}]
    assert finished == ["count", "endless"]


def test_breakpoint_on_a_file_that_does_not_exist_fails_without_waiting_for_the_timeout(
    tmp_path: Path,
) -> None:
    # The script never ends: only the early rule can answer before the 60 s timeout.
    command = f"node --inspect-brk=0 endless.js {tmp_path / 'pid'}"
    message = error(call(args(command, "no-such-file.js", 3, "x", timeout=60000)))
    assert message.startswith(f"No loaded script matches breakpoint file {DATA / 'no-such-file.js'}")
    assert "endless.js" in message


def test_breakpoint_on_a_file_the_program_never_loads_is_named_when_it_exits() -> None:
    message = error(call(args("node --inspect-brk=0 count.js", "loop.js", 21, "value")))
    assert message.startswith(f"No loaded script matches breakpoint file {DATA / 'loop.js'}")
    assert "exited (status 0)" in message


def test_expression_that_throws_is_recorded_for_that_hit_and_the_run_goes_on() -> None:
    result = call(args("node --inspect-brk=0 count.js 2", "count.js", 5, "i === 0 ? missing.x : i"))
    assert results(result) == [
        {"type": "error", "value": "ReferenceError: missing is not defined"},
        {"type": "number", "value": 1},
    ]


def test_invalid_line_and_timeout_are_tool_errors() -> None:
    async def both(client: Client) -> tuple[CallToolResult, CallToolResult]:
        line = await client.call_tool(
            "debug-script", args("node --inspect-brk=0 count.js", "count.js", 0, "i")
        )
        timeout = await client.call_tool(
            "debug-script", args("node --inspect-brk=0 count.js", "count.js", 5, "i", 0)
        )
        return line, timeout

    line, timeout = with_client(both)
    assert error(line).startswith("breakpoint.line must be 1 or more")
    assert error(timeout).startswith("timeout must be a positive number of milliseconds")


def test_client_going_away_mid_call_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    async def abandon(client: Client) -> int:
        call_task = asyncio.create_task(
            client.call_tool(
                "debug-script", args(f"node --inspect-brk=0 endless.js {pid_file}", "endless.js", 11, "x")
            )
        )
        while not pid_file.exists() or not pid_file.read_text():
            await asyncio.sleep(0.05)
        call_task.cancel()
        return int(pid_file.read_text())

    pid = with_client(abandon)
    assert wait_until_gone(pid), f"node process {pid} outlived the server"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_server_stopped_by_a_signal_mid_call_leaves_no_process(
    tmp_path: Path, signum: signal.Signals
) -> None:
    pid_file = tmp_path / "pid"
    server_process = subprocess.Popen(
        [sys.executable, *SERVER_ARGS],
        cwd=DATA,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server_process.stdin is not None and server_process.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert server_process.stdin is not None
        server_process.stdin.write(json.dumps(message).encode() + b"\n")
        server_process.stdin.flush()

    try:
        client_info = {"name": "test", "version": "1"}
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client_info}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert b'"id":1' in server_process.stdout.readline()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        arguments = args(f"node --inspect-brk=0 endless.js {pid_file}", "endless.js", 11, "x", 60000)
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "debug-script", "arguments": arguments},
            }
        )
        for _ in range(400):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        server_process.send_signal(signum)
        assert server_process.wait(timeout=30) == -signum
    finally:
        server_process.kill()
        server_process.wait()
    assert wait_until_gone(pid), f"node process {pid} outlived the server"


def test_mcptape_debug_script_command_serves_the_tool() -> None:
    params = server(command=[*MCPTAPE, "debug-script"])
    result = call(args("node --inspect-brk=0 count.js 1", "count.js", 5, "i"), params)
    assert results(result) == [{"type": "number", "value": 0}]


def test_server_inherits_the_environment_of_its_parent(tmp_path: Path) -> None:
    params = server()
    params.env = {"DEBUG_SCRIPT_TEST_VALUE": "from-the-client"}
    result = call(
        args("node --inspect-brk=0 count.js 1", "count.js", 5, "process.env.DEBUG_SCRIPT_TEST_VALUE"), params
    )
    assert results(result) == [{"type": "string", "value": "from-the-client"}]
