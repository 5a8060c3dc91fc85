"""A signal that comes while a relaying process starts up stops its session once it runs (in process)."""

from __future__ import annotations

import asyncio
import os
import signal

from mcptape.assemble import SessionPlan, assemble
from mcptape.proxy.early_signals import catch_early, take_early
from mcptape.proxy.links.memory import memory_pair


def test_a_signal_noted_before_the_session_runs_stops_it_at_once_as_interrupted() -> None:
    before = signal.getsignal(signal.SIGHUP)
    catch_early([signal.SIGHUP])
    try:
        os.kill(os.getpid(), signal.SIGHUP)  # noted, not the default action (which would end pytest)

        async def scenario() -> tuple[str, list[int]]:
            client, server = memory_pair()
            session = assemble(SessionPlan("record", "memory->memory", "memory", grace=0.2), client, server)
            outcome = await asyncio.wait_for(session.run([signal.SIGHUP]), 10)
            assert server.peer.closed_by_relay
            return outcome.status, session.stopped_by

        assert asyncio.run(scenario()) == ("interrupted", [signal.SIGHUP])
        assert take_early() == []  # taken by the session: the next one starts afresh
    finally:
        signal.signal(signal.SIGHUP, before)


def test_a_session_ignores_a_noted_signal_it_was_not_asked_to_stop_on() -> None:
    before = signal.getsignal(signal.SIGHUP)
    catch_early([signal.SIGHUP])
    try:
        os.kill(os.getpid(), signal.SIGHUP)

        async def scenario() -> str:
            client, server = memory_pair(exit_code=0)
            session = assemble(SessionPlan("record", "memory->memory", "memory", grace=0.2), client, server)
            task = asyncio.ensure_future(session.run([signal.SIGTERM]))
            await asyncio.sleep(0.05)
            assert not task.done()  # not stopped by a signal it does not stop on
            client.peer.close()  # the client leaves
            return (await asyncio.wait_for(task, 10)).status

        assert asyncio.run(scenario()) == "closed"
    finally:
        signal.signal(signal.SIGHUP, before)
        take_early()
