"""What the gateway keeps of sessions it passes through to an HTTP upstream, whatever clients do.

Most clients never DELETE their session, and each ``initialize`` opens one: the gateway
follows at most ``max_sessions`` at once, letting go of the least recently used one that
has nothing in flight. A session whose request or stream is still open is never let go
of, by that bound or by the idle sweep.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from aiohttp import ClientSession

from mcptape.config.registry import UpstreamSpec
from tests.helpers.gateway_http import INIT as INIT_BYTES
from tests.helpers.inproc_gateway import FakeUpstream, post, start_replica

INIT = json.loads(INIT_BYTES)  # the same initialize every gateway test sends


def _ended(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "select s.status, e.text from sessions s join events e on e.session_id = s.id"
            " where e.kind = 'http_session_closed' order by s.started_at"
        ).fetchall()
    finally:
        con.close()


def test_the_least_recently_used_session_is_let_go_of_past_the_bound(tmp_path: Path) -> None:
    async def run() -> None:
        upstream = FakeUpstream()
        url = await upstream.start()
        replica = await start_replica(
            {"up": UpstreamSpec("up", "http", url=url)}, str(tmp_path / "g.db"), "r", None
        )
        replica.gateway.passthrough.max_sessions = 3
        mcp = f"{replica.base}/servers/up/mcp"
        try:
            async with ClientSession() as http:
                sids = []
                for _ in range(3):
                    status, headers, _ = await post(http, mcp, INIT)
                    assert status == 200
                    sids.append(headers["Mcp-Session-Id"])
                ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
                assert (await post(http, mcp, ping, sids[0]))[0] == 200  # the first is used again
                assert (await post(http, mcp, INIT))[0] == 200  # a fourth: the second goes
                followed = replica.gateway.passthrough.sessions
                assert len(followed) == 3 and f"up:{sids[1]}" not in followed
                assert f"up:{sids[0]}" in followed and f"up:{sids[2]}" in followed
                # The upstream's session is untouched: a request in it opens a new recorded one.
                assert (await post(http, mcp, ping, sids[1]))[0] == 200
        finally:
            await replica.stop()
            await upstream.stop()

    asyncio.run(run())
    ended = _ended(tmp_path / "g.db")
    let_go = [row for row in ended if "least recently used" in row[1]]
    assert let_go == [("closed", "the least recently used of 3 sessions followed at once")] * 2, ended


def test_a_session_with_a_request_in_flight_is_kept_by_the_bound_and_the_idle_sweep(tmp_path: Path) -> None:
    async def run() -> None:
        upstream = FakeUpstream()
        url = await upstream.start()
        replica = await start_replica(
            {"up": UpstreamSpec("up", "http", url=url)}, str(tmp_path / "g.db"), "r", None
        )
        passthrough = replica.gateway.passthrough
        passthrough.max_sessions = 1
        mcp = f"{replica.base}/servers/up/mcp"
        try:
            async with ClientSession() as http:
                _, headers, _ = await post(http, mcp, INIT)
                sid = headers["Mcp-Session-Id"]
                held = asyncio.ensure_future(
                    post(http, mcp, {"jsonrpc": "2.0", "id": 2, "method": "hold"}, sid)
                )
                while not any(seen["method"] == "hold" for seen in upstream.seen):
                    await asyncio.sleep(0.01)
                passthrough.sweep(0.0)  # idle for longer than any timeout, but in flight
                assert (await post(http, mcp, INIT))[0] == 200  # past the bound, but in flight
                assert f"up:{sid}" in passthrough.sessions
                upstream.release.set()
                assert (await held)[0] == 200
                passthrough.sweep(60.0)  # its stream just ended: not idle yet
                assert f"up:{sid}" in passthrough.sessions
                passthrough.sweep(0.0)
                assert passthrough.sessions == {}
        finally:
            await replica.stop()
            await upstream.stop()

    asyncio.run(run())
    assert [status for status, text in _ended(tmp_path / "g.db") if text.startswith("idle")] == ["closed"] * 2
