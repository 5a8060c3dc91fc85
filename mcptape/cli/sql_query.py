"""One read-only SQL query over a recording, run in the sandbox: what `mcptape sql` and `mcptape mcp` share.

:func:`run_query` opens the query's own read-only connection (SQLite: the sandbox of
:mod:`mcptape.cli.sql_sandbox`; PostgreSQL: the store's read-only transaction with a
statement timeout) and hands its caller the columns and an iterator of rows checked
against the :class:`~mcptape.cli.sql_sandbox.Budget`. A database error becomes a
:class:`QueryError` whose message is one line saying what to do
(:func:`error_message`); a budget that runs out raises
:class:`~mcptape.cli.sql_sandbox.QueryStopped`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from mcptape.cli.sql_sandbox import Budget
    from mcptape.store import Store

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

Rows = Iterator[Sequence[Any]]


class QueryError(Exception):
    """The database refused or failed the query; ``str()`` is one line for a person."""


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
def run_query(
    store: Store, query: str, budget: Budget, *, buffered: bool
) -> Iterator[tuple[list[str], Rows]]:
    """Run ``query`` read-only; yields its columns (empty for a statement without rows) and rows.

    ``buffered``: the caller holds every row before using them (a table), so their size
    counts against the budget's memory limit. Raises :class:`QueryError` or
    :class:`~mcptape.cli.sql_sandbox.QueryStopped`, also while the rows are read.
    """
    if store.path is not None:
        with _sqlite(store.path, store.where, query, budget, buffered) as found:
            yield found
    else:
        with _server(store, query, budget, buffered) as found:
            yield found


@contextlib.contextmanager
def _sqlite(
    path: Any, where: str, query: str, budget: Budget, buffered: bool
) -> Iterator[tuple[list[str], Rows]]:
    import sqlite3

    from mcptape.cli.sql_sandbox import open_sqlite

    try:
        conn = open_sqlite(path, budget)
    except sqlite3.Error as exc:
        raise QueryError(error_message(str(exc), where)) from None
    try:
        try:
            cursor = conn.execute(query)
        except sqlite3.Error as exc:
            raise _sqlite_error(exc, budget, where) from None
        if cursor.description is None:
            yield [], iter(())
            return
        columns = [d[0] for d in cursor.description]

        def rows() -> Rows:
            try:
                yield from budget.guard(cursor, buffered=buffered)
            except sqlite3.Error as exc:
                raise _sqlite_error(exc, budget, where) from None

        yield columns, rows()
    finally:
        conn.close()


def _sqlite_error(exc: Any, budget: Budget, where: str) -> Exception:
    from mcptape.cli.sql_sandbox import sqlite_failure

    stopped = sqlite_failure(exc, budget)
    return stopped if stopped is not None else QueryError(error_message(str(exc), where))


@contextlib.contextmanager
def _server(store: Store, query: str, budget: Budget, buffered: bool) -> Iterator[tuple[list[str], Rows]]:
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.sessions import database_message
    from mcptape.store import StoreError

    try:
        with store.readonly_connection(budget.timeout_s) as conn:
            if streams_on_the_server(query):
                # A server-side cursor: rows arrive as they are used, not all at once.
                conn.execution_options(stream_results=True, yield_per=256)
            result = conn.exec_driver_sql(query)
            if not result.returns_rows:
                yield [], iter(())
                return
            rows = (plain_row(row) for row in result)
            yield list(result.keys()), budget.guard(rows, buffered=buffered)
    except SQLAlchemyError as exc:
        raise QueryError(error_message(database_message(exc), store.where)) from None
    except StoreError as exc:  # the statement timeout
        raise QueryError(str(exc)) from None
    except KeyboardInterrupt:  # psycopg has cancelled the statement
        raise budget.stop("interrupted") from None
