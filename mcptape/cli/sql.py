"""`mcptape sql`: run one read-only SQL query, with a time limit, over the recordings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.output import output_options

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


def error_message(message: str, where: str) -> str:
    """The one-line error for a failed query, from the database's own message."""
    lowered = message.lower()
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


def plain_numbers(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Rows with exact numbers (PostgreSQL's numeric, e.g. ``sum(size)`` or ``error_code``) as the
    int or float SQLite would give, so --json prints numbers, not strings, on either database."""
    from decimal import Decimal

    def plain(value: Any) -> Any:
        if not isinstance(value, Decimal) or not value.is_finite():
            return value
        return int(value) if value == value.to_integral_value() else float(value)

    return [[plain(value) for value in row] for row in rows]


@click.command()
@click.argument("query")
@db_option
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop the query after this many seconds.",
)
@output_options
def sql(query: str, db: str | None, timeout: float, fmt: str) -> None:
    """Run a read-only SQL query over the recordings.

    The database is opened read-only (a statement that writes fails) and the
    query is stopped when it has not returned all its rows within --timeout
    seconds. Times are seconds since the Unix
    epoch: datetime(ts, 'unixepoch', 'localtime') turns them into dates on
    SQLite, to_timestamp(ts) on PostgreSQL. Frame ids (rpc_id) are JSON
    text: 1 and "1" differ.

    \b
    Views:
      messages         every JSON-RPC message, batches unpacked: frame_id,
                       session_id, seq, ts, direction, origin, kind
                       (request, notification, response, error,
                       malformed), method, rpc_id, text, batch_index
                       (NULL outside a batch, else 0, 1, ...)
      exchanges        a request with its response: session_id, direction,
                       method, rpc_id, request_seq, response_seq,
                       requested_at, responded_at, latency_ms, is_error,
                       error_code, error_message, request, response,
                       answered_by (client, server or proxy),
                       request_batch_index, response_batch_index
      tool_calls       tools/call exchanges: session_id, tool, arguments,
                       is_error, latency_ms, requested_at, result,
                       request_seq (a round answered with input_required
                       is left out: the call's retry has its result)
      log_messages     notifications/message: session_id, seq, ts,
                       direction, level, logger, data
      server_requests  what the server asked the client (sampling,
                       elicitation, roots, ping): session_id, method,
                       rpc_id, request_seq, requested_at, latency_ms,
                       answered_by, is_error, request, response, style
                       (request: a server-to-client request; input_required:
                       an entry of a 2026-07-28 input_required result,
                       answered by the client's retry), input_key (its key)

    \b
    Tables:
      sessions  id, name, mode, transport, upstream, started_at, ended_at,
                status, exit_code, error, protocol_version, client_name,
                client_version, server_name, server_version, replay_of, ...
      frames    session_id, seq, ts, direction, origin, kind, method,
                rpc_id, size, text, raw, meta
      events    session_id, ts, kind (stderr, process_exit, ...), text, data

    \b
    Examples:
      mcptape sql "select tool, count(*), avg(latency_ms) from tool_calls group by 1"
      mcptape sql "select method, max(latency_ms) from exchanges
                   where session_id like '3f9a%' group by 1 order by 2 desc"
      mcptape sql --nl "select level, logger, data from log_messages
                        order by ts desc limit 20"
      mcptape sql --csv "select * from server_requests
                         where answered_by = 'proxy'" > injected.csv
    """
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.output import emit
    from mcptape.cli.sessions import database_message
    from mcptape.store import StoreError, open_store

    if not query.strip():
        raise UserError('the query is empty: give one SQL statement, e.g. "select * from sessions"')
    try:
        store = open_store(db, create=False, readonly=True)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    try:
        with store.readonly_connection(timeout) as conn:
            if conn.dialect.name == "sqlite":
                # SQLite reads the file lazily: `select 1` would "work" on any file at all.
                conn.exec_driver_sql("select count(*) from sqlite_master").all()
            result = conn.exec_driver_sql(query)
            if not result.returns_rows:
                return
            # Collect the rows under the time limit, then print them outside it: a reader
            # that is slow to take the output (`| less`) must not look like a slow query.
            columns, rows = list(result.keys()), plain_numbers(result.all())
    except SQLAlchemyError as exc:
        raise UserError(error_message(database_message(exc), store.where)) from None
    except StoreError as exc:  # the time limit
        raise UserError(str(exc)) from None
    finally:
        store.close()
    emit(rows, columns, fmt)
