"""Sealed session ids: replicas sharing a key serve each other's HTTP-upstream sessions.

The client-facing ``Mcp-Session-Id`` carries the upstream's session id and name sealed
with AES-GCM; any replica with a key of the ring opens it and forwards, recording into
the same conversation. An id that does not open, or names a session living on another
replica, gets the specification's 404 for an unknown session, never a new session.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import sqlite3
from pathlib import Path

import orjson
import pytest
from aiohttp import ClientSession

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.sealed import Sealed, Sealer, SessionKeyError, read_keys, unknown_session
from tests.helpers.inproc_gateway import FakeUpstream, post, start_replica

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 1}}}


def key() -> bytes:
    return secrets.token_bytes(32)


def test_a_sealed_id_opens_only_with_a_key_of_the_ring_and_says_what_was_sealed() -> None:
    sealer = Sealer([key()])
    facts = Sealed("files", "conv-1", upstream_sid="up-7")
    sid = sealer.seal(facts)
    assert sid.startswith("mt1.") and all(0x21 <= ord(c) <= 0x7E for c in sid)
    assert "up-7" not in sid and "files" not in sid
    assert sealer.open(sid) == facts and sealer.open(sid).passed_through  # type: ignore[union-attr]
    assert sealer.seal(facts) != sid  # a fresh nonce each time
    assert Sealer([key()]).open(sid) is None
    tampered = sid[:-3] + ("A" if sid[-3] != "A" else "B") + sid[-2:]
    for bad in (tampered, sid[:20], "mt1.", "mt1.!!!!", "upstream-1", "mt1." + "A" * 5000, ""):
        assert sealer.open(bad) is None


def test_rotation_seals_with_the_first_key_and_still_opens_with_the_older_ones() -> None:
    old, new = key(), key()
    before = Sealer([old]).seal(Sealed("a", "c", upstream_sid="u"))
    rotated = Sealer([new, old])
    assert rotated.open(before) == Sealed("a", "c", upstream_sid="u")
    after = rotated.seal(Sealed("a", "c", upstream_sid="u"))
    assert Sealer([new]).open(after) is not None and Sealer([old]).open(after) is None


def test_keys_come_from_the_file_or_the_environment_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    k1, k2 = key(), key()
    path = tmp_path / "keys"
    path.write_text(f"# current\n{base64.b64encode(k1).decode()}\n\n{k2.hex()}  # older\n")
    assert read_keys(str(path)) == [k1, k2]
    assert read_keys(None, f"{base64.urlsafe_b64encode(k2).decode().rstrip('=')}, {k1.hex()}") == [k2, k1]
    assert read_keys(None, "") == []
    for text, expected in (("short", "32 random bytes"), ("", "holds no key")):
        path.write_text(text)
        with pytest.raises(SessionKeyError, match=expected) as info:
            read_keys(str(path))
        assert "\n" not in str(info.value)
    with pytest.raises(SessionKeyError, match="cannot read"):
        read_keys(str(tmp_path / "missing"))
    with pytest.raises(SessionKeyError, match="MCPTAPE_SESSION_KEY key 2"):
        read_keys(None, f"{k1.hex()},{base64.b64encode(b'x' * 16).decode()}")


def test_an_id_of_a_session_living_on_another_replica_says_where_it_lives() -> None:
    sealer = Sealer([key()])
    local = sealer.seal(Sealed("demo", "", replica="replica-a", local_sid="abc"))
    assert "lives on replica 'replica-a'" in unknown_session(sealer, local, "demo", "replica-b")
    assert "does not exist" in unknown_session(sealer, local, "demo", "replica-a")  # ended here
    assert "does not exist" in unknown_session(sealer, local, "other", "replica-b")
    assert "does not exist" in unknown_session(None, "random", "demo", "replica-b")


def test_any_replica_serves_a_passed_through_session_and_records_one_conversation(tmp_path: Path) -> None:
    db = str(tmp_path / "fleet.db")
    ring = [key()]

    async def main() -> tuple[list[int], list[str | None], int]:
        upstream = FakeUpstream()
        url = await upstream.start()
        registry = {"up": UpstreamSpec("up", "http", url=url)}
        a = await start_replica(registry, db, "replica-a", Sealer(ring))
        b = await start_replica(registry, db, "replica-b", Sealer(ring))
        stranger = await start_replica(registry, db, "replica-c", Sealer([key()]))
        statuses = []
        try:
            async with ClientSession() as http:
                status, headers, _ = await post(http, a.base + "/servers/up/mcp", INIT)
                sid = headers["Mcp-Session-Id"]
                assert status == 200 and sid.startswith("mt1.") and "upstream-1" not in sid
                status, headers, body = await post(http, b.base + "/servers/up/mcp", CALL, sid)
                statuses.append(status)
                assert orjson.loads(body)["result"] == {"echo": CALL["params"]}
                status, _, _ = await post(http, a.base + "/servers/up/mcp", {**CALL, "id": 3}, sid)
                statuses.append(status)
                # A replica with another key, or an id made up: 404, and the upstream never hears of it.
                seen = len(upstream.seen)
                status, _, body = await post(http, stranger.base + "/servers/up/mcp", CALL, sid)
                statuses.append(status)
                assert b"does not exist" in body
                status, _, _ = await post(http, b.base + "/servers/up/mcp", CALL, "upstream-1")
                statuses.append(status)
                # The sealed id names its upstream: another entry's path does not take it.
                assert len(upstream.seen) == seen
        finally:
            for replica in (a, b, stranger):
                await replica.stop()
            await upstream.stop()
        return statuses, [s["sid"] for s in upstream.seen], len(upstream.sessions)

    statuses, upstream_sids, sessions = asyncio.run(main())
    assert statuses == [200, 200, 404, 404]
    assert upstream_sids == [None, "upstream-1", "upstream-1"] and sessions == 1
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "select s.replica, s.conversation_id, count(f.id) from sessions s join frames f on f.session_id = s.id "
            "group by s.id order by s.replica"
        ).fetchall()
        conversations = con.execute(
            "select conversation_id, replica, method from conversations order by requested_at"
        ).fetchall()
    finally:
        con.close()
    assert [(r, n) for r, _, n in rows] == [("replica-a", 4), ("replica-b", 2)]
    (conversation,) = {c for _, c, _ in rows}
    assert conversation is not None and len(conversation) == 32
    assert conversations == [
        (conversation, "replica-a", "initialize"),
        (conversation, "replica-b", "tools/call"),
        (conversation, "replica-a", "tools/call"),
    ]


def test_health_says_whether_the_store_is_writable_and_how_far_behind(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")

    async def main() -> list[tuple[int, dict[str, object]]]:
        good = await start_replica({}, str(tmp_path / "ok.db"), "r1", None)
        bad = await start_replica({}, str(tmp_path / "file" / "no.db"), "r2", None)
        answers = []
        try:
            async with ClientSession() as http:
                for replica in (good, bad):
                    for _ in range(200):  # the store opens in the background
                        async with http.get(replica.base + "/health") as response:
                            body = await response.json()
                        if not body["store"].get("opening"):
                            break
                        await asyncio.sleep(0.02)
                    answers.append((response.status, body))
        finally:
            await good.stop()
            await bad.stop()
        return answers

    (status, ok), (bad_status, bad) = asyncio.run(main())
    assert status == 200 and ok["status"] == "ok" and ok["replica"] == "r1"
    assert ok["store"] == {
        "recording": True,
        "writable": True,
        "lag_s": 0.0,
        "backlog_frames": 0,
        "backlog_bytes": 0,
        "failed": False,
    }
    assert bad_status == 503 and bad["status"] == "unavailable" and bad["store"]["failed"] is True
    assert "no.db" not in str(bad)  # no token needed: it names no database
