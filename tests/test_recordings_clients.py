"""`mcptape mcp` as real clients meet it: the TypeScript SDK, the Python SDK, `mcptape call`, and over the gateway."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.interop import ts_steps
from tests.helpers.paths import MCPTAPE
from tests.helpers.recorded import sample_db

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_db(tmp_path_factory.mktemp("recordings") / "r.db")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_typescript_sdk_client_lists_queries_and_reads_with_its_output_schemas_checked(db: Path) -> None:
    before = digest(db)
    steps = [
        {"m": "listTools"},  # the SDK then checks each structuredContent against the tool's outputSchema
        {"m": "callTool", "p": {"name": "list_sessions", "arguments": {"name": "v*"}}},
        {
            "m": "callTool",
            "p": {"name": "query", "arguments": {"sql": "select count(*) as n from tool_calls"}},
        },
        {"m": "callTool", "p": {"name": "show_session", "arguments": {"session": "busy", "limit": 5}}},
        {"m": "callTool", "p": {"name": "diff", "arguments": {"a": "v1", "b": "v2"}}},
        {"m": "callTool", "p": {"name": "query", "arguments": {"sql": "drop table sessions"}}},
        {"m": "listResources"},
        {"m": "readResource", "p": {"uri": "mcptape://views/exchanges"}},
    ]
    out = ts_steps(steps, "stdio", *MCPTAPE, "mcp", "--db", str(db))
    results = [r.get("result") or r for r in out["results"]]
    assert all("error" not in r for r in out["results"]), out["results"]
    tools = {t["name"]: t for t in results[0]["tools"]}
    assert set(tools) == {"list_sessions", "show_session", "query", "replay", "diff"}
    assert [s["name"] for s in results[1]["structuredContent"]["sessions"]] == ["v2", "v1"]
    assert results[2]["structuredContent"]["rows"] == [[30]]
    assert results[3]["structuredContent"]["next_cursor"] == 5
    assert results[4]["structuredContent"]["changes"][0]["name"] == "shout"
    assert results[5]["isError"] is True and "only reads the recording" in results[5]["content"][0]["text"]
    assert "mcptape://views/exchanges" in [r["uri"] for r in results[6]["resources"]]
    assert "## Definition (sqlite)" in results[7]["contents"][0]["text"]
    assert digest(db) == before


def test_the_python_sdk_client_replays_a_recording_against_a_registered_server(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    # A recording of the built-in demo server, made by mcptape call.
    made = subprocess.run(
        [*MCPTAPE, "call", "-m", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3",
         "--db", str(db), "--name", "sums", "--upstream", "demo"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    before = digest(db)

    async def main() -> list[Any]:
        params = StdioServerParameters(command=MCPTAPE[0], args=[*MCPTAPE[1:], "mcp", "--db", str(db)])
        async with Client(stdio_client(params), mode="legacy") as client:
            await client.list_tools()
            return [
                await client.call_tool("replay", {"session": "sums", "server": "demo", "timeout": 30}),
                await client.call_tool("replay", {"session": "sums", "server": "python3 -c 'print(1)'"}),
                await client.call_tool("list_sessions", {}),
            ]

    replayed, refused, listed = anyio.run(main)
    assert replayed.is_error is False, replayed.content
    report = replayed.structured_content
    assert report["passed"] is True and "3 match, 0 differ" in report["summary"]
    assert report["report"]["recordings"][0]["replay_session"] is None  # nothing recorded
    assert refused.is_error and "registered servers only" in refused.content[0].text
    assert [s["name"] for s in listed.structured_content["sessions"]] == ["sums"]
    assert digest(db) == before


def test_mcptape_call_checks_a_result_against_the_tools_output_schema(db: Path) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "call", "-m", "tools/call", "--tool-name", "query", "--tool-args",
         json.dumps({"sql": "select name from sessions order by started_at", "max_rows": 2}),
         "--output-schema-validate", "--no-record", "--upstream", "recordings"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "MCPTAPE_DB": str(db)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["structuredContent"]["rows"] == [["v1"], ["v2"]]
    assert result["structuredContent"]["truncated"] is True


def test_the_gateway_serves_the_builtin_over_its_own_database(db: Path, tmp_path: Path) -> None:
    gateway_db = tmp_path / "g.db"
    gateway_db.write_bytes(db.read_bytes())
    gateway = GatewayProcess(gateway_db, None, "--no-auth", tmp=tmp_path)
    try:

        async def main() -> Any:
            http = create_mcp_http_client()
            async with Client(
                streamable_http_client(gateway.url("recordings"), http_client=http), mode="legacy"
            ) as c:
                return await c.call_tool("list_sessions", {"mode": "record"})

        listed = anyio.run(main)
    finally:
        gateway.stop()
    assert [s["name"] for s in listed.structured_content["sessions"]] == ["busy", "v2", "v1"]
