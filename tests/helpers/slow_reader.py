"""A raw MCP client over HTTP that reads its event streams slowly (a client that cannot keep up).

Used by the slow-client tests and by bench/bench_slow_client.py: it drives the flood
server (tests/servers/flood.py) through the gateway, reads each SSE stream at a given
rate, answers the server's sampling requests, and reports what arrived: every message
event, the gaps in event numbers, the answers, any ``error`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from mcptape.proxy.http.sse import SseParser
from tests.helpers.recording import INITIALIZE

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# A client that can answer the sampling request in the middle of a flood.
INIT = {**INITIALIZE, "params": {**INITIALIZE["params"], "capabilities": {"sampling": {}}}}
RECEIVE_BUFFER = 64 << 10  # the client's socket buffer: kernels may give megabytes that hide a slow reader


def _small_buffers(addr_info: Any) -> socket.socket:
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=kind, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    return sock


def slow_session() -> aiohttp.ClientSession:
    """A client session whose sockets take little before the application reads."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(socket_factory=_small_buffers))


SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "slow-reader"}


@dataclass
class Seen:
    """What one stream delivered."""

    notifications: int = 0
    numbers: list[int] = field(default_factory=list)
    answers: dict[Any, Any] = field(default_factory=dict)
    sampling: int = 0
    errors: list[str] = field(default_factory=list)

    def gaps(self) -> int:
        """Event numbers skipped between consecutive events (0: none lost)."""
        return sum(b - a - 1 for a, b in zip(self.numbers, self.numbers[1:], strict=False) if b > a + 1)


def flood_call(rid: int, count: int, size: int, sample_at: int | None) -> dict[str, Any]:
    args = {"count": count, "size": size, "sample_at": sample_at}
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "flood", "arguments": args},
    }


def echo_call(rid: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": str(rid)}},
    }


async def read_slowly(
    response: aiohttp.ClientResponse,
    seen: Seen,
    rate: float,
    answer: Any,
    until: Any = None,
) -> None:
    """Read an SSE response at ``rate`` bytes/s into ``seen``; ``answer(message)`` for server requests.

    Stops at the end of the response, or once ``until(seen)`` is true.
    """
    parser = SseParser()
    chunk = 32 << 10
    loop = asyncio.get_running_loop()
    started, taken = loop.time(), 0
    while True:
        data = await response.content.read(chunk)
        if not data:
            return
        taken += len(data)
        for event in parser.feed(data):
            if event.event == "error":
                seen.errors.append(event.data.decode("utf-8", "replace"))
                continue
            if event.event != "message" or not event.data:
                continue
            if event.id and event.id.rpartition("-")[2].isdigit():
                seen.numbers.append(int(event.id.rpartition("-")[2]))
            message = json.loads(event.data)
            if "method" not in message:
                seen.answers[message.get("id")] = message
            elif "id" in message:
                seen.sampling += 1
                await answer(message)
            else:
                seen.notifications += 1
        if until is not None and until(seen):
            return
        ahead = started + taken / rate - loop.time()
        if ahead > 0:
            await asyncio.sleep(ahead)


async def streamable_flood(
    url: str, count: int, size: int, rate: float, headers: dict[str, str] | None = None
) -> Seen:
    """One flood call over streamable HTTP, its POST stream read at ``rate`` bytes/s."""
    seen = Seen()
    sent = {**ACCEPT, **(headers or {})}
    async with slow_session() as http:
        async with http.post(url, json=INIT, headers=sent) as response:
            await response.read()
            sent["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with http.post(url, json=initialized, headers=sent) as response:
            await response.read()

        answering: set[asyncio.Task[None]] = set()

        async def answer(request: dict[str, Any]) -> None:
            async def post() -> None:
                reply = {"jsonrpc": "2.0", "id": request["id"], "result": SAMPLED}
                async with http.post(url, json=reply, headers=sent) as response:
                    await response.read()

            answering.add(asyncio.ensure_future(post()))  # while this stream goes on being read

        call = flood_call(1, count, size, count // 2)
        async with http.post(url, json=call, headers=sent) as response:
            await read_slowly(response, seen, rate, answer)
        with contextlib.suppress(aiohttp.ClientError):
            async with http.delete(url, headers=sent) as response:
                await response.read()
    return seen


async def legacy_flood(base: str, name: str, count: int, size: int, rate: float, echoes: int) -> Seen:
    """A flood call and ``echoes`` quick echo calls over legacy SSE, the stream read at ``rate``."""
    seen = Seen()
    async with slow_session() as http:
        stream = await http.get(f"{base}/servers/{name}/sse", headers={"Accept": "text/event-stream"})
        parser = SseParser()
        endpoint = None
        while endpoint is None:
            for event in parser.feed(await stream.content.readany()):
                if event.event == "endpoint":
                    endpoint = base + event.data.decode()
        messages = endpoint

        async def post(message: dict[str, Any]) -> None:
            async with http.post(messages, json=message, headers=ACCEPT) as response:
                await response.read()

        answering: set[asyncio.Task[None]] = set()

        async def answer(request: dict[str, Any]) -> None:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": SAMPLED}
            answering.add(asyncio.ensure_future(post(reply)))  # while the stream goes on being read

        await post(INIT)
        await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await post(flood_call(1, count, size, count // 2))
        for i in range(echoes):
            await post(echo_call(100 + i))
        wanted = {1, *range(100, 100 + echoes)}
        await read_slowly(stream, seen, rate, answer, until=lambda s: wanted <= set(s.answers))
        stream.close()
    return seen
