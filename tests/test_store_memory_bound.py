"""What waits for a locked database is bounded for the whole process, not per session or writer."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import aiohttp
import pytest

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import GatewayConfig
from mcptape.store.backlog import Backlog
from mcptape.wire import held
from mcptape.wire.held import HELD
from tests.helpers.inprocess import running_gateway
from tests.helpers.recording import INITIALIZE
from tests.helpers.upstreams import HeaderLog, echo_app, serving

BOUND = 1 << 20


def test_writers_share_one_bound_for_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(held, "PROCESS_MAX_BYTES", BOUND)
    first, second = Backlog(10.0, 64 << 20), Backlog(10.0, 64 << 20)
    try:
        first.queued(BOUND // 2 + 1, frame=True)
        assert not first.over_limit and not second.over_limit
        second.queued(BOUND // 2 + 1, frame=True)  # each under its own limit, together over
        assert first.over_limit and second.over_limit
        second.committed(1, BOUND // 2 + 1, 1)
        assert not first.over_limit
        first.release()  # a writer that stopped holds nothing for the store any more
        assert HELD.bytes == 0
    finally:
        first.release()
        second.release()


class _Holding:
    held_bytes = 0


def test_a_writer_alone_is_bound_by_its_own_count_and_by_the_sum_once_another_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(held, "PROCESS_MAX_BYTES", BOUND)
    writer = Backlog(10.0, 64 << 20)  # its own limit far above the process's bound
    other = _Holding()
    try:
        writer.queued(BOUND + 1, frame=True)
        assert writer.over_limit  # alone: its own count is the process's
        writer.committed(1, BOUND + 1, 1)
        writer.queued(BOUND // 2 + 1, frame=True)
        assert not writer.over_limit
        HELD.hold(other)  # a recorder still waiting for its store, say
        other.held_bytes = BOUND // 2 + 1
        assert writer.over_limit and not writer.under_half()
        HELD.let_go(other)
        assert not writer.over_limit
    finally:
        HELD.let_go(other)
        writer.release()
    assert HELD.bytes == 0


def test_twenty_gateway_sessions_under_a_locked_database_hold_one_bound_of_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(held, "PROCESS_MAX_BYTES", BOUND)
    db = tmp_path / "g.db"
    frame = 100_000
    sessions = 20
    most = [0]
    calls = [0]

    async def client(url: str, stop: asyncio.Event) -> None:
        headers = {"Accept": "application/json, text/event-stream"}
        async with aiohttp.ClientSession() as http:
            async with http.post(url, json=INITIALIZE, headers=headers) as response:
                headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
            rid = 1
            while not stop.is_set():
                call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"pad": "x" * frame}}
                async with http.post(url, json=call, headers=headers) as response:
                    await response.read()
                calls[0] += 1
                rid += 1

    async def main() -> int:
        async with serving(echo_app(HeaderLog())) as url:
            spec = UpstreamSpec(name="u", transport="http", url=url)
            async with running_gateway(GatewayConfig(registry={"u": spec}, token=None, db=str(db))) as g:
                stop = asyncio.Event()
                while g.gateway.store.writer is None:  # the store is open (and migrated) first
                    await asyncio.sleep(0.01)
                lock = sqlite3.connect(db, timeout=30, isolation_level=None)
                lock.execute("BEGIN IMMEDIATE")
                tasks = [asyncio.ensure_future(client(g.url("u"), stop)) for _ in range(sessions)]
                for _ in range(300):  # 3 s of the lock
                    most[0] = max(most[0], HELD.bytes)
                    await asyncio.sleep(0.01)
                during = calls[0]
                lock.execute("COMMIT")
                lock.close()
                stop.set()
                await asyncio.gather(*tasks)
                return during

    during = asyncio.run(asyncio.wait_for(main(), 60))
    assert during > 0  # frames went on for a while, held in memory
    # The bound, and at most a frame or two per session on its way past the check.
    assert most[0] <= BOUND + sessions * 2 * frame
    con = sqlite3.connect(db)
    recorded = con.execute("select count(*) from frames where method = 'tools/call' and size > ?", (frame,))
    assert recorded.fetchone()[0] == calls[0]  # nothing lost once the lock went
    con.close()
