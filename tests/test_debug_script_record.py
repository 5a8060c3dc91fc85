"""debug-script behind `mcptape record`: the tool call lands in the recording database."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow

DATA = ROOT / "tests" / "data" / "debug_script"


HITS = [{"type": "number", "value": n, "line": 5, "column": 3, "function": ""} for n in range(3)]

# The built-in upstream by name, and the same server spelled out as a command.
UPSTREAMS = {
    "registered": ["--upstream", "debug-script"],
    "command": ["--", sys.executable, "-m", "mcptape.servers.debug_script"],
}


@pytest.mark.parametrize("upstream", list(UPSTREAMS))
def test_recorded_debug_script_call_appears_in_the_tool_calls_view(
    db_path: Path, upstream: str, node: str
) -> None:
    command = [
        sys.executable,
        "-m",
        "mcptape",
        "record",
        "--db",
        str(db_path),
        "--name",
        "dbg",
        *UPSTREAMS[upstream],
    ]
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(DATA))
    arguments = {
        "command": "node --inspect-brk=0 count.js 3",
        "breakpoint": {"file": "count.js", "line": 5},
        "expression": "i",
        "timeout": 20000,
    }

    async def run() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            result = await client.call_tool("debug-script", arguments)
            assert not result.is_error
            assert result.structured_content == {"results": HITS}

    asyncio.run(run())

    with sqlite3.connect(db_path) as db:
        rows = db.execute(
            "select t.tool, t.arguments, t.is_error, t.result from tool_calls t "
            "join sessions s on s.id = t.session_id where s.name = 'dbg'"
        ).fetchall()
    assert len(rows) == 1
    tool, recorded_arguments, is_error, result = rows[0]
    assert tool == "debug-script"
    assert json.loads(recorded_arguments) == arguments
    assert is_error == 0
    assert json.loads(result)["structuredContent"] == {"results": HITS}
