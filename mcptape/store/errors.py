"""The store's errors: :class:`StoreError` and one-line descriptions of database failures.

Every failure to open, migrate or write a recording database reaches the user as a
:class:`StoreError` whose ``str()`` is one line saying what happened and what to do.
:func:`describe_error` words a driver's error that way; :func:`is_retryable` and
:func:`is_fatal` tell the writer whether waiting can help or the database is unusable.
No other store module is imported here, so every one of them can import this.
"""

from __future__ import annotations

import re
import sys
from typing import Final

import sqlalchemy as sa

BUSY_TIMEOUT_S: Final = 30.0

# SQLite's words for a database that will not take writes however long one waits.
_FATAL_SQLITE: Final = (
    "file is not a database",
    "file is encrypted",
    "database disk image is malformed",
    "database or disk is full",
    "disk is full",
    "disk i/o error",
    "attempt to write a readonly database",
    "unable to open database file",
    "no such table",
)
# PostgreSQL: disk full / out of memory (53xxx), undefined table, read-only transaction.
_FATAL_SQLSTATES: Final = ("53100", "53200", "42P01", "25006")


class StoreError(Exception):
    """A recording database mcptape cannot use; ``str()`` is one line for the user."""


class StoreBusyError(StoreError):
    """Another process holds the write lock, and the caller asked not to wait for it."""


class WriterClosedError(RuntimeError):
    """Something was queued on a :class:`~mcptape.store.writer.Writer` after it was closed.

    A bug in the caller: close the writer after the last frame, never before.
    """


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
    if "malformed" in lowered:
        return f"{where} is damaged (SQLite: {detail}); record to another path (--db) and see `sqlite3 {where} .recover`"
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


def is_lock_wait(error: BaseException) -> bool:
    """Whether ``error`` means another process holds the database's write lock."""
    orig = getattr(error, "orig", None) or error
    detail = str(orig).lower()
    return "database is locked" in detail or "database is busy" in detail or _sqlstate(orig) == "55P03"


def is_retryable(error: BaseException) -> bool:
    """Whether waiting and trying again can help: a busy database, a server away for a while."""
    if isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated:
        return True
    if is_lock_wait(error):
        return True
    orig = getattr(error, "orig", None) or error
    sqlstate = _sqlstate(orig)
    if sqlstate is None:
        # psycopg gives no SQLSTATE when it cannot reach the server or the connection broke
        # (a restart, a failover): the writer waits for the server instead of dropping rows.
        psycopg = sys.modules.get("psycopg")
        return psycopg is not None and isinstance(orig, psycopg.OperationalError)
    # PostgreSQL: connection exceptions (class 08), serialization failure, deadlock, and the
    # server shutting down, restarting or still starting.
    return sqlstate.startswith("08") or sqlstate in {"40001", "40P01", "57P01", "57P02", "57P03"}


def is_fatal(error: BaseException) -> bool:
    """Whether the database is unusable for good (damaged, full, not a database, read-only)."""
    orig = getattr(error, "orig", None) or error
    detail = str(orig).lower()
    return any(words in detail for words in _FATAL_SQLITE) or _sqlstate(orig) in _FATAL_SQLSTATES


def _sqlstate(orig: BaseException) -> str | None:
    value = getattr(orig, "sqlstate", None)
    return value if isinstance(value, str) else None
