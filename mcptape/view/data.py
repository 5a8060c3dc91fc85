"""What the viewer's pages show, read from the store (blocking: the server calls these in a thread).

- :func:`session_list`: sessions with their status label, counts and errors, searched and filtered;
- :func:`session_timeline`: one session for its page (:mod:`mcptape.view.timeline` lays it out);
- :func:`frame_detail` and :func:`frame_bytes`: one frame (:mod:`mcptape.view.detail`).
"""

from __future__ import annotations

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
        rows = [dict(r) for r in conn.execute(query).mappings()]
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
    return dict(row)


def session_timeline(store: Any, session_id: str) -> dict[str, Any]:
    """Everything a session's page draws first (see :mod:`mcptape.view.timeline`), and ``last_id``:
    the highest frame id read, from which live updates go on."""
    from mcptape.cli.sessions import session_label

    columns = [
        frames.c.seq, frames.c.ts, frames.c.direction, frames.c.origin, frames.c.kind, frames.c.method,
        frames.c.rpc_id, frames.c.size, frames.c.request_seq,
    ]  # fmt: skip
    with connect(store) as conn:
        session = session_row(conn, session_id)
        session["label"] = session_label(store, conn, session)  # type: ignore[arg-type]
        for key, value in session_handshake(conn, session_id).items():
            session[key] = session[key] or value
        last_id = conn.execute(
            select(func.max(frames.c.id)).where(frames.c.session_id == session_id)
        ).scalar()
        rows = [
            timeline.Row(*r)
            for r in conn.execute(
                select(*columns).where(frames.c.session_id == session_id).order_by(frames.c.seq)
            )
        ]
        messages = _group_messages(conn, session_id)
        event_rows = conn.execute(
            select(events.c.id, events.c.ts, events.c.kind, func.substr(events.c.text, 1, EVENT_TEXT_MAX))
            .where(events.c.session_id == session_id)
            .order_by(events.c.id)
        ).all()
    start = session["started_at"]
    return {
        "session": session,
        "last_id": last_id or 0,
        "last_event_id": max((e[0] for e in event_rows), default=0),
        "frames": timeline.columns(rows, start),
        "events": [
            {"t": round((ts - start) * 1000, 3), "kind": kind, "text": text or ""}
            for _, ts, kind, text in event_rows
        ],
        "latency": timeline.latency(rows),
        "tools": timeline.tool_bytes(rows, messages),
        "groups": [
            {**g, "start": round((g["start"] - start) * 1000, 3), "end": round((g["end"] - start) * 1000, 3)}
            for g in timeline.groups(rows, messages)
        ],
    }


def _group_messages(conn: Connection, session_id: str) -> dict[int, Any]:
    """The messages the timeline reads: client requests that name a tool, poll a task or retry
    a round, and results that ask for input or hold a task (few, and small)."""
    text = frames.c.text
    wanted = sa.or_(
        sa.and_(
            frames.c.kind == "request",
            frames.c.direction == "c2s",
            sa.or_(
                frames.c.method.in_(("tools/call", *timeline.TASK_METHODS)), text.contains("requestState")
            ),
        ),
        sa.and_(
            frames.c.kind == "response", sa.or_(text.contains("input_required"), text.contains('"taskId"'))
        ),
    )
    query = select(frames.c.seq, text).where(
        frames.c.session_id == session_id, frames.c.size <= GROUP_TEXT_MAX, wanted
    )
    out: dict[int, Any] = {}
    for seq, body in conn.execute(query):
        try:
            out[seq] = orjson.loads(body)
        except orjson.JSONDecodeError:
            continue
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
        "frames": timeline.columns((timeline.Row(*r[1:]) for r in found), start),
        "last_id": max((r[0] for r in found), default=None),
        "events": [
            {"t": round((ts - start) * 1000, 3), "kind": kind, "text": text or ""}
            for ts, kind, text in event_rows
        ],
        "session": session,
    }
