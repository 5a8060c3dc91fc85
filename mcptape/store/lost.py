"""Sessions left ``running`` by a recorder that is gone: closed by the next one that opens the file.

A recorder killed with SIGKILL (a desktop client ending its servers, the OOM killer, a
power cut) cannot mark its session ended. ``sessions`` and ``show`` then say ``lost``
by looking for its pid, but SQL over the ``sessions`` table would go on seeing
``running``. The next process that records into the same SQLite file (``record``,
``proxy``, ``call``, ``replay``, ``serve``: :func:`close_lost_once` when it opens the
store) marks those sessions ``interrupted``, ended at their last frame, with an error
saying so. Only
SQLite files on this machine are checked: a server database holds sessions of other
machines, whose pids mean nothing here.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from typing import TYPE_CHECKING

import sqlalchemy as sa

from mcptape.store.procinfo import recorder_alive
from mcptape.store.schema import frames, sessions

if TYPE_CHECKING:
    from mcptape.store.engine import Store


LOCK_WAIT_MS = 200  # another process writing now: try again next time rather than wait

_SWEPT: set[str] = set()
_SWEPT_LOCK = threading.Lock()


def close_lost_once(store: Store) -> None:
    """:func:`close_lost_sessions`, once per process and file, never failing: a housekeeping
    step is no reason not to record (another process holding the lock, say)."""
    with _SWEPT_LOCK:
        if store.where in _SWEPT:
            return
        _SWEPT.add(store.where)
    with contextlib.suppress(Exception):
        close_lost_sessions(store)


def close_lost_sessions(store: Store) -> list[str]:
    """Mark ``interrupted`` the running sessions of this file whose recorder is gone; their ids."""
    if store.path is None or store.readonly:
        return []
    with store.engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        (wait_ms,) = raw.execute("PRAGMA busy_timeout").fetchone()
        raw.execute(f"PRAGMA busy_timeout = {LOCK_WAIT_MS}")
        try:
            running = conn.execute(
                sa.select(sessions.c.id, sessions.c.pid, sessions.c.started_at).where(
                    sessions.c.status == "running", sessions.c.pid.is_not(None)
                )
            ).all()
            lost = [row for row in running if recorder_alive(row.pid, row.started_at) is False]
            for session_id, pid, started_at in lost:
                last = conn.execute(
                    sa.select(sa.func.max(frames.c.ts)).where(frames.c.session_id == session_id)
                )
                ended_at = last.scalar()
                conn.execute(
                    sessions.update()
                    .where(sessions.c.id == session_id, sessions.c.status == "running")
                    .values(
                        status="interrupted",
                        ended_at=ended_at if ended_at is not None else started_at,
                        error=f"the recorder (pid {pid}) ended without closing the session: killed or crashed",
                    )
                )
            conn.commit()
        finally:
            raw.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    return [row.id for row in lost]
