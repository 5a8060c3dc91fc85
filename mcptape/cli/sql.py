"""`mcptape sql`: run one read-only SQL query, with a time limit, over the recordings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import click

from mcptape.cli.common import Interrupted, Seconds, UserError, db_option
from mcptape.cli.helptext import Command
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


@click.command(cls=Command)
@click.argument("query")
@db_option
@click.option(
    "--timeout",
    type=Seconds(),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop the command (query and formatting) after this many seconds.",
)
@output_options
def sql(query: str, db: str | None, timeout: float, fmt: str) -> None:
    """Run a read-only SQL query over the recordings.

    The query can only read the recording: writes, ATTACH, schema changes,
    pragma settings and load_extension are refused (on PostgreSQL it runs in a
    read-only transaction). The command stops when the query and the printing
    of its rows take longer than --timeout seconds, when one value is over 65
    MiB or a --table result over 128 MiB (--json, --nl and --csv stream any
    size), and on Ctrl-C (exit status 130). Times are seconds since the Unix
    epoch: datetime(ts, 'unixepoch', 'localtime') turns them into dates on
    SQLite, to_timestamp(ts) on PostgreSQL. Frame ids (rpc_id) are JSON
    text: 1 and "1" differ.

    Views: messages, exchanges, tool_calls, log_messages, server_requests,
    http_frames; tables: sessions, frames, events (their columns: --help-all).

    \b
    Examples:
      mcptape sql "select tool, count(*), avg(latency_ms) from tool_calls
                   group by 1"
      mcptape sql --csv "select * from server_requests
                         where answered_by = 'proxy'" > injected.csv

    \f
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
                       request_batch_index, response_batch_index (a
                       request a proxy edit replaced is left out: its
                       replacement carries the exchange)
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
      http_frames      frames that travelled over HTTP (proxy, record
                       --url): frame_id, session_id, seq, ts, direction,
                       origin, kind, method, rpc_id, http_method, path,
                       stream (post, get, sse, ...), status, sse (1 when
                       it came as an SSE event), event_id,
                       http_session_id, protocol_version, content_type,
                       headers (JSON, credentials redacted)

    \b
    Tables:
      sessions  id, name, mode, transport, upstream, started_at, ended_at,
                status, exit_code, error, protocol_version, client_name,
                client_version, server_name, server_version, replay_of, ...
      frames    session_id, seq, ts, direction, origin, kind, method,
                rpc_id, size, text, raw, meta
      events    session_id, ts, kind (stderr, process_exit, ...), text, data

    \b
    More examples:
      mcptape sql "select method, max(latency_ms) from exchanges
                   where session_id like '3f9a%' group by 1 order by 2 desc"
      mcptape sql --nl "select level, logger, data from log_messages
                        order by ts desc limit 20"
      mcptape sql "select method, status, sse from http_frames
                   where kind in ('response', 'error')"
    """
    from mcptape.cli.sql_sandbox import Budget, QueryStopped
    from mcptape.store import StoreError, open_store

    if not query.strip():
        raise UserError('the query is empty: give one SQL statement, e.g. "select * from sessions"')
    try:
        store = open_store(db, create=False, readonly=True)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    # The clock starts with the query (opening a database is not the query's doing) and runs
    # until its last row is printed.
    budget = Budget(timeout)
    try:
        if store.path is not None:
            _run_sqlite(store.path, store.where, query, budget, fmt)
        else:
            _run_server(store, query, budget, fmt)
    except QueryStopped as exc:
        if exc.reason == "interrupted":
            raise Interrupted(str(exc)) from None
        raise UserError(str(exc)) from None
    finally:
        store.close()


def _run_sqlite(path: Any, where: str, query: str, budget: Any, fmt: str) -> None:
    import sqlite3

    from mcptape.cli.output import emit
    from mcptape.cli.sql_sandbox import open_sqlite, sqlite_failure

    with budget.catching_ctrl_c():
        try:
            conn = open_sqlite(path, budget)
        except sqlite3.Error as exc:
            raise UserError(error_message(str(exc), where)) from None
        try:
            cursor = conn.execute(query)
            if cursor.description is None:
                return
            columns = [d[0] for d in cursor.description]
            emit(budget.guard(cursor, buffered=fmt == "table"), columns, fmt)
        except sqlite3.Error as exc:
            stopped = sqlite_failure(exc, budget)
            if stopped is not None:
                raise stopped from None
            raise UserError(error_message(str(exc), where)) from None
        finally:
            conn.close()


def _run_server(store: Any, query: str, budget: Any, fmt: str) -> None:
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.output import emit
    from mcptape.cli.sessions import database_message
    from mcptape.store import StoreError

    try:
        with store.readonly_connection(budget.timeout_s) as conn:
            if streams_on_the_server(query):
                # A server-side cursor: rows arrive as they are printed, not all at once.
                conn.execution_options(stream_results=True, yield_per=256)
            result = conn.exec_driver_sql(query)
            if not result.returns_rows:
                return
            rows = (plain_row(row) for row in result)
            emit(budget.guard(rows, buffered=fmt == "table"), list(result.keys()), fmt)
    except SQLAlchemyError as exc:
        raise UserError(error_message(database_message(exc), store.where)) from None
    except StoreError as exc:  # the statement timeout
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:  # psycopg has cancelled the statement
        raise budget.stop("interrupted") from None
