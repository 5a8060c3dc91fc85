"""Test helper: a session with fault rules assembled over in-memory links, recorded into a SQLite file."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcptape.assemble import OwnStore, SessionPlan, assemble
from mcptape.proxy.addonmanager import Outcome
from mcptape.proxy.links.memory import MemoryPeer, memory_pair
from mcptape.rules.faults import from_options
from tests.helpers.db import query

Scenario = Callable[[MemoryPeer, MemoryPeer], Awaitable[None]]


def request(rid: Any, method: str, params: Any = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return orjson.dumps(body)


def result(rid: Any, value: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": value})


def notification(method: str, params: Any = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    return orjson.dumps(body)


def call(rid: Any, tool: str) -> bytes:
    return request(rid, "tools/call", {"name": tool, "arguments": {}})


@dataclass
class Faulted:
    """What a faulted session left: its outcome and its recording."""

    db: Path
    outcome: Outcome
    frames: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def faults(self) -> list[dict[str, Any]]:
        return [e["data"] for e in self.events if e["kind"] == "fault"]


def run_faulted(db: Path, flags: list[str], scenario: Scenario, *, end: str = "client") -> Faulted:
    """Run ``scenario(client, server)`` through the one assembly with ``--fault`` ``flags``.

    ``end``: who ends the session afterwards (``client``: the client closes; ``none``: the
    scenario did). Returns the outcome and the frames and events recorded into ``db``.
    """

    async def main() -> Outcome:
        client, server = memory_pair()
        plan = SessionPlan(
            "record", "mem->mem", "mem", store=OwnStore(str(db)), faults=from_options(flags, None)
        )
        session = assemble(plan, client, server)
        task = asyncio.ensure_future(session.run())
        await asyncio.sleep(0)
        try:
            await scenario(client.peer, server.peer)
        finally:
            if end == "client":
                client.peer.close()
            outcome = await asyncio.wait_for(task, 10)
            await session.finish_store()
        return outcome

    outcome = asyncio.run(main())
    frames = [
        {
            "seq": seq,
            "direction": direction,
            "origin": origin,
            "kind": kind,
            "text": text,
            "meta": json.loads(meta) if meta else {},
        }
        for seq, direction, origin, kind, text, meta in query(
            db, "select seq, direction, origin, kind, text, meta from frames order by seq"
        )
    ]
    events = [
        {"kind": kind, "text": text, "data": json.loads(data) if data else None}
        for kind, text, data in query(db, "select kind, text, data from events order by id")
    ]
    return Faulted(db, outcome, frames, events)


async def nothing_more(peer: MemoryPeer, wait: float = 0.2) -> bool:
    """Whether ``peer`` receives nothing within ``wait`` seconds (a frame that must never come)."""
    try:
        await peer.next(wait)
    except TimeoutError:
        return True
    return False
