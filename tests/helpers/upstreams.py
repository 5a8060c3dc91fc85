"""In-process streamable HTTP upstreams (aiohttp) that tests start on a free loopback port."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class HeaderLog:
    """What an upstream was asked: each request's headers (as received) and JSON body."""

    requests: list[tuple[dict[str, str], Any]] = field(default_factory=list)

    def values(self) -> list[str]:
        return [value for headers, _ in self.requests for value in headers.values()]


def _result(message: dict[str, Any]) -> Any:
    if message.get("method") == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "u"}}
    return {"content": [], "method": message.get("method")}


def echo_app(log: HeaderLog, session_id: str = "upstream-session") -> web.Application:
    """A minimal streamable HTTP MCP server answering every request with JSON, logging headers."""

    async def post(request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())
        except (ValueError, RecursionError):
            log.requests.append((dict(request.headers), None))
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            return web.json_response(error, status=400)
        log.requests.append((dict(request.headers), body))
        if "id" not in body:
            return web.Response(status=202)
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": _result(body)}
        return web.json_response(answer, headers={"Mcp-Session-Id": session_id})

    async def other(request: web.Request) -> web.Response:
        log.requests.append((dict(request.headers), None))
        return web.Response(status=405 if request.method == "GET" else 200)

    app = web.Application()
    app.router.add_post("/mcp", post)
    app.router.add_route("*", "/mcp", other)
    return app


@contextlib.asynccontextmanager
async def serving(app: web.Application, path: str = "/mcp") -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port) for the block; yields its URL with ``path``."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        await runner.cleanup()
