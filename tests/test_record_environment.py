"""`mcptape record` when its environment moves under it: the database file deleted or
replaced while it records, a full file system, a small file-descriptor limit.

The client always gets every answer; what could not be recorded is said, and the
exit status says recording failed.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import RAW_ECHO, Recording, record_one_ping, wait_for_frames


def _pings(rec: Recording, first: int, count: int) -> None:
    for i in range(first, first + count):
        line = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i
        rec.send(line)
        assert rec.recv() == line


def _record_while(db_path: Path, act: Callable[[], None]) -> str:
    """Ten pings recorded, ``act`` done to the database file, ten more pings forwarded; record's stderr.

    The client keeps its server throughout; record exits 1 (not every frame recorded).
    """
    rec = Recording(db_path, RAW_ECHO)
    try:
        _pings(rec, 1, 10)
        wait_for_frames(db_path, 20)
        act()
        time.sleep(0.3)  # past the writer's look at its file (every 0.25 s at most)
        _pings(rec, 11, 10)
        rec.close_stdin()
        assert rec.wait() == 1
    finally:
        rec.kill()
    return rec.stderr.decode()


@pytest.mark.slow
def test_a_database_deleted_while_recording_is_said_and_the_client_keeps_its_server(db_path: Path) -> None:
    # `rm mcptape.db` to start afresh while a desktop client's servers record: SQLite went
    # on writing into the unlinked file, every later frame vanished and record exited 0.
    def delete() -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)

    err = _record_while(db_path, delete)
    assert f"{db_path} was deleted or moved away while recording" in err, err
    # Mid-session the client keeps its server whatever --on-store-error says (it is about opening).
    assert (
        "the session goes on but its frames from here on are not recorded" in err and "stopping" not in err
    ), err
    assert err.count(f"{db_path} was deleted") == 1, err  # said once, by the writer
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_database_replaced_while_recording_is_said_and_the_client_keeps_its_server(tmp_path: Path) -> None:
    # `mv other.db mcptape.db` under a recorder: it exited 0 having written nowhere a path leads.
    db_path = tmp_path / "rec.db"

    def replace() -> None:
        other = tmp_path / "other.db"
        subprocess.run([*MCPTAPE, "record", "--db", str(other), "--", *RAW_ECHO], input=b"", check=True)
        os.replace(other, db_path)

    err = _record_while(db_path, replace)
    assert f"{db_path} was replaced by another file while recording" in err, err
    assert "Traceback" not in err
    # The file that took the path is left as it was: record's -wal, left beside it, was
    # merged into it by the next reader (the first 20 frames appeared in other.db).
    assert query(db_path, "select count(*) from frames") == [(0,)]
    assert query(db_path, "select count(*) from sessions") == [(1,)]


@pytest.mark.slow
def test_record_under_a_limit_of_32_file_descriptors_forwards_and_records_everything(db_path: Path) -> None:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))

    pings = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(200))
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), "--", *RAW_ECHO],
        input=pings,
        capture_output=True,
        preexec_fn=limit,  # the limit applies to record itself
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == pings
    assert query(db_path, "select count(*) from frames") == [(400,)]


@pytest.mark.slow
def test_a_memory_limit_too_small_for_record_is_one_line_not_a_traceback(db_path: Path) -> None:
    # ulimit -v 32768: the relay could not start its reader threads and record crashed
    # with a traceback. (At 64 MiB a thread that did start may abort the process when it
    # ends: glibc cannot load libgcc_s for pthread_exit. That is below mcptape.)
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (32 << 20, 32 << 20))

    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), "--", *RAW_ECHO],
        input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        capture_output=True,
        preexec_fn=limit,  # the limit applies to record itself
        timeout=60,
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    # Which allocation fails first varies (a thread, or the store while it opens): both say memory.
    assert err.startswith("mcptape: error: ") and "memory" in err.lower(), err


@pytest.mark.slow
def test_a_recorder_started_while_sqlite3_holds_the_lock_forwards_without_waiting_for_its_store(
    db_path: Path,
) -> None:
    # The session row waited for the lock, the recorder stayed detached from its store,
    # and a burst from the client stalled 5 s ("the recording database is slow to open").
    record_one_ping(db_path)
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    rec = Recording(db_path, RAW_ECHO)
    try:
        _pings(rec, 1, 1000)  # one by one, as a client waiting for each answer
        assert holder.in_transaction  # all answered while the lock was held
        holder.execute("ROLLBACK")
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        holder.close()
        rec.kill()
    err = rec.stderr.decode()
    assert "slow to open" not in err, err
    assert query(db_path, "select count(*) from frames") == [(2002,)]


def test_running_out_of_memory_while_opening_the_store_is_said_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcptape.store
    from mcptape.proxy.addons.recorder import Recorder
    from mcptape.proxy.addons.recording import BackgroundStore, SessionRow

    def no_memory(db: object) -> object:
        raise MemoryError

    monkeypatch.setattr(mcptape.store, "open_store", no_memory)
    store = BackgroundStore(str(tmp_path / "rec.db"), SessionRow("record"), Recorder()).start()
    assert store.done.wait(20)
    # It was "MemoryError: " (an empty message) under a tight ulimit -v.
    assert store.error == "cannot open the recording database: out of memory"
