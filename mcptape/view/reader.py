"""The poller `mcptape tail` and the viewer share: new frames and events by id, as feed items.

:class:`FeedReader` keeps one connection to the store and, at each :meth:`FeedReader.poll`,
reads the frames and events past the ids it has seen (:class:`~mcptape.view.cursor.IdCursor`:
gaps left by PostgreSQL transactions that commit out of order are read again), hands
them to a :class:`~mcptape.view.feed.Pairer` and returns what completed. Idle, a poll
costs one ``PRAGMA data_version`` on SQLite (nothing changed: nothing else is read), and
two index lookups on PostgreSQL.

Sessions are looked up when their first frame or event is seen, and the running ones
are read again every :data:`SESSION_CHECK_S`: a session that ended has its requests
still waiting reported as unanswered. With ``discover=True`` (the viewer's session
list) sessions are also found as soon as their row is written, frames or not.

Blocking: call it from a thread (the viewer) or a plain loop (tail). Database errors
propagate as SQLAlchemy errors; the next poll reconnects.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import Connection, func, select

from mcptape.store.queries import LISTED_COLUMNS
from mcptape.store.schema import events, frames, sessions
from mcptape.view.cursor import IdCursor
from mcptape.view.feed import SUMMARY_MAX_BYTES, EventRow, FeedItem, FrameRow, Pairer

BATCH: Final = 2000  # rows per poll and table; a poll that got this many says more are waiting
SESSION_CHECK_S: Final = 0.5
ENDED: Final = "ended"


@dataclass
class Poll:
    """What one poll found: the new frames rows, the items they completed, and sessions that
    appeared or changed (rows of :data:`SESSION_COLUMNS`)."""

    frames: list[FrameRow] = field(default_factory=list)
    items: list[FeedItem] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    more: bool = False


def _frame_columns(text_max: int, meta: bool) -> list[Any]:
    text = sa.case((frames.c.size <= text_max, frames.c.text), else_=sa.null())
    return [
        frames.c.id, frames.c.session_id, frames.c.seq, frames.c.ts, frames.c.direction, frames.c.origin,
        frames.c.kind, frames.c.method, frames.c.rpc_id, frames.c.size, frames.c.request_seq, text,
        *([frames.c.meta] if meta else []),
    ]  # fmt: skip


# What the reader keeps of a session: what lists show, and the conversation it belongs to.
SESSION_COLUMNS: Final = (*LISTED_COLUMNS, "replica", "conversation_id")


class FeedReader:
    """New frames and events of a store (all sessions, or ``session_ids``), as they land."""

    def __init__(
        self,
        source: Any,
        *,
        session_ids: Collection[str] | None = None,
        after_frame: int | None = None,
        after_event: int | None = None,
        text_max: int = SUMMARY_MAX_BYTES,
        meta: bool = False,
        discover: bool = False,
        session_check_s: float = SESSION_CHECK_S,
    ) -> None:
        """``source`` is a Store or an Engine. ``after_frame``/``after_event``: read the rows past
        these ids (None: only what is written from now on); ``meta``: read each frame's transport
        metadata too; ``session_check_s``: how often the running sessions are read again."""
        self._engine: sa.Engine = source if isinstance(source, sa.Engine) else source.engine
        self._only = frozenset(session_ids) if session_ids is not None else None
        self._columns = _frame_columns(text_max, meta)
        self._discover = discover
        self.pairer = Pairer()
        self._conn: Connection | None = None
        self._data_version: int | None = None
        self.sessions: dict[str, dict[str, Any]] = {}
        self._running: set[str] = set()
        self._checked = 0.0
        self._check_every = session_check_s
        self._newest_start = time.time() if after_frame is None else 0.0
        if after_frame is None or after_event is None:
            with self._engine.connect().execution_options(sqlite_begin="DEFERRED") as conn:
                if after_frame is None:
                    after_frame = conn.execute(select(func.max(frames.c.id))).scalar() or 0
                if after_event is None:
                    after_event = conn.execute(select(func.max(events.c.id))).scalar() or 0
        self.frames_cursor = IdCursor(after_frame)
        self.events_cursor = IdCursor(after_event)

    # -- polling -------------------------------------------------------------------

    def poll(self) -> Poll:
        """Read what landed since the last poll (see the module docstring)."""
        conn = self._connect()
        try:
            return self._poll(conn)
        except BaseException:
            self.close()
            raise
        finally:
            if self._conn is not None:
                self._conn.rollback()  # end the read transaction: the next poll sees new commits

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                conn.close()

    def _connect(self) -> Connection:
        if self._conn is None:
            self._conn = self._engine.connect().execution_options(sqlite_begin="DEFERRED")
            self._data_version = None
        return self._conn

    def _poll(self, conn: Connection) -> Poll:
        out = Poll()
        changed = self._changed(conn)
        now = time.monotonic()
        ended: list[dict[str, Any]] = []
        if now - self._checked >= self._check_every:
            self._checked = now
            ended = self._check_sessions(conn, out)
        if not changed and not ended:
            return out
        frame_rows = self._read_frames(conn)
        event_rows = self._read_events(conn)
        out.more = len(frame_rows) >= BATCH or len(event_rows) >= BATCH
        self._learn(conn, {r.session_id for r in frame_rows} | {r.session_id for r in event_rows}, out)
        requests = self._requests_not_held(conn, frame_rows)
        items: list[FeedItem] = []
        for row in frame_rows:
            request = requests.get((row.session_id, row.request_seq or 0))
            item = self.pairer.frame(row, request)
            if item is not None:
                items.append(item)
        items.extend(self.pairer.event(row) for row in event_rows)
        items.sort(key=lambda item: item.ts)  # frames and events each in order; merged by time
        for session in ended:
            items.extend(self.pairer.session_ended(session["id"], session["ended_at"]))
        out.frames = frame_rows
        out.items = items
        return out

    def _changed(self, conn: Connection) -> bool:
        """On SQLite, whether another connection committed since the last poll.

        Asked on the driver's connection, outside any transaction: an idle poll then costs
        SQLite one pragma and nothing else (no BEGIN, no query of the tables)."""
        if conn.dialect.name != "sqlite" or self.frames_cursor.gaps or self.events_cursor.gaps:
            return True
        driver = conn.connection.driver_connection
        version = driver.execute("PRAGMA data_version").fetchone()[0]  # type: ignore[union-attr]
        changed = version != self._data_version
        self._data_version = version
        return changed

    def _where(self, table: sa.Table, low: int) -> list[Any]:
        where = [table.c.id > low]
        if self._only is not None:
            where.append(table.c.session_id.in_(sorted(self._only)))
        return where

    def _read_frames(self, conn: Connection) -> list[FrameRow]:
        cursor = self.frames_cursor
        query = select(*self._columns).where(*self._where(frames, cursor.low())).order_by(frames.c.id)
        rows = [FrameRow(*r) for r in conn.execute(query.limit(BATCH)) if cursor.fresh(r[0])]
        cursor.seen(r.id for r in rows)
        return rows

    def _read_events(self, conn: Connection) -> list[EventRow]:
        cursor = self.events_cursor
        columns = (events.c.id, events.c.session_id, events.c.ts, events.c.kind, events.c.text, events.c.data)
        query = select(*columns).where(*self._where(events, cursor.low())).order_by(events.c.id)
        rows = [EventRow(*r) for r in conn.execute(query.limit(BATCH)) if cursor.fresh(r[0])]
        cursor.seen(r.id for r in rows)
        return rows

    def _requests_not_held(self, conn: Connection, rows: list[FrameRow]) -> dict[tuple[str, int], FrameRow]:
        """The request rows of replies whose requests came before this reader started."""
        wanted: dict[str, set[int]] = {}
        for row in rows:
            if row.kind in ("response", "error") and not self.pairer.waiting_for(row):
                assert row.request_seq is not None
                wanted.setdefault(row.session_id, set()).add(row.request_seq)
        # A request in this same poll is held by the time its reply is fed: drop those.
        for row in rows:
            if row.kind == "request" and row.seq in wanted.get(row.session_id, ()):
                wanted[row.session_id].discard(row.seq)
        found: dict[tuple[str, int], FrameRow] = {}
        for session_id, seqs in wanted.items():
            if not seqs:
                continue
            query = select(*self._columns).where(
                frames.c.session_id == session_id, frames.c.seq.in_(sorted(seqs))
            )
            for r in conn.execute(query):
                found[(session_id, r[2])] = FrameRow(*r)
        return found

    # -- sessions ------------------------------------------------------------------

    def _learn(self, conn: Connection, ids: Iterable[str], out: Poll) -> None:
        unknown = sorted(set(ids) - self.sessions.keys())
        if unknown:
            query = select(*(sessions.c[c] for c in SESSION_COLUMNS)).where(sessions.c.id.in_(unknown))
            for row in conn.execute(query).mappings():
                self._remember({str(k): v for k, v in row.items()}, out)

    def _remember(self, row: dict[str, Any], out: Poll) -> None:
        self.sessions[row["id"]] = row
        if row["status"] == "running":
            self._running.add(row["id"])
        self._newest_start = max(self._newest_start, row["started_at"] or 0.0)
        out.sessions.append(row)

    def _check_sessions(self, conn: Connection, out: Poll) -> list[dict[str, Any]]:
        """Sessions that started (``discover``) or whose status changed; the ended ones returned."""
        columns = [sessions.c[c] for c in SESSION_COLUMNS]
        where: list[Any] = []
        if self._running:
            where.append(sessions.c.id.in_(sorted(self._running)))
        if self._discover:
            where.append(sessions.c.started_at > self._newest_start - SESSION_CHECK_S * 4)
        if not where:
            return []
        ended = []
        for mapping in conn.execute(select(*columns).where(sa.or_(*where))).mappings():
            row = {str(k): v for k, v in mapping.items()}
            if self._only is not None and row["id"] not in self._only:
                continue
            known = self.sessions.get(row["id"])
            if known is None:
                self._remember(row, out)
                continue
            if known["status"] == row["status"] and known["ended_at"] == row["ended_at"]:
                continue
            self.sessions[row["id"]] = row
            out.sessions.append(row)
            if row["status"] != "running":
                self._running.discard(row["id"])
                ended.append(row)
        return ended
