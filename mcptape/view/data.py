"""What the viewer's pages show, read from the store (blocking: the server calls these in a thread).

- :func:`session_list`: sessions with their status label, counts and errors, searched and filtered;
- :func:`session_timeline` and :func:`session_stats`: one session for its page (:mod:`mcptape.view.timeline`
  lays it out);
- :func:`frame_detail` and :func:`frame_bytes`: one frame (:mod:`mcptape.view.detail`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

import orjson
import sqlalchemy as sa
from sqlalchemy import Connection, func, select

from mcptape.store.queries import LISTED_COLUMNS, connect, session_handshake
from mcptape.store.schema import events, frames, sessions
from mcptape.view import timeline

LIST_LIMIT: Final = 500
# Frames whose text the timeline reads (to name tools and find rounds and tasks) are small;
# a bigger one is a result, never the request or retry those come from.
GROUP_TEXT_MAX: Final = 256 << 10
EVENT_TEXT_MAX: Final = 400
_SEARCHED: Final = ("id", "name", "upstream", "client_name", "server_name", "mode", "protocol_version")


class NotFound(LookupError):
    """No such session or frame: ``str()`` says which."""


def plain(row: Any) -> dict[str, Any]:
    """A row as a dict with plain ``str`` keys (SQLAlchemy's are a subclass, which orjson refuses)."""
    return {str(key): value for key, value in row.items()}


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def session_list(
    store: Any, *, q: str = "", mode: str = "", status: str = "", limit: int = LIST_LIMIT
) -> list[dict[str, Any]]:
    """The latest sessions (at most ``limit``) matching the search ``q`` (any of id, name,
    upstream, client, server, mode, revision), ``mode`` and ``status``, each with ``label``
    (the status in words), ``frames`` and ``errors`` (error replies and lines that are not JSON-RPC)."""
    from mcptape.cli.sessions import session_label

    query = select(*(sessions.c[c] for c in LISTED_COLUMNS), sessions.c.replay_of)
    if q.strip():
        pattern = _like(q.strip().lower())
        query = query.where(
            sa.or_(*(func.lower(sessions.c[c]).like(pattern, escape="\\") for c in _SEARCHED))
        )
    if mode:
        query = query.where(sessions.c.mode == mode)
    if status and status != "lost":
        query = query.where(sessions.c.status == status)
    query = query.order_by(sessions.c.started_at.desc(), sessions.c.id.desc()).limit(limit)
    with connect(store) as conn:
        rows = [plain(r) for r in conn.execute(query).mappings()]
        counts = _counts(conn, [r["id"] for r in rows])
        out: list[dict[str, Any]] = []
        for row in rows:
            row["label"] = session_label(store, conn, row)  # type: ignore[arg-type]
            if status == "lost" and row["label"] != "lost":
                continue
            row["frames"], row["errors"] = counts.get(row["id"], (0, 0))
            if not (row["client_name"] and row["server_name"] and row["protocol_version"]) and len(out) < 100:
                for key, value in session_handshake(conn, row["id"]).items():
                    row[key] = row[key] or value
            out.append(row)
    return out


def _counts(conn: Connection, ids: list[str]) -> dict[str, tuple[int, int]]:
    if not ids:
        return {}
    failed = sa.case((frames.c.kind.in_(("error", "malformed")), 1), else_=0)
    query = (
        select(frames.c.session_id, func.count(), func.coalesce(func.sum(failed), 0))
        .where(frames.c.session_id.in_(ids))
        .group_by(frames.c.session_id)
    )
    return {session_id: (int(n), int(bad)) for session_id, n, bad in conn.execute(query)}


def session_row(conn: Connection, session_id: str) -> dict[str, Any]:
    row = conn.execute(select(sessions).where(sessions.c.id == session_id)).mappings().first()
    if row is None:
        raise NotFound(f"no session {session_id!r}")
    return plain(row)


_FRAME_ROWS: Final = (
    "SELECT seq, ts, direction, origin, kind, method, rpc_id, size, request_seq FROM frames "
    "WHERE session_id = ? ORDER BY seq"
)


def _frame_rows(conn: Connection, session_id: str) -> list[timeline.Row]:
    """The session's frames without their text, fetched by the driver itself: SQLAlchemy's row
    objects cost more than the query for a 100,000-frame session."""
    sql = _FRAME_ROWS if conn.dialect.paramstyle == "qmark" else _FRAME_ROWS.replace("?", "%s")
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, (session_id,))
        return cursor.fetchall()
    finally:
        cursor.close()


