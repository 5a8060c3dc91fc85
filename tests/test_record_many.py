"""Ten wrapped servers started at once into one SQLite file, with readers and a held lock.

A desktop client opening a config whose ten entries `mcptape wrap` rewrote starts ten
`mcptape record` processes at the same moment, all recording into one file. Each is
driven by its client in a burst while a user runs `sessions`, `sql` and `show` in a
loop and a `sqlite3` shell holds the write lock: every frame of every session lands,
every read succeeds, and the bursts are all answered while the lock is still held.
"""

from __future__ import annotations

import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.many_recorders import BurstClient, wrapped_entries
from tests.helpers.paths import MCPTAPE, everything_server_cmd

SERVER = everything_server_cmd()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(SERVER is None, reason="server-everything is installed by .ci/run (tests/npm)"),
]

READS = (["sessions"], ["sql", "select count(*) from frames"], ["show", "last"])


class ReadLoop:
    """A user running the read commands over and over against the database being recorded."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.results: list[subprocess.CompletedProcess[str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for args in READS:
                self.results.append(
                    subprocess.run(
                        [*MCPTAPE, *args, "--db", str(self.db)],
                        capture_output=True,
                        text=True,
                        timeout=60,
                        check=False,
                    )
                )

    def stop(self) -> list[subprocess.CompletedProcess[str]]:
        self._stop.set()
        self._thread.join(120)
        return self.results


def _wait_for_sessions(db: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as conn:
                if conn.execute("select count(*) from sessions").fetchone()[0] >= count:
                    return
        except sqlite3.Error:  # not created yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} sessions opened")


def test_ten_wrapped_servers_started_at_once_record_every_frame_under_readers_and_a_held_lock(
    tmp_path: Path,
) -> None:
    assert SERVER is not None
    db = tmp_path / "desktop.db"
    entries = wrapped_entries(tmp_path, db, SERVER, 10)
    clients = [BurstClient(entry, calls=60) for entry in entries.values()]
    reads: ReadLoop | None = None
    holder: sqlite3.Connection | None = None
    try:
        assert all(client.ready.wait(60) for client in clients), [c.stderr for c in clients]
        _wait_for_sessions(db, 10)
        reads = ReadLoop(db)
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # sqlite3 in a terminal: BEGIN IMMEDIATE, then a coffee
        for client in clients:
            client.burst()
        for client in clients:
            assert client.done.wait(60), (client.answered, client.stderr)
        # Every burst was answered while the lock was still held: forwarding did not wait for it.
        assert holder.in_transaction
        holder.execute("ROLLBACK")
        results = reads.stop()
        codes = [client.finish() for client in clients]
    finally:
        if holder is not None:
            holder.close()
        if reads is not None:
            reads.stop()
        for client in clients:
            client.kill()
    assert codes == [0] * 10
    assert results, "the read loop never ran"
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "locked" not in result.stderr
    with sqlite3.connect(db) as conn:
        per_name = dict(
            conn.execute(
                "select s.name, count(f.seq) from sessions s left join frames f on f.session_id = s.id group by s.name"
            ).fetchall()
        )
        statuses = conn.execute("select distinct status from sessions").fetchall()
        unanswered = conn.execute(
            "select count(*) from exchanges where method = 'tools/call' and response_seq is null"
        ).fetchone()[0]
    assert per_name == {
        name: client.sent + client.received for name, client in zip(entries, clients, strict=True)
    }
    assert statuses == [("closed",)]
    assert unanswered == 0
    for client in clients:
        assert b"recording error" not in client.stderr and b"Traceback" not in client.stderr
