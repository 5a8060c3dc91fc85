"""MCP clients on raw HTTP that keep every message they sent and received, byte for byte.

For fleet tests: what a client saw must equal what the recording holds, so these clients
speak the transports directly with aiohttp (streamable HTTP with sessions, legacy SSE,
2026-07-28 without sessions) and keep each JSON-RPC message's exact bytes.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import ClientSession

PROTOCOL = "2025-11-25"
MODERN = "2026-07-28"


class SessionGone(Exception):
    """The gateway answered 404 for the session: the specification's unknown-session answer."""


def sse_messages(body: bytes) -> list[bytes]:
    """The ``data`` of each SSE event with data (priming events have none)."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].removeprefix(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        if data and any(data):
            out.append(b"\n".join(data))
    return out


@dataclass
class WireClient:
    """One client: ``sent`` and ``received`` hold the exact message bytes."""

    http: ClientSession
    url: str
    token: str
    name: str
    sent: list[bytes] = field(default_factory=list)
    received: list[bytes] = field(default_factory=list)
    sid: str | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def _headers(self) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.sid is not None:
            headers["Mcp-Session-Id"] = self.sid
        return headers

    async def _post(self, message: dict[str, Any], extra: dict[str, str] | None = None) -> list[bytes]:
        body = orjson.dumps(message)
        self.sent.append(body)
        async with self.http.post(
            self.url, data=body, headers={**self._headers(), **(extra or {})}
        ) as response:
            raw = await response.read()
            if response.status == 404:
                raise SessionGone(raw.decode(errors="replace"))
            if response.status >= 400:
                raise RuntimeError(f"{self.name}: HTTP {response.status}: {raw[:300]!r}")
            if "Mcp-Session-Id" in response.headers and self.sid is None:
                self.sid = response.headers["Mcp-Session-Id"]
            if response.status == 202 or not raw:
                return []
            ctype = response.headers.get("Content-Type", "")
            messages = sse_messages(raw) if ctype.startswith("text/event-stream") else [raw]
        self.received.extend(messages)
        return messages

    async def initialize(self) -> None:
        params = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": self.name, "version": "1"},
        }
        await self._post({"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": params})
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        rid = next(self._ids)
        message = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        replies = [orjson.loads(m) for m in await self._post(message)]
        (answer,) = [r for r in replies if r.get("id") == rid]
        return answer["result"]

    async def close(self) -> None:
        if self.sid is not None:
            async with self.http.delete(self.url, headers=self._headers()):
                pass


@dataclass
class ModernClient(WireClient):
    """A 2026-07-28 client: no session; ``_meta`` on every request, its own trace id."""

    trace_id: str = field(default_factory=lambda: secrets.token_hex(16))

    def _meta(self) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": self.name, "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": f"00-{self.trace_id}-{secrets.token_hex(8)}-01",
        }

    async def initialize(self) -> None:
        rid = next(self._ids)
        message = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "server/discover",
            "params": {"_meta": self._meta()},
        }
        await self._post(message, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"})

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        rid = next(self._ids)
        params = {"name": tool, "arguments": arguments, "_meta": self._meta()}
        message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
        replies = [orjson.loads(m) for m in await self._post(message, headers)]
        (answer,) = [r for r in replies if r.get("id") == rid]
        return answer["result"]

    async def close(self) -> None:
        return None


@dataclass
class LegacyClient(WireClient):
    """A legacy HTTP+SSE client: a GET stream for everything the server sends, POSTs to its endpoint."""

    _stream: Any = None
    _reader: asyncio.Task[None] | None = None
    _endpoint: asyncio.Future[str] | None = None
    _waiting: dict[int, asyncio.Future[bytes]] = field(default_factory=dict)

    async def _read(self) -> None:
        buffer = b""
        async for chunk in self._stream.content.iter_any():
            buffer += chunk.replace(b"\r\n", b"\n")
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                lines = block.split(b"\n")
                event = next((ln[6:].strip() for ln in lines if ln.startswith(b"event:")), b"message")
                data = b"\n".join(ln[5:].removeprefix(b" ") for ln in lines if ln.startswith(b"data:"))
                if event == b"endpoint":
                    assert self._endpoint is not None
                    self._endpoint.set_result(data.decode())
                elif data:
                    self.received.append(data)
                    rid = orjson.loads(data).get("id")
                    future = self._waiting.pop(rid, None) if isinstance(rid, int) else None
                    if future is not None and not future.done():
                        future.set_result(data)

    async def _send(self, message: dict[str, Any]) -> bytes | None:
        assert self.sid is not None
        body = orjson.dumps(message)
        rid = message.get("id")
        future: asyncio.Future[bytes] | None = None
        if isinstance(rid, int):
            future = self._waiting[rid] = asyncio.get_running_loop().create_future()
        self.sent.append(body)
        async with self.http.post(self.url + self.sid, data=body, headers=self._headers()) as response:
            if response.status == 404:
                raise SessionGone(await response.text())
            assert response.status == 202, await response.text()
        return await asyncio.wait_for(future, 30) if future is not None else None

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}

    async def initialize(self) -> None:
        self._endpoint = asyncio.get_running_loop().create_future()
        base = self.url.rsplit("/servers/", 1)[0]
        self._stream = await self.http.get(
            self.url, headers={**self._headers(), "Accept": "text/event-stream"}
        )
        assert self._stream.status == 200
        self._reader = asyncio.create_task(self._read())
        endpoint = await asyncio.wait_for(self._endpoint, 30)
        self.url, self.sid = base, endpoint  # POSTs go to base + endpoint
        params = {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": self.name, "version": "1"},
        }
        await self._send({"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": params})
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        rid = next(self._ids)
        params = {"name": tool, "arguments": arguments}
        answer = await self._send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        assert answer is not None
        return orjson.loads(answer)["result"]

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._stream is not None:
            self._stream.close()
