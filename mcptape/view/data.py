"""What the viewer's pages show, read from the store (blocking: the server calls these in a thread).

- :func:`session_list`: sessions with their status label, counts and errors, searched and filtered;
- :func:`session_timeline`, :func:`frames_after` and :func:`session_stats`: one session for its page
  (:mod:`mcptape.view.timeline` lays it out; :mod:`mcptape.view.conversation` does the same for
  a conversation);
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
from mcptape.wire.protocol import is_modern

LIST_LIMIT: Final = 500
# A session's page paints from its first frames, then reads the rest in chunks: the first
# paint of a 100,000-frame session waited 1.5-4.5 s for all of them at once.
FIRST_FRAMES: Final = 2000
CHUNK_FRAMES: Final = 25_000
MAX_CHUNK: Final = 100_000
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
    from mcptape.store.describe import session_label

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
    "WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?"
)
_ALL: Final = 1 << 62


def frame_rows(conn: Connection, session_id: str, after: int = 0, limit: int = _ALL) -> list[timeline.Row]:
    """The session's frames past seq ``after`` (at most ``limit``) without their text, fetched
    by the driver itself: SQLAlchemy's row objects cost more than the query for a
    100,000-frame session."""
    sql = _FRAME_ROWS if conn.dialect.paramstyle == "qmark" else _FRAME_ROWS.replace("?", "%s")
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, (session_id, after, limit))
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
    ELSE {len(timeline.ORIGINS) - 1} END),
  count(*), max(seq)
FROM (SELECT seq, ts, direction, kind, method, rpc_id, size, request_seq, origin
      FROM frames WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?)
"""


def frame_chunk(conn: Connection, session_id: str, start: float, after: int, limit: int) -> dict[str, Any]:
    """:func:`mcptape.view.timeline.columns` of the session's frames past seq ``after`` (at most
    ``limit``), built by SQLite when it is SQLite, and ``next``: the seq to read on from (None
    when these were the last)."""
    if conn.dialect.name != "sqlite":
        rows = frame_rows(conn, session_id, after, limit)
        last = rows[-1][timeline.SEQ] if len(rows) == limit else None
        return {"frames": timeline.columns(rows, start), "next": last}
    driver = conn.connection.driver_connection
    found = driver.execute(_SQLITE_COLUMNS, (start, session_id, after, limit)).fetchone()  # type: ignore[union-attr]
    names = ("seq", "t", "dir", "kind", "method", "id", "size", "req", "origin")
    out: dict[str, Any] = {name: orjson.Fragment(value) for name, value in zip(names, found, strict=False)}
    out |= {"methods": None, "kinds": list(timeline.KINDS), "origins": list(timeline.ORIGINS)}
    return {"frames": out, "next": found[-1] if found[-2] == limit else None}


def _complete(session: dict[str, Any]) -> bool:
    return bool(session["protocol_version"] and session["client_name"] and session["server_name"])


def event_rows(conn: Connection, session_id: str, start: float) -> tuple[int, list[dict[str, Any]]]:
    """The session's events as a page lays them out, and the highest event id (live goes on from it)."""
    found = conn.execute(
        select(events.c.id, events.c.ts, events.c.kind, func.substr(events.c.text, 1, EVENT_TEXT_MAX))
        .where(events.c.session_id == session_id)
        .order_by(events.c.id)
    ).all()
    laid = [
        {"t": round((ts - start) * 1000, 3), "kind": kind, "text": text or ""} for _, ts, kind, text in found
    ]
    return max((e[0] for e in found), default=0), laid


def session_timeline(store: Any, session_id: str, limit: int = FIRST_FRAMES) -> dict[str, Any]:
    """What a session's page draws first (see :mod:`mcptape.view.timeline`): the session, its
    first ``limit`` frames (``next``: the seq the page reads on from with :func:`frames_after`,
    None when that was all of them), where the session ends (``last_seq``, ``end`` in ms, so
    the axis is whole from the start), its events, and ``last_id``, from which live updates
    go on. What needs more reading comes after the first paint (:func:`session_stats`)."""
    from mcptape.store.describe import session_label

    with connect(store) as conn:
        session = session_row(conn, session_id)
        session["label"] = session_label(store, conn, session)  # type: ignore[arg-type]
        if not _complete(session):  # looked for in the first frames here, in all of them by the stats
            for key, value in session_handshake(conn, session_id, within=limit).items():
                session[key] = session[key] or value
        last = conn.execute(
            select(frames.c.id, frames.c.seq, frames.c.ts)
            .where(frames.c.session_id == session_id)
            .order_by(frames.c.seq.desc())
            .limit(1)
        ).first()
        start = session["started_at"]
        chunk = frame_chunk(conn, session_id, start, 0, limit)
        last_event_id, laid = event_rows(conn, session_id, start)
    return {
        "session": session,
        "sessions": [session],
        "conversation": None,
        "last_id": last.id if last is not None else 0,
        "last_event_id": last_event_id,
        "frames": chunk["frames"],
        "next": chunk["next"],
        "last_seq": last.seq if last is not None else 0,
        "end": round((last.ts - start) * 1000, 3) if last is not None else 0.0,
        "events": laid,
    }


def frames_after(store: Any, session_id: str, after: int, limit: int = CHUNK_FRAMES) -> dict[str, Any]:
    """The next chunk of a session's frames for its page (see :func:`session_timeline`)."""
    with connect(store) as conn:
        start = session_row(conn, session_id)["started_at"]
        return frame_chunk(conn, session_id, start, after, min(max(limit, 1), MAX_CHUNK))


def session_stats(store: Any, session_id: str) -> dict[str, Any]:
    """Latency per method, bytes per tool and the grouped operations of a session, the
    handshake's facts when the session row lacks them (``facts``), and the conversations a
    2026-07-28 session serves."""
    with connect(store) as conn:
        session = session_row(conn, session_id)
        start = session["started_at"]
        rows = frame_rows(conn, session_id)
        messages = group_messages(conn, session_id)
        tools = tool_names(conn, session_id)
        facts = {} if _complete(session) else session_handshake(conn, session_id)
        stitched = conversations_in(conn, session_id) if is_modern(session["protocol_version"]) else []
    return {
        "latency": timeline.latency(rows),
        "tools": timeline.tool_bytes(rows, tools),
        "groups": laid_groups(timeline.groups(rows, messages), start),
        "facts": facts,
        "conversations": stitched,
    }


def conversations_in(conn: Connection, session_id: str) -> list[dict[str, Any]]:
    """The conversations a session without protocol sessions (2026-07-28) serves, as the
    ``conversations`` view stitches them, with how many of their exchanges it holds."""
    found = conn.execute(
        sa.text(
            "SELECT conversation_id, count(*) FROM conversations WHERE session_id = :s "
            "GROUP BY conversation_id ORDER BY min(requested_at)"
        ),
        {"s": session_id},
    ).all()
    return [{"id": conversation, "exchanges": int(n)} for conversation, n in found]


def laid_groups(found: list[dict[str, Any]], start: float) -> list[dict[str, Any]]:
    """Grouped operations with their times in ms since ``start``, as a page draws them."""
    return [
        {**g, "start": round((g["start"] - start) * 1000, 3), "end": round((g["end"] - start) * 1000, 3)}
        for g in found
    ]


def tool_names(conn: Connection, session_id: str) -> dict[int, str]:
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


def group_messages(conn: Connection, session_id: str) -> dict[int, Any]:
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
