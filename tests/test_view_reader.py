"""The feed reader over a real store: exchanges as they complete, across sessions, cheap when idle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa

from mcptape.store import Store, open_store
from mcptape.view.reader import FeedReader
from mcptape.wire.frame import Frame


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = open_store(str(db_path))
    yield opened
    opened.close()


def frame(direction: str, message: dict[str, object]) -> Frame:
    return Frame(orjson.dumps(message), direction)  # type: ignore[arg-type]


def call(rpc_id: int, tool: str) -> Frame:
    return frame("c2s", {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {"name": tool}})


def answer(rpc_id: int) -> Frame:
    return frame("s2c", {"jsonrpc": "2.0", "id": rpc_id, "result": {"content": []}})


def test_exchanges_of_two_sessions_come_as_their_replies_are_written(store: Store) -> None:
    reader = FeedReader(store)
    writer = store.writer()
    a = writer.create_session(mode="record", name="alpha")
    b = writer.create_session(mode="proxy", name="beta")
    writer.add_frame(a, 1, call(1, "one"))
    writer.add_frame(b, 1, call(1, "two"))
    writer.flush()
    first = reader.poll()
    assert first.items == [] and len(first.frames) == 2
    assert {row["name"] for row in first.sessions} == {"alpha", "beta"}
    writer.add_frame(b, 2, answer(1))
    writer.add_event(a, "stderr", "working")
    writer.flush()
    second = reader.poll()
    assert [(i.type, i.session_id, i.subject) for i in second.items] == [
        ("exchange", b, "two"),
        ("event", a, None),
    ] or [(i.type, i.session_id, i.subject) for i in second.items] == [
        ("event", a, None),
        ("exchange", b, "two"),
    ]
    assert reader.sessions[b]["mode"] == "proxy"
    writer.close()
    reader.close()


def test_a_reply_to_a_request_written_before_the_reader_started_is_still_an_exchange(store: Store) -> None:
    writer = store.writer()
    s = writer.create_session(mode="record")
    writer.add_frame(s, 1, call(7, "early"))
    writer.flush()
    reader = FeedReader(store)  # starts after the request
    writer.add_frame(s, 2, answer(7))
    writer.flush()
    items = reader.poll().items
    assert [(i.type, i.subject, i.rpc_id, i.seq) for i in items] == [("exchange", "early", "7", 1)]
    writer.close()
    reader.close()


def test_requests_left_waiting_when_a_session_ends_are_reported_unanswered(store: Store) -> None:
    writer = store.writer()
    s = writer.create_session(mode="record")
    reader = FeedReader(store, session_check_s=0.0)
    writer.add_frame(s, 1, call(1, "hangs"))
    writer.flush()
    assert reader.poll().items == []
    writer.update_session(s, status="closed", ended_at=2e9)
    writer.flush()
    found = reader.poll()
    assert [(i.type, i.subject, i.status) for i in found.items] == [("unanswered", "hangs", "unanswered")]
    assert [r["status"] for r in found.sessions] == ["closed"]
    writer.close()
    reader.close()


def test_only_the_sessions_asked_for_are_read(store: Store) -> None:
    writer = store.writer()
    a = writer.create_session(mode="record")
    b = writer.create_session(mode="record")
    reader = FeedReader(store, session_ids=[b])
    for s in (a, b):
        writer.add_frame(s, 1, call(1, s[:4]))
        writer.add_frame(s, 2, answer(1))
    writer.flush()
    assert [i.session_id for i in reader.poll().items] == [b]
    writer.close()
    reader.close()


def test_an_idle_poll_on_sqlite_asks_only_whether_the_file_changed(store: Store) -> None:
    reader = FeedReader(store)
    reader.poll()
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        for _ in range(5):
            assert reader.poll().items == []
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
        reader.close()
    assert statements == []  # the pragma goes to the driver directly: no BEGIN, no SELECT
    writer = store.writer()
    writer.create_session(mode="record")
    writer.close()
    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        reader.poll()
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
    reader.close()
    assert any("FROM frames" in s for s in statements)


def test_frames_recorded_before_the_reader_are_read_when_asked_for(store: Store) -> None:
    writer = store.writer()
    s = writer.create_session(mode="call")
    writer.add_frame(s, 1, call(1, "x"))
    writer.add_frame(s, 2, answer(1))
    writer.close()
    reader = FeedReader(store, after_frame=0, after_event=0)
    found = reader.poll()
    assert [i.type for i in found.items] == ["exchange"] and len(found.frames) == 2
    reader.close()
