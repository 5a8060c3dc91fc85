"""One query in the `sql` sandbox: its columns and rows, and every failure in one line.

`mcptape sql` prints what :func:`run_query` gives; the viewer's SQL page shows it as a
table and a CSV download. SQLite runs in :mod:`mcptape.store.sql_sandbox`'s read-only
connection; PostgreSQL in the store's read-only transaction with a statement timeout.
Both stop when the :class:`~mcptape.store.sql_sandbox.Budget` runs out, also while the
caller is still reading rows.
"""

from __future__ import annotations

import base64
import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any, Final

from mcptape.store.sql_sandbox import Budget

_SURROGATE: Final = re.compile("[\ud800-\udfff]")

# How the databases say a statement tried to write (SQLite, then PostgreSQL).
_READONLY_SIGNS: Final = ("readonly database", "read-only transaction")
# How they say a query held more than one statement (SQLite, then PostgreSQL).
_SEVERAL_SIGNS: Final = ("one statement at a time", "cannot insert multiple commands")
# Messages about the database file itself rather than the query.
_FILE_SIGNS: Final = (
    "file is not a database",
    "file is encrypted",
    "unable to open database file",
    "disk i/o error",
)


class QueryFailed(Exception):
    """The database refused or failed the query: ``str()`` is one line for the user."""


# A result: the column names and the rows, read as they are consumed.
Result = tuple[list[str], Iterator[Sequence[Any]]]


def error_message(message: str, where: str) -> str:
    """The one-line error for a failed query, from the database's own message."""
    lowered = message.lower()
    # SQLite says "authorization denied" for what it refuses before asking (VACUUM INTO).
    if "not authorized" in lowered or "authorization denied" in lowered:
        return (
            f"`mcptape sql` only reads the recording ({message}): writes, ATTACH, schema changes, "
            "pragma settings and load_extension are refused"
        )
    if any(sign in lowered for sign in _READONLY_SIGNS):
        return (
            f"the database is opened read-only: {message}; `mcptape sql` only reads "
            "(change a recording with the sqlite3 or psql shell, on a copy)"
        )
    if any(sign in lowered for sign in _SEVERAL_SIGNS):
        return f"give one SQL statement at a time ({message}); `mcptape sql` runs a single query"
    if any(sign in lowered for sign in _FILE_SIGNS):
        return (
            f"cannot read {where} as a recording database (SQLite: {message}); "
            "give --db (or MCPTAPE_DB) the path of a database mcptape recorded into"
        )
    return f"SQL error: {message}"


def plain_row(row: Sequence[Any]) -> list[Any]:
    """A row with exact numbers (PostgreSQL's numeric, e.g. ``sum(size)`` or ``error_code``) as the
    int or float SQLite would give, so --json prints numbers, not strings, on either database."""
    from decimal import Decimal

    def plain(value: Any) -> Any:
        if not isinstance(value, Decimal) or not value.is_finite():
            return value
        return int(value) if value == value.to_integral_value() else float(value)

    return [plain(value) for value in row]


def streams_on_the_server(query: str) -> bool:
    """Whether a PostgreSQL server-side cursor can hold ``query`` (DECLARE takes only these)."""
    words = query.lstrip().split(None, 1)
    return bool(words) and words[0].lower() in ("select", "with", "values", "table")


@contextlib.contextmanager
def run_query(store: Any, query: str, budget: Budget) -> Iterator[Result | None]:
    """Run ``query`` read-only on the store; yield its columns and rows (None: it returns none).

    Raises :class:`QueryFailed` (one line) and :class:`~mcptape.store.sql_sandbox.QueryStopped`,
    from the query and from reading its rows inside the ``with`` block alike. Ctrl-C is
    the caller's to catch (:meth:`Budget.catching_ctrl_c`).
    """
    if store.path is not None:
        with _sqlite(store.path, store.where, query, budget) as result:
            yield result
    else:
        with _server(store, query, budget) as result:
            yield result


@contextlib.contextmanager
def _sqlite(path: Any, where: str, query: str, budget: Budget) -> Iterator[Result | None]:
    import sqlite3

    from mcptape.store.sql_sandbox import open_sqlite, sqlite_failure

    try:
        conn = open_sqlite(path, budget)
    except sqlite3.Error as exc:
        raise QueryFailed(error_message(str(exc), where)) from None
    try:
        cursor = conn.execute(query)
        if cursor.description is None:
            yield None
            return
        yield [d[0] for d in cursor.description], iter(cursor)
    except sqlite3.Error as exc:
        stopped = sqlite_failure(exc, budget)
        if stopped is not None:
            raise stopped from None
        raise QueryFailed(error_message(str(exc), where)) from None
    finally:
        conn.close()


@contextlib.contextmanager
def _server(store: Any, query: str, budget: Budget) -> Iterator[Result | None]:
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.store import StoreError
    from mcptape.store.describe import database_message

    try:
        with store.readonly_connection(budget.timeout_s) as conn:
            if streams_on_the_server(query):
                # A server-side cursor: rows arrive as they are read, not all at once.
                conn.execution_options(stream_results=True, yield_per=256)
            result = conn.exec_driver_sql(query)
            if not result.returns_rows:
                yield None
                return
            yield list(result.keys()), (plain_row(row) for row in result)
    except SQLAlchemyError as exc:
        raise QueryFailed(error_message(database_message(exc), store.where)) from None
    except StoreError as exc:  # the statement timeout
        raise QueryFailed(str(exc)) from None
    except KeyboardInterrupt:  # psycopg has cancelled the statement
        raise budget.stop("interrupted") from None


def csv_value(value: Any) -> Any:
    """A CSV field: empty for None, text or base64 for bytes, full precision for floats."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(data).decode("ascii")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        # CSV has no escapes: a lone surrogate (not UTF-8) is written as U+FFFD.
        return _SURROGATE.sub("\ufffd", value)
    return value
