"""What the tools of ``mcptape mcp`` do: read the recordings, bounded, and never write.

:class:`Recordings` holds the database (opened read-only: never created, never migrated)
and the registry ``replay`` may start servers from. Each tool takes the arguments a
client sent and returns the structured result its output schema
(:mod:`mcptape.servers.recordings.schemas`) describes, or raises :class:`ToolFailure`
with one line for the client. The database work is blocking: the server runs it on a
worker thread.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from mcptape.servers.recordings import shaping
from mcptape.servers.recordings.arguments import Arguments, ToolFailure
from mcptape.servers.recordings.schemas import COUNTS, MAX_RESULT_CHARS, SECONDS

if TYPE_CHECKING:
    from mcptape.store import Store


class Recordings:
    """The recordings an ``mcptape mcp`` serves: a database, and the registry for ``replay``."""

    def __init__(self, db: str | None, config_path: str | None = None) -> None:
        self.db = db
        self.config_path = config_path
        self._store: Store | None = None
        self._lock = threading.Lock()

    def store(self) -> Store:
        """The database, opened read-only on first use (a missing one is a one-line failure)."""
        from mcptape.store import StoreError, open_store

        with self._lock:
            if self._store is None:
                try:
                    store = open_store(self.db, create=False, readonly=True)
                except StoreError as exc:
                    raise ToolFailure(str(exc)) from None
                behind = _behind(store)
                if behind is not None:
                    store.close()
                    raise ToolFailure(behind)
                self._store = store
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- list_sessions -----------------------------------------------------------------------

    def list_sessions(self, arguments: Any) -> dict[str, Any]:
        from mcptape.store.describe import data_row, session_label
        from mcptape.store.queries import connect, iter_sessions
        from mcptape.store.schema import sessions

        args = Arguments(arguments, "list_sessions")
        limit = args.bounded("limit", *COUNTS["sessions"])
        where = []
        for key, column in (("name", sessions.c.name), ("server", sessions.c.server_name)):
            value = args.text(key)
            if value is not None:
                where.append(shaping.matching(column, value))
        for key in ("mode", "status"):
            value = args.text(key)
            if value is not None:
                where.append(sessions.c[key] == value)
        since, until = shaping.when(args.text("since"), "since"), shaping.when(args.text("until"), "until")
        if since is not None:
            where.append(sessions.c.started_at >= since)
        if until is not None:
            where.append(sessions.c.started_at < until)
        args.done()
        store = self.store()
        with _reading(), connect(store) as conn:
            rows = list(iter_sessions(conn, limit=limit + 1, where=where))
            listed = [
                shaping.session(data_row(r, session_label(store, conn, r) == "lost")) for r in rows[:limit]
            ]
        return {"sessions": listed, "truncated": len(rows) > limit}

    # -- show_session ---------------------------------------------------------------------------

    def show_session(self, arguments: Any) -> dict[str, Any]:
        from sqlalchemy import text

        from mcptape.store.describe import data_row, session_label
        from mcptape.store.queries import connect, iter_sessions, resolve_session
        from mcptape.store.schema import sessions

        args = Arguments(arguments, "show_session")
        ref = args.required_text("session")
        cursor = args.bounded("cursor", 0, 1 << 31, low=0)
        limit = args.bounded("limit", *COUNTS["exchanges"])
        chars = args.bounded("max_chars", *COUNTS["chars"])
        with_events = args.flag("events")
        args.done()
        store = self.store()
        with _reading(), connect(store) as conn:
            row = _resolve(resolve_session, conn, ref)
            listed = next(iter_sessions(conn, limit=1, where=[sessions.c.id == row["id"]]))
            session = shaping.session(data_row(listed, session_label(store, conn, listed) == "lost"))
            session["error"] = shaping.cut(row["error"], chars)
            total = conn.execute(
                text("select count(*) from exchanges where session_id = :s"), {"s": row["id"]}
            ).scalar_one()
            page = conn.execute(
                text(
                    "select direction, method, rpc_id, request_seq, response_seq, requested_at, latency_ms, "
                    "is_error, error_code, error_message, answered_by, substr(request, 1, :n) as request, "
                    "length(request) as request_length, substr(response, 1, :n) as response, "
                    "length(response) as response_length from exchanges where session_id = :s "
                    "order by request_seq, request_batch_index limit :limit offset :offset"
                ),
                {"s": row["id"], "n": chars, "limit": limit, "offset": cursor},
            ).mappings()
            exchanges: list[dict[str, Any]] = []
            used = 0
            for exchange in page:
                item = shaping.exchange(exchange, chars)
                used += sum(len(v) for v in (item["request"], item["response"]) if isinstance(v, str))
                if exchanges and used > MAX_RESULT_CHARS:
                    break  # the rest on the next page
                exchanges.append(item)
            events = shaping.events(conn, row["id"], chars) if with_events else None
        following = cursor + len(exchanges)
        result: dict[str, Any] = {
            "session": session,
            "exchanges": exchanges,
            "total": total,
            "next_cursor": following if following < total else None,
        }
        if events is not None:
            result["events"] = events
        return result

    # -- query ------------------------------------------------------------------------------------

    def query(self, arguments: Any) -> dict[str, Any]:
        from mcptape.store.sql_query import QueryFailed, run_query
        from mcptape.store.sql_sandbox import Budget, QueryStopped

        args = Arguments(arguments, "query")
        sql = args.required_text("sql")
        timeout = args.bounded_number("timeout", *SECONDS["query_timeout"])
        max_rows = args.bounded("max_rows", *COUNTS["rows"])
        chars = args.bounded("max_chars", *COUNTS["chars"])
        args.done()
        if not sql.strip():
            raise ToolFailure('the query is empty: give one SQL statement, e.g. "select * from sessions"')
        store = self.store()
        budget = Budget(timeout)
        out: list[list[Any]] = []
        cut = used = 0
        truncated = False
        columns: list[str] = []
        try:
            with run_query(store, sql, budget) as result:
                columns, rows = result if result is not None else ([], iter(()))
                for row in budget.guard(rows, buffered=False):
                    if len(out) >= max_rows or used > MAX_RESULT_CHARS:
                        truncated = True
                        break
                    values = []
                    for value in row:
                        shown, was_cut = shaping.query_value(value, chars)
                        cut += was_cut
                        used += len(shown) if isinstance(shown, str) else 8
                        values.append(shown)
                    out.append(values)
        except (QueryFailed, QueryStopped) as exc:
            # The sandbox speaks of the command line; here it is the tool and its arguments.
            message = (
                str(exc)
                .replace("`mcptape sql`", "the query tool")
                .replace("--timeout", "the timeout argument")
            )
            raise ToolFailure(message) from None
        return {
            "columns": columns,
            "rows": out,
            "row_count": len(out),
            "truncated": truncated,
            "values_cut": cut,
        }

    # -- diff -------------------------------------------------------------------------------------

    def diff(self, arguments: Any) -> dict[str, Any]:
        from sqlalchemy.exc import SQLAlchemyError

        from mcptape.replay.diff_report import report_json, report_lines, session_snapshot
        from mcptape.replay.normalise import Normaliser
        from mcptape.replay.schema_diff import compare
        from mcptape.store.describe import database_message
        from mcptape.store.queries import SessionLookupError

        args = Arguments(arguments, "diff")
        a, b = args.required_text("a"), args.required_text("b")
        args.done()
        store = self.store()
        try:
            with _reading():
                first, second = session_snapshot(store, a), session_snapshot(store, b)
        except SessionLookupError as exc:
            raise ToolFailure(str(exc)) from None
        except SQLAlchemyError as exc:
            raise ToolFailure(f"cannot read the recording: {database_message(exc)}") from None
        report = compare(first[1], second[1], Normaliser())
        *_, summary = report_lines(report, first, second)
        return {**report_json(report, first, second), "summary": summary}

    # -- replay (on the event loop) -----------------------------------------------------------------

    async def replay(self, arguments: Any) -> dict[str, Any]:
        import anyio

        from mcptape.proxy.early_signals import STOP_SIGNALS, die_of, die_on
        from mcptape.replay.compare import report_json, summary_line
        from mcptape.replay.run import replay_tape
        from mcptape.servers.recordings.replaying import load_tape, replay_plan

        args = Arguments(arguments, "replay")
        ref = args.required_text("session")
        name = args.required_text("server")
        timeout = args.bounded_number("timeout", *SECONDS["replay_timeout"])
        args.done()
        plan = replay_plan(name, self.config_path, timeout)
        tape = await anyio.to_thread.run_sync(load_tape, self.store(), ref)
        replayed = await replay_tape(tape, plan)
        # The replay's session took the signals over, to shut the replayed server down:
        # they end the server again, and one that stopped the replay ends it now.
        die_on(STOP_SIGNALS)
        if replayed.interrupted_by is not None:
            die_of(replayed.interrupted_by)
        result = replayed.result
        if result.error is not None:
            raise ToolFailure(f"the replay of {tape.source} against {name} could not run: {result.error}")
        return {
            "report": report_json([result]),
            "summary": summary_line([result]),
            "passed": not result.failed,
        }


# -- helpers ------------------------------------------------------------------------------------


class _reading:
    """Database errors while reading, as one line for the client."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        from sqlalchemy.exc import SQLAlchemyError

        if isinstance(exc, SQLAlchemyError):
            from mcptape.store.describe import database_message

            raise ToolFailure(f"cannot read the recordings: {database_message(exc)}") from None


def _behind(store: Store) -> str | None:
    """Why a database an older mcptape recorded cannot be read as it is (this server never migrates it)."""
    from alembic.script import ScriptDirectory

    from mcptape.migrations.runner import alembic_config, current_revision, table_names

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    with store.engine.connect() as conn:
        current = current_revision(conn, table_names(conn))
    if current == head:
        return None
    return (
        f"{store.where} was recorded by an older mcptape (schema {current}, this one reads {head}) and "
        "mcptape mcp never writes: bring it up to date once with `mcptape sessions --db ...`"
    )


def _resolve(resolve: Any, conn: Any, ref: str) -> Any:
    from mcptape.store.queries import SessionLookupError

    try:
        return resolve(conn, ref)
    except SessionLookupError as exc:
        raise ToolFailure(str(exc)) from None
