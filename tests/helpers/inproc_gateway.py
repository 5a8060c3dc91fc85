"""In-process gateways and a fake streamable HTTP upstream, on loopback sockets in the test's loop.

For fast tests of what several replicas do with one session: each replica is a real
:class:`~mcptape.gateway.app.Gateway` app bound to a real port, recording into a real
SQLite file; the upstream is a small streamable HTTP server that mints session ids and
answers 404 for ids it does not know, as the specification says.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import ClientSession, web

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import Gateway, GatewayConfig
from mcptape.gateway.sealed import Sealer

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class FakeUpstream:
    """A streamable HTTP MCP server: ``initialize`` mints a session, other requests need it."""

    sessions: set[str] = field(default_factory=set)
    seen: list[dict[str, Any]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    url: str = ""
    _runner: web.AppRunner | None = None
    # A request for method "hold" is answered once this is set (a request kept in flight).
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def _mcp(self, request: web.Request) -> web.StreamResponse:
        sid = request.headers.get("Mcp-Session-Id")
        if request.method == "DELETE":
            self.sessions.discard(sid or "")
            return web.Response(status=200)
        body = orjson.loads(await request.read())
        self.seen.append({"sid": sid, "method": body.get("method")})
        if body.get("method") == "initialize":
            sid = f"upstream-{next(self._ids)}"
            self.sessions.add(sid)
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "serverInfo": {"name": "fake", "version": "1"},
            }
            return web.json_response(
                {"jsonrpc": "2.0", "id": body["id"], "result": result}, headers={"Mcp-Session-Id": sid}
            )
        if sid not in self.sessions:
            error = {"code": -32001, "message": "Session not found"}
            return web.json_response({"jsonrpc": "2.0", "id": body.get("id"), "error": error}, status=404)
        if "id" not in body:
            return web.Response(status=202)
        if body.get("method") == "hold":
            await self.release.wait()
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": {"echo": body.get("params")}})

    async def start(self, port: int = 0) -> str:
        app = web.Application()
        app.router.add_route("*", "/mcp", self._mcp)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/mcp"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@dataclass
class Replica:
    """One gateway replica serving in this loop; ``base`` is its URL."""

    gateway: Gateway
    runner: web.AppRunner
    base: str

    async def stop(self) -> None:
        await self.gateway.shutdown("test")
        await self.runner.cleanup()


async def start_replica(
    registry: dict[str, UpstreamSpec], db: str, replica: str, sealer: Sealer | None
) -> Replica:
    config = GatewayConfig(registry=registry, db=db, replica=replica, sealer=sealer, idle_timeout=60)
    gateway = Gateway(config)
    runner = web.AppRunner(gateway.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    gateway.bound(port)
    await gateway.start()
    return Replica(gateway, runner, f"http://127.0.0.1:{port}")


async def post(
    http: ClientSession, url: str, message: dict[str, Any], sid: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """POST one JSON-RPC message; the status, headers and body."""
    headers = dict(ACCEPT)
    if sid is not None:
        headers["Mcp-Session-Id"] = sid
    async with http.post(url, data=orjson.dumps(message), headers=headers) as response:
        return response.status, dict(response.headers), await response.read()
