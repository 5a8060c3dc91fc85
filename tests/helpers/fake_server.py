"""A fake MCP server for client tests: Python code playing the far end of an in-memory link.

It answers the handshake itself and hands every other message to a script, so a test can
script timing and misbehaviour; the client under test runs a real relay in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcptape.client.session import CallSession, SessionOptions, Target
from mcptape.proxy.links.memory import MemoryLink

Script = Callable[[MemoryLink, dict[str, Any]], Awaitable[None]]


async def serve_script(link: MemoryLink, script: Script, hello_delay: float = 0.0) -> None:
    """Answer the handshake (after ``hello_delay``), then hand every other message to ``script``."""
    while True:
        try:
            message = orjson.loads(await link.peer.next(timeout=10))
        except TimeoutError:
            return
        if message.get("method") == "initialize":
            await asyncio.sleep(hello_delay)
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake"},
            }
            await link.peer.send(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        elif message.get("method") == "notifications/initialized":
            continue
        else:
            await script(link, message)


def fake_session(
    script: Script, hello_delay: float = 0.0, **options: Any
) -> tuple[CallSession, list[dict[str, Any]], list[asyncio.Task[None]]]:
    """A ``call`` session whose server is ``script``; the messages the script was given; its tasks."""
    seen: list[dict[str, Any]] = []
    tasks: list[asyncio.Task[None]] = []
    server = MemoryLink("s2c", "server", exit_code=0)

    async def recording_script(link: MemoryLink, message: dict[str, Any]) -> None:
        seen.append(message)
        await script(link, message)

    async def opener(target: Target) -> MemoryLink:
        tasks.append(asyncio.ensure_future(serve_script(server, recording_script, hello_delay)))
        return server

    opts = SessionOptions(record=False, protocol_version="2025-11-25", upstream_opener=opener, **options)
    return CallSession(Target("fake server"), opts), seen, tasks


async def reply(link: MemoryLink, rid: Any, result: Any = None, error: Any = None) -> None:
    """Answer request ``rid`` with ``result``, or with ``error`` when one is given."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    await link.peer.send(orjson.dumps(message))
