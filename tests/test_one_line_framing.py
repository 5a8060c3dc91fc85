"""A message crossing into a line-delimited stream (stdio) goes on one line, whatever the
whitespace of its JSON; the recording keeps it as it was received and says it was re-framed."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from mcptape.proxy.addonmanager import AddonManager, Flow, SessionContext
from mcptape.proxy.links.memory import MemoryLink
from mcptape.proxy.links.stdio import FdLink
from mcptape.proxy.relay import Relay
from mcptape.wire.jsontext import one_line

PRETTY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 18446744073709551617,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "two  spaces", "n": 1.50e3}},
    },
    indent=2,
).encode()


def test_one_line_removes_only_whitespace_between_tokens() -> None:
    data = b'{\n  "a": "x  y",\n  "n": 1.50e3,\n  "big": 123456789012345678901234567890,\n  "s": "q\\" "\n}'
    assert one_line(data) == b'{"a":"x  y","n":1.50e3,"big":123456789012345678901234567890,"s":"q\\" "}'
    plain = b'{"a": 1, "b": [1, 2]}'
    assert one_line(plain) is plain  # no line feed: the very bytes, untouched
    # Not JSON (a raw line feed inside a string): still one line, the feed written as \n.
    assert one_line(b'{"a": "l1\nl2"}') == b'{"a": "l1\\nl2"}'
    assert one_line(b"not json\nat all") == b"not json\\nat all"


class Seen:
    """An addon that keeps what the recorder would be given: frames and events."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.events: list[tuple[str, Any]] = []

    def frame_done(self, flow: Flow) -> None:
        self.frames.append(flow.frame.data)

    def event(self, session: SessionContext, kind: str, text: str | None, data: object) -> None:
        self.events.append((kind, data))


def test_a_pretty_printed_message_reaches_a_stdio_peer_as_one_line_and_is_recorded_as_received() -> None:
    seen = Seen()

    async def scenario() -> bytes:
        to_server_r, to_server_w = os.pipe()
        from_server_r, from_server_w = os.pipe()
        client = MemoryLink("c2s", "client")
        server = FdLink(from_server_r, to_server_w, "s2c", "server")
        context = SessionContext(None, "test", "memory->stdio", "pipe")
        relay = Relay(client, server, AddonManager([seen]), context, grace=0.2)
        task = asyncio.ensure_future(relay.run())
        await asyncio.sleep(0.01)
        await client.peer.send(PRETTY)
        line = b""
        while not line.endswith(b"\n"):
            line += await asyncio.to_thread(os.read, to_server_r, 65536)
        os.close(from_server_w)  # the server ends
        await asyncio.wait_for(task, 10)
        os.close(to_server_r)
        return line

    line = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert line.count(b"\n") == 1
    assert json.loads(line) == json.loads(PRETTY)
    assert b'"id":18446744073709551617' in line and b'"n":1500.0' in line
    assert seen.frames[0] == PRETTY  # recorded as it came, line breaks and all
    [data] = [data for kind, data in seen.events if kind == "reframed"]
    assert data == {
        "direction": "c2s",
        "method": "tools/call",
        "id": "18446744073709551617",
        "received_bytes": len(PRETTY),
        "sent_bytes": len(line) - 1,
    }


@pytest.mark.slow
def test_the_gateway_hands_a_pretty_printed_initialize_to_a_stdio_server_that_answers_it(
    tmp_path: Any,
) -> None:
    import sqlite3
    import sys

    import aiohttp

    from mcptape.config.registry import UpstreamSpec
    from mcptape.gateway.app import GatewayConfig
    from tests.helpers.inprocess import running_gateway
    from tests.helpers.recording import INITIALIZE

    db = tmp_path / "g.db"
    body = json.dumps(INITIALIZE, indent=2).encode()

    async def main() -> Any:
        command = [sys.executable, "-m", "mcptape.servers.demo"]
        spec = UpstreamSpec(name="demo", transport="stdio", command=command)
        async with running_gateway(GatewayConfig(registry={"demo": spec}, token=None, db=str(db))) as g:
            headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
            async with (
                aiohttp.ClientSession() as http,
                http.post(g.url("demo"), data=body, headers=headers) as r,
            ):
                return await asyncio.wait_for(r.text(), 20)

    text = asyncio.run(main())
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ") and line[6:]]
    answer = json.loads(data[-1])
    assert answer["id"] == 0 and answer["result"]["serverInfo"]["name"]
    con = sqlite3.connect(db)
    [(recorded,)] = con.execute("select text from frames where direction = 'c2s' and method = 'initialize'")
    events = con.execute("select kind from events where kind = 'reframed'").fetchall()
    con.close()
    assert recorded.encode() == body
    assert events == [("reframed",)]


def _odd_scenario(target: Any) -> dict[str, Any]:
    import anyio
    from mcp import Client

    async def main() -> dict[str, Any]:
        async with Client(target, mode="legacy") as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            echo = await client.call_tool("echo", {"text": "a\nb"})
            add = await client.call_tool("add", {"a": 2, "b": 40})
            return {
                "tools": tools,
                "echo": echo.model_dump(mode="json", exclude_none=True),
                "add": add.model_dump(mode="json", exclude_none=True),
            }

    return anyio.run(main)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_record_url_gives_a_stdio_client_one_line_per_message_from_a_pretty_printing_server(
    tmp_path: Any,
) -> None:
    import sqlite3
    import sys

    from mcp import StdioServerParameters

    from tests.helpers.http_servers import free_port, served
    from tests.helpers.paths import MCPTAPE, ROOT

    db = tmp_path / "r.db"
    port = free_port()
    server = [sys.executable, str(ROOT / "tests" / "servers" / "odd_http.py"), str(port)]
    with served(server, port, "/mcp") as url:
        direct = _odd_scenario(url)
        argv = [*MCPTAPE, "record", "--db", str(db), "--url", url, "--transport", "http"]
        recorded = _odd_scenario(StdioServerParameters(command=argv[0], args=argv[1:]))
    assert recorded == direct
    assert direct["echo"]["content"][0]["text"] == "a\nb" and direct["add"]["content"][0]["text"] == "42"
    con = sqlite3.connect(db)
    answers = con.execute("select text from frames where direction = 's2c' order by seq").fetchall()
    reframed = con.execute("select count(*) from events where kind = 'reframed'").fetchone()[0]
    con.close()
    assert len(answers) == 4 and all("\n" in text for (text,) in answers)  # as the server wrote them
    assert reframed == 4
