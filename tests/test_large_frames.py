"""Large frames: stored exactly, their bytes handed to SQLite and released, one at a time in memory."""

from __future__ import annotations

import asyncio
import os
import platform
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcptape.proxy.addonmanager import Flow
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.links.stdio import FdLink
from mcptape.store import Store, open_store
from mcptape.store.backlog import Backlog
from mcptape.store.writer import Writer
from mcptape.wire.frame import Frame
from mcptape.wire.largeframes import LARGE, LARGE_FRAME_BYTES, LargeFrames, give_large_blocks_back


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = open_store(str(db_path))
    yield opened
    opened.close()


def big_response(fill: bytes, rpc_id: int = 1) -> bytes:
    head = b'{"jsonrpc":"2.0","id":%d,"result":{"blob":"' % rpc_id
    return head + fill * (LARGE_FRAME_BYTES // len(fill) + 1) + b'"}}'


def stored(db_path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db_path) as conn:
        return conn.execute(
            "select seq, kind, rpc_id, typeof(text), size, raw is null from frames order by seq"
        ).fetchall()


def stored_text_equals(db_path: Path, seq: int, data: bytes) -> bool:
    with sqlite3.connect(db_path) as conn:
        return bool(
            conn.execute("select text = ? from frames where seq = ?", (data.decode(), seq)).fetchone()[0]
        )


def test_a_large_frame_the_writer_holds_alone_is_handed_to_sqlite_and_stored_as_exact_text(
    store: Store, db_path: Path
) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    ascii_copy, utf8_copy = big_response(b"x"), big_response("é✓🎉".encode(), 2)
    # The frames are built here and referenced by the writer's queue alone.
    writer.add_frame(sid, 1, Frame(big_response(b"x"), "s2c"))
    writer.add_frame(sid, 2, Frame(big_response("é✓🎉".encode(), 2), "s2c"))
    writer.flush(30)
    assert writer.handoffs == 2 and writer.errors == []
    assert stored(db_path) == [
        (1, "response", "1", "text", len(ascii_copy), 1),
        (2, "response", "2", "text", len(utf8_copy), 1),
    ]
    assert stored_text_equals(db_path, 1, ascii_copy) and stored_text_equals(db_path, 2, utf8_copy)
    assert LARGE.count == 0


def test_a_large_frame_someone_else_holds_is_stored_without_being_touched(
    store: Store, db_path: Path
) -> None:
    sid = store.create_session(mode="record")
    writer = Writer(store.engine, handoff_patience=0.05)
    try:
        frame = Frame(big_response(b"y"), "c2s")
        writer.add_frame(sid, 1, frame)
        writer.flush(30)
        assert writer.handoffs == 0
        assert len(frame.data) > LARGE_FRAME_BYTES  # the frame the relay still holds keeps its bytes
        assert stored_text_equals(db_path, 1, frame.data)
        assert stored(db_path)[0][3] == "text"
    finally:
        writer.close()
    assert LARGE.count == 0


def test_a_large_frame_with_invalid_utf8_keeps_its_exact_bytes_in_raw(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    data = big_response(b"z\xff")
    writer.add_frame(sid, 1, Frame(big_response(b"z\xff"), "s2c"))
    writer.add_frame(sid, 2, Frame(b'{"jsonrpc":"2.0","method":"after"}', "s2c"))
    writer.flush(30)
    assert writer.handoffs == 0  # only valid UTF-8 goes to SQLite as the frame's own bytes
    with sqlite3.connect(db_path) as conn:
        got = conn.execute("select seq, raw, typeof(text), kind, method from frames order by seq").fetchall()
    assert got == [(1, data, "text", "response", None), (2, None, "text", "notification", "after")]


def test_frames_queued_around_a_large_one_keep_their_order_and_pairing(store: Store, db_path: Path) -> None:
    sid = store.create_session(mode="record")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}', "c2s"))
    writer.add_frame(sid, 2, Frame(big_response(b"w"), "s2c"))
    writer.add_frame(sid, 3, Frame(b'{"jsonrpc":"2.0","method":"notifications/x"}', "s2c"))
    writer.flush(30)
    with sqlite3.connect(db_path) as conn:
        got = conn.execute("select seq, kind, method, request_seq from frames order by seq").fetchall()
    assert got == [
        (1, "request", "tools/call", None),
        (2, "response", "tools/call", 1),
        (3, "notification", "notifications/x", None),
    ]
    assert writer.handoffs == 1


def test_a_reader_waits_for_the_store_before_reading_a_second_large_frame_whole() -> None:
    read_fd, write_fd = os.pipe()
    sink_r, sink_w = os.pipe()
    got: list[int] = []
    delivered = threading.Event()

    def deliver(frame: Frame) -> None:
        got.append(len(frame.data))
        delivered.set()

    async def run() -> None:
        link = FdLink(read_fd, sink_w, "s2c", "server")
        link.start(deliver, lambda why: None, lambda *args: None)
        line = big_response(b"v") + b"\n"
        feeder = threading.Thread(target=lambda: os.write(write_fd, line) and os.close(write_fd))
        waits = LARGE.waits
        LARGE.queued()  # the store still holds a large frame
        try:
            feeder.start()
            await asyncio.sleep(0.5)
            assert not delivered.is_set() and LARGE.waits == waits + 1
        finally:
            LARGE.finished()
        assert await asyncio.get_running_loop().run_in_executor(None, delivered.wait, 10)
        assert got == [len(line) - 1]
        await asyncio.get_running_loop().run_in_executor(None, feeder.join, 10)
        await link.aclose(1)

    try:
        asyncio.run(run())
    finally:
        for fd in (read_fd, sink_r):
            os.close(fd)


def test_the_large_frame_count_waits_are_bounded_and_released() -> None:
    frames = LargeFrames()
    assert frames.wait_idle(0.01) and frames.waits == 0
    frames.queued()
    started = time.monotonic()
    assert not frames.wait_idle(0.05) and time.monotonic() - started >= 0.05
    threading.Timer(0.05, frames.finished).start()
    assert frames.wait_idle(5) and frames.count == 0 and frames.waits == 2


def test_a_writer_waiting_for_producers_holds_nobody_back_for_that_frame() -> None:
    backlog = Backlog(max_lag=0.01, max_bytes=100)
    backlog.queued(90, frame=True)
    time.sleep(0.03)
    assert backlog.over_limit  # late
    backlog.yield_to_producers(90)
    assert not backlog.over_limit and backlog.under_half()
    backlog.queued(120, frame=True)
    assert backlog.over_limit  # other bytes still count
    backlog.yield_to_producers(0)
    backlog.committed(2, 210, 2)
    assert not backlog.over_limit


def test_large_frames_held_until_the_store_opens_count_as_waiting_for_it(store: Store, db_path: Path) -> None:
    before = LARGE.count
    recorder = Recorder()
    recorder.frame_done(Flow(Frame(big_response(b"a"), "s2c")))
    assert LARGE.count == before + 1
    sid = store.create_session(mode="record")
    writer = store.writer()
    recorder.attach(writer, sid)
    writer.flush(30)
    assert LARGE.count == before and stored(db_path)[0][:4] == (1, "response", "1", "text")

    dropped = Recorder()
    dropped.frame_done(Flow(Frame(big_response(b"b"), "c2s")))
    assert LARGE.count == before + 1
    dropped.abandon("the store could not be opened")
    assert LARGE.count == before


def test_glibc_is_told_once_to_give_large_blocks_back() -> None:
    first = give_large_blocks_back()
    assert first is give_large_blocks_back()
    assert first == (platform.libc_ver()[0] == "glibc")


def test_frame_row_carries_valid_utf8_bytes_as_they_are_and_decodes_the_rest() -> None:
    from mcptape.store.rows import frame_row

    valid = '{"jsonrpc":"2.0","method":"m","params":"é✓"}'.encode()
    assert frame_row("s", 1, Frame(valid, "c2s"), text_bytes=True)[9:11] == (valid, None)
    assert frame_row("s", 1, Frame(valid, "c2s"))[9:11] == (valid.decode(), None)
    invalid = b'{"params":"\xff"}'
    assert frame_row("s", 1, Frame(invalid, "c2s"), text_bytes=True)[9:11] == ('{"params":"\ufffd"}', invalid)
    nul = b'{"params":"\x00"}'
    assert frame_row("s", 1, Frame(nul, "c2s"), text_bytes=True)[9:11] == ('{"params":"\ufffd"}', nul)
