"""Opening a recording database: where it lives, how SQLite is set up, and the Store handle.

SQLite is the default: one file, created readable by the user alone (its directory
0700 when mcptape creates it, the file 0600, and SQLite gives ``-wal``/``-shm`` the
file's mode), in WAL mode with ``synchronous=NORMAL``, foreign keys on and a 30 s
busy timeout. Write transactions start with ``BEGIN IMMEDIATE`` (SQLAlchemy emits
the BEGIN itself, per its pysqlite recipe): a deferred transaction that later
writes can fail with "database is locked" whatever the busy timeout, an immediate
one waits its turn. Pass ``execution_options(sqlite_begin="DEFERRED")`` on a
connection that only reads.

Any other SQLAlchemy URL works too; PostgreSQL (``postgresql+psycopg://...``, the
``mcptape[postgres]`` extra) is the one the views are written for. Its driver is
imported only when such a URL is opened. A Unix socket is given as a query parameter:
``postgresql+psycopg://user@/dbname?host=/run/postgresql``.

Text columns never receive a NUL character: PostgreSQL's ``text`` refuses it, so a
NUL in an event line or a session value is stored as U+FFFD on every database (a
frame keeps its exact bytes in ``raw``).

Errors: every failure to open, migrate or write is a :class:`StoreError` whose
``str()`` is one line saying what happened and what to do.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, unquote

import orjson
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, make_url

from mcptape import __version__
from mcptape.store.schema import sessions

if TYPE_CHECKING:
    from mcptape.store.writer import Writer

BUSY_TIMEOUT_S: Final = 30.0
SESSION_COLUMNS: Final = frozenset(column.name for column in sessions.columns) - {"id"}
_QUERY_CANCELED: Final = "57014"  # PostgreSQL's SQLSTATE for statement_timeout
# An execution option: run a statement without parameters as exactly one statement.
_ONE_STATEMENT: Final = "mcptape_one_statement"


class StoreError(Exception):
    """A recording database mcptape cannot use; ``str()`` is one line for the user."""


def default_db_path() -> Path:
    """``$MCPTAPE_DB`` when set, else ``mcptape.db`` in the per-user data directory."""
    configured = os.environ.get("MCPTAPE_DB")
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("mcptape", appauthor=False)) / "mcptape.db"


def resolve_url(db: str | None) -> str:
    """The SQLAlchemy URL for ``--db``: a URL stays as it is, a path becomes ``sqlite:///<absolute>``."""
    if not db:
        configured = os.environ.get("MCPTAPE_DB", "")
        if "://" in configured:
            return configured
        path = default_db_path()
    elif "://" in db:
        return db
    else:
        path = Path(db).expanduser()
    return f"sqlite:///{path.absolute()}"


