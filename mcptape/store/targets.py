"""What a user names where a session is expected: one session, or a conversation, and its frames.

A conversation is what one client did, wherever it was recorded (the ``conversations``
view, migration 0005, says how exchanges are stitched): every session row sharing a
``conversation_id`` (one client session recorded by several gateway replicas), or, for
2026-07-28 traffic, the exchanges the view gives a ``trace-<trace id>`` or
``client-<session>-<name>/<version>`` id, in one session or several. `show`, `tail` and
the viewer resolve what they are given here, once: :func:`resolve_target`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from sqlalchemy import Connection, RowMapping, select
from sqlalchemy import text as sql_text

from mcptape.store.queries import (
    PREFIX_CANDIDATES,
    AmbiguousSessionError,
    SessionKey,
    SessionLookupError,
    StoredEvent,
    StoredFrame,
    UnknownSessionError,
    connect,
    describe,
    looks_like_id_prefix,
    resolve_session,
    session_events,
    session_frames,
)
from mcptape.store.schema import sessions

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Target:
    """What a user named where a session is expected: one session, or a conversation.

    A conversation (see the ``conversations`` view) is every session row sharing a
    ``conversation_id`` (one client session recorded by several gateway replicas), or
    for 2026-07-28 traffic (``trace-…``, ``client-…`` ids) some exchanges of one or more
    sessions: ``seqs`` then holds, per session id, the seqs of those exchanges' frames
    (requests and their replies), ``span`` when they happened, and ``windows`` when each
    ran in each session: a pool session serves other clients too, so of its events only
    those while one of the conversation's exchanges ran there are the conversation's.
    """

    sessions: tuple[RowMapping, ...]  # the first started first
    conversation: str | None = None  # None: one session, named as a session
    seqs: Mapping[str, tuple[int, ...]] | None = None  # None: every frame of the sessions
    span: tuple[float, float] | None = None
    # Per session: when each of its exchanges ran there (request to reply), for its events.
    windows: Mapping[str, tuple[tuple[float, float], ...]] | None = None

    @property
    def session(self) -> RowMapping:
        """The session (of a conversation: the first started)."""
        return self.sessions[0]

    @property
    def session_ids(self) -> list[str]:
        return [row["id"] for row in self.sessions]

    @property
    def started_at(self) -> float:
        """What times are counted from: the first session's start, or the first exchange's."""
        return self.span[0] if self.span is not None else min(row["started_at"] for row in self.sessions)


_STITCHED: Final = ("trace-", "client-")  # conversation ids the view makes from the traffic


def conversation_unknown_message(ref: str, recent: Sequence[SessionKey]) -> str:
    """The one-line error for a reference naming neither a session nor a conversation."""
    if ref.startswith(_STITCHED):
        return (
            f"no conversation {ref!r} in the conversations view; "
            '`mcptape sql "select distinct conversation_id from conversations"` lists them'
        )
    if not recent:
        return (
            f"no session or conversation {ref!r}: the database has no recorded sessions yet "
            "(record one with `mcptape record`)"
        )
    listed = ", ".join(describe(c) for c in recent)
    return (
        f"no session or conversation {ref!r} (expected a session id, a unique id prefix, a session name, "
        f"'last', or a conversation id: trace-..., client-... or a shared conversation_id); latest: {listed}"
    )


def resolve_target(source: Any, ref: str) -> Target:
    """The session ``ref`` names (as :func:`resolve_session` finds it), else the conversation it
    names: a ``conversation_id`` shared by session rows (or a unique prefix of one), or a
    ``trace-…``/``client-…`` id of the ``conversations`` view (or a unique prefix).
    Raises SessionLookupError with a one-line message otherwise."""
    with connect(source) as conn:
        try:
            return Target((resolve_session(conn, ref),))
        except UnknownSessionError as exc:
            recent = exc.recent
        found = _conversation(conn, ref.strip())
        if found is None:
            raise SessionLookupError(conversation_unknown_message(ref.strip(), recent))
        return found


def _conversation(conn: Connection, ref: str) -> Target | None:
    if not ref:
        return None
    if ref.startswith(_STITCHED):
        return _stitched_conversation(conn, ref)
    by_start = (sessions.c.started_at, sessions.c.id)
    rows = list(
        conn.execute(select(sessions).where(sessions.c.conversation_id == ref).order_by(*by_start)).mappings()
    )
    if not rows:
        # Ids are lowercase hex; SQLite's LIKE ignores case and PostgreSQL's does not.
        prefix = ref.lower() if looks_like_id_prefix(ref.lower()) else ref
        ids = list(
            conn.execute(
                select(sessions.c.conversation_id)
                .where(sessions.c.conversation_id.startswith(prefix, autoescape=True))
                .distinct()
                .limit(PREFIX_CANDIDATES + 1)
            ).scalars()
        )
        if len(ids) > 1:
            raise AmbiguousSessionError(_ambiguous_conversation(ref, ids))
        if not ids:
            return None
        ref = ids[0]
        query = select(sessions).where(sessions.c.conversation_id == ref).order_by(*by_start)
        rows = list(conn.execute(query).mappings())
    return Target(tuple(rows), ref)


def _ambiguous_conversation(ref: str, ids: Sequence[str]) -> str:
    listed = ", ".join(ids[:PREFIX_CANDIDATES]) + (", ..." if len(ids) > PREFIX_CANDIDATES else "")
    return f"conversation prefix {ref!r} is ambiguous: it matches {listed}; type more of the id"


def _stitched_conversation(conn: Connection, ref: str) -> Target | None:
    """A conversation the view stitched from 2026-07-28 traffic: its exchanges' frames."""
    pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    view = sql_text(
        "SELECT conversation_id, session_id, request_seq, response_seq, requested_at, responded_at "
        "FROM conversations WHERE conversation_id LIKE :pattern ESCAPE '\\'"
    )
    rows = conn.execute(view, {"pattern": pattern}).all()
    ids = sorted({row[0] for row in rows})
    if ref not in ids:
        if len(ids) > 1:
            raise AmbiguousSessionError(_ambiguous_conversation(ref, ids))
        if not ids:
            return None
        ref = ids[0]
    seqs: dict[str, set[int]] = {}
    windows: dict[str, list[tuple[float, float]]] = {}
    for conversation, session_id, request_seq, response_seq, requested_at, responded_at in rows:
        if conversation != ref:
            continue
        seqs.setdefault(session_id, set()).update(s for s in (request_seq, response_seq) if s is not None)
        windows.setdefault(session_id, []).append((requested_at, responded_at or requested_at))
    first = min(a for w in windows.values() for a, _ in w)
    last = max(b for w in windows.values() for _, b in w)
    query = (
        select(sessions).where(sessions.c.id.in_(sorted(seqs))).order_by(sessions.c.started_at, sessions.c.id)
    )
    found = tuple(conn.execute(query).mappings())
    return Target(
        found,
        ref,
        {sid: tuple(sorted(s)) for sid, s in seqs.items()},
        (first, last),
        {sid: tuple(sorted(w)) for sid, w in windows.items()},
    )


