"""The batched writer: sessions, frames, events and session updates go to the database on a thread of its own.

Producers (the relay's reader threads and the asyncio loop) only put items on a
queue; the writer thread takes up to ``batch_size`` of them at a time and applies
them in the order queued, in one transaction, frames with one ``executemany`` (a
``COPY`` on PostgreSQL with psycopg). On the way it pairs each reply with its request
(:mod:`mcptape.store.correlation`), so the views join on indexed columns.

Bounded loss: the backlog is bounded in time. :attr:`Writer.over_limit` turns True
when the oldest item not yet committed was queued more than ``max_lag`` seconds ago
(or the bytes waiting pass ``max_backlog_bytes``); producers then hold back until
it is under half again: a reader thread with :meth:`Writer.wait_below_limit`, the
loop with ``await`` :meth:`Writer.drain`. So a ``kill -9`` loses at most about
``max_lag`` of traffic. Nothing is dropped for being late: a busy database or a
PostgreSQL server away for a while is retried, said once on stderr (and kept in
:attr:`Writer.notices`, not :attr:`Writer.errors`: nothing is lost); meanwhile the lag
limit is lifted (the bytes limit still holds): forwarding goes on while the rows wait.

Errors the thread meets never propagate to producers. A bad row (a frame for a
session that does not exist) costs only itself: the batch is retried row by row and
each distinct problem goes once to stderr and to :attr:`Writer.errors`. A database
that is unusable for good (damaged, full, not a database, read-only, a SQLite file
deleted or replaced under it: see :mod:`mcptape.store.fileid`) sets
:attr:`Writer.failed`, a one-line message; what is queued after that is counted in
:attr:`Writer.lost`, not written.

Large frames (:data:`~mcptape.wire.largeframes.LARGE_FRAME_BYTES` and more) are written
in a transaction of their own, in order; on SQLite the writer waits (boundedly) until
the relay is done with the frame and then hands its bytes to SQLite
(:mod:`mcptape.store.handoff`), and the statement lets go of its copy afterwards. The
writer counts them in :data:`~mcptape.wire.largeframes.LARGE` while it holds them.

Closing: :meth:`Writer.close` writes everything queued before it, waiting as long
as it takes unless given a timeout. Queuing after close is the caller's bug and
raises :class:`~mcptape.store.errors.WriterClosedError`.

Thread-safety, because :meth:`Writer.close` may run in a signal handler on the
thread it interrupted: the queue is a ``SimpleQueue`` (its ``put`` is reentrant),
producers' counters are under a reentrant lock, and the writer thread never waits
for a lock that a producer holds.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import sqlalchemy as sa

from mcptape.store.backlog import Backlog, resolve
from mcptape.store.correlation import Correlator, pairing_id
from mcptape.store.errors import (
    StoreError,
    WriterClosedError,
    describe_error,
    is_fatal,
    is_lock_wait,
    is_retryable,
)
from mcptape.store.fileid import FileIdentity
from mcptape.store.handoff import ALONE, Handoff, probe
from mcptape.store.operations import (
    _EVENT,
    _FLUSH,
    _FRAME,
    _LARGE_FRAME,
    _PAIRS,
    _SESSION,
    _STOP,
    _UPDATE,
    Op,
    Queued,
    QueuedFrame,
    Statements,
    append,
)
from mcptape.store.rows import (
    TEXT_AT,
    TEXT_BYTES_FROM,
    frame_row,
    json_text,
    new_session_row,
    session_values,
    without_nul,
)
from mcptape.terminal import say
from mcptape.wire.frame import Frame
from mcptape.wire.largeframes import LARGE, LARGE_FRAME_BYTES

_MAX_ERRORS: Final = 100
_tuple = tuple.__new__
_NO_PAIRS: Final[list[tuple[str, int, int, int, int]]] = []  # never appended to
# Group commit: after a batch smaller than batch_size, wait this long before taking
# the next, so light traffic costs one transaction per interval instead of one per
# frame, and the writer thread stops competing with the relay for the GIL on every
# frame (that tripled the relay's added latency). A killed process loses at most this
# much more; flush() and close() wait at most this much longer.
LINGER_S: Final = 0.02
MAX_LAG_S: Final = 0.1
MAX_BACKLOG_BYTES: Final = 64 << 20
_BUSY_STEP_MS: Final = 250
# How long the writer waits for a large frame to be forwarded (and dropped by everyone
# else) before writing it; and how often it looks.
HANDOFF_PATIENCE_S: Final = 2.0
HANDOFF_POLL_S: Final = 0.002


class Writer:
    """Batches inserts on its own thread; producers never wait except through the back-pressure calls."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        where: str = "the database",
        batch_size: int = 1000,
        max_lag: float = MAX_LAG_S,
        max_backlog_bytes: int = MAX_BACKLOG_BYTES,
        handoff_patience: float = HANDOFF_PATIENCE_S,
        watch: FileIdentity | None = None,
        upkeep: Callable[[], None] | None = None,
        upkeep_every: float = 3600.0,
    ) -> None:
        # Housekeeping on the writer's own thread now and then (PostgreSQL's partitions
        # made ahead, see mcptape.store.partitions); its failure never stops the writer.
        self._upkeep = upkeep
        self._upkeep_every = upkeep_every
        self._upkeep_due = time.monotonic() + upkeep_every
        self.frames_written = 0
        self.handoffs = 0  # large frames whose bytes the writer released before SQLite built the row
        self._handoff_patience = handoff_patience
        self.errors: list[str] = []
        self.notices: list[str] = []  # waits that lose nothing (a server away for a while)
        self.failed: str | None = None
        self.lost = 0  # rows not written because the database failed for good
        self._engine = engine
        self._watch = watch  # the SQLite file opened: stop when it is deleted or replaced
        self._where = where
        self.where = where  # for messages: the file or server, as a person named it
        self._batch_size = max(1, batch_size)
        self._statements = Statements(engine)
        self._sqlite = engine.dialect.name == "sqlite"
        self._correlator = Correlator()
        self._queue: queue.SimpleQueue[Queued] = queue.SimpleQueue()
        self._backlog = Backlog(max_lag, max_backlog_bytes)
        self._reported: set[str] = set()
        self._told_lock_wait = False
        self._late_items = 0
        self._closed = False
        self._stopped = False
        # Set by whoever waits for the writer (flush, close): it cuts the group-commit linger short.
        self._hurry = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcptape-writer", daemon=True)
        self._thread.start()
        # A daemon thread so a forgotten close() cannot hang the interpreter; atexit still flushes.
        atexit.register(self.close)

    # -- producer side -------------------------------------------------------

    def create_session(self, **fields: Any) -> str:
        """Queue a new ``running`` session row and return its id (uuid4 hex) at once.

        ``fields`` are ``sessions`` columns (``mode`` is required); ``started_at``, ``status``,
        ``pid`` (this process) and ``mcptape_version`` get defaults. The row is written
        before anything queued after this call, so frames of the session may follow at once.
        """
        row = new_session_row(fields)
        self._put(Queued(_SESSION, row, 256))
        return str(row["id"])

    def add_frame(self, session_id: str, seq: int, frame: Frame) -> None:
        """Queue a frame (not copied: do not change it afterwards); returns at once.

        A large frame (see :mod:`mcptape.wire.largeframes`) that the writer ends up holding
        alone (forwarded, and nobody else keeps the :class:`Frame`) is emptied on the
        writer thread: its bytes go to the database and are released before SQLite
        builds its row, so the frame is not in memory three times at once.
        """
        # The row is built on the writer thread: the producer only pays for the enqueue.
        frame.forget_message()
        size = len(frame.data)
        if size < LARGE_FRAME_BYTES:
            # _put, inline, and the items built as tuples (a NamedTuple's __new__ is Python
            # code): this runs for every frame, on the thread that forwards it.
            if self._closed:
                self._put(Queued(_FRAME, QueuedFrame(session_id, seq, frame), size), frame=True)  # raises
            self._backlog.queued(size, frame=True)
            self._queue.put(_tuple(Queued, (_FRAME, _tuple(QueuedFrame, (session_id, seq, frame)), size)))
            if self._stopped:
                self._reclaim()
            return
        LARGE.queued()
        try:
            self._put(Queued(_FRAME, QueuedFrame(session_id, seq, frame), size), frame=True)
        except BaseException:
            LARGE.finished()
            raise

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
        self._put(Queued(_EVENT, row, len(text or "") + len(data_json or "")))

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Queue new values for session columns, applied in order with the frames queued before."""
        values = session_values(fields)
        if values:
            self._put(Queued(_UPDATE, (session_id, values), 256))

    def _put(self, item: Queued, *, frame: bool = False) -> None:
        if self._closed:
            raise WriterClosedError(
                f"queued after the recording writer was closed (tag {item.tag}): close it after the last frame"
            )
        self._backlog.queued(item.size, frame=frame)
        self._queue.put(item)
        if self._stopped:  # close() ran between the test above and the put (a signal handler can)
            self._reclaim()

    def _reclaim(self) -> None:
        """Take back what is still queued once the thread has stopped: report it, release flushes."""
        late = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item.tag == _FLUSH:
                item.payload()
            elif item.tag < _FLUSH:
                late += 1
                if item.tag == _FRAME and item.size >= LARGE_FRAME_BYTES:
                    LARGE.finished()
        if late:
            self._late_items += late
            self._report(
                f"{self._late_items} item(s) raced the writer's close and were not recorded",
                dedupe=False,
            )

    # -- back-pressure (see mcptape.store.backlog) ----------------------------

    @property
    def over_limit(self) -> bool:
        """True when the oldest item not committed waits more than ``max_lag`` s, or too many bytes wait.

        Cheap and thread-safe; False once the writer stopped or failed (nothing to wait for).
        """
        return self._backlog.over_limit

    @property
    def waiting_for_lock(self) -> bool:
        """Whether the writer waits for a write lock another process holds (the lag limit is lifted)."""
        return self._backlog.waiting_for_lock

    @property
    def lag(self) -> float:
        """Seconds since the oldest row not yet committed was queued (0 when everything is written)."""
        return self._backlog.lag()

    @property
    def backlog(self) -> int:
        """Frames queued and not yet committed."""
        return self._backlog.frames

    @property
    def backlog_bytes(self) -> int:
        """Bytes queued and not yet committed."""
        return self._backlog.bytes

    def wait_below_limit(self, timeout: float | None = None) -> bool:
        """Block (a reader thread, never the loop) until the backlog is under half its limits.

        Returns at once when not over them; False when ``timeout`` passed first.
        """
        return self._backlog.wait_below_limit(timeout)

    async def drain(self) -> None:
        """Wait on the loop, never blocking it, until the backlog is under half its limits."""
        await self._backlog.drain()

    # -- flushing and closing --------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Block until everything queued so far is committed (or given up on, see ``errors``).

        Raises :class:`StoreError` when ``timeout`` passes first. Not for the event loop:
        use :meth:`aflush` there.
        """
        if self._stopped:
            return
        done = threading.Event()
        self._queue.put(Queued(_FLUSH, done.set))
        self._hurry.set()
        if self._stopped:  # the thread ended meanwhile: nobody else will set the event
            self._reclaim()
        if not done.wait(timeout):
            raise StoreError(
                f"the recording writer did not catch up within {timeout:g} s ({self.backlog} frames still queued)"
            )

    async def aflush(self, timeout: float | None = None) -> bool:
        """Wait on the loop (not blocking it) until everything queued so far is committed; False on timeout."""
        if self._stopped:
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def done() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(resolve, future)

        self._queue.put(Queued(_FLUSH, done))
        self._hurry.set()
        if self._stopped:
            self._reclaim()
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return False
        return True

    def close(self, timeout: float | None = None) -> bool:
        """Write everything queued, then stop the thread; True when all of it is committed (to the file still at its path).

        Waits as long as the database needs (another process holding its write lock gets
        one line on stderr) unless ``timeout`` is given: then returns False when time is
        up, the rest still being written while the process lives. Idempotent; safe from a
        signal handler. Anything queued after this call raises :class:`WriterClosedError`.
        """
        if not self._closed:
            self._closed = True
            atexit.unregister(self.close)
            if self._thread is not threading.current_thread():
                self._queue.put(Queued(_STOP))
                self._hurry.set()
        if self._thread is threading.current_thread():
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive() and self.lost == 0 and self.backlog == 0 and self.failed is None

    # -- writer thread -----------------------------------------------------------

    def _run(self) -> None:
        stopping = False
        try:
            while True:
                batch = self._take(block=not stopping)
                if self._upkeep is not None and time.monotonic() >= self._upkeep_due:
                    self._upkeep_due = time.monotonic() + self._upkeep_every
                    with contextlib.suppress(Exception):
                        self._upkeep()
                if batch:
                    last, full = batch[-1][0], len(batch) >= self._batch_size
                    self._apply(batch)  # empties the list: nothing is held while waiting
                    stopping = stopping or last == _STOP
                    # Group commit: let more frames gather, unless someone waits for us.
                    if not stopping and not full and self._hurry.wait(LINGER_S):
                        self._hurry.clear()
                if stopping and self._queue.empty():
                    # From here on a producer that raced close() takes its item back itself;
                    # anything that slipped in before this line is still written.
                    self._stopped = True
                    if self._queue.empty():
                        self._last_look()
                        return
        except BaseException as error:  # a bug here must not hang producers waiting in drain()
            self._report(f"the recording writer stopped: {type(error).__name__}: {error}")
        finally:
            self._stopped = True
            self._backlog.release()
            self._reclaim()

    def _take(self, *, block: bool) -> list[Queued]:
        try:
            first = self._queue.get() if block else self._queue.get_nowait()
        except queue.Empty:
            return []
        batch = [first]
        rows = 0 if batch[0].tag >= _FLUSH else 1
        get = self._queue.get_nowait
        try:
            while rows < self._batch_size and batch[-1].tag != _STOP:
                item = get()
                batch.append(item)
                if item.tag < _FLUSH:
                    rows += 1
        except queue.Empty:
            pass
        return batch

    def _apply(self, batch: list[Queued]) -> None:
        """Write a batch in order, taking the items out of ``batch`` as it goes."""
        ops: list[Op] = []
        flushers: list[Callable[[], None]] = []
        nbytes = nrows = nframes = large = 0
        batch.reverse()
        while batch:
            # No local names the item: a large frame's references must be the writer's alone.
            size = batch[-1].size if batch[-1].tag == _FRAME else 0
            if size >= LARGE_FRAME_BYTES:
                large += 1
                if self._statements.text_bytes and self.failed is None:
                    # A transaction of its own, in order: what was queued before goes first.
                    if ops:
                        self._write(ops)
                        ops = []
                    nbytes += size
                    nrows += 1
                    nframes += 1
                    self._write_large(batch)
                    continue
            item = batch.pop()
            tag = item.tag
            if tag >= _FLUSH:
                if tag == _FLUSH:
                    flushers.append(item.payload)
                continue
            nbytes += item.size
            nrows += 1
            if tag == _FRAME:
                nframes += 1
                try:
                    row, pairs = self._frame_row(*item.payload)
                except Exception as error:  # not a Frame at all: a caller's bug, not a reason to stop
                    queued = item.payload
                    self._report(
                        f"not recorded: frame {queued.seq} of session {queued.session_id}: {error!r}"
                    )
                    continue
                if ops and ops[-1][0] == _FRAME:  # append(), inline: once per frame
                    ops[-1][1].append(row)
                else:
                    ops.append((_FRAME, [row]))
                for pair in pairs:
                    append(ops, _PAIRS, pair)
                del row, pairs
                continue
            if tag == _UPDATE:
                session_id, values = item.payload
                if "ended_at" in values:
                    self._correlator.forget(session_id)
                ops.append((tag, [item.payload]))
            else:
                append(ops, tag, item.payload)
        item = Queued(_STOP)  # the last item is not kept alive while the batch is written
        if ops:
            if self.failed is None:
                self._write(ops)
            else:
                self.lost += sum(len(rows) for tag, rows in ops if tag != _PAIRS)
            ops.clear()
        self._backlog.committed(nrows, nbytes, nframes)
        for _ in range(large):
            LARGE.finished()
        for flushed in flushers:
            flushed()

    def _write_large(self, batch: list[Queued]) -> None:
        """Write the large frame at the end of ``batch`` (taken out of it) in a transaction of its own.

        When the writer holds the frame alone (it has been forwarded and nobody else
        keeps it), its bytes move into the row and go to SQLite, which copies them when
        binding: they are freed before SQLite builds the row. Peak: about twice the
        frame, not three times. Otherwise (still being forwarded after
        ``handoff_patience``, kept by someone) it is written without that.
        """
        session_id, seq, frame = batch.pop().payload
        sole = self._sole_owner(frame)
        try:
            row, pairs = self._frame_row(session_id, seq, frame)
        except Exception as error:  # not a Frame at all: a caller's bug, not a reason to stop
            self._report(f"not recorded: frame {seq} of session {session_id}: {error!r}")
            return
        if sole and row[TEXT_AT] is frame.data:
            row = (*row[:TEXT_AT], Handoff(row[TEXT_AT]), *row[TEXT_AT + 1 :])
            frame.data = b""  # nobody else holds this Frame: its bytes now live in the row alone
            self.handoffs += 1
        del frame
        ops: list[Op] = [(_LARGE_FRAME, [row])]
        del row
        for pair in pairs:
            append(ops, _PAIRS, pair)
        self._write(ops)

    def _sole_owner(self, frame: Frame) -> bool:
        """Wait (at most ``handoff_patience``) until the writer's references are the only ones to ``frame``."""
        deadline = time.monotonic() + self._handoff_patience
        try:
            while True:
                refs = probe(frame)
                if refs[0] <= ALONE[0] and refs[1] <= ALONE[1]:
                    return True
                if time.monotonic() >= deadline:
                    return False
                # A relay held back by the store's back-pressure would keep the frame (it
                # forwards after the wait): let it go on while the writer waits for it.
                self._backlog.yield_to_producers(len(frame.data))
                time.sleep(HANDOFF_POLL_S)
        finally:
            self._backlog.yield_to_producers(0)

    def _frame_row(
        self, session_id: str, seq: int, frame: Frame
    ) -> tuple[tuple[Any, ...], list[tuple[str, int, int, int, int]]]:
        found = frame.classification
        kind = found.kind
        meta = frame.meta
        replaces = meta.get("replaces") if meta else None
        pairing = self._correlator.see(
            session_id,
            seq,
            frame.direction,
            kind,
            found.method,
            pairing_id(frame) if meta else found.rpc_id,
            frame.message if kind == "batch" else None,
            replaces if isinstance(replaces, int) else None,
        )
        row = frame_row(
            session_id,
            seq,
            frame,
            pairing.method,
            pairing.request_seq,
            text_bytes=self._statements.text_bytes and len(frame.data) >= TEXT_BYTES_FROM,
        )
        pairs = pairing.batch_pairs
        return row, [(session_id, *pair) for pair in pairs] if pairs else _NO_PAIRS

    def _write(self, ops: list[Op]) -> None:
        error = self._attempt(ops)
        if error is None:
            self.frames_written += sum(len(rows) for tag, rows in ops if tag in (_FRAME, _LARGE_FRAME))
            return
        if self.failed is not None:
            self.lost += sum(len(rows) for tag, rows in ops if tag != _PAIRS)
            return
        # Salvage: one transaction per row, so one bad row costs only itself.
        lost = 0
        for tag, rows in ops:
            for row in rows:
                if self.failed is not None:
                    self.lost += tag != _PAIRS
                    continue
                single_error = self._attempt([(tag, [row])])
                if single_error is None:
                    self.frames_written += tag in (_FRAME, _LARGE_FRAME)
                elif tag != _PAIRS and self.failed is None:
                    lost += 1
                    self._report(f"not recorded: {describe_error(single_error, self._where)}")
                elif tag != _PAIRS:
                    self.lost += 1
        if lost:
            self._report(f"{lost} row(s) of a batch could not be recorded", dedupe=False)

    def _attempt(self, ops: list[Op]) -> BaseException | None:
        gone = self._watch.gone() if self._watch is not None else None
        if gone is not None:
            error = StoreError(gone)
            self._fail(error)
            return error
        tries = 0
        while True:
            try:
                with self._engine.connect() as conn:
                    if self._sqlite:
                        # Wait for another process's write lock in short steps, so the wait
                        # is said on stderr soon instead of after SQLite's 30 s busy timeout.
                        conn.connection.driver_connection.execute(f"PRAGMA busy_timeout = {_BUSY_STEP_MS}")  # type: ignore[union-attr]
                    with conn.begin():
                        for tag, rows in ops:
                            self._statements.execute(conn, tag, rows)
                self._backlog.locked_out(False)
                return None
            except Exception as error:  # raw DB-API errors too: the hot path bypasses SQLAlchemy
                if is_fatal(error):
                    self._backlog.locked_out(False)
                    self._fail(error)
                    return error
                if not is_retryable(error):
                    self._backlog.locked_out(False)
                    return error
                tries += 1
                # Another process holds the lock, or the server is away (a restart): producers
                # are not held back for it (only the bytes limit holds), see mcptape.store.backlog.
                self._backlog.locked_out(True)
                if is_lock_wait(error):
                    self._tell_lock_wait()
                else:
                    # A notice, not an error: nothing is lost while it retries (a server restarted
                    # mid-session made record exit 1 saying frames were not recorded, all of them were).
                    self._notice(f"{describe_error(error, self._where)} (still retrying: nothing is dropped)")
                time.sleep(min(1.0, 0.05 * 2**tries))

    def _last_look(self) -> None:
        """The last rows may have been committed within a look's interval of the file going:
        one more look, so that a session whose end went into a deleted file is not called whole."""
        if self._watch is None or self.failed is not None:
            return
        gone = self._watch.gone(now=True)
        if gone is not None:
            self.failed = gone
            self._report(f"{gone}; the last frames of the session went with it")

    def _fail(self, error: BaseException) -> None:
        if self.failed is None:
            self.failed = str(error) if isinstance(error, StoreError) else describe_error(error, self._where)
            self._backlog.release()
            # Said here, once, whatever the relay does next: it may have passed its last frame
            # already (a recorder that learnt it from the next frame missed it then).
            self._report(f"{self.failed}; the session goes on but its frames from here on are not recorded")

    def _tell_lock_wait(self) -> None:
        if self._told_lock_wait:
            return
        self._told_lock_wait = True
        say(f"waiting for the database lock held by another process ({self.backlog} frames not yet written)…")

    def _notice(self, message: str) -> None:
        """Tell stderr once about a wait that loses nothing; kept in ``notices``, not ``errors``."""
        if message in self.notices:
            return
        if len(self.notices) < _MAX_ERRORS:
            self.notices.append(message)
        say(f"recording: {message}")

    def _report(self, message: str, *, dedupe: bool = True) -> bool:
        """Tell stderr and ``errors`` (once per distinct message); True when added to ``errors``."""
        if dedupe:
            if message in self._reported:
                return False
            self._reported.add(message)
        added = len(self.errors) < _MAX_ERRORS
        if added:
            self.errors.append(message)
        say(f"recording error: {message}")  # stderr closed: errors still holds it
        return added
