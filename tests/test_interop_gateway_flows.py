"""Protocol flows through the gateway with a raw HTTP client, against server-everything (stdio).

- A request the client cancels is no longer in flight: what the server sends afterwards
  (here the ``roots/list`` that follows ``notifications/roots/list_changed``) reaches the
  client's GET stream, not the cancelled request's stream the client stopped reading.
- DELETE twice: 200, then 404 (the session is gone), as the specification says.
- The upstream dies: the session is gone, and the client's next request, GET and DELETE
  get 404, which tells a client to start a new session.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.paths import everything_server_cmd

pytestmark = pytest.mark.slow

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def gateway(tmp_path: Path) -> Any:
    """A gateway of its own for each test: the server it starts is the only child it has."""
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    proc = GatewayProcess(
        tmp_path / "rec.db",
        {"everything": {"command": server[0], "args": server[1:]}},
        "--no-auth",
        tmp=tmp_path,
    )
    yield proc
    proc.stop()


class Session:
    """One MCP session over raw HTTP: its id headers, and the messages read from its GET stream."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http, self.url = http, url
        self.headers: dict[str, str] = dict(ACCEPT)
        self.on_get: list[dict[str, Any]] = []

    async def start(self, capabilities: dict[str, Any]) -> None:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"},
        }
        async with self.http.post(self.url, headers=self.headers, json=rpc("initialize", init, 0)) as resp:
            assert resp.status == 200
            self.headers |= {
                "Mcp-Session-Id": resp.headers["Mcp-Session-Id"],
                "MCP-Protocol-Version": "2025-11-25",
            }
            await resp.read()
        assert await self.post(rpc("notifications/initialized")) == 202

    async def post(self, message: dict[str, Any]) -> int:
        async with self.http.post(self.url, headers=self.headers, json=message) as resp:
            await resp.read()
            return resp.status

    async def read_get(self) -> None:
        async with self.http.get(self.url, headers={**self.headers, "Accept": "text/event-stream"}) as resp:
            async for data in events(resp):
                self.on_get.append(data)
                if data.get("method") == "roots/list":  # answered as a client does
                    await self.post({"jsonrpc": "2.0", "id": data["id"], "result": {"roots": []}})

    async def wait_for(self, count: int, method: str, within: float = 15) -> None:
        for _ in range(int(within / 0.05)):
            if sum(m.get("method") == method for m in self.on_get) >= count:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{count} {method} never came on the GET stream: {self.on_get}")


def rpc(method: str, params: Any = None, rid: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if rid is not None:
        message["id"] = rid
    return message


async def events(resp: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    async for line in resp.content:
        if line.startswith(b"data: ") and line.strip() != b"data:":
            yield json.loads(line[6:])


def test_what_the_server_sends_after_a_cancellation_goes_to_the_get_stream(gateway: GatewayProcess) -> None:
    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            session = Session(http, gateway.url("everything"))
            await session.start({"roots": {"listChanged": True}})
            reader = asyncio.create_task(session.read_get())
            await session.wait_for(1, "roots/list")  # server-everything asks once the client is initialized
            long = {"name": "trigger-long-running-operation", "arguments": {"duration": 60, "steps": 60},
                    "_meta": {"progressToken": "slow"}}  # fmt: skip
            async with http.post(
                session.url, headers=session.headers, json=rpc("tools/call", long, 1)
            ) as resp:
                assert resp.status == 200
                # The client gives up on the request: it stops reading its stream and cancels it.
            assert (
                await session.post(rpc("notifications/cancelled", {"requestId": 1, "reason": "enough"}))
                == 202
            )
            assert await session.post(rpc("notifications/roots/list_changed")) == 202
            await session.wait_for(2, "roots/list")
            async with http.delete(session.url, headers=session.headers) as resp:
                assert resp.status == 200
            reader.cancel()

    asyncio.run(main())


def test_delete_twice_is_200_then_404(gateway: GatewayProcess) -> None:
    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            session = Session(http, gateway.url("everything"))
            await session.start({})
            statuses = []
            for _ in range(2):
                async with http.delete(session.url, headers=session.headers) as resp:
                    statuses.append(resp.status)
                    body = await resp.text()
            assert statuses == [200, 404]
            assert "does not exist" in json.loads(body)["error"]["message"]
            assert await session.post(rpc("ping", rid=9)) == 404

    asyncio.run(main())


def test_after_the_upstream_died_the_session_is_404_for_every_method(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    async def main() -> None:
        async with aiohttp.ClientSession() as http:
            session = Session(http, gateway.url("everything"))
            await session.start({})
            env = {"name": "get-env", "arguments": {}}
            async with http.post(
                session.url, headers=session.headers, json=rpc("tools/call", env, 1)
            ) as resp:
                assert resp.status == 200
                await resp.read()
            # The server: the gateway's one child running server-everything.
            children = Path(f"/proc/{gateway.proc.pid}/task/{gateway.proc.pid}/children").read_text().split()
            [node] = [
                int(p) for p in children if b"server-everything" in Path(f"/proc/{p}/cmdline").read_bytes()
            ]
            os.kill(node, signal.SIGKILL)
            for _ in range(200):
                if await session.post(rpc("ping", rid=2)) == 404:
                    break
                await asyncio.sleep(0.05)
            async with http.get(
                session.url, headers={**session.headers, "Accept": "text/event-stream"}
            ) as resp:
                assert resp.status == 404
            async with http.delete(session.url, headers=session.headers) as resp:
                assert resp.status == 404
            assert await session.post(rpc("ping", rid=3)) == 404

    asyncio.run(main())
