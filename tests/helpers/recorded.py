"""Test helper: recordings made in-process (the one assembly over memory links into a SQLite file)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from mcptape.assemble import OwnStore, SessionPlan, assemble
from mcptape.proxy.links.memory import memory_pair

# A server's answers by method; tools/list is the server's surface that `diff` compares.
TOOL = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


def answers(tools: list[dict[str, Any]], server: str = "toy") -> dict[str, Any]:
    return {
        "initialize": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": server, "version": "1"},
        },
        "tools/list": {"tools": tools},
        "tools/call": {"content": [{"type": "text", "text": "x" * 5000}], "isError": False},
    }


def record(
    db: Path,
    name: str,
    calls: list[tuple[str, Any]],
    replies: dict[str, Any],
    *,
    events: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> None:
    """Record one session named ``name``: the client sends each (method, params) and the server
    answers from ``replies`` (a method it has no reply for gets a JSON-RPC error)."""

    async def main() -> None:
        client, server = memory_pair()
        session = assemble(
            SessionPlan("record", "mem->mem", "toy-server --flag", name=name, store=OwnStore(str(db))),
            client,
            server,
        )
        task = asyncio.ensure_future(session.run())
        await asyncio.sleep(0)
        for kind, text in events:
            session.event(kind, text)
        for rid, (method, params) in enumerate(calls, 1):
            await client.peer.send(
                orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            )
            await server.peer.next()
            if method in replies:
                body: dict[str, Any] = {"result": replies[method]}
            else:
                body = {"error": {"code": -32601, "message": f"no method {method}"}}
            await server.peer.send(orjson.dumps({"jsonrpc": "2.0", "id": rid, **body}))
            await client.peer.next()
        client.peer.close()
        await asyncio.wait_for(task, 10)
        assert await session.finish_store()

    asyncio.run(main())


HELLO = (
    "initialize",
    {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
)


def sample_db(db: Path) -> Path:
    """Three sessions: ``v1`` and ``v2`` of a server (v2 adds a tool), and ``busy`` with 30 calls."""
    record(db, "v1", [HELLO, ("tools/list", {})], answers([TOOL]))
    record(db, "v2", [HELLO, ("tools/list", {})], answers([TOOL, {**TOOL, "name": "shout"}]))
    busy = [HELLO, *[("tools/call", {"name": "echo", "arguments": {"text": str(n)}}) for n in range(30)]]
    record(
        db,
        "busy",
        [*busy, ("nope/method", {})],
        answers([TOOL], server="busy-server"),
        events=[("stderr", "warming up")],
    )
    return db
