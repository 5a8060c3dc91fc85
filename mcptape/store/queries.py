"""Reading recordings back: find a session from what a user typed, list sessions, stream frames.

:mod:`mcptape.store.targets` finds a conversation where a session is expected.

Every function takes a *source*: a ``Store``, a SQLAlchemy ``Engine`` or an open
``Connection``. Frames and events are streamed in order, never loaded whole, so a
session of a thousand 20 MB frames can be shown or exported in constant memory.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
from sqlalchemy import Connection, Engine, RowMapping, func, select

from mcptape.store.schema import events, frames, sessions
from mcptape.wire.jsontext import loads_or_none
from mcptape.wire.protocol import HELLO_METHODS

LAST: Final = "last"
SHORT_ID: Final = 12
PREFIX_CANDIDATES: Final = 5
_HEX: Final = re.compile(r"[0-9a-f]+")


class SessionLookupError(LookupError):
    """A session reference that names no session, or more than one. ``str()`` is one line."""


class AmbiguousSessionError(SessionLookupError):
    """A prefix that starts several ids: typing more characters fixes it."""


class UnknownSessionError(SessionLookupError):
    """A reference that names no session; ``recent`` holds the latest sessions, for a message."""

    def __init__(self, message: str, recent: Sequence[SessionKey]) -> None:
        super().__init__(message)
        self.recent = recent


@dataclass(frozen=True, slots=True)
class SessionKey:
    """What a user sees of a session when choosing between candidates."""

    id: str
    name: str | None
    started_at: float


@dataclass(slots=True)
class StoredFrame:
    """A recorded frame as stored: its place in the session, classification and exact text."""

    seq: int
    ts: float
    direction: str
    origin: str
    kind: str
    method: str | None
    rpc_id: str | None
    size: int
    text: str
    raw: bytes | None
    meta: str | None

    @property
    def data(self) -> bytes:
        """The exact bytes on the wire (``raw`` when the text could not hold them)."""
        return self.raw if self.raw is not None else self.text.encode("utf-8")

    def message(self) -> Any:
        """The parsed JSON message, or None when the frame is not JSON."""
        try:
            return orjson.loads(self.text)
        except orjson.JSONDecodeError:
            return None

    def meta_dict(self) -> dict[str, Any] | None:
        """Transport metadata as a dict (None when there is none)."""
        if not self.meta:
            return None
        value = orjson.loads(self.meta)
        return value if isinstance(value, dict) else {"value": value}


@dataclass(slots=True)
class StoredEvent:
    """Something that happened beside the frames: a stderr line, a process exit, an error."""

    ts: float
    kind: str
    text: str | None
    data: str | None


def short_id(session_id: str) -> str:
    """The first 12 characters of a session id: what tables show and what users type."""
    return session_id[:SHORT_ID]


def describe(key: SessionKey) -> str:
    """A candidate as an error message lists it: short id and name."""
    return f"{short_id(key.id)} ({key.name})" if key.name else short_id(key.id)


def looks_like_id_prefix(ref: str) -> bool:
    """Whether ``ref`` could be the start of a session id (ids are lowercase hex)."""
    return _HEX.fullmatch(ref) is not None


def ambiguous_message(ref: str, candidates: Sequence[SessionKey], more: bool) -> str:
    """The one-line error for a prefix that starts several session ids."""
    listed = ", ".join(describe(c) for c in candidates)
    tail = ", ..." if more else ""
    return f"session prefix {ref!r} is ambiguous: it matches {listed}{tail}; type more characters of the id"


def unknown_message(ref: str, recent: Sequence[SessionKey]) -> str:
    """The one-line error for a reference that matches nothing, naming the latest sessions."""
    if not recent:
        return f"no session {ref!r}: the database has no recorded sessions yet (record one with `mcptape record`)"
    listed = ", ".join(describe(c) for c in recent)
    return (
        f"no session {ref!r} (expected an id, a unique id prefix, a session name or 'last'); "
        f"latest: {listed}; `mcptape sessions` lists them all"
    )


@contextlib.contextmanager
def connect(source: Any) -> Iterator[Connection]:
    """A connection for reading from a Store, an Engine or a Connection (used as it is)."""
    if isinstance(source, Connection):
        yield source
        return
    engine = source if isinstance(source, Engine) else source.engine
    # Reads need no write lock: the store's SQLite engine begins IMMEDIATE unless told otherwise.
    with engine.connect().execution_options(sqlite_begin="DEFERRED") as conn:
        yield conn


def _key(row: RowMapping) -> SessionKey:
    return SessionKey(row["id"], row["name"], row["started_at"])


def has_requests() -> Any:
    """A condition on ``sessions``: the client sent at least one request (the session can be
    replayed and compared)."""
    return (
        select(frames.c.seq)
        .where(
            frames.c.session_id == sessions.c.id,
            frames.c.direction == "c2s",
            frames.c.kind.in_(("request", "batch")),
        )
        .exists()
    )


def resolve_session(source: Any, ref: str, *, replayable: bool = False) -> RowMapping:
    """The sessions row ``ref`` names: a full id, a session name (the latest with it), a unique
    id prefix, or ``last`` (the latest started). Raises SessionLookupError otherwise.

    A name is looked up as given (a session recorded as ``" files "`` keeps its spaces),
    then without surrounding spaces. ``replayable``: a name or ``last`` means the latest such
    session in which the client sent a request (``replay``, ``serve`` and ``diff`` compare
    exchanges: a session recorded again without a client, or whose client never spoke, would
    compare nothing), else the latest at all."""
    newest_first = (sessions.c.started_at.desc(), sessions.c.id.desc())
    exact = ref
    ref = ref.strip()
    with connect(source) as conn:

        def latest(*where: Any) -> RowMapping | None:
            query = select(sessions).where(*where).order_by(*newest_first).limit(1)
            return conn.execute(query).mappings().first()

        def first(*where: Any) -> RowMapping | None:
            return (replayable and latest(*where, has_requests())) or latest(*where)

        if ref == LAST:
            row = first()
            if row is None:
                raise UnknownSessionError(unknown_message(ref, []), [])
            return row
        row = latest(sessions.c.id == ref)
        if row is None:  # a name as typed, spaces and all, before the name without them
            row = first(sessions.c.name == exact) or first(sessions.c.name == ref)
        if row is not None:
            return row
        if ref and looks_like_id_prefix(ref.lower()):
            query = (
                select(sessions)
                .where(sessions.c.id.startswith(ref.lower(), autoescape=True))
                .order_by(*newest_first)
                .limit(PREFIX_CANDIDATES + 1)
            )
            matches = list(conn.execute(query).mappings())
            if len(matches) == 1:
                return matches[0]
            if matches:
                keys = [_key(m) for m in matches[:PREFIX_CANDIDATES]]
                raise AmbiguousSessionError(ambiguous_message(ref, keys, len(matches) > PREFIX_CANDIDATES))
        recent = conn.execute(
            select(sessions.c.id, sessions.c.name, sessions.c.started_at).order_by(*newest_first).limit(3)
        ).mappings()
        keys = [_key(r) for r in recent]
        raise UnknownSessionError(unknown_message(ref, keys), keys)


# What a listing of sessions shows: the JSON blobs (capabilities, client and server
# info) and the error text stay out, so listing 100,000 sessions stays small.
LISTED_COLUMNS: Final = (
    "id", "name", "mode", "transport", "upstream", "started_at", "ended_at", "status", "exit_code",
    "protocol_version", "client_name", "client_version", "server_name", "server_version", "pid",
    "replay_of",
)  # fmt: skip


def list_sessions(source: Any, *, limit: int | None = None, name: str | None = None) -> list[RowMapping]:
    """Sessions, latest started first, each with a ``frames`` count; only those called ``name``.

    The rows hold :data:`LISTED_COLUMNS` and ``frames``; see :func:`iter_sessions` to stream them.
    """
    return list(iter_sessions(source, limit=limit, name=name))


def session_names(source: Any) -> list[str]:
    """The distinct names sessions were given (without counting anyone's frames)."""
    query = select(sessions.c.name).where(sessions.c.name.is_not(None)).distinct()
    with connect(source) as conn:
        return [name for (name,) in conn.execute(query)]


def iter_sessions(
    source: Any, *, limit: int | None = None, name: str | None = None, where: Sequence[Any] = ()
) -> Iterator[RowMapping]:
    """:func:`list_sessions` fetched as consumed, in constant memory; ``where``: more conditions
    on the ``sessions`` table (SQLAlchemy expressions).

    Frames are counted for the sessions listed only: ``-n 5`` of 100,000 sessions counted
    the frames of all of them first (1.4 s on 5 million frames, now 0.1 s). A replay or a
    served session comes with ``replay_of_name``: the name of the recording it played.
    """
    chosen = select(*(sessions.c[column] for column in LISTED_COLUMNS))
    if name is not None:
        chosen = chosen.where(sessions.c.name == name)
    if where:
        chosen = chosen.where(*where)
    if limit is not None:
        chosen = chosen.order_by(sessions.c.started_at.desc(), sessions.c.id.desc()).limit(limit)
    listed = chosen.subquery("listed")
    frame_count = (
        select(func.count()).select_from(frames).where(frames.c.session_id == listed.c.id).scalar_subquery()
    )
    original = sessions.alias("original")
    played = select(original.c.name).where(original.c.id == listed.c.replay_of).scalar_subquery()
    query = select(listed, frame_count.label("frames"), played.label("replay_of_name")).order_by(
        listed.c.started_at.desc(), listed.c.id.desc()
    )
    with connect(source) as conn:
        result = conn.execute(query.execution_options(**_stream_options(conn)))
        yield from result.mappings()


def _stream_options(conn: Connection) -> dict[str, Any]:
    # pysqlite steps its cursor one row per fetch, so plain iteration already streams;
    # elsewhere (PostgreSQL) a server-side cursor in small batches keeps memory flat.
    if conn.dialect.name == "sqlite":
        return {}
    return {"stream_results": True, "yield_per": 16}


def session_frames(source: Any, session_id: str, seqs: Sequence[int] | None = None) -> Iterator[StoredFrame]:
    """The session's frames in sequence order (only those whose seq is in ``seqs``, sorted,
    when given), fetched as they are consumed."""
    columns = [
        frames.c.seq, frames.c.ts, frames.c.direction, frames.c.origin, frames.c.kind,
        frames.c.method, frames.c.rpc_id, frames.c.size, frames.c.text, frames.c.raw, frames.c.meta,
    ]  # fmt: skip
    query = select(*columns).where(frames.c.session_id == session_id).order_by(frames.c.seq)
    with connect(source) as conn:
        chunks = [None] if seqs is None else [seqs[i : i + 500] for i in range(0, len(seqs), 500)]
        for chunk in chunks:
            chosen = query if chunk is None else query.where(frames.c.seq.in_(chunk))
            result = conn.execute(chosen.execution_options(**_stream_options(conn)))
            for row in result:
                yield StoredFrame(*row)


def session_events(
    source: Any, session_id: str, span: tuple[float, float] | None = None
) -> Iterator[StoredEvent]:
    """The session's events (stderr lines, process start and exit, errors) in the order recorded
    (only those within ``span``, first and last time, when given)."""
    query = (
        select(events.c.ts, events.c.kind, events.c.text, events.c.data)
        .where(events.c.session_id == session_id)
        .order_by(events.c.id)
    )
    if span is not None:
        query = query.where(events.c.ts >= span[0], events.c.ts <= span[1])
    with connect(source) as conn:
        result = conn.execute(query.execution_options(**_stream_options(conn)))
        for row in result:
            yield StoredEvent(*row)


_META_PREFIX: Final = "io.modelcontextprotocol/"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def handshake_info(request: Any, response: Any) -> dict[str, str]:
    """Protocol version and client/server names and versions from a handshake exchange.

    Understands ``initialize`` (up to 2025-11-25: ``protocolVersion``, ``clientInfo``,
    ``serverInfo``) and 2026-07-28's ``server/discover``, where they travel in ``_meta``.
    Missing values are left out.
    """
    params = _dict(_dict(request).get("params"))
    result = _dict(_dict(response).get("result"))
    request_meta = _dict(params.get("_meta"))
    result_meta = _dict(result.get("_meta"))
    client = _dict(params.get("clientInfo") or request_meta.get(_META_PREFIX + "clientInfo"))
    server = _dict(result.get("serverInfo") or result_meta.get(_META_PREFIX + "serverInfo"))
    version = (
        result.get("protocolVersion")
        or request_meta.get(_META_PREFIX + "protocolVersion")
        or params.get("protocolVersion")
    )
    found = {
        "protocol_version": version,
        "client_name": client.get("name"),
        "client_version": client.get("version"),
        "server_name": server.get("name"),
        "server_version": server.get("version"),
    }
    return {k: v for k, v in found.items() if isinstance(v, str) and v}


def session_handshake(source: Any, session_id: str, within: int | None = None) -> dict[str, str]:
    """``handshake_info`` of the session's first handshake the server answered with a result
    (a client may try ``server/discover``, get an error and fall back to ``initialize``);
    among its first ``within`` frames only, when given (a session without a handshake is
    otherwise read through to its end)."""
    where = [
        frames.c.session_id == session_id,
        frames.c.direction == "c2s",
        frames.c.kind == "request",
        frames.c.method.in_(HELLO_METHODS),
    ]
    if within is not None:
        where.append(frames.c.seq <= within)
    requests = (
        select(frames.c.seq, frames.c.rpc_id, frames.c.text).where(*where).order_by(frames.c.seq).limit(5)
    )
    with connect(source) as conn:
        for seq, rpc_id, text in list(conn.execute(requests)):
            reply = conn.execute(
                select(frames.c.kind, frames.c.text)
                .where(
                    frames.c.session_id == session_id,
                    frames.c.direction == "s2c",
                    frames.c.rpc_id == rpc_id,
                    frames.c.kind.in_(("response", "error")),
                    frames.c.seq > seq,
                )
                .order_by(frames.c.seq)
                .limit(1)
            ).first()
            if reply is not None and reply.kind == "response":
                return handshake_info(loads_or_none(text), loads_or_none(reply.text))
    return {}
