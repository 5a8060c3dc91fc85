"""Opening a recording database and the :class:`Store` handle: sessions, writers, read-only connections.

SQLite is the default (see :mod:`mcptape.store.sqlite_engine` for how files are made
and set up); any other SQLAlchemy URL works too, PostgreSQL being the one the views
are written for (:mod:`mcptape.store.server_engine`). What ``--db`` means is decided
in :mod:`mcptape.store.location`.

Opening migrates the database to the newest revision, unless it cannot be written:
a SQLite file this process may not write (a colleague's recording, a read-only
mount) is opened read-only and not migrated, so ``sessions``, ``show`` and
``export`` still read it; writing to it then fails with a one-line error.

Text columns never receive a NUL character: PostgreSQL's ``text`` refuses it, so a
NUL in an event line or a session value is stored as U+FFFD on every database (a
frame keeps its exact bytes in ``raw``).

Errors: every failure to open, migrate or write is a :class:`StoreError` whose
``str()`` is one line saying what happened and what to do.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from mcptape.store.errors import (
    BUSY_TIMEOUT_S,
    StoreBusyError,
    StoreError,
    describe_error,
    is_lock_wait,
)
from mcptape.store.fileid import FileIdentity
from mcptape.store.location import default_db_path, parse_url, resolve_url
from mcptape.store.rows import new_session_row, session_values
from mcptape.store.schema import sessions
from mcptape.store.server_engine import ONE_STATEMENT, server_engine
from mcptape.store.sqlite_engine import can_write, sqlite_engine, sqlite_file
from mcptape.terminal import say

if TYPE_CHECKING:
    from mcptape.store.writer import Writer

__all__ = [
    "Store",
    "StoreError",
    "default_db_path",
    "describe_error",
    "open_store",
    "open_unmigrated",
    "resolve_url",
]

_QUERY_CANCELED: Final = "57014"
# A write now (a session row) waits for another process's lock in steps this long, so
# the wait is said on stderr soon rather than after SQLite's busy timeout.
_LOCK_STEP_S: Final = 0.5
# How long a write that must not wait for the lock tries (other recorders' transactions are
# milliseconds long; a lock held longer is someone else's, and worth not waiting for).
_LOCK_TRY_S: Final = 0.05  # PostgreSQL's SQLSTATE for statement_timeout


def open_store(db: str | None = None, *, create: bool = True, readonly: bool = False) -> Store:
    """Open the recording database ``db`` (a path, a URL, or None for the default), migrated to head.

    ``readonly=True`` neither creates nor migrates (for ``mcptape sql`` and other readers);
    ``create=False`` refuses to create a missing SQLite file. An existing SQLite file this
    process cannot write is opened read-only, unmigrated, whatever ``readonly`` says.
    """
    store = open_unmigrated(db, create=create, readonly=readonly)
    try:
        if store.readonly:
            store.check_readable()
        else:
            store.migrate()
    except BaseException:
        store.close()
        raise
    return store


def open_unmigrated(db: str | None = None, *, create: bool = True, readonly: bool = False) -> Store:
    """Like :func:`open_store` without migrating (Alembic's env.py, which migrates itself)."""
    text = resolve_url(db)
    url = parse_url(text)
    if url.get_backend_name() == "sqlite":
        path = sqlite_file(url)
        if not readonly and path.is_file() and not can_write(path):
            readonly = True
        return Store(
            text, sqlite_engine(path, create=create, readonly=readonly), path=path, readonly=readonly
        )
    return Store(text, server_engine(url), path=None, readonly=readonly)


# Frames written through one store after which closing it refreshes PostgreSQL's statistics.
ANALYZE_AFTER = 50_000
# Rows of each index SQLite's ANALYZE looks at when a store closes (its documented advice).
ANALYSIS_LIMIT = 1000


class Store:
    """An open recording database: sessions, a batched :class:`Writer`, read-only connections."""

    def __init__(self, url: str, engine: sa.Engine, *, path: Path | None, readonly: bool) -> None:
        self.url = url
        self.engine = engine
        self.path = path  # the SQLite file, None for a server database
        self.readonly = readonly
        self._readonly_engine: sa.Engine | None = engine if readonly and path is not None else None
        self._writers: list[Writer] = []
        self._closed = False
        self._told_lock_wait = False
        # True while a write waits for another process's write lock (a recorder holding
        # frames for this store then knows waiting for it would only stall forwarding).
        self.waiting_for_lock = False
        self._identities: list[FileIdentity] = []  # of the SQLite file, one per writer
        # Whether this store wrote anything: only then may its statistics need refreshing
        # (a reader's close refreshed them too, rewriting sqlite_stat1 on every `show`).
        self._wrote = False

    @property
    def where(self) -> str:
        """The database as shown in messages: its path, or its URL without the password."""
        if self.path is not None:
            return str(self.path)
        # Unquoted for reading: "?host=/run/postgresql", not "?host=%2Frun%2Fpostgresql".
        return unquote(make_url(self.url).render_as_string(hide_password=True))

    def migrate(self) -> None:
        """Bring the database to the newest revision (done by :func:`open_store`)."""
        from mcptape.migrations import runner

        lock_path = Path(f"{self.path}.lock") if self.path is not None else None
        try:
            with runner.migration_lock(self.engine, lock_path):
                if self.path is not None:
                    self._ensure_wal()
                runner.upgrade_to_head(self.engine, self.where)
        except (sa.exc.DBAPIError, sqlite3.Error) as error:
            raise StoreError(describe_error(error, self.where)) from None

    def check_readable(self) -> None:
        """Read the schema once: SQLite opens any file lazily, so this is where a non-database fails."""
        try:
            with self.engine.connect().execution_options(sqlite_begin="DEFERRED") as conn:
                conn.exec_driver_sql("SELECT 1 FROM sessions WHERE 0 = 1").all()
        except sa.exc.DBAPIError as error:
            # SQLite's words, or PostgreSQL's undefined_table (not "database ... does not exist").
            if "no such table" in str(error.orig) or getattr(error.orig, "sqlstate", None) == "42P01":
                raise StoreError(
                    f"{self.where} has no mcptape recordings (no sessions table); "
                    "give mcptape the recording database (--db or MCPTAPE_DB)"
                ) from None
            raise StoreError(describe_error(error, self.where)) from None

    def _ensure_wal(self) -> None:
        # journal_mode cannot change inside a transaction, so this bypasses SQLAlchemy's BEGIN.
        raw = self.engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute("PRAGMA journal_mode")
            row = cursor.fetchone()
            if row is None or str(row[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.close()
        finally:
            raw.close()

    def create_session(self, *, mode: str, wait_for_lock: bool = True, **fields: Any) -> str:
        """Insert a ``running`` session started now and return its id (uuid4 hex).

        ``fields`` are other ``sessions`` columns (name, transport, upstream, replay_of, ...);
        ``pid`` defaults to this process. This writes at once: on the event loop use
        :meth:`Writer.create_session`, which queues the row instead. While another process
        holds the write lock it waits, unless ``wait_for_lock`` is False: then it raises
        :class:`StoreBusyError` at once (a recorder queues the row on its writer instead).
        """
        row = new_session_row({"mode": mode, **fields})
        self._write(sessions.insert().values(**row), wait_for_lock=wait_for_lock)
        return str(row["id"])

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Set columns of a session now (see :meth:`Writer.update_session` to order it with frames)."""
        values = session_values(fields)
        if values:
            self._write(sessions.update().where(sessions.c.id == session_id).values(**values))

    def _write(self, statement: sa.Executable, *, wait_for_lock: bool = True) -> None:
        """Write ``statement`` now; while another process holds the write lock, wait for it.

        A session row that gave up after SQLite's busy timeout lost its whole session
        (the recorder held the frames in memory meanwhile, then dropped them): like the
        writer, this waits as long as the lock is held, said once on stderr.
        """
        while True:
            try:
                with self.engine.connect() as conn:
                    raw = conn.connection.driver_connection if self.path is not None else None
                    if isinstance(raw, sqlite3.Connection):
                        step = _LOCK_STEP_S if wait_for_lock else _LOCK_TRY_S
                        raw.execute(f"PRAGMA busy_timeout = {round(step * 1000)}")
                    try:
                        self._wrote = True
                        with conn.begin():
                            conn.execute(statement)
                    finally:
                        if isinstance(raw, sqlite3.Connection):
                            raw.execute(f"PRAGMA busy_timeout = {round(BUSY_TIMEOUT_S * 1000)}")
                self.waiting_for_lock = False
                return
            except sa.exc.DBAPIError as error:
                if not is_lock_wait(error):
                    self.waiting_for_lock = False
                    raise StoreError(describe_error(error, self.where)) from None
                if not wait_for_lock:
                    self.waiting_for_lock = False
                    raise StoreBusyError(describe_error(error, self.where)) from None
                self.waiting_for_lock = True
                self._tell_lock_wait()

    def _tell_lock_wait(self) -> None:
        if self._told_lock_wait:
            return
        self._told_lock_wait = True
        say(f"waiting for {self.where}: another process holds its write lock…")

    def writer(
        self, *, batch_size: int = 1000, max_lag: float | None = None, max_backlog_bytes: int | None = None
    ) -> Writer:
        """A new batched writer on its own thread; :meth:`close` closes it too.

        ``max_lag`` (seconds, default 0.1) and ``max_backlog_bytes`` (default 64 MiB) bound
        the backlog: past them :attr:`Writer.over_limit` asks producers to hold back.
        """
        from mcptape.store import writer as writer_module

        upkeep = None
        if self.path is None:
            from mcptape.store import partitions

            engine = self.engine

            def upkeep() -> None:
                partitions.ensure_ahead(engine, time.time())

            # Now, before the first frame: a frame never waits for a partition to be made.
            with contextlib.suppress(Exception):
                upkeep()
        writer = writer_module.Writer(
            self.engine,
            where=self.where,
            batch_size=batch_size,
            max_lag=writer_module.MAX_LAG_S if max_lag is None else max_lag,
            max_backlog_bytes=writer_module.MAX_BACKLOG_BYTES
            if max_backlog_bytes is None
            else max_backlog_bytes,
            watch=self._file_identity(),
            upkeep=upkeep,
            upkeep_every=3600.0,
        )
        self._writers.append(writer)
        self._wrote = True
        return writer

    def _file_identity(self) -> FileIdentity | None:
        if self.path is None:
            return None
        try:
            identity = FileIdentity(self.path)
        except OSError:  # gone already: the writer's first transaction says so
            return None
        self._identities.append(identity)
        return identity

    @contextlib.contextmanager
    def readonly_connection(self, timeout_s: float) -> Iterator[sa.Connection]:
        """A connection that cannot write and whose work is interrupted after ``timeout_s`` seconds.

        The time limit covers everything done inside the ``with`` block, fetching rows
        included (on PostgreSQL it applies to each statement). Running over it raises
        :class:`StoreError`. A statement given without parameters goes to the database
        as it is, ``%`` included, and must be exactly one statement.
        """
        if self.path is None:
            with self._server_readonly_connection(timeout_s) as conn:
                yield conn
            return
        if self._readonly_engine is None:
            self._readonly_engine = sqlite_engine(self.path, create=False, readonly=True)
        # sqlite3 runs one statement per execute() by itself.
        with self._readonly_engine.connect().execution_options(no_parameters=True) as conn:
            raw = conn.connection.driver_connection
            assert isinstance(raw, sqlite3.Connection)
            deadline = time.monotonic() + timeout_s
            raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            try:
                yield conn
            except sa.exc.OperationalError as error:
                if "interrupted" in str(error.orig):
                    raise StoreError(_timeout_message(timeout_s)) from None
                raise
            finally:
                raw.set_progress_handler(None, 0)

    @contextlib.contextmanager
    def _server_readonly_connection(self, timeout_s: float) -> Iterator[sa.Connection]:
        dialect = self.engine.dialect
        if dialect.name == "postgresql" and dialect.driver != "psycopg":
            raise StoreError(
                f"reading {self.where} read-only needs the psycopg driver: {dialect.driver} runs several "
                "statements at once, which could leave the read-only transaction; use a "
                "postgresql+psycopg:// URL (pip install 'mcptape[postgres]')"
            )
        with self.engine.connect() as conn:
            # The first statement of the (auto-begun) transaction, as PostgreSQL requires.
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, round(timeout_s * 1000))}")
            # Without no_parameters psycopg reads "like 'a%'" as a parameter marker; one
            # statement only, or "select 1; commit; delete ..." escapes the read-only transaction.
            conn.execution_options(no_parameters=True, **{ONE_STATEMENT: True})
            try:
                yield conn
            except sa.exc.OperationalError as error:
                if getattr(error.orig, "sqlstate", None) == _QUERY_CANCELED:
                    raise StoreError(_timeout_message(timeout_s)) from None
                raise
            finally:
                conn.rollback()

    def close(self) -> None:
        """Close every writer (flushing it), let SQLite refresh its planner statistics, close connections.

        Idempotent. After this store wrote, ``PRAGMA optimize`` runs ANALYZE (on a sample
        of each index) where the tables changed enough for it to matter, so the views
        keep choosing the indexes as recordings grow; a store that only read leaves them.
        """
        written = 0
        for writer in self._writers:
            writer.close()
            written += writer.frames_written
            if writer.failed is not None:
                # The file may be gone or another one: no connection may open the path again.
                self._wrote = False
        self._writers.clear()
        if self.path is None and written >= ANALYZE_AFTER and not self._closed:
            self._analyze_frames()
        if self.path is not None and not self.readonly and not self._closed and self._wrote:
            with contextlib.suppress(sa.exc.DBAPIError, sqlite3.Error):
                # Outside any transaction and without waiting: a busy database skips it this time.
                raw = self.engine.raw_connection()
                try:
                    cursor = raw.cursor()
                    cursor.execute("PRAGMA busy_timeout = 0")
                    # Statistics from a sample of each index: a full ANALYZE of 5 million
                    # frames took 1.5 s, with the write lock held, at every close.
                    cursor.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
                    cursor.execute("PRAGMA optimize")
                    cursor.close()
                finally:
                    raw.close()
        self._closed = True
        if self._readonly_engine is not None and self._readonly_engine is not self.engine:
            self._readonly_engine.dispose()
        self.engine.dispose()
        for identity in self._identities:
            if identity.went:  # the file was deleted or replaced: its -wal must not outlive us
                identity.drop_companions()

    def _analyze_frames(self) -> None:
        """PostgreSQL's counterpart of ``PRAGMA optimize`` after a large recording: until
        autovacuum gets to it, the planner misjudges a fresh session's frames and the views
        run about twice as slow. Bounded: a busy or slow server skips it."""
        with contextlib.suppress(sa.exc.DBAPIError), self.engine.connect() as conn:
            conn.execute(sa.text("SET statement_timeout = 5000"))
            conn.execute(sa.text("ANALYZE frames"))
            conn.commit()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _timeout_message(timeout_s: float) -> str:
    return f"the query ran longer than its time limit of {timeout_s:g} s and was stopped; narrow it (WHERE, LIMIT) or allow more time"
