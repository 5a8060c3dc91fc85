"""Injection through `mcptape proxy`: the record flags, one injector per gateway session.

A stdio upstream (the trip planner asks for sampling, elicitation and roots while it
plans) through the gateway with the SDK client speaking 2025 (server requests mid-call)
and 2026-07-28 (``input_required`` rounds retried by mcptape); an HTTP upstream
(server-everything) whose sampling request mcptape answers for a client without a
sampling handler.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from mcp import Client, types

from tests.helpers.db import query
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.http_servers import everything_http
from tests.helpers.paths import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

TRIPS = {"trips": {"command": sys.executable, "args": [str(ROOT / "tests" / "servers" / "trip_planner.py")]}}
SAMPLE = {
    "role": "assistant",
    "content": {"type": "text", "text": "canned by mcptape"},
    "model": "tape-model",
}
FLAGS = [
    "--handle-sampling",
    json.dumps(SAMPLE),
    "--handle-elicitation",
    '{"action": "accept", "content": {"name": "Ada"}}',
    "--roots",
    "file:///trips",
    "--declare-capabilities",
]


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_gateway_answers_a_stdio_servers_requests_from_the_injection_flags(
    mode: str, tmp_path: Path
) -> None:
    db = tmp_path / "g.db"
    g = GatewayProcess(db, TRIPS, "--no-auth", *FLAGS, tmp=tmp_path)

    async def main() -> tuple[str, str]:
        async with Client(g.url("trips"), mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            result = await client.call_tool("plan_trip", {"city": "Oslo"})
            return client.protocol_version, text_of(result)

    try:
        version, text = asyncio.run(main())
    finally:
        assert g.stop() == 0, g.stderr
    assert (version == "2026-07-28") == (mode == "auto")
    assert text == "Ada goes to Oslo: canned by mcptape [tape-model] roots=file:///trips"
    answered = {m: by for m, by in query(db, "select method, answered_by from server_requests")}
    assert answered == {
        "elicitation/create": "proxy",
        "roots/list": "proxy",
        "sampling/createMessage": "proxy",
    }


def test_with_injection_rules_an_http_upstream_is_relayed_and_its_sampling_answered(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    with everything_http("streamableHttp") as url:
        entry = {"everything": {"url": url, "type": "http"}}
        g = GatewayProcess(
            db,
            entry,
            "--no-auth",
            "--handle-sampling",
            json.dumps(SAMPLE),
            "--declare-capabilities",
            tmp=tmp_path,
        )

        async def main() -> str:
            async with Client(g.url("everything"), mode="legacy", read_timeout_seconds=30) as client:
                result = await client.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
                return text_of(result)

        try:
            text = asyncio.run(main())
        finally:
            assert g.stop() == 0, g.stderr
    assert "canned by mcptape" in text
    assert query(db, "select distinct transport from sessions") == [("http->http",)]
    assert query(db, "select method, answered_by from server_requests where method != 'ping'") == [
        ("sampling/createMessage", "proxy")
    ]
