"""A session a killed recorder left `running` is closed by the next recorder of the same file."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.recording import RAW_ECHO, Recording, wait_for_frames

pytestmark = pytest.mark.slow

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def _record_one_ping(db: Path) -> Recording:
    rec = Recording(db, RAW_ECHO)
    rec.send(PING)
    assert rec.recv() == PING
    return rec


def test_the_next_recorder_marks_a_killed_recorders_session_interrupted_at_its_last_frame(
    db_path: Path,
) -> None:
    killed = _record_one_ping(db_path)
    wait_for_frames(db_path, 2)
    killed.proc.send_signal(signal.SIGKILL)
    killed.wait()
    [(lost_id, status)] = query(db_path, "select id, status from sessions")
    assert status == "running"  # nobody could say otherwise yet
    [(last_ts,)] = query(db_path, "select max(ts) from frames where session_id = ?", lost_id)

    alive = _record_one_ping(db_path)  # a live recorder's session is left alone
    try:
        nxt = _record_one_ping(db_path)
        nxt.close_stdin()
        assert nxt.wait() == 0
        rows = dict(query(db_path, "select id, status from sessions"))
        assert rows[lost_id] == "interrupted"
        [(ended_at, error)] = query(db_path, "select ended_at, error from sessions where id = ?", lost_id)
        assert ended_at == last_ts
        assert f"pid {killed.proc.pid}" in error and "killed or crashed" in error
        assert sorted(rows.values()) == ["closed", "interrupted", "running"]
    finally:
        alive.close_stdin()
        assert alive.wait() == 0
    assert sorted(status for (status,) in query(db_path, "select status from sessions")) == [
        "closed",
        "closed",
        "interrupted",
    ]
