"""The feed reader on PostgreSQL: the same items, and rows whose transactions commit out of id order."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
import sqlalchemy as sa

from mcptape.store import open_store
from mcptape.store.schema import frames
from mcptape.view.reader import FeedReader
from tests.helpers.postgres import Postgres, private_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


def frame_row(
    session_id: str, seq: int, message: dict[str, object], direction: str, **extra: object
) -> dict[str, object]:
    text = orjson.dumps(message).decode()
    kind = "request" if "method" in message and "id" in message else "response"
    return {
        "session_id": session_id, "seq": seq, "ts": 1.0 + seq, "direction": direction,
        "origin": "client" if direction == "c2s" else "server", "kind": kind,
        "method": message.get("method"), "rpc_id": orjson.dumps(message["id"]).decode(),
        "size": len(text), "text": text, **extra,
    }  # fmt: skip


def test_a_row_committed_after_a_higher_id_is_still_read(postgres: Postgres) -> None:
    store = open_store(postgres.url(postgres.create_database()))
    try:
        writer = store.writer()
        s = writer.create_session(mode="proxy", name="pg")
        writer.close()
        reader = FeedReader(store)
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "late"}}
        reply = {"jsonrpc": "2.0", "id": 1, "result": {}}
        slow = store.engine.connect()
        slow.begin()
        slow.execute(sa.insert(frames), frame_row(s, 1, request, "c2s"))  # takes the lower id, not committed
        with store.engine.begin() as fast:
            fast.execute(sa.insert(frames), frame_row(s, 2, reply, "s2c", request_seq=1, method="tools/call"))
        first = reader.poll()
        assert [f.seq for f in first.frames] == [2]
        slow.commit()
        slow.close()
        second = reader.poll()
        assert [f.seq for f in second.frames] == [1]
        assert reader.poll().frames == []
        reader.close()
    finally:
        store.close()


def test_exchanges_and_events_read_the_same_as_on_sqlite(postgres: Postgres) -> None:
    from mcptape.wire.frame import Frame

    store = open_store(postgres.url(postgres.create_database()))
    try:
        reader = FeedReader(store)
        writer = store.writer()
        s = writer.create_session(mode="record", name="pg")
        writer.add_frame(s, 1, Frame(b'{"jsonrpc":"2.0","id":3,"method":"ping"}', "c2s"))
        writer.add_event(s, "stderr", "hello")
        writer.add_frame(s, 2, Frame(b'{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}', "s2c"))
        writer.close()
        items = reader.poll().items
        assert sorted((i.type, i.method, i.status) for i in items) == [
            ("event", "stderr", ""),
            ("exchange", "ping", "error -1"),
        ]
        assert reader.sessions[s]["name"] == "pg"
        reader.close()
    finally:
        store.close()