# SQLite builds the page's arrays itself (in C): half the time of fetching 100,000 rows into
# Python and building them there. Methods come as text (the page interns them).
_SQLITE_COLUMNS: Final = f"""
SELECT json_group_array(seq), json_group_array(round((ts - ?) * 1000, 3)),
  json_group_array(CASE direction WHEN 'c2s' THEN 0 ELSE 1 END),
  json_group_array(CASE kind {" ".join(f"WHEN '{k}' THEN {i}" for i, k in enumerate(timeline.KINDS))}
    ELSE {len(timeline.KINDS) - 1} END),
  json_group_array(coalesce(method, '')), json_group_array(rpc_id), json_group_array(size),
  json_group_array(coalesce(request_seq, 0)),
  json_group_array(CASE origin {" ".join(f"WHEN '{o}' THEN {i}" for i, o in enumerate(timeline.ORIGINS))}
    ELSE {len(timeline.ORIGINS) - 1} END)
FROM (SELECT seq, ts, direction, kind, method, rpc_id, size, request_seq, origin
      FROM frames WHERE session_id = ? ORDER BY seq)
"""


def _frame_columns(conn: Connection, session_id: str, start: float) -> dict[str, Any]:
    """:func:`mcptape.view.timeline.columns` of the session's frames, built by SQLite when it is SQLite."""
    if conn.dialect.name != "sqlite":
        return timeline.columns(_frame_rows(conn, session_id), start)
    driver = conn.connection.driver_connection
    found = driver.execute(_SQLITE_COLUMNS, (start, session_id)).fetchone()  # type: ignore[union-attr]
    names = ("seq", "t", "dir", "kind", "method", "id", "size", "req", "origin")
    out: dict[str, Any] = {name: orjson.Fragment(value) for name, value in zip(names, found, strict=True)}
    out |= {"methods": None, "kinds": list(timeline.KINDS), "origins": list(timeline.ORIGINS)}
    return out


def session_timeline(store: Any, session_id: str) -> dict[str, Any]:
    """What a session's page draws first (see :mod:`mcptape.view.timeline`): the session, its
    frames and events, and ``last_id``, the highest frame id read, from which live updates go
    on. What needs more reading comes after the first paint (:func:`session_stats`)."""
    from mcptape.cli.sessions import session_label

    with connect(store) as conn:
        session = session_row(conn, session_id)
        session["label"] = session_label(store, conn, session)  # type: ignore[arg-type]
        for key, value in session_handshake(conn, session_id).items():
            session[key] = session[key] or value
        last_id = conn.execute(
            select(func.max(frames.c.id)).where(frames.c.session_id == session_id)
        ).scalar()
        start = session["started_at"]
        columns = _frame_columns(conn, session_id, start)
        event_rows = conn.execute(
            select(events.c.id, events.c.ts, events.c.kind, func.substr(events.c.text, 1, EVENT_TEXT_MAX))
            .where(events.c.session_id == session_id)
            .order_by(events.c.id)
        ).all()
    return {
        "session": session,
        "last_id": last_id or 0,
        "last_event_id": max((e[0] for e in event_rows), default=0),
        "frames": columns,
        "events": [
            {"t": round((ts - start) * 1000, 3), "kind": kind, "text": text or ""}
            for _, ts, kind, text in event_rows
        ],
    }


def session_stats(store: Any, session_id: str) -> dict[str, Any]:
    """Latency per method, bytes per tool and the grouped operations of a session."""
    with connect(store) as conn:
        start = session_row(conn, session_id)["started_at"]
        rows = _frame_rows(conn, session_id)
        messages = _group_messages(conn, session_id)
        tools = _tool_names(conn, session_id)
    return {
        "latency": timeline.latency(rows),
        "tools": timeline.tool_bytes(rows, tools),
        "groups": [
            {**g, "start": round((g["start"] - start) * 1000, 3), "end": round((g["end"] - start) * 1000, 3)}
            for g in timeline.groups(rows, messages)
        ],
    }


