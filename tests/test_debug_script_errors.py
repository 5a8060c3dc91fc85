"""debug-script end to end (real node, the real mcp client): messages that point the right way,
one-line argument errors, Node-only launching, and no Node process outliving a killed server."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

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
)
from tests.helpers.paths import MCPTAPE

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("node")]


def test_expression_that_never_returns_is_reported_at_its_hit_not_as_a_missed_breakpoint() -> None:
    result = call(args("node --inspect-brk=0 count.js 1", "count.js", 5, "(() => { for (;;) {} })()", 2000))
    [hit] = hits(result)
    assert hit["type"] == "error" and hit["line"] == 5
    assert hit["value"].startswith("The expression did not return within the timeout of 2000 ms")
    assert "the timeout elapsed" in text_of(result)


def test_process_exit_inside_the_expression_is_reported_at_its_hit() -> None:
    result = call(args("node --inspect-brk=0 count.js 3", "count.js", 5, "process.exit(7)"))
    assert results(result) == [
        {"type": "error", "value": "The process exited while the expression was being evaluated."}
    ]
    assert "the process exited (status 7)" in text_of(result)


@pytest.mark.parametrize("flag", ["--inspect=0", "--inspect"])
def test_inspect_without_brk_is_named_as_the_wrong_flag(flag: str) -> None:
    message = error(call(args(f"node {flag} count.js 1", "count.js", 5, "i")))
    assert message.startswith(f"{flag} starts the inspector but lets the script run")


def test_a_timeout_too_short_for_node_to_start_says_so_rather_than_asking_for_inspect_brk() -> None:
    message = error(call(args("node --inspect-brk=0 count.js 1", "count.js", 5, "i", timeout=1)))
    assert message.startswith("Timeout waiting for breakpoint after 1 ms")
    assert "start Node with --inspect-brk" not in message
    # Node needs tens of milliseconds, but on a loaded machine the 1 ms timer can run after
    # its "Debugger listening" line was read: then there is nothing to add, and nothing is.
    assert "had not started yet" in message or "inspector" not in message


def test_line_past_the_end_of_the_file_is_named_without_blaming_node() -> None:
    message = error(call(args("node --inspect-brk=0 count.js 1", "count.js", 99_999_999, "i")))
    assert message == f"breakpoint.line 99999999 is past the end of {DATA / 'count.js'}, which has 8 lines."


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"breakpoint": {"file": "count.js", "line": 4.5}}, "breakpoint.line must be a whole number"),
        ({"breakpoint": {"file": "count.js", "line": 2**40}}, "breakpoint.line must be at most 2147483647"),
        ({"breakpoint": {"file": "count.js"}}, "breakpoint is missing line"),
        ({"timeout": None}, "missing required argument timeout"),
        (
            {"command": ["node", "count.js"]},
            "command must be a string (one string, split like a shell would)",
        ),
        ({"timeout": "5000"}, 'timeout must be a number of milliseconds, e.g. 5000; got the string "5000".'),
        ({"expression": ""}, "expression is empty"),
        ({"tiemout": 5}, "unknown argument 'tiemout'"),
        ({"max_value_length": 0}, "max_value_length must be 1 or more"),
    ],
)
def test_invalid_arguments_get_one_line_errors_with_structured_content(
    change: dict[str, Any], expected: str
) -> None:
    arguments = {**args("node --inspect-brk=0 count.js 1", "count.js", 5, "i"), **change}
    arguments = {key: value for key, value in arguments.items() if value is not None}
    message = error(call(arguments))
    assert message.startswith(expected)
    assert "\n" not in message and "pydantic" not in message


def test_commands_other_than_node_are_refused_by_default() -> None:
    message = error(call(args("sh -c 'echo pwned'", "count.js", 5, "i")))
    assert message.startswith("Refusing to run sh: this debug-script server only launches Node.js")
    assert "--allow-command sh" in message


def test_allow_command_lets_the_named_launcher_run_and_nothing_else() -> None:
    params = server(command=[*MCPTAPE, "debug-script", "--allow-command", "env"])
    # `env node ...` starts node through another program: allowed by name only.
    result = call(args("env node --inspect-brk=0 count.js 1", "count.js", 5, "i"), params)
    assert results(result) == [{"type": "number", "value": 0}]
    refused = error(call(args("sh -c 'echo pwned'", "count.js", 5, "i"), params))
    assert refused.startswith("Refusing to run sh")


def test_allow_any_command_lifts_the_restriction() -> None:
    params = server(command=[sys.executable, *SERVER_ARGS, "--allow-any-command"])
    result = call(args("env node --inspect-brk=0 count.js 2", "count.js", 5, "i"), params)
    assert results(result) == [{"type": "number", "value": 0}, {"type": "number", "value": 1}]


def test_server_killed_with_sigkill_takes_its_node_process_along(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    server_process = subprocess.Popen(
        [sys.executable, *SERVER_ARGS],
        cwd=DATA,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server_process.stdin is not None and server_process.stdout is not None
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    arguments = args(f"node --inspect-brk=0 endless.js {pid_file}", "endless.js", 11, "x", 60000)
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "debug-script", "arguments": arguments},
        },
    ]
    try:
        server_process.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        server_process.stdin.flush()
        for _ in range(400):  # a bounded wait for node to write its pid, not a timing assertion
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        server_process.send_signal(signal.SIGKILL)
        assert server_process.wait(timeout=30) == -signal.SIGKILL
    finally:
        server_process.kill()
        server_process.wait()
    assert wait_until_gone(pid), f"node process {pid} outlived the server killed with SIGKILL"


def test_started_by_hand_in_a_terminal_it_says_what_it_is_on_stderr() -> None:
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [*MCPTAPE, "debug-script"], stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    os.close(secondary)
    try:
        assert process.stderr is not None
        # A bounded wait (the server says it at start-up, before anything else), not a timing assertion.
        ready, _, _ = select.select([process.stderr], [], [], 60)
        assert ready, "nothing on stderr: a person at the terminal is not told what this is"
        line = process.stderr.readline().decode()
    finally:
        process.kill()
        process.wait()
        os.close(primary)
    assert line.startswith("mcptape debug-script: serving the debug-script MCP tool on stdin/stdout")
    assert "meant to be started by an MCP client" in line and "Ctrl-C stops it" in line
