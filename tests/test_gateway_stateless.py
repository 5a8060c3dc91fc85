"""2026-07-28 stateless clients through a stdio upstream: a small pool of upstream sessions per entry.

Requests without a session id are served by one upstream process (and one recorded
session) whatever connection they come on, each request under an id of the pool's own
(mcptape.gateway.poolids). Pool sessions end after the idle timeout
with their session row closed.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcptape.gateway.stateless import pick
from tests.helpers.gateway_http import request
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.paths import ROOT
from tests.helpers.scenarios import DEMO, direct, run_modern_scenario

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

FLOOD = [sys.executable, str(ROOT / "tests" / "servers" / "flood.py")]


def call(rid: object) -> dict[str, Any]:
    # The related-request metadata routes raw_echo's copy of it to this request's stream
    # even when a pool session has other requests in flight.
    meta = {"io.modelcontextprotocol/related-request-id": rid}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "add", "_meta": meta}}


def test_a_request_goes_to_the_first_pool_session_without_its_id_in_flight() -> None:
    assert pick([], call(1)) is None  # no session yet: start one
    assert pick([set(), set()], call(1)) == 0
    assert pick([{"1"}, set()], call(1)) == 1
    assert pick([{"1"}, {"1"}], call(1.0)) is None  # 1 and 1.0 are one id to a peer
    assert pick([{"1"}, {"2"}], [call(3), call(2)]) == 0  # a batch needs every id free
    assert pick([{"1"}, {"2"}], [call(1), call(2)]) is None
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert pick([{"1"}], notification) == 0
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    assert pick([{"1"}, {"7"}], cancel) == 1  # to the session running the request it names
    assert pick([], b"not json") is None


def closed_sessions(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("select status from sessions where ended_at is not null").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


@pytest.mark.slow
def test_stateless_clients_share_one_upstream_and_its_session_closes_when_idle(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    plain = run_modern_scenario(direct(DEMO))
    g = GatewayProcess(
        db, {"demo": {"command": DEMO[0], "args": DEMO[1:]}}, "--no-auth", "--idle-timeout", "1", tmp=tmp_path
    )
    try:
        # Two clients one after the other: separate connections, one upstream process.
        first = run_modern_scenario(g.url("demo"))
        second = run_modern_scenario(g.url("demo"))
        deadline = time.monotonic() + 20
        while not closed_sessions(db) and time.monotonic() < deadline:
            time.sleep(0.2)
        closed = closed_sessions(db)
    finally:
        assert g.stop() == 0, g.stderr
    assert first == plain == second and first["version"] == "2026-07-28"
    assert closed == [("closed",)]  # closed by the idle timeout while the gateway ran
    con = sqlite3.connect(db)
    try:
        assert con.execute("select count(*) from sessions").fetchone() == (1,)
        assert con.execute(
            "select count(*) from frames where method = 'server/discover' and direction = 'c2s'"
        ).fetchone() == (2,)
        (text,) = con.execute("select text from events where kind = 'http_stateless'").fetchone()
        assert "2026-07-28" in text
        idle = con.execute("select text from events where kind = 'http_session_closed'").fetchone()
        assert idle is not None and "idle" in idle[0]
    finally:
        con.close()


@pytest.mark.slow
def test_the_same_id_from_two_clients_shares_one_upstream_under_ids_of_the_pools_own(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    g = GatewayProcess(db, {"echo": {"command": FLOOD[0], "args": FLOOD[1:]}}, "--no-auth", tmp=tmp_path)
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        bodies = []
        for n, rid in enumerate((1, 1, 2)):
            echo = {"name": "echo", "arguments": {"text": f"call {n}"}}
            message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": echo}
            status, headers, body = request(
                g.base, "POST", "/servers/echo/mcp", accept, json.dumps(message).encode()
            )
            assert status == 200 and "mcp-session-id" not in headers
            bodies.append(body)
    finally:
        assert g.stop() == 0, g.stderr
    # Each client got its own answer, with its own id, on its own stream.
    for n, (rid, body) in enumerate(zip((1, 1, 2), bodies, strict=True)):
        data = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
        assert [(m["id"], m["result"]["content"][0]["text"]) for m in data] == [(rid, f"call {n}")]
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "select session_id, rpc_id, meta from frames where direction = 'c2s' order by id"
        ).fetchall()
        # Each answer is paired with its own request, though two of them share an id.
        pairs = con.execute(
            "select q.text, a.text from frames a join frames q on q.session_id = a.session_id "
            "and q.seq = a.request_seq where a.direction = 's2c' order by a.seq"
        ).fetchall()
    finally:
        con.close()
    assert len({session for session, _, _ in rows}) == 1  # one upstream for all three
    # Recorded as each client sent it; the ids the upstream got in the pool metadata.
    assert [rpc_id for _, rpc_id, _ in rows] == ["1", "1", "2"]
    pool = [json.loads(meta)["pool"][0]["ours"] for _, _, meta in rows]
    assert pool == ['"mcptape-pool-1"', '"mcptape-pool-2"', '"mcptape-pool-3"']
    asked = [json.loads(q)["params"]["arguments"]["text"] for q, _ in pairs]
    answered = [json.loads(a)["result"]["content"][0]["text"] for _, a in pairs]
    assert asked == answered == ["call 0", "call 1", "call 2"]
