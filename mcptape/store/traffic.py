"""A session's traffic read through the SQL views, for exporters: exchanges, notifications, HTTP frames.

The views already pair each request with its reply (``exchanges``: by the pairs the
writer stored, batches included), open batches (``messages``) and put the HTTP metadata
in columns (``http_frames``): exporters read them instead of pairing frames again.
Rows stream as they are consumed (a session may hold 64 MiB frames).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, RowMapping

_EXCHANGES = text(
    "SELECT direction, method, rpc_id, request_seq, response_seq, requested_at, responded_at,"
    " is_error, error_code, error_message, request, response, answered_by"
    " FROM exchanges WHERE session_id = :sid ORDER BY request_seq, request_batch_index"
)
_NOTIFICATIONS = text(
    "SELECT seq, ts, direction, origin, method, text FROM messages"
    " WHERE session_id = :sid AND kind = 'notification' ORDER BY seq, batch_index"
)
_HTTP_FRAMES = text(
    "SELECT f.seq, f.ts, f.direction, f.origin, f.kind, f.method, f.rpc_id, f.text, f.meta,"
    " h.http_method, h.path, h.stream, h.status, h.event_id, h.headers"
    " FROM http_frames AS h JOIN frames AS f ON f.id = h.frame_id"
    " WHERE h.session_id = :sid ORDER BY f.seq"
)
_HTTP_SESSION_ID = text(
    "SELECT http_session_id FROM http_frames WHERE session_id = :sid AND http_session_id IS NOT NULL"
    " ORDER BY seq LIMIT 1"
)


def _stream(conn: Connection, query: Any, session_id: str) -> Iterator[RowMapping]:
    # pysqlite steps its cursor one row per fetch; PostgreSQL needs a server-side cursor.
    options = {} if conn.dialect.name == "sqlite" else {"stream_results": True, "yield_per": 16}
    result = conn.execution_options(**options).execute(query, {"sid": session_id})
    yield from result.mappings()


def exchanges(conn: Connection, session_id: str) -> Iterator[RowMapping]:
    """Rows of ``exchanges`` (each request with its reply, if any), in request order."""
    return _stream(conn, _EXCHANGES, session_id)


def notifications(conn: Connection, session_id: str) -> Iterator[RowMapping]:
    """The notifications of the session (batch elements included), in order."""
    return _stream(conn, _NOTIFICATIONS, session_id)


def http_frames(conn: Connection, session_id: str) -> Iterator[RowMapping]:
    """The frames that travelled over HTTP, with their metadata as columns and their text."""
    return _stream(conn, _HTTP_FRAMES, session_id)


def http_session_id(conn: Connection, session_id: str) -> str | None:
    """The first ``Mcp-Session-Id`` the session's HTTP frames carried."""
    row = conn.execute(_HTTP_SESSION_ID, {"sid": session_id}).first()
    return str(row[0]) if row is not None else None