def session_values(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Check session column names and encode dicts and lists as JSON text."""
    unknown = sorted(set(fields) - SESSION_COLUMNS)
    if unknown:
        raise TypeError(
            f"sessions has no column {', '.join(unknown)}; columns: {', '.join(sorted(SESSION_COLUMNS))}"
        )
    return {
        name: orjson.dumps(value).decode() if isinstance(value, dict | list) else without_nul(value)
        for name, value in fields.items()
    }


def without_nul(value: Any) -> Any:
    """``value`` with each NUL character of a string turned into U+FFFD (PostgreSQL text refuses NUL)."""
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


def open_store(db: str | None = None, *, create: bool = True, readonly: bool = False) -> Store:
    """Open the recording database ``db`` (a path, a URL, or None for the default), migrated to head.

    ``readonly=True`` neither creates nor migrates (for ``mcptape sql`` and other readers);
    ``create=False`` refuses to create a missing SQLite file.
    """
    store = open_unmigrated(db, create=create, readonly=readonly)
    try:
        if readonly:
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
    try:
        url = make_url(text)
    except sa.exc.ArgumentError:
        raise StoreError(
            f"cannot understand the database {text!r}: give a file path or a SQLAlchemy URL "
            "such as postgresql+psycopg://user@host/dbname"
        ) from None
    if url.get_backend_name() == "sqlite":
        path = _sqlite_file(url)
        return Store(
            text, _sqlite_engine(path, create=create, readonly=readonly), path=path, readonly=readonly
        )
    return Store(text, _server_engine(url), path=None, readonly=readonly)


class Store:
    """An open recording database: sessions, a batched :class:`Writer`, read-only connections."""

    def __init__(self, url: str, engine: sa.Engine, *, path: Path | None, readonly: bool) -> None:
        self.url = url
        self.engine = engine
        self.path = path  # the SQLite file, None for a server database
        self.readonly = readonly
        self._readonly_engine: sa.Engine | None = engine if readonly and path is not None else None
        self._writers: list[Writer] = []

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

    def create_session(
        self,
        *,
        mode: str,
        name: str | None = None,
        transport: str | None = None,
        upstream: str | None = None,
        replay_of: str | None = None,
    ) -> str:
        """Insert a ``running`` session started now by this process and return its id (uuid4 hex)."""
        session_id = uuid.uuid4().hex
        values = {
            "id": session_id,
            "mode": mode,
            "name": name,
            "transport": transport,
            "upstream": upstream,
            "replay_of": replay_of,
            "started_at": time.time(),
            "status": "running",
            "pid": os.getpid(),
            "mcptape_version": __version__,
        }
        self._write(sessions.insert().values(**{k: without_nul(v) for k, v in values.items()}))
        return session_id

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Set columns of a session now (see :meth:`Writer.update_session` to order it with frames)."""
        values = session_values(fields)
        if values:
            self._write(sessions.update().where(sessions.c.id == session_id).values(**values))

    def _write(self, statement: sa.Executable) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(statement)
        except sa.exc.DBAPIError as error:
            raise StoreError(describe_error(error, self.where)) from None

    def writer(
        self, *, batch_size: int = 1000, max_backlog: int = 20_000, max_backlog_bytes: int = 256 << 20
    ) -> Writer:
        """A new batched writer on its own thread; :meth:`close` closes it too."""
        from mcptape.store.writer import Writer

        writer = Writer(
            self.engine,
            where=self.where,
            batch_size=batch_size,
            max_backlog=max_backlog,
            max_backlog_bytes=max_backlog_bytes,
        )
        self._writers.append(writer)
        return writer

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
            self._readonly_engine = _sqlite_engine(self.path, create=False, readonly=True)
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
            conn.execution_options(no_parameters=True, **{_ONE_STATEMENT: True})
            try:
                yield conn
            except sa.exc.OperationalError as error:
                if getattr(error.orig, "sqlstate", None) == _QUERY_CANCELED:
                    raise StoreError(_timeout_message(timeout_s)) from None
                raise
            finally:
                conn.rollback()

    def close(self) -> None:
        """Close every writer (flushing it) and the connections. Idempotent."""
        for writer in self._writers:
            writer.close()
        self._writers.clear()
        if self._readonly_engine is not None and self._readonly_engine is not self.engine:
            self._readonly_engine.dispose()
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _timeout_message(timeout_s: float) -> str:
    return f"the query ran longer than its time limit of {timeout_s:g} s and was stopped; narrow it (WHERE, LIMIT) or allow more time"


def describe_error(error: BaseException, where: str) -> str:
    """One line for a database error: what happened to which database, and what to do."""
    orig = getattr(error, "orig", None) or error
    detail = " ".join((str(orig).splitlines() or [type(orig).__name__])[0].split())
    lowered = detail.lower()
    server = _describe_server_error(detail, where)
    if server is not None:
        return server
    if "file is not a database" in lowered or "file is encrypted" in lowered:
        return f"{where} is not a SQLite database (SQLite: {detail}); give mcptape a recording database or a new file path (--db or MCPTAPE_DB)"
    if "database is locked" in lowered or "database is busy" in lowered:
        return f"{where} stayed locked by another process for more than {BUSY_TIMEOUT_S:g} s; find the process holding it (fuser {where}) or retry"
    if "unable to open database file" in lowered:
        return f"cannot open {where} (SQLite: {detail}); check that the file and its directory exist and are readable by you"
    if "readonly database" in lowered:
        return (
            f"{where} is read-only for you (SQLite: {detail}); check its mode and owner, and its directory's"
        )
    if "disk is full" in lowered or "disk i/o error" in lowered:
        return f"cannot write {where} (SQLite: {detail}); free disk space or record to another path"
    return f"database error on {where}: {detail}"


def _describe_server_error(detail: str, where: str) -> str | None:
    """PostgreSQL's connection failures (psycopg words them), or None for any other error."""
    lowered = detail.lower()
    if not lowered.startswith(("connection failed", "connection is bad", "connection to server")):
        return None
    missing = re.search(r'database "([^"]*)" does not exist', detail)
    if missing:
        return (
            f"cannot open {where}: the database {missing[1]} does not exist on that server ({detail}); "
            f"create it (createdb {missing[1]}) or correct the database name in the URL"
        )
    if "authentication failed" in lowered or ("role" in lowered and "does not exist" in lowered):
        return (
            f"cannot log in to {where} ({detail}); check the user and password in the URL "
            "(or PGPASSWORD, ~/.pgpass)"
        )
    return (
        f"cannot connect to {where} ({detail}); check that the PostgreSQL server is running and that "
        "the host (or socket directory, ?host=DIR), port and database in the URL are right"
    )


def _sqlite_file(url: URL) -> Path:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        raise StoreError(
            "mcptape records into a SQLite file, not an in-memory or URI database: give a file path "
            "(--db PATH or MCPTAPE_DB)"
        )
    return Path(database).expanduser().absolute()


def _server_engine(url: URL) -> sa.Engine:
    if url.drivername == "postgresql":  # SQLAlchemy would pick psycopg2; the postgres extra ships psycopg 3
        url = url.set(drivername="postgresql+psycopg")
    shown = unquote(url.render_as_string(hide_password=True))
    try:
        engine = sa.create_engine(url, pool_pre_ping=True)
    except ModuleNotFoundError as error:
        raise StoreError(
            f"the driver for {shown} is not installed (no module {error.name}); "
            "for PostgreSQL: pip install 'mcptape[postgres]'"
        ) from None
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as error:
        raise StoreError(f"cannot use the database URL {shown}: {str(error).splitlines()[0]}") from None
    if url.get_backend_name() == "postgresql" and url.get_driver_name() == "psycopg":
        _install_psycopg_hooks(engine)
    return engine


def _install_psycopg_hooks(engine: sa.Engine) -> None:
    @event.listens_for(engine, "do_execute_no_params")
    def _one_statement(cursor: Any, statement: str, context: Any) -> bool:
        # psycopg sends a query without parameters with the simple protocol, which runs
        # any number of statements; a prepared statement is always exactly one. A
        # server-side cursor (stream_results) DECLAREs one query and needs no help.
        import psycopg

        if not context.execution_options.get(_ONE_STATEMENT) or isinstance(cursor, psycopg.ServerCursor):
            return False
        cursor.execute(statement, prepare=True)
        return True


def _refuse_directory(path: Path) -> None:
    if path.is_dir():
        raise StoreError(
            f"{path} is a directory, not a database file: give a file path such as {path / 'mcptape.db'}"
        )


def _sqlite_engine(path: Path, *, create: bool, readonly: bool) -> sa.Engine:
    if readonly:
        _refuse_directory(path)
        if not path.exists():
            raise StoreError(
                f"no recording database at {path}: record a session first (mcptape record -- COMMAND) or give --db"
            )
        _check_access(path, os.R_OK)
        uri = f"file:{quote(str(path))}?mode=ro"

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(
                uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None
            )

        # A fresh connection per use: a read-only handle is cheap and never holds a stale snapshot.
        engine = sa.create_engine(
            URL.create("sqlite", database=str(path)), creator=connect, poolclass=sa.pool.NullPool
        )
    else:
        _prepare_file(path, create=create)

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(
                str(path), timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None
            )

        engine = sa.create_engine(URL.create("sqlite", database=str(path)), creator=connect)
    _install_sqlite_hooks(engine, readonly=readonly)
    return engine


def _install_sqlite_hooks(engine: sa.Engine, *, readonly: bool) -> None:
    pragmas = ["PRAGMA foreign_keys = ON", f"PRAGMA busy_timeout = {round(BUSY_TIMEOUT_S * 1000)}"]
    pragmas.append("PRAGMA query_only = ON" if readonly else "PRAGMA synchronous = NORMAL")
    default_begin = "DEFERRED" if readonly else "IMMEDIATE"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        # isolation_level=None stops the sqlite3 module from issuing BEGINs of its own.
        dbapi_connection.isolation_level = None
        for pragma in pragmas:
            dbapi_connection.execute(pragma)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql(f"BEGIN {conn.get_execution_options().get('sqlite_begin', default_begin)}")


def _prepare_file(path: Path, *, create: bool) -> None:
    _refuse_directory(path)
    if path.exists():
        _check_access(path, os.R_OK | os.W_OK)
        return
    if not create:
        raise StoreError(
            f"no recording database at {path}: record a session first (mcptape record -- COMMAND) or give --db"
        )
    _make_private_dirs(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it a moment ago
        return
    except OSError as error:
        raise StoreError(
            f"cannot create {path}: {error.strerror}; check that its directory is writable or give --db another path"
        ) from None
    try:
        if hasattr(os, "fchmod"):  # the umask can only remove bits, but be explicit
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _make_private_dirs(directory: Path) -> None:
    missing: list[Path] = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        except OSError as error:
            raise StoreError(
                f"cannot create the directory {folder}: {error.strerror}; give --db a path you can write"
            ) from None
        os.chmod(folder, 0o700)


def _check_access(path: Path, mode: int) -> None:
    if not os.access(path, mode):
        wanted = "read and write" if mode & os.W_OK else "read"
        raise StoreError(
            f"cannot {wanted} {path}: permission denied; check its owner and mode (ls -l {path}) or give --db another path"
        )
