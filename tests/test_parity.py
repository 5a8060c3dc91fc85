"""Parity: the same client scenario, run directly and through `mcptape record`, gives the same results.

The client is the real `mcp` SDK client; the servers are the built-in demo server and
the reference TypeScript server `@modelcontextprotocol/server-everything` from npm
(installed into tests/npm by scripts/test). Afterwards the database must hold the
whole conversation, correlated by the views.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.paths import everything_server_cmd
from tests.helpers.scenarios import direct, dump, record_params, run_everything_scenario, run_modern_scenario

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


def test_everything_server_gives_the_same_results_through_record(db_path: Path) -> None:
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run scripts/test (it runs npm ci in tests/npm)"
    plain = run_everything_scenario(direct(server))
    recorded = run_everything_scenario(record_params(db_path, server, "--name", "everything"))
    assert recorded == plain
    assert "canned hello" in json.dumps(recorded["sampling"])
    assert recorded["unknown"].get("isError") is True

    con = sqlite3.connect(db_path)
    try:
        session = con.execute(
            "select name, status, protocol_version, client_name, server_name, server_capabilities from sessions"
        ).fetchall()
        assert len(session) == 1
        name, status, version, client_name, server_name, caps = session[0]
        assert (name, status, version, client_name) == ("everything", "closed", "2025-11-25", "mcp")
        assert server_name == "mcp-servers/everything" and "tools" in json.loads(caps)
        # Every client request was answered by the server, and the views correlate them.
        unanswered = con.execute(
            "select method from exchanges where direction='c2s' and response is null"
        ).fetchall()
        assert unanswered == []
        served = con.execute(
            "select method, answered_by from server_requests where method != 'ping' order by requested_at"
        ).fetchall()
        # In no fixed order: server-everything asks for the roots 350 ms after initialization
        # on its own (a timer), before the sampling call when the machine is busy.
        assert sorted(served) == [
            ("elicitation/create", "client"),
            ("roots/list", "client"),
            ("sampling/createMessage", "client"),
        ]
        calls = dict(con.execute("select tool, is_error from tool_calls").fetchall())
        assert calls["echo"] == 0 and calls["no-such-tool"] == 1
        assert con.execute("select count(*) from frames where kind='malformed'").fetchone() == (0,)
    finally:
        con.close()


def run_demo_scenario(params: StdioServerParameters) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        logs: list[Any] = []

        async def on_log(p: types.LoggingMessageNotificationParams) -> None:
            logs.append(p.data)

        out: dict[str, Any] = {}
        async with Client(params, mode="legacy", logging_callback=on_log) as client:
            out["tools"] = [t.name for t in (await client.list_tools()).tools]
            out["add"] = dump(await client.call_tool("add", {"a": 2, "b": 40}))
            out["weather"] = dump(await client.call_tool("weather", {"city": "Lisbon"}))
            out["countdown"] = dump(await client.call_tool("countdown", {"start": 3}))
            out["fail"] = dump(await client.call_tool("fail", {}))
            out["readme"] = dump(await client.read_resource("demo://readme"))
        out["logs"] = logs
        return out

    return anyio.run(main)


def test_demo_server_gives_the_same_results_through_record(db_path: Path) -> None:
    server = [sys.executable, "-m", "mcptape.servers.demo"]
    plain = run_demo_scenario(direct(server))
    recorded = run_demo_scenario(record_params(db_path, server, "--name", "demo"))
    assert recorded == plain
    assert recorded["logs"], "the countdown tool logs; the client must have received the notifications"
    con = sqlite3.connect(db_path)
    try:
        levels = con.execute("select count(*) from log_messages").fetchone()[0]
        assert levels == len(plain["logs"])
    finally:
        con.close()


def test_2026_07_28_session_without_initialize_is_relayed_and_identified(db_path: Path) -> None:
    server = [sys.executable, "-m", "mcptape.servers.demo"]
    plain = run_modern_scenario(direct(server))
    recorded = run_modern_scenario(record_params(db_path, server, "--name", "modern"))
    assert recorded == plain
    assert recorded["version"] == "2026-07-28"
    con = sqlite3.connect(db_path)
    try:
        # No initialize: identity comes from each request's _meta and the results' _meta.
        assert con.execute("select count(*) from frames where method = 'initialize'").fetchone() == (0,)
        version, client_name, server_name, caps = con.execute(
            "select protocol_version, client_name, server_name, server_capabilities from sessions"
        ).fetchone()
        assert (version, client_name, server_name) == ("2026-07-28", "mcp", "mcptape-demo")
        assert "tools" in json.loads(caps)
        first = con.execute("select method from exchanges order by request_seq limit 1").fetchone()
        assert first == ("server/discover",)
        assert con.execute("select tool, is_error from tool_calls").fetchall() == [("add", 0)]
    finally:
        con.close()
