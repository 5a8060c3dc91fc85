"""The batched writer: frames, events and session updates go to the database on a thread of its own.

Producers (the relay's recorder, on the asyncio loop) only put items on a queue;
the writer thread takes up to ``batch_size`` of them at a time and applies them in
the order queued, in one transaction, frames with one ``executemany`` (a ``COPY``
on PostgreSQL with psycopg). Nothing is dropped for being late: a busy database, or
a PostgreSQL server that cannot be reached for a while (a restart, a failover), is
retried, and when the backlog passes its limits the producer sees
:attr:`Writer.over_limit` and awaits :meth:`Writer.drain`, which slows the relay
instead of losing frames.

Errors the thread meets (a full disk, a frame for a session that does not exist)
never propagate to the relay: the batch is retried row by row so the good rows
still land, and each distinct problem goes once to stderr and to
:attr:`Writer.errors`.

Thread-safety notes, because :meth:`Writer.close` may run in a signal handler on
the thread it interrupted: the queue is a ``SimpleQueue`` (its ``put`` is
reentrant) and the writer thread never takes a lock that a producer holds.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import queue
import sys
import threading
import time
from collections import deque
from typing import Any, Final

import sqlalchemy as sa

from mcptape.frames import Frame
from mcptape.store.engine import StoreError, describe_error, session_values, without_nul
from mcptape.store.rows import EVENT_COLUMNS, FRAME_COLUMNS, _insert_sql, frame_row, json_text
from mcptape.store.schema import events, frames, sessions

_MAX_ERRORS: Final = 100
# Group commit: after a batch smaller than batch_size, wait this long before taking
# the next, so light traffic costs one transaction per interval instead of one per
# frame, and the writer thread stops competing with the relay for the GIL on every
# frame (that tripled the relay's added latency). A killed process loses at most this
# much more; flush() and close() wait at most this much longer.
LINGER_S: Final = 0.02
_GIVE_UP_WHEN_CLOSING: Final = 3  # busy retries once close() waits: each already waited the busy timeout

# Queue item tags.
_FRAME: Final = 0
_EVENT: Final = 1
_UPDATE: Final = 2
_FLUSH: Final = 3
_STOP: Final = 4

Op = tuple[int, list[Any]]  # (tag, rows): consecutive items of one kind, applied together


class Writer:
    """Batches inserts on its own thread; never blocks an asyncio caller except through :meth:`drain`."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        where: str = "the database",
        batch_size: int = 1000,
        max_backlog: int = 20_000,
        max_backlog_bytes: int = 256 << 20,
    ) -> None:
        self.frames_written = 0
        self.errors: list[str] = []
        self._engine = engine
        self._where = where
        self._batch_size = max(1, batch_size)
        self._max_rows = max_backlog
        self._max_bytes = max_backlog_bytes
        paramstyle = engine.dialect.paramstyle
        self._frames_sql = _insert_sql(frames, FRAME_COLUMNS, paramstyle)
        # psycopg's COPY writes frames about twice as fast as its executemany (bench/bench_writer.py).
        self._frames_copy = (
            f"COPY {frames.name} ({', '.join(FRAME_COLUMNS)}) FROM STDIN"
            if engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
            else None
        )
        self._events_sql = _insert_sql(events, EVENT_COLUMNS, paramstyle)
        self._queue: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        # Producer-side counters (under _count_lock, which only producers take) and
        # writer-side counters (written by the writer thread alone): backlog = queued - done.
        self._count_lock = threading.RLock()
        self._queued_rows = 0
        self._queued_bytes = 0
        self._done_rows = 0
        self._done_bytes = 0
        self._drainers: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._reported: set[str] = set()
        self._late_items = 0
        self._late_index = -1
        self._closed = False
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="mcptape-writer", daemon=True)
        self._thread.start()
        # A daemon thread so a forgotten close() cannot hang the interpreter; atexit still flushes.
        atexit.register(self.close)

    # -- producer side -------------------------------------------------------

    def add_frame(self, session_id: str, seq: int, frame: Frame) -> None:
        """Queue a frame (not copied: do not change it afterwards); returns at once."""
        # The row is built on the writer thread: the relay's loop only pays for the enqueue.
        self._put((_FRAME, (session_id, seq, frame), len(frame.data)))

    def add_event(
        self,
        session_id: str,
        kind: str,
        text: str | None = None,
        data: object = None,
        ts: float | None = None,
    ) -> None:
        """Queue an event (a stderr line, a process exit, ...) stamped now unless ``ts`` is given.

        A NUL character in ``text`` is stored as U+FFFD: PostgreSQL text cannot hold it.
        """
        data_json = None if data is None else json_text(data)
        row = (session_id, time.time() if ts is None else ts, kind, without_nul(text), data_json)
        self._put((_EVENT, row, len(text or "") + len(data_json or "")))

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Queue new values for session columns, applied in order with the frames queued before."""
        values = session_values(fields)
        if values:
            self._put((_UPDATE, (session_id, values), 256))

    def _put(self, item: tuple[int, Any, int]) -> None:
        if self._closed:
            self._count_late(1)
            return
        with self._count_lock:
            self._queued_rows += 1
            self._queued_bytes += item[2]
        self._queue.put(item)
        if self._stopped:  # close() ran between the test above and the put (a signal handler can)
            self._reclaim()

    def _count_late(self, count: int) -> None:
        self._late_items += count
        message = f"{self._late_items} item(s) queued after the writer closed were not recorded"
        if self._late_index < 0:
            if self._report(message):
                self._late_index = len(self.errors) - 1
        elif self._late_index < len(self.errors):  # one line, its count kept up to date
            self.errors[self._late_index] = message

    def _reclaim(self) -> None:
        """Take back what is still queued once the thread has stopped: count it, release flushes."""
        late = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item[0] == _FLUSH:
                item[1].set()
            elif item[0] < _FLUSH:
                late += 1
        if late:
            self._count_late(late)

    @property
    def over_limit(self) -> bool:
        """True when the backlog is above ``max_backlog`` rows or ``max_backlog_bytes``."""
        return (
            self._queued_rows - self._done_rows > self._max_rows
            or self._queued_bytes - self._done_bytes > self._max_bytes
        )

    def _under_half(self) -> bool:
        return (
            self._queued_rows - self._done_rows <= self._max_rows // 2
            and self._queued_bytes - self._done_bytes <= self._max_bytes // 2
        )

    async def drain(self) -> None:
        """Wait until the backlog is back under half its limits; returns at once when not over them."""
        if not self.over_limit or self._stopped:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._drainers.append((loop, future))
        # The writer may have caught up between the test above and the append: look again.
        if self._under_half() or self._stopped:
            return
        await future

    def flush(self, timeout: float | None = None) -> None:
        """Block until everything queued so far is committed (or given up on, see ``errors``)."""
        if self._stopped:
            return
        done = threading.Event()
        self._queue.put((_FLUSH, done))
        if self._stopped:  # the thread ended meanwhile: nobody else will set the event
            self._reclaim()
        if not done.wait(timeout):
            backlog = self._queued_rows - self._done_rows
            raise StoreError(
                f"the recording writer did not catch up within {timeout:g} s ({backlog} rows still queued)"
            )

    def close(self) -> None:
        """Flush, then stop the thread. Idempotent; safe to call from a signal handler."""
        self._closed = True
        atexit.unregister(self.close)
        if self._thread is threading.current_thread():
            return
        if self._thread.is_alive():
            self._queue.put((_STOP,))
            self._thread.join()

    # -- writer thread -----------------------------------------------------------

    def _run(self) -> None:
        stopping = False
        try:
            while True:
                batch = self._take(block=not stopping)
                if batch:
                    self._apply(batch)
                    stopping = stopping or batch[-1][0] == _STOP
                    if not stopping and len(batch) < self._batch_size:
                        time.sleep(LINGER_S)
                if stopping and self._queue.empty():
                    # From here on a producer that raced close() takes its item back itself;
                    # anything that slipped in before this line is still written.
                    self._stopped = True
                    if self._queue.empty():
                        return
        except BaseException as error:  # a bug here must not hang producers waiting in drain()
            self._report(f"the recording writer stopped: {type(error).__name__}: {error}")
        finally:
            self._stopped = True
            self._wake_drainers(force=True)
            self._reclaim()

    def _take(self, *, block: bool) -> list[tuple[Any, ...]]:
        try:
            first = self._queue.get() if block else self._queue.get_nowait()
        except queue.Empty:
            return []
        batch = [first]
        rows = 0 if batch[0][0] in (_FLUSH, _STOP) else 1
        get = self._queue.get_nowait
        try:
            while rows < self._batch_size and batch[-1][0] != _STOP:
                item = get()
                batch.append(item)
                if item[0] < _FLUSH:
                    rows += 1
        except queue.Empty:
            pass
        return batch

    def _apply(self, batch: list[tuple[Any, ...]]) -> None:
        ops: list[Op] = []
        flushers: list[threading.Event] = []
        nbytes = 0
        nrows = 0
        for item in batch:
            tag = item[0]
            if tag >= _FLUSH:
                if tag == _FLUSH:
                    flushers.append(item[1])
                continue
            nbytes += item[2]
            nrows += 1
            if tag == _FRAME:
                try:
                    row = frame_row(*item[1])
                except Exception as error:  # not a Frame at all: a caller's bug, not a reason to stop
                    self._report(f"not recorded: frame {item[1][1]} of session {item[1][0]}: {error!r}")
                    continue
            else:
                row = item[1]
            if ops and ops[-1][0] == tag and tag != _UPDATE:
                ops[-1][1].append(row)
            else:
                ops.append((tag, [row]))
        if ops:
            self._write(ops)
        self._done_rows += nrows
        self._done_bytes += nbytes
        for event in flushers:
            event.set()
        self._wake_drainers()

    def _write(self, ops: list[Op]) -> None:
        error = self._attempt(ops)
        if error is None:
            self.frames_written += sum(len(rows) for tag, rows in ops if tag == _FRAME)
            return
        # Salvage: one transaction per row, so one bad row (or a full disk) costs only itself.
        lost = 0
        for tag, rows in ops:
            for row in rows:
                single_error = self._attempt([(tag, [row])])
                if single_error is None:
                    self.frames_written += tag == _FRAME
                else:
                    lost += 1
                    self._report(f"not recorded: {describe_error(single_error, self._where)}")
        if lost:
            self._report(f"{lost} row(s) of a batch could not be recorded", dedupe=False)

    def _attempt(self, ops: list[Op]) -> BaseException | None:
        tries = 0
        while True:
            try:
                with self._engine.begin() as conn:
                    for tag, rows in ops:
                        self._execute(conn, tag, rows)
                return None
            except Exception as error:  # raw DB-API errors too: the hot path bypasses SQLAlchemy
                if not _retryable(error):
                    return error
                tries += 1
                if self._closed and tries > _GIVE_UP_WHEN_CLOSING:
                    return error
                self._report(f"{describe_error(error, self._where)} (still retrying: nothing is dropped)")
                time.sleep(min(1.0, 0.05 * 2**tries))

    def _execute(self, conn: sa.Connection, tag: int, rows: list[Any]) -> None:
        if tag == _FRAME:
            if self._frames_copy is not None or self._frames_sql is not None:
                # Straight to the driver: SQLAlchemy's executemany bookkeeping costs ~10% here.
                cursor: Any = conn.connection.cursor()
                try:
                    if self._frames_copy is not None:
                        with cursor.copy(self._frames_copy) as copy:
                            for row in rows:
                                copy.write_row(row)
                    else:
                        cursor.executemany(self._frames_sql, rows)
                finally:
                    cursor.close()
            else:
                conn.execute(frames.insert(), [dict(zip(FRAME_COLUMNS, row, strict=True)) for row in rows])
        elif tag == _EVENT:
            if self._events_sql is not None:
                conn.exec_driver_sql(self._events_sql, rows)
            else:
                conn.execute(events.insert(), [dict(zip(EVENT_COLUMNS, row, strict=True)) for row in rows])
        else:
            for session_id, values in rows:
                conn.execute(sessions.update().where(sessions.c.id == session_id).values(**values))

    def _wake_drainers(self, *, force: bool = False) -> None:
        if not self._drainers or not (force or self._under_half()):
            return
        while self._drainers:
            try:
                loop, future = self._drainers.popleft()
            except IndexError:
                return
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_resolve, future)

    def _report(self, message: str, *, dedupe: bool = True) -> bool:
        """Tell stderr and ``errors`` (once per distinct message); True when added to ``errors``."""
        if dedupe:
            if message in self._reported:
                return False
            self._reported.add(message)
        added = len(self.errors) < _MAX_ERRORS
        if added:
            self.errors.append(message)
        with contextlib.suppress(OSError, ValueError):  # stderr closed: errors still holds it
            print(f"mcptape: recording error: {message}", file=sys.stderr, flush=True)
        return added


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _retryable(error: BaseException) -> bool:
    """Whether waiting and trying again can help: a busy database, a server away for a while."""
    if isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated:
        return True
    orig = getattr(error, "orig", None) or error
    detail = str(orig).lower()
    if "database is locked" in detail or "database is busy" in detail:
        return True
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate is None:
        # psycopg gives no SQLSTATE when it cannot reach the server or the connection broke
        # (a restart, a failover): the writer waits for the server instead of dropping rows.
        psycopg = sys.modules.get("psycopg")
        return psycopg is not None and isinstance(orig, psycopg.OperationalError)
    # PostgreSQL: connection exceptions (class 08), serialization failure, deadlock, lock
    # not available, and the server shutting down, restarting or still starting.
    return sqlstate.startswith("08") or sqlstate in {"40001", "40P01", "55P03", "57P01", "57P02", "57P03"}
