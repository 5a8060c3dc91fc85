"""A replica's heartbeat in the shared database, and the sessions of replicas that stopped beating.

A replica killed with SIGKILL (the OOM killer, a lost machine) cannot close its session
rows; its clients' next requests reach another replica and get 404. Every replica
writes ``replicas.seen_at`` every :data:`BEAT_S` seconds; on each beat it also marks
``interrupted`` the running sessions of any replica not seen for :data:`LOST_AFTER_S`,
ended at their last frame. A replica that starts again under the same name closes what
its earlier process left running at once. On a thread of its own: the loop never waits.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import TYPE_CHECKING, Final

import sqlalchemy as sa

from mcptape.store.schema import frames, replicas, sessions

if TYPE_CHECKING:
    from mcptape.store import Store

BEAT_S: Final = 2.0
LOST_AFTER_S: Final = 10.0


def beat(store: Store, name: str, started_at: float, now: float) -> None:
    """Write this replica's heartbeat (one short transaction)."""
    with store.engine.begin() as conn:
        done = conn.execute(
            replicas.update()
            .where(replicas.c.name == name)
            .values(seen_at=now, pid=os.getpid(), started_at=started_at)
        )
        if done.rowcount == 0:
            conn.execute(
                replicas.insert().values(name=name, pid=os.getpid(), started_at=started_at, seen_at=now)
            )


def close_lost(store: Store, now: float, me: str | None = None, my_start: float | None = None) -> list[str]:
    """Mark ``interrupted`` the running sessions of replicas silent for LOST_AFTER_S (and, for
    ``me``, those its earlier process started before ``my_start``); their ids."""
    with store.engine.begin() as conn:
        silent = sa.select(replicas.c.name).where(replicas.c.seen_at < now - LOST_AFTER_S)
        lost: sa.ColumnElement[bool] = sessions.c.replica.in_(silent)
        if me is not None and my_start is not None:
            lost = sa.or_(lost, sa.and_(sessions.c.replica == me, sessions.c.started_at < my_start))
        rows = conn.execute(
            sa.select(sessions.c.id, sessions.c.replica, sessions.c.started_at).where(
                sessions.c.status == "running", lost
            )
        ).all()
        for session_id, replica, started_at in rows:
            last = conn.execute(
                sa.select(sa.func.max(frames.c.ts)).where(frames.c.session_id == session_id)
            ).scalar()
            conn.execute(
                sessions.update()
                .where(sessions.c.id == session_id, sessions.c.status == "running")
                .values(
                    status="interrupted",
                    ended_at=last if last is not None else started_at,
                    error=f"replica {replica} stopped without closing the session (killed or crashed)",
                )
            )
    return [row.id for row in rows]


class Heartbeat:
    """Beats for replica ``name`` on a daemon thread until :meth:`stop`."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name
        self.started_at = time.time()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcptape-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        first = True
        while not self._stop.is_set():
            # Housekeeping: a database away for a while is the writer's to report, not ours.
            with contextlib.suppress(Exception):
                now = time.time()
                beat(self.store, self.name, self.started_at, now)
                close_lost(self.store, now, self.name if first else None, self.started_at)
                first = False
            self._stop.wait(BEAT_S)

    def stop(self) -> None:
        self._stop.set()
