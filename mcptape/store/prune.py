"""Retention: frames older than a cutoff go, and the sessions left with nothing (`mcptape prune`).

PostgreSQL drops whole day partitions of ``frames`` (:mod:`mcptape.store.partitions`):
no scan, no vacuum, a moment's lock. What is left older than the cutoff (a partition
that also holds newer frames has none: partitions are days; rows in the default
partition; SQLite) is deleted in small batches, each its own short transaction, so a
recorder writing meanwhile waits at most one batch for the lock. Then the events of
the cutoff's past go, and the sessions that ended before it and have no frame left,
with their ``batch_replies``. A running session is never deleted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa

from mcptape.store import partitions

if TYPE_CHECKING:
    from mcptape.store.engine import Store

BATCH = 2000  # rows per transaction: a writer waits for one batch at most
PAUSE_S = 0.005  # between batches: the lock is free for writers waiting on it


@dataclass
class Pruned:
    """What a prune removed (or, with ``dry_run``, would remove)."""

    frames: int = 0
    partitions: int = 0
    events: int = 0
    sessions: int = 0


def prune(store: Store, cutoff: float, *, dry_run: bool = False) -> Pruned:
    """Remove what is older than ``cutoff`` (seconds since the epoch); see the module docstring."""
    done = Pruned()
    with store.engine.connect() as conn:
        partitioned = partitions.is_partitioned(conn)
        conn.commit()  # reads autobegin a transaction; each step below is one of its own
        if partitioned:
            done.partitions, done.frames = partitions.drop_before(conn, cutoff, dry_run=dry_run)
        if dry_run:
            done.frames = _count(conn, "SELECT count(*) FROM frames WHERE ts < :c", cutoff)
            done.events = _count(conn, "SELECT count(*) FROM events WHERE ts < :c", cutoff)
            done.sessions = _count(conn, f"SELECT count(*) FROM sessions s WHERE {_GONE}", cutoff)
            return done
        done.frames += _batches(conn, "frames", "ts < :c", cutoff)
        done.events = _batches(conn, "events", "ts < :c", cutoff)
        gone = [
            row[0]
            for row in conn.execute(sa.text(f"SELECT s.id FROM sessions s WHERE {_GONE}"), {"c": cutoff})
        ]
        conn.commit()
        for start in range(0, len(gone), BATCH):
            ids = gone[start : start + BATCH]
            with conn.begin():
                for table in ("batch_replies", "events", "frames"):
                    conn.execute(
                        sa.text(f"DELETE FROM {table} WHERE session_id IN :ids").bindparams(
                            sa.bindparam("ids", expanding=True)
                        ),
                        {"ids": ids},
                    )
                conn.execute(
                    sa.text("DELETE FROM sessions WHERE id IN :ids").bindparams(
                        sa.bindparam("ids", expanding=True)
                    ),
                    {"ids": ids},
                )
            done.sessions += len(ids)
            time.sleep(PAUSE_S)
    return done


# A session that ended before the cutoff and has no frame since (its frames were older).
_GONE = """s.status <> 'running' AND coalesce(s.ended_at, s.started_at) < :c
  AND NOT EXISTS (SELECT 1 FROM frames f WHERE f.session_id = s.id AND f.ts >= :c)"""


def _count(conn: sa.Connection, sql: str, cutoff: float) -> int:
    return int(conn.execute(sa.text(sql), {"c": cutoff}).scalar() or 0)


def _batches(conn: sa.Connection, table: str, where: str, cutoff: float) -> int:
    """Delete ``table``'s rows matching ``where`` BATCH at a time, each batch its own transaction."""
    total = 0
    while True:
        with conn.begin():
            deleted = conn.execute(
                sa.text(
                    f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {where} LIMIT {BATCH})"
                ),
                {"c": cutoff},
            ).rowcount
        total += max(deleted, 0)
        if deleted < BATCH:
            return total
        time.sleep(PAUSE_S)