def _tool_names(conn: Connection, session_id: str) -> dict[int, str]:
    """The tool each ``tools/call`` request of the session names, by its seq, read by the
    database's own JSON functions (50,000 calls parsed in Python took a second)."""
    if conn.dialect.name == "sqlite":
        name: Any = sa.case(
            (func.json_valid(frames.c.text) == 1, func.json_extract(frames.c.text, "$.params.name")),
            else_=sa.null(),
        )
    elif conn.dialect.name == "postgresql":
        # mcptape_jsonb (created by the migrations) is NULL for a text jsonb cannot read.
        name = sa.literal_column("mcptape_jsonb(frames.text) -> 'params' ->> 'name'")
    else:
        return {}
    query = select(frames.c.seq, name).where(
        frames.c.session_id == session_id,
        frames.c.method == "tools/call",
        frames.c.kind == "request",
        frames.c.size <= GROUP_TEXT_MAX,
    )
    return {seq: value for seq, value in conn.execute(query).fetchall() if isinstance(value, str)}


def _group_messages(conn: Connection, session_id: str) -> dict[int, Any]:
    """The messages the timeline reads for its groups: client requests that poll a task or
    retry a round, results that ask for input or hold a task, and the requests those answer."""
    text = frames.c.text
    wanted = sa.or_(
        sa.and_(
            frames.c.kind == "request",
            frames.c.direction == "c2s",
            sa.or_(frames.c.method.in_(timeline.TASK_METHODS), text.contains("requestState")),
        ),
        sa.and_(
            frames.c.kind == "response", sa.or_(text.contains("input_required"), text.contains('"taskId"'))
        ),
    )
    in_session = frames.c.session_id == session_id
    query = select(frames.c.seq, frames.c.request_seq, text).where(
        in_session, frames.c.size <= GROUP_TEXT_MAX, wanted
    )
    out: dict[int, Any] = {}
    asked: set[int] = set()
    for seq, request_seq, body in conn.execute(query).fetchall():
        with contextlib.suppress(orjson.JSONDecodeError):
            out[seq] = orjson.loads(body)
            if request_seq is not None:
                asked.add(request_seq)
    # The requests that rounds and tasks answer: their method and subject label the group.
    missing = sorted(asked - out.keys())
    for start in range(0, len(missing), 500):
        chunk = missing[start : start + 500]
        query = select(frames.c.seq, frames.c.request_seq, text).where(
            in_session, frames.c.seq.in_(chunk), frames.c.size <= GROUP_TEXT_MAX
        )
        for seq, _, body in conn.execute(query).fetchall():
            with contextlib.suppress(orjson.JSONDecodeError):
                out[seq] = orjson.loads(body)
    return out


def frames_since(store: Any, session_id: str, after_id: int, after_event: int) -> dict[str, Any]:
    """A session's frames and events written after those a page loaded (live updates go on from here)."""
    columns = [
        frames.c.id, frames.c.seq, frames.c.ts, frames.c.direction, frames.c.origin, frames.c.kind,
        frames.c.method, frames.c.rpc_id, frames.c.size, frames.c.request_seq,
    ]  # fmt: skip
    with connect(store) as conn:
        session = session_row(conn, session_id)
        found = conn.execute(
            select(*columns)
            .where(frames.c.session_id == session_id, frames.c.id > after_id)
            .order_by(frames.c.seq)
        ).all()
        event_rows = conn.execute(
            select(events.c.ts, events.c.kind, func.substr(events.c.text, 1, EVENT_TEXT_MAX))
            .where(events.c.session_id == session_id, events.c.id > after_event)
            .order_by(events.c.id)
        ).all()
    start = session["started_at"]
    return {
        "frames": timeline.columns([tuple(r[1:]) for r in found], start),
        "last_id": max((r[0] for r in found), default=None),
        "events": [
            {"t": round((ts - start) * 1000, 3), "kind": kind, "text": text or ""}
            for ts, kind, text in event_rows
        ],
        "session": session,
    }