def target_frames(source: Any, target: Target) -> Iterator[tuple[int, StoredFrame]]:
    """The frames of a session or a conversation, each with the index of its session in
    ``target.sessions``: merged by time, each session's in its own order (a tie: the
    session listed first)."""
    with connect(source) as conn:
        streams = [
            _numbered(index, session_frames(conn, sid, _seqs(target, sid)))
            for index, sid in enumerate(target.session_ids)
        ]
        yield from heapq.merge(*streams, key=lambda item: (item[1].ts, item[0]))


def target_events(source: Any, target: Target) -> Iterator[tuple[int, StoredEvent]]:
    """The events of a session or a conversation (of a stitched conversation: those of each
    session while one of its exchanges ran there), like :func:`target_frames`."""
    with connect(source) as conn:
        streams = [
            _numbered(
                index, _events(conn, sid, None if target.windows is None else target.windows.get(sid, ()))
            )
            for index, sid in enumerate(target.session_ids)
        ]
        yield from heapq.merge(*streams, key=lambda item: (item[1].ts, item[0]))


def _events(
    conn: Connection, session_id: str, windows: Sequence[tuple[float, float]] | None
) -> Iterator[StoredEvent]:
    if windows is None:
        yield from session_events(conn, session_id)
        return
    if not windows:
        return
    span = (min(a for a, _ in windows), max(b for _, b in windows))
    for event in session_events(conn, session_id, span):
        if any(a <= event.ts <= b for a, b in windows):
            yield event


def _numbered(index: int, items: Iterator[T]) -> Iterator[tuple[int, T]]:
    for item in items:
        yield index, item


def _seqs(target: Target, session_id: str) -> Sequence[int] | None:
    return None if target.seqs is None else target.seqs.get(session_id, ())
