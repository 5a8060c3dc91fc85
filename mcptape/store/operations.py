"""The writer's operations on the database: what each kind of queued item becomes in SQL.

Items are tagged (:data:`_SESSION`, :data:`_FRAME`, ...); consecutive items of one kind
are applied together as one :data:`Op`: frames with ``INSERT``s of :data:`ROWS_PER_INSERT`
rows each on SQLite, a ``COPY`` on PostgreSQL with psycopg, a driver-level
``executemany`` elsewhere. No threads here: the writer thread calls
:meth:`Statements.execute` inside its transactions.

Why several rows to an ``INSERT`` on SQLite: the sqlite3 module lets go of the GIL around
every step of a statement, and ``executemany`` steps once a row. While the relay's reader
threads forward a burst, the writer thread waited to get the GIL back after every row.
``bench/bench_writer.py --contended 2`` (two threads busy as readers are), on a quiet
2-core machine: 6,000–6,500 frames/s with one row an ``INSERT``, 26,700–37,000 with 64;
alone, 49,900–53,700 and 57,100–64,400. In front of server-everything, pipelined through
``record``: the writer thread's CPU went from 12.5–12.7 to 11.0–11.8 µs a frame.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import sqlalchemy as sa

from mcptape.store.rows import EVENT_COLUMNS, FRAME_COLUMNS, TEXT_FROM_BYTES, insert_sql
from mcptape.store.schema import batch_replies, events, frames, sessions

# Queue item tags; below _FLUSH they are rows.
_SESSION: Final = 0
_FRAME: Final = 1
_EVENT: Final = 2
_UPDATE: Final = 3
_PAIRS: Final = 4  # built on the writer thread only
_FLUSH: Final = 5
_STOP: Final = 6
_LARGE_FRAME: Final = 7  # one large frame, SQLite only; an op of the writer thread, never queued
# Frames a multi-row INSERT writes on SQLite: 64, or fewer if that many rows would pass 999
# parameters, the smallest limit an SQLite build may have (64 rows of 13 columns: 832).
ROWS_PER_INSERT: Final = min(64, 999 // len(FRAME_COLUMNS))


class Queued(NamedTuple):
    """One item of the writer's queue: its tag, what to write, and its size in bytes (for the backlog)."""

    tag: int
    payload: Any = None
    size: int = 0


class QueuedFrame(NamedTuple):
    """A frame's payload in the queue: its row is built on the writer thread."""

    session_id: str
    seq: int
    frame: Any  # mcptape.wire.frame.Frame


Op = tuple[int, list[Any]]  # (tag, rows): consecutive items of one kind, applied together


def append(ops: list[Op], tag: int, row: Any) -> None:
    """Add ``row`` to the last op when it is of the same kind, else start a new op."""
    if ops and ops[-1][0] == tag:
        ops[-1][1].append(row)
    else:
        ops.append((tag, [row]))


class Statements:
    """The SQL of each operation for one engine, spelled once."""

    def __init__(self, engine: sa.Engine) -> None:
        paramstyle = engine.dialect.paramstyle
        self.text_bytes = engine.dialect.name == "sqlite"
        # SQLite frames may carry their bytes as text (see rows.frame_row's text_bytes).
        wrap = {"text": TEXT_FROM_BYTES} if self.text_bytes else None
        self._frames_sql = insert_sql(frames, FRAME_COLUMNS, paramstyle, wrap)
        self._frames_many_sql: str | None = None
        if self.text_bytes and self._frames_sql is not None:
            row = self._frames_sql.partition(" VALUES ")[2]
            self._frames_many_sql = self._frames_sql + f", {row}" * (ROWS_PER_INSERT - 1)
        # A large frame: inserted, then the statement is run again with NULLs and a false
        # condition, so SQLite lets go of its copy of the frame (a prepared statement keeps
        # its last bindings until they are replaced).
        self._large_sql = (
            f"INSERT INTO {frames.name} ({', '.join(FRAME_COLUMNS)}) SELECT "
            + ", ".join(TEXT_FROM_BYTES.format("?") if c == "text" else "?" for c in FRAME_COLUMNS)
            + " WHERE ?"
        )
        self._large_release = (None,) * (len(FRAME_COLUMNS) + 1)
        # psycopg's COPY writes frames about twice as fast as its executemany (bench/bench_writer.py).
        self._frames_copy = (
            f"COPY {frames.name} ({', '.join(FRAME_COLUMNS)}) FROM STDIN"
            if engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
            else None
        )
        self._events_sql = insert_sql(events, EVENT_COLUMNS, paramstyle)
        self._pair_columns = [column.name for column in batch_replies.columns]

    def execute(self, conn: sa.Connection, tag: int, rows: list[Any]) -> None:
        """Apply one operation: ``rows`` of the kind ``tag``, inside ``conn``'s transaction."""
        if tag == _FRAME:
            if self._frames_copy is not None or self._frames_sql is not None:
                # Straight to the driver: SQLAlchemy's executemany bookkeeping costs ~10% here.
                cursor: Any = conn.connection.cursor()
                try:
                    if self._frames_copy is not None:
                        with cursor.copy(self._frames_copy) as copy:
                            for row in rows:
                                copy.write_row(row)
                    elif self._frames_many_sql is not None and len(rows) >= ROWS_PER_INSERT:
                        whole = len(rows) - len(rows) % ROWS_PER_INSERT
                        many = self._frames_many_sql
                        for start in range(0, whole, ROWS_PER_INSERT):
                            cursor.execute(
                                many, [v for row in rows[start : start + ROWS_PER_INSERT] for v in row]
                            )
                        if whole < len(rows):
                            cursor.executemany(self._frames_sql, rows[whole:])
                    else:
                        cursor.executemany(self._frames_sql, rows)
                finally:
                    cursor.close()
            else:
                conn.execute(frames.insert(), [dict(zip(FRAME_COLUMNS, row, strict=True)) for row in rows])
        elif tag == _LARGE_FRAME:
            cursor = conn.connection.cursor()
            try:
                for row in rows:
                    cursor.execute(self._large_sql, (*row, 1))
                    cursor.execute(self._large_sql, self._large_release)
            finally:
                cursor.close()
        elif tag == _EVENT:
            if self._events_sql is not None:
                conn.exec_driver_sql(self._events_sql, rows)
            else:
                conn.execute(events.insert(), [dict(zip(EVENT_COLUMNS, row, strict=True)) for row in rows])
        elif tag == _SESSION:
            conn.execute(sessions.insert(), rows)
        elif tag == _PAIRS:
            columns = self._pair_columns
            conn.execute(batch_replies.insert(), [dict(zip(columns, row, strict=True)) for row in rows])
        else:
            for session_id, values in rows:
                conn.execute(sessions.update().where(sessions.c.id == session_id).values(**values))
