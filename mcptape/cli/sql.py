"""`mcptape sql`: run one read-only SQL query, with a time limit, over the recordings."""

from __future__ import annotations

import contextlib

import click

from mcptape.cli.common import Interrupted, Seconds, UserError, db_option
from mcptape.cli.helptext import Command
from mcptape.cli.output import output_options


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
    from mcptape.cli.output import emit
    from mcptape.store import StoreError, open_store
    from mcptape.store.sql_query import QueryFailed, run_query
    from mcptape.store.sql_sandbox import Budget, QueryStopped

    if not query.strip():
        raise UserError('the query is empty: give one SQL statement, e.g. "select * from sessions"')
    try:
        store = open_store(db, create=False, readonly=True)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    # The clock starts with the query (opening a database is not the query's doing) and runs
    # until its last row is printed.
    budget = Budget(timeout)
    # On SQLite Ctrl-C stops the query through the budget; psycopg cancels a PostgreSQL
    # statement itself on KeyboardInterrupt (run_query turns it into the same stop).
    ctrl_c = budget.catching_ctrl_c() if store.path is not None else contextlib.nullcontext()
    try:
        with ctrl_c, run_query(store, query, budget) as result:
            if result is not None:
                columns, rows = result
                emit(budget.guard(rows, buffered=fmt == "table"), columns, fmt)
    except QueryFailed as exc:
        raise UserError(str(exc)) from None
    except QueryStopped as exc:
        if exc.reason == "interrupted":
            raise Interrupted(str(exc)) from None
        raise UserError(str(exc)) from None
    finally:
        store.close()
