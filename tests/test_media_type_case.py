"""Media types are case-insensitive: ``Application/JSON`` and ``Text/Event-Stream`` answers are
read, forwarded and recorded like lower-case ones (the client links, the pass-through)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import GatewayConfig
from mcptape.proxy.addonmanager import AddonManager, SessionContext
from mcptape.proxy.http.headers import accepts, media_type
from mcptape.proxy.http.upstream import remote_link
from mcptape.proxy.links.memory import MemoryLink
from mcptape.proxy.relay import Relay
from tests.helpers.inprocess import running_gateway
from tests.helpers.recording import INITIALIZE
from tests.helpers.upstreams import serving
from tests.servers.odd_http import make_app

CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hi"}},
}


def test_media_types_compare_without_case_or_parameters() -> None:
    assert media_type("Text/Event-Stream; charset=UTF-8") == "text/event-stream"
    assert media_type(" Application/JSON ") == "application/json"
    assert media_type(None) == ""
    assert accepts("Application/Json, Text/Event-Stream", "text/event-stream")
    assert not accepts("application/json", "text/event-stream")


def test_the_http_client_link_reads_answers_whose_media_types_are_not_lower_case() -> None:
    async def main() -> list[Any]:
        async with serving(make_app(odd_case=True)) as url:
            client = MemoryLink("c2s", "client")
            context = SessionContext(None, "test", "memory->http", url)
            relay = Relay(client, remote_link(url, "http"), AddonManager([]), context, grace=0.2)
            task = asyncio.ensure_future(relay.run())
            for _ in range(2):  # let run() start the links
                await asyncio.sleep(0)
            await client.peer.send(orjson.dumps(INITIALIZE))
            answers = [orjson.loads(await client.peer.next(10))]
            await client.peer.send(orjson.dumps(CALL))
            answers.append(orjson.loads(await client.peer.next(10)))
            client.peer.close()
            await asyncio.wait_for(task, 10)
            return answers

    init, call = asyncio.run(asyncio.wait_for(main(), 30))
    assert init["result"]["serverInfo"]["name"] == "odd-http"  # the JSON body, not an error
    assert call["result"]["content"][0]["text"] == "hi"  # the SSE event, not its raw text


def test_the_pass_through_records_answers_whose_media_types_are_not_lower_case(tmp_path: Path) -> None:
    db = tmp_path / "g.db"

    async def main() -> list[str]:
        async with serving(make_app(odd_case=True)) as url:
            spec = UpstreamSpec(name="odd", transport="http", url=url)
            config = GatewayConfig(registry={"odd": spec}, token=None, db=str(db))
            async with running_gateway(config) as g, aiohttp.ClientSession() as http:
                headers = {"Accept": "application/json, text/event-stream"}
                bodies = []
                for message in (INITIALIZE, CALL):
                    async with http.post(g.url("odd"), json=message, headers=headers) as response:
                        bodies.append(await response.text())
                        headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
                return bodies

    init, call = asyncio.run(asyncio.wait_for(main(), 30))
    assert json.loads(init)["id"] == 0 and "data:" in call  # forwarded as they came
    con = sqlite3.connect(db)
    answers = con.execute("select kind from frames where direction = 's2c' order by seq").fetchall()
    con.close()
    assert answers == [("response",), ("response",)]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_record_url_gives_the_sdk_client_what_the_server_said_whatever_the_media_type_case(
    tmp_path: Path,
) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    from tests.helpers.http_servers import free_port, served
    from tests.helpers.paths import MCPTAPE, ROOT

    async def scenario(target: Any) -> Any:
        async with Client(target, mode="legacy") as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            answer = await client.call_tool("add", {"a": 2, "b": 40})
            return tools, answer.model_dump(mode="json", exclude_none=True)

    port = free_port()
    server = [sys.executable, str(ROOT / "tests" / "servers" / "odd_http.py"), str(port), "--odd-case"]
    with served(server, port, "/mcp") as url:
        argv = [*MCPTAPE, "record", "--db", str(tmp_path / "r.db"), "--url", url]
        tools, answer = anyio.run(scenario, StdioServerParameters(command=argv[0], args=argv[1:]))
    assert tools == ["echo", "add"]
    assert answer["content"][0]["text"] == "42" and not answer.get("isError")
