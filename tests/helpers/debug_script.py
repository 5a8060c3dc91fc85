"""Driving the debug-script MCP server (a subprocess) from a real MCP client, and reading its answers."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from tests.helpers.paths import ROOT

DATA = ROOT / "tests" / "data" / "debug_script"
SERVER_ARGS = ["-m", "mcptape.servers.debug_script"]
T = TypeVar("T")


def server(cwd: Path = DATA, command: list[str] | None = None) -> StdioServerParameters:
    """The debug-script server as a subprocess, in ``cwd`` (relative breakpoint files resolve there)."""
    argv = command or [sys.executable, *SERVER_ARGS]
    return StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(cwd))


def with_client(body: Callable[[Client], Awaitable[T]], params: StdioServerParameters | None = None) -> T:
    async def run() -> T:
        async with Client(params or server(), read_timeout_seconds=60) as client:
            return await body(client)

    return asyncio.run(run())


def call(arguments: dict[str, Any], params: StdioServerParameters | None = None) -> CallToolResult:
    return with_client(lambda client: client.call_tool("debug-script", arguments), params)


def args(command: str, file: str, line: int, expression: str, timeout: float = 20000) -> dict[str, Any]:
    return {
        "command": command,
        "breakpoint": {"file": file, "line": line},
        "expression": expression,
        "timeout": timeout,
    }


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def hits(result: CallToolResult) -> list[dict[str, Any]]:
    """Every hit as the tool returned it: type, value, line, column, function (and what was cut)."""
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    values: list[dict[str, Any]] = result.structured_content["results"]
    return values


def results(result: CallToolResult) -> list[dict[str, Any]]:
    """The typed values alone, in hit order."""
    return [{"type": hit["type"], "value": hit["value"]} for hit in hits(result)]


def error(result: CallToolResult) -> str:
    assert result.is_error, f"expected an error, got {result.structured_content}"
    assert result.structured_content is not None
    message: str = result.structured_content["error"]
    assert text_of(result) == message
    return message


def pid_is_gone(pid: int) -> bool:
    """Whether ``pid`` no longer names a live process (a zombie counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return status.rsplit(")", 1)[1].split()[0] == "Z"


def wait_until_gone(pid: int) -> bool:
    # A bounded wait for the kernel to finish reaping, not a timing assertion.
    for _ in range(100):
        if pid_is_gone(pid):
            return True
        time.sleep(0.05)
    return False
