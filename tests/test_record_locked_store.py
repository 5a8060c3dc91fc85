"""A store held up by another process's write lock never holds forwarding back for long.

Holding the relay back cannot make the store open sooner when it only waits for
someone else's lock (``sqlite3`` with BEGIN IMMEDIATE in a terminal): the recorder
keeps the frames in memory instead of waiting out its patience (5 s) on forwarding.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from mcptape.proxy.addonmanager import Flow
from mcptape.proxy.addons import recorder as recorder_module
from mcptape.proxy.addons.recorder import Recorder
from mcptape.store import open_store
from mcptape.wire.frame import Frame


def _wait_until(condition: object, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.01)


def test_the_store_says_while_it_waits_for_another_processs_write_lock(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    store = open_store(str(db))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    created: list[str] = []
    thread = threading.Thread(target=lambda: created.append(store.create_session(mode="record")))
    thread.start()
    try:
        _wait_until(lambda: store.waiting_for_lock)
        assert not created, "the session row waits for the lock"
    finally:
        holder.execute("COMMIT")
        holder.close()
    thread.join(20)
    assert created and not store.waiting_for_lock
    store.close()


def test_a_recorder_whose_store_is_locked_out_does_not_hold_forwarding_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Patience for ever: without the lock check the relay would wait here until the store opened.
    monkeypatch.setattr(recorder_module, "EARLY_PATIENCE", 3600.0)
    monkeypatch.setattr(recorder_module, "EARLY_LAG", 0.0)
    recorder = Recorder()
    locked = [False]
    recorder.locked_out = lambda: locked[0]

    async def scenario() -> None:
        waits = []
        for i in range(recorder_module.EARLY_FEW + 2):
            frame = Frame(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"i":%d}}' % i, "c2s")
            waiting = recorder.frame_done(Flow(frame))
            if waiting is not None:
                waits.append(waiting)
        assert waits, "past EARLY_FEW frames held, the relay is asked to wait for the store"
        pending = asyncio.gather(*waits)
        await asyncio.sleep(0.05)
        assert not pending.done(), "a store merely slow to open is waited for (bounded loss)"
        locked[0] = True  # now the store says another process holds its write lock
        await asyncio.wait_for(pending, 10)

    asyncio.run(scenario())
    # Every frame held meanwhile lands once the store opens.
    store = open_store(str(tmp_path / "rec.db"))
    session_id = store.create_session(mode="record")
    writer = store.writer()
    recorder.attach(writer, session_id)
    writer.flush()
    assert writer.frames_written == recorder_module.EARLY_FEW + 2
    store.close()
