"""The batched writer: exact bytes, ordering, bursts, back-pressure, errors, closing."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from mcptape.store import Store, StoreError, WriterClosedError, open_store
from mcptape.store.backlog import Backlog
from mcptape.store.rows import CUT_PREVIEW_BYTES, MAX_FRAME_BYTES
from mcptape.wire.frame import Frame
from tests.helpers.db import query


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = open_store(str(db_path))
    yield opened
    opened.close()


def request(rpc_id: object, method: str = "ping") -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method})


def result(rpc_id: object, value: object = None) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": value or {}})


class WriteLock:
    """Another connection holding SQLite's write lock, as a second recording process would."""

    def __init__(self, db_path: Path) -> None:
        self.conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
        self.conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.conn.execute("COMMIT")
        self.conn.close()


def test_ids_1_and_quoted_1_stay_distinct_and_correlate_separately(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    for seq, frame in enumerate(
        [
            Frame(request(1), "c2s"),
            Frame(request("1"), "c2s"),
            Frame(result("1", {"which": "string"}), "s2c"),
            Frame(result(1, {"which": "number"}), "s2c"),
        ],
        1,
    ):
        writer.add_frame(sid, seq, frame)
    writer.close()
    assert query(db_path, "SELECT rpc_id FROM frames ORDER BY seq") == [("1",), ('"1"',), ('"1"',), ("1",)]
    assert query(db_path, "SELECT rpc_id, request_seq, response_seq FROM exchanges ORDER BY request_seq") == [
        ("1", 1, 4),
        ('"1"', 2, 3),
    ]


def test_invalid_utf8_frame_is_recovered_byte_for_byte(store: Store, db_path: Path) -> None:
    data = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"caf\xe9 \xff"}}'
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(data, "s2c"))
    writer.close()
    [(text, raw, size, kind)] = query(db_path, "SELECT text, raw, size, kind FROM frames")
    assert raw == data
    assert size == len(data)
    assert "\ufffd" in str(text)
    assert kind == "notification"  # classified on a lossy decode; raw keeps the bytes


def test_valid_utf8_frame_keeps_only_text(store: Store, db_path: Path) -> None:
    data = '{"jsonrpc":"2.0","id":1,"result":{"text":"café ☕ 🎉"}}'.encode()
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(data, "s2c", meta={"stream": "post", "status": 200}))
    writer.close()
    [(text, raw, meta)] = query(db_path, "SELECT text, raw, meta FROM frames")
    assert str(text).encode() == data and raw is None
    assert orjson.loads(str(meta)) == {"stream": "post", "status": 200}


def test_nul_byte_frame_keeps_its_exact_bytes_in_raw(store: Store, db_path: Path) -> None:
    data = b'{"jsonrpc":"2.0","method":"x"}\x00trailing'
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(data, "c2s"))
    writer.close()
    [(text, raw)] = query(db_path, "SELECT text, raw FROM frames")
    assert raw == data and "\x00" not in str(text)


def test_frame_over_64_mib_is_cut_keeping_its_full_size_and_a_truncated_flag(
    store: Store, db_path: Path
) -> None:
    head = b'{"jsonrpc":"2.0","id":5,"result":{"blob":"'
    data = head + b"a" * MAX_FRAME_BYTES + b'"}}'
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(data, "s2c", meta={"stream": "get"}))
    writer.close()
    assert writer.errors == []
    [(size, kind, text_length, raw_length, raw_head, meta)] = query(
        db_path,
        "SELECT size, kind, length(CAST(text AS BLOB)), length(raw), substr(raw, 1, ?), meta FROM frames",
        len(head),
    )
    assert size == len(data)
    assert kind == "response"  # classified from the whole frame
    assert raw_length == MAX_FRAME_BYTES and raw_head == head
    assert text_length == CUT_PREVIEW_BYTES  # the bytes are stored once, in raw; text is a preview
    assert orjson.loads(str(meta)) == {"stream": "get", "truncated": True}
    # The cut frame is no longer JSON; the views must still answer.
    assert query(db_path, "SELECT count(*) FROM exchanges") == [(0,)]


