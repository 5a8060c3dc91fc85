"""SQLite engines for recording files: private files, WAL, ``BEGIN IMMEDIATE``, read-only handles.

A new file is created readable by the user alone (its directory 0700 when mcptape
creates it, the file 0600, and SQLite gives ``-wal``/``-shm`` the file's mode), in WAL
mode with ``synchronous=NORMAL``, foreign keys on and a busy timeout of
:data:`BUSY_TIMEOUT_S`. Write transactions start with ``BEGIN IMMEDIATE`` (SQLAlchemy
emits the BEGIN itself, per its pysqlite recipe): a deferred transaction that later
writes can fail with "database is locked" whatever the busy timeout, an immediate one
waits its turn. Pass ``execution_options(sqlite_begin="DEFERRED")`` on a connection
that only reads. A read-only engine opens the file with ``mode=ro`` and
``query_only`` (and ``immutable`` on a read-only mount, where nobody can write it).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL

from mcptape.store.errors import BUSY_TIMEOUT_S, StoreError

__all__ = ["BUSY_TIMEOUT_S", "can_write", "readonly_uri", "sqlite_engine", "sqlite_file"]


def sqlite_file(url: URL) -> Path:
    """The absolute path of a ``sqlite:///`` URL; in-memory and URI databases are refused."""
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        raise StoreError(
            "mcptape records into a SQLite file, not an in-memory or URI database: give a file path "
            "(--db PATH or MCPTAPE_DB)"
        )
    return Path(database).expanduser().absolute()


def can_write(path: Path) -> bool:
    """Whether this process may write an existing database file (and create its journal beside it)."""
    return os.access(path, os.R_OK | os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def sqlite_engine(path: Path, *, create: bool, readonly: bool) -> sa.Engine:
    """An engine on the file ``path``; ``readonly`` opens it with ``mode=ro``."""
    if readonly:
        _refuse_directory(path)
        if not path.exists():
            raise StoreError(
                f"no recording database at {path}: record a session first (mcptape record -- COMMAND) or give --db"
            )
        _check_access(path, os.R_OK)
        uri = readonly_uri(path)

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
    _install_hooks(engine, readonly=readonly)
    return engine


def _install_hooks(engine: sa.Engine, *, readonly: bool) -> None:
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


def readonly_uri(path: Path) -> str:
    """The SQLite URI that opens ``path`` read-only (``immutable`` too on a read-only mount)."""
    uri = f"file:{quote(str(path))}?mode=ro"
    return uri + "&immutable=1" if _frozen(path) else uri


def _frozen(path: Path) -> bool:
    """Whether nobody can be writing ``path``: its directory cannot be written, and no ``-wal`` is beside it.

    A WAL database needs its ``-shm`` file even to be read; on a read-only mount (a
    backup, a CD, a container layer) SQLite cannot create it and refused to open the
    file at all ("unable to open database file"). ``immutable`` reads it without one,
    which is only right when no writer can exist: none can create the ``-wal`` there.
    """
    return not os.access(path.parent, os.W_OK) and not Path(f"{path}-wal").exists()


def _refuse_directory(path: Path) -> None:
    if path.is_dir():
        raise StoreError(
            f"{path} is a directory, not a database file: give a file path such as {path / 'mcptape.db'}"
        )


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
