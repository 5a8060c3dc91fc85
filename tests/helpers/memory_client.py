"""A client played frame by frame on a memory link, and whole sessions run with it in process.

:func:`run_session` assembles a session as a mode does (:func:`mcptape.assemble.assemble`)
between a client-facing :class:`~mcptape.proxy.links.memory.MemoryLink` the test drives
and the server-facing link it is given, runs it to its end and waits for its recording.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcptape.assemble import OwnStore, SessionPlan, assemble
from mcptape.proxy.addonmanager import Outcome
from mcptape.proxy.link import Link
from mcptape.proxy.links.memory import MemoryLink, MemoryPeer
from tests.helpers.inprocess import SdkServerLink, demo_server

INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"memory-client","version":"1"}}}'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'

Scenario = Callable[[MemoryPeer], Awaitable[Any]]


def run_session(plan: SessionPlan, server: Callable[[], Link], scenario: Scenario) -> tuple[Outcome, Any]:
    """Play ``scenario`` as the client of ``plan``'s session to ``server()``; its outcome and the scenario's result."""

    async def main() -> tuple[Outcome, Any]:
        client = MemoryLink("c2s", "client")
        session = assemble(plan, client, server())
        running = asyncio.ensure_future(session.run())
        await asyncio.sleep(0)
        result = await scenario(client.peer)
        client.peer.close()
        outcome = await asyncio.wait_for(running, 20)
        assert await session.finish_store()
        return outcome, result

    return asyncio.run(main())


def record_in_process(db: Path, scenario: Scenario, *, name: str = "mem") -> tuple[Outcome, Any]:
    """What `mcptape record --name NAME` does, with the demo server on the loop and ``scenario`` as the client."""
    plan = SessionPlan("record", "stdio->stdio", "in-process demo", name=name, store=OwnStore(str(db)))
    return run_session(plan, lambda: SdkServerLink(demo_server()), scenario)


async def answer(peer: MemoryPeer, request: bytes) -> dict[str, Any]:
    """Send ``request`` and return the answer to it (notifications on the way are skipped)."""
    await peer.send(request)
    while True:
        message = json.loads(await peer.next(10))
        if "id" in message and "method" not in message:
            return dict(message)


async def handshake(peer: MemoryPeer) -> dict[str, Any]:
    hello = await answer(peer, INIT)
    await peer.send(INITIALIZED)
    return hello