def test_burst_of_10000_frames_is_all_written_in_order(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer(batch_size=500)
    for seq in range(1, 10_001):
        if seq % 2:
            writer.add_frame(sid, seq, Frame(request(seq // 2), "c2s"))
        else:
            writer.add_frame(sid, seq, Frame(result(seq // 2 - 1), "s2c"))
    writer.flush()
    assert writer.frames_written == 10_000 and writer.errors == []
    assert query(db_path, "SELECT count(*), min(seq), max(seq) FROM frames") == [(10_000, 1, 10_000)]
    # Inserted in queue order: ids follow seqs.
    out_of_order = (
        "SELECT count(*) FROM (SELECT seq, lag(seq) OVER (ORDER BY id) AS previous FROM frames)"
        " WHERE seq <> previous + 1"
    )
    assert query(db_path, out_of_order) == [(0,)]
    writer.close()


def test_frames_events_and_session_updates_are_applied_in_the_order_queued(
    store: Store, db_path: Path
) -> None:
    with sqlite3.connect(db_path) as conn:
        conn.executescript(
            """
            CREATE TABLE applied (id INTEGER PRIMARY KEY, what TEXT);
            CREATE TRIGGER log_frame AFTER INSERT ON frames BEGIN
              INSERT INTO applied (what) VALUES ('frame ' || NEW.seq); END;
            CREATE TRIGGER log_event AFTER INSERT ON events BEGIN
              INSERT INTO applied (what) VALUES ('event ' || NEW.text); END;
            CREATE TRIGGER log_update AFTER UPDATE ON sessions BEGIN
              INSERT INTO applied (what) VALUES ('session ' || NEW.status); END;
            """
        )
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(request(1), "c2s"))
    writer.update_session(sid, status="greeted")
    writer.add_event(sid, "stderr", "one", data={"line": 1})
    writer.add_frame(sid, 2, Frame(result(1), "s2c"))
    writer.add_event(sid, "stderr", "two")
    writer.add_frame(sid, 3, Frame(request(2), "c2s"))
    writer.update_session(sid, status="ok", ended_at=2.0)
    writer.close()
    assert [what for (what,) in query(db_path, "SELECT what FROM applied ORDER BY id")] == [
        "frame 1",
        "session greeted",
        "event one",
        "frame 2",
        "event two",
        "frame 3",
        "session ok",
    ]
    assert query(db_path, "SELECT kind, text, data FROM events ORDER BY id") == [
        ("stderr", "one", '{"line":1}'),
        ("stderr", "two", None),
    ]


def test_update_with_an_unknown_column_fails_at_once(store: Store) -> None:
    writer = store.writer()
    with pytest.raises(TypeError, match="no column bogus"):
        writer.update_session("x", bogus=1)


def test_drain_waits_for_a_writer_behind_and_resumes_when_it_commits() -> None:
    backlog = Backlog(max_lag=0.05, max_bytes=1 << 20)

    async def scenario() -> None:
        for _ in range(100):
            backlog.queued(60, frame=True)
        await asyncio.sleep(0.1)  # the oldest row now waits longer than max_lag
        assert backlog.over_limit
        drained = asyncio.ensure_future(backlog.drain())
        await asyncio.sleep(0.2)
        assert not drained.done()  # nothing committed: back-pressure holds
        backlog.committed(100, 6000, 100)
        await asyncio.wait_for(drained, timeout=60)
        assert not backlog.over_limit

    asyncio.run(scenario())


def test_a_lock_held_by_another_process_holds_no_producer_back_and_every_frame_lands(
    store: Store, db_path: Path
) -> None:
    # sqlite3 in a terminal holding BEGIN IMMEDIATE: holding the relay back would stall the
    # client for as long and make no row commit sooner; the rows wait in memory instead.
    sid = store.create_session(mode="record")
    writer = store.writer(batch_size=10, max_lag=0.05, max_backlog_bytes=1 << 20)
    lock = WriteLock(db_path)
    try:
        for seq in range(1, 101):
            writer.add_frame(sid, seq, Frame(request(seq), "c2s"))
        deadline = time.monotonic() + 30
        while not writer.waiting_for_lock:
            assert time.monotonic() < deadline, "the writer never met the lock"
            time.sleep(0.01)
        time.sleep(0.1)  # the oldest frame is late by now
        assert writer.backlog == 100 and not writer.over_limit
        assert writer.wait_below_limit(timeout=0)
        asyncio.run(asyncio.wait_for(writer.drain(), 1))
        writer.add_frame(sid, 101, Frame(result(1, {"blob": "x" * (2 << 20)}), "s2c"))
        assert writer.over_limit  # the bytes limit still holds: memory stays bounded
    finally:
        lock.release()
    writer.flush(timeout=60)
    assert not writer.waiting_for_lock and not writer.over_limit
    writer.close()
    assert writer.errors == []
    assert query(db_path, "SELECT count(*) FROM frames") == [(101,)]


def test_drain_returns_at_once_when_under_the_limit(store: Store) -> None:
    writer = store.writer()
    writer.add_frame(store.create_session(mode="record"), 1, Frame(request(1), "c2s"))
    assert not writer.over_limit

    async def scenario() -> bool:
        task = asyncio.ensure_future(writer.drain())
        await asyncio.sleep(0)
        return task.done()

    assert asyncio.run(scenario())


def test_backlog_limit_counts_bytes_too(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer(max_lag=60, max_backlog_bytes=10_000)
    lock = WriteLock(db_path)
    writer.add_frame(sid, 1, Frame(result(1, {"blob": "x" * 20_000}), "s2c"))
    assert writer.over_limit
    lock.release()
    writer.flush()
    assert not writer.over_limit


def test_flush_with_a_timeout_reports_a_writer_that_cannot_catch_up(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    lock = WriteLock(db_path)
    writer.add_frame(sid, 1, Frame(request(1), "c2s"))
    with pytest.raises(StoreError, match=r"did not catch up within 0\.2 s"):
        writer.flush(timeout=0.2)
    lock.release()
    writer.flush()
    assert query(db_path, "SELECT count(*) FROM frames") == [(1,)]


def test_a_bad_row_is_reported_once_and_the_rest_of_its_batch_is_written(
    store: Store, db_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(request(1), "c2s"))
    writer.add_frame("no-such-session", 1, Frame(request(2), "c2s"))  # violates the foreign key
    writer.add_frame(sid, 1, Frame(request(3), "c2s"))  # duplicate seq
    writer.add_frame(sid, 2, Frame(request(4), "c2s"))
    writer.flush()
    writer.add_frame(sid, 3, Frame(request(5), "c2s"))
    writer.close()
    assert query(db_path, "SELECT seq, rpc_id FROM frames ORDER BY seq") == [(1, "1"), (2, "4"), (3, "5")]
    assert writer.frames_written == 3
    assert any("FOREIGN KEY" in error for error in writer.errors)
    assert any("UNIQUE" in error for error in writer.errors)
    stderr = capfd.readouterr().err
    assert stderr.count("FOREIGN KEY") == 1
    assert "mcptape: recording error:" in stderr


def test_close_flushes_is_idempotent_and_a_frame_queued_after_it_raises(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    for seq in range(1, 51):
        writer.add_frame(sid, seq, Frame(request(seq), "c2s"))
    assert writer.close() is True
    assert writer.close() is True
    assert query(db_path, "SELECT count(*) FROM frames") == [(50,)]
    with pytest.raises(WriterClosedError, match="after the recording writer was closed"):
        writer.add_frame(sid, 51, Frame(request(51), "c2s"))
    writer.flush()
    assert writer.errors == []


def test_close_from_a_signal_handler_flushes_without_deadlock(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer(batch_size=50)
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: writer.close())
    seq = 0
    try:
        with pytest.raises(WriterClosedError):
            while seq < 20_000:
                seq += 1
                writer.add_frame(sid, seq, Frame(request(seq), "c2s"))
                if seq == 5_000:
                    os.kill(os.getpid(), signal.SIGUSR1)  # the handler runs amid the next add_frame calls
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert writer.close()
    [(count, last)] = query(db_path, "SELECT count(*), max(seq) FROM frames")
    # Everything queued before close() is in; the first frame after it raised, none was lost.
    assert count == last == seq - 1 and count >= 5_000
    assert writer.errors == []


def test_writer_retries_past_the_busy_timeout_and_drops_nothing(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import threading

    from mcptape.store import sqlite_engine

    monkeypatch.setattr(sqlite_engine, "BUSY_TIMEOUT_S", 0.1)  # so a short lock outlasts it
    with open_store(str(db_path)) as store:
        sid = store.create_session(mode="record")
        writer = store.writer(batch_size=10)
        lock = WriteLock(db_path)
        for seq in range(1, 31):
            writer.add_frame(sid, seq, Frame(request(seq), "c2s"))
        releaser = threading.Timer(1.0, lock.release)
        releaser.start()
        writer.flush(timeout=60)
        releaser.join()
        writer.close()
    assert query(db_path, "SELECT count(*) FROM frames") == [(30,)]
    assert writer.errors == []
    stderr = capfd.readouterr().err
    assert stderr.count("mcptape: waiting for the database lock held by another process (") == 1
    assert stderr.count("\n") == 1


# -- the relay's API: time-bounded backlog, queued sessions, flushing on the loop, failures ------


def test_backlog_is_bounded_in_time_and_wait_below_limit_blocks_until_it_commits() -> None:
    import threading

    backlog = Backlog(max_lag=0.05, max_bytes=1 << 20)
    backlog.queued(60, frame=True)
    assert not backlog.over_limit  # just queued: not late yet
    time.sleep(0.1)  # longer than max_lag: the row is now late
    assert backlog.over_limit and backlog.frames == 1
    assert not backlog.wait_below_limit(timeout=0.2)  # nothing committed: still over after 0.2 s
    threading.Timer(0.2, backlog.committed, (1, 60, 1)).start()
    assert backlog.wait_below_limit(timeout=60)
    assert not backlog.over_limit


def test_a_response_is_stored_with_its_requests_method_and_seq(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(request(1, "tools/list"), "c2s"))
    writer.add_frame(sid, 2, Frame(b'{"jsonrpc":"2.0","id":1.0,"result":{}}', "s2c"))
    writer.add_frame(sid, 3, Frame(request(2, "ping"), "c2s"))
    writer.add_frame(
        sid, 4, Frame(b'{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}', "s2c", "proxy")
    )
    writer.close()
    assert query(db_path, "SELECT seq, kind, method, request_seq FROM frames ORDER BY seq") == [
        (1, "request", "tools/list", None),
        (2, "response", "tools/list", 1),
        (3, "request", "ping", None),
        (4, "error", "ping", 3),
    ]
    assert query(db_path, "SELECT method, count(*) FROM frames GROUP BY 1 ORDER BY 1") == [
        ("ping", 2),
        ("tools/list", 2),
    ]
    assert query(db_path, "SELECT request_seq, response_seq, answered_by FROM exchanges ORDER BY 1") == [
        (1, 2, "server"),
        (3, 4, "proxy"),
    ]


def test_create_session_is_queued_and_written_before_the_frames_that_follow(
    store: Store, db_path: Path
) -> None:
    writer = store.writer()
    lock = WriteLock(db_path)  # the database is busy: create_session must not wait for it
    sid = writer.create_session(mode="proxy", name="gw", transport="http->stdio")
    writer.add_frame(sid, 1, Frame(request(1), "c2s"))
    assert len(sid) == 32 and query(db_path, "SELECT count(*) FROM sessions") == [(0,)]
    lock.release()
    writer.close()
    assert query(db_path, "SELECT id, mode, name, transport, status, pid FROM sessions") == [
        (sid, "proxy", "gw", "http->stdio", "running", os.getpid())
    ]
    assert query(db_path, "SELECT session_id FROM frames") == [(sid,)]
    with pytest.raises(TypeError, match="needs a mode"):
        store.writer().create_session(name="no mode")


def test_aflush_waits_on_the_loop_without_blocking_it(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()

    async def scenario() -> tuple[bool, int, bool]:
        lock = WriteLock(db_path)
        writer.add_frame(sid, 1, Frame(request(1), "c2s"))
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.ensure_future(tick())
        timed_out = await writer.aflush(timeout=0.3)
        lock.release()
        flushed = await writer.aflush(timeout=60)
        ticker.cancel()
        return timed_out, ticks, flushed

    timed_out, ticks, flushed = asyncio.run(scenario())
    assert timed_out is False and flushed is True
    assert ticks >= 5  # the loop kept turning while aflush waited
    assert query(db_path, "SELECT count(*) FROM frames") == [(1,)]
    writer.close()


def test_close_with_a_timeout_returns_false_while_locked_and_says_so_once_then_writes_everything(
    store: Store, db_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer(batch_size=10)
    lock = WriteLock(db_path)
    for seq in range(1, 31):
        writer.add_frame(sid, seq, Frame(request(seq), "c2s"))
    assert writer.close(timeout=0.5) is False
    with pytest.raises(WriterClosedError):
        writer.add_frame(sid, 31, Frame(request(31), "c2s"))
    lock.release()
    assert writer.close() is True  # nothing queued before close is dropped
    assert query(db_path, "SELECT count(*) FROM frames") == [(30,)]
    err = capfd.readouterr().err
    assert (
        err == "mcptape: waiting for the database lock held by another process (30 frames not yet written)…\n"
    )


def test_a_database_that_fails_for_good_sets_failed_once_and_counts_what_is_lost(
    store: Store, db_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from sqlalchemy import event

    sid = store.create_session(mode="record")

    @event.listens_for(store.engine, "connect")
    def _full(conn: sqlite3.Connection, _record: object) -> None:  # the disk is full from here on
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")

    store.engine.dispose()
    writer = store.writer(batch_size=10)
    for seq in range(1, 41):
        writer.add_frame(sid, seq, Frame(request(seq, "x" * 5000), "c2s"))
    writer.flush()
    assert writer.failed is not None and "database or disk is full" in writer.failed
    assert "\n" not in writer.failed
    assert writer.lost == 40 and writer.frames_written == 0
    assert not writer.over_limit  # nothing to wait for: the relay goes on
    assert writer.close() is False
    assert capfd.readouterr().err.count("mcptape: recording error:") == 1


def test_flush_and_close_cut_the_group_commit_linger_short(
    store: Store, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcptape.store import writer as writer_module

    # A linger far longer than the flush timeout below: only being woken lets flush return.
    monkeypatch.setattr(writer_module, "LINGER_S", 600.0)
    session = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(session, 1, Frame(request(1), "c2s"))
    writer.flush(timeout=10)  # the writer committed the first frame and lingers now
    writer.add_frame(session, 2, Frame(result(1), "s2c"))
    writer.flush(timeout=10)
    writer.add_frame(session, 3, Frame(request(2), "c2s"))
    closer = threading.Thread(target=writer.close)
    closer.start()
    closer.join(10)
    assert not closer.is_alive()
    assert query(db_path, "select seq from frames order by seq") == [(1,), (2,), (3,)]


def test_a_file_deleted_just_before_the_session_ends_is_said_at_close(
    store: Store, db_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer looks at its file at most every 0.25 s; the last frames of a session,
    # committed in between into a file `rm` had just unlinked, were called recorded.
    from mcptape.store import fileid

    monkeypatch.setattr(fileid, "CHECK_EVERY_S", 3600.0)  # no look but the last one
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(request(1), "c2s"))
    writer.flush()
    assert writer.failed is None
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    writer.add_frame(sid, 2, Frame(result(1), "s2c"))
    assert writer.close() is False
    assert writer.failed == f"{db_path} was deleted or moved away while recording"
    err = capfd.readouterr().err
    assert err.count("was deleted") == 1 and "the last frames of the session went with it" in err, err
