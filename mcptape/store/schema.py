"""The recording tables. Alembic migrations create them; this module is their one description.

Times are seconds since the Unix epoch (REAL), which both SQLite and PostgreSQL
handle and which SQL users can turn into dates (`datetime(ts, 'unixepoch')`).

Requests and their replies are paired when frames are written (see
:mod:`mcptape.store.correlation`), so the views join on indexed columns: a reply
frame carries its request's ``seq`` in ``request_seq`` and its request's ``method``;
pairs where either side is an element of a batch (2025-03-26) go to ``batch_replies``.

A frame's exact wire bytes are ``text`` encoded as UTF-8, unless ``raw`` is set:
``raw`` holds the bytes whenever they are not valid UTF-8 (or were cut because of
their size), so ``raw if raw is not None else text.encode()`` gives them back.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    text,
)

metadata = MetaData()

# 64-bit ids on PostgreSQL (SERIAL stops at 2**31 frames); on SQLite an INTEGER
# PRIMARY KEY is the 64-bit rowid already, and BIGINT would stop it being one.
BIG_ID = BigInteger().with_variant(Integer(), "sqlite")

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(32), primary_key=True),  # uuid4 hex
    Column("name", Text),  # user-given, e.g. the mcpServers entry name
    Column("mode", String(16), nullable=False),  # record, proxy, call, replay, serve
    Column("transport", String(32)),  # downstream->upstream, e.g. "stdio->stdio"
    Column("upstream", Text),  # human description: the command line or URL
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("status", String(16), nullable=False),  # running, ok, error, interrupted
    Column("exit_code", Integer),  # the upstream process's exit status
    Column("error", Text),  # why it ended badly, with the last stderr lines
    Column("protocol_version", String(32)),
    Column("client_name", Text),
    Column("client_version", Text),
    Column("server_name", Text),
    Column("server_version", Text),
    Column("client_info", Text),  # JSON
    Column("server_info", Text),  # JSON
    Column("client_capabilities", Text),  # JSON
    Column("server_capabilities", Text),  # JSON
    Column("replay_of", String(32)),  # the session a replay re-drives
    Column("pid", Integer),  # mcptape's process id
    Column("mcptape_version", String(32)),
    Column("replica", Text),  # the gateway replica that recorded it (mcptape proxy --replica)
    # Shared by the rows of one client session recorded by several replicas; NULL: its own id.
    Column("conversation_id", String(64)),
    Index(
        "ix_sessions_conversation",
        "conversation_id",
        sqlite_where=text("conversation_id IS NOT NULL"),
        postgresql_where=text("conversation_id IS NOT NULL"),
    ),
)

frames = Table(
    "frames",
    metadata,
    Column("id", BIG_ID, primary_key=True, autoincrement=True),
    Column("session_id", String(32), ForeignKey("sessions.id"), nullable=False),
    Column("seq", Integer, nullable=False),  # 1, 2, ... per session, both directions, in order seen
    Column("ts", Float, nullable=False),
    Column("direction", String(3), nullable=False),  # c2s, s2c
    Column("origin", String(8), nullable=False),  # client, server, proxy
    Column("kind", String(16), nullable=False),  # request notification response error batch malformed
    Column("method", Text),
    Column("rpc_id", Text),  # the id as compact JSON: 1 and "1" stay distinct
    Column("size", BigInteger, nullable=False),  # bytes on the wire
    Column("text", Text, nullable=False),
    Column("raw", LargeBinary),  # exact bytes when text cannot hold them
    Column("meta", Text),  # JSON: transport metadata
    Column("request_seq", Integer),  # on a reply: the seq of the frame holding its request
    Index("ix_frames_session_seq", "session_id", "seq", unique=True),
    Index("ix_frames_session_rpc", "session_id", "rpc_id", "direction"),
    Index("ix_frames_method", "method"),
    Index(
        "ix_frames_session_request",
        "session_id",
        "request_seq",
        sqlite_where=text("request_seq IS NOT NULL"),
        postgresql_where=text("request_seq IS NOT NULL"),
    ),
    Index(
        "ix_frames_batches",
        "session_id",
        "seq",
        sqlite_where=text("kind = 'batch'"),
        postgresql_where=text("kind = 'batch'"),
    ),
)

# A request and its reply when either is an element of a batch frame: the element's
# index in its batch, or -1 for a frame that is not a batch (so the key needs no NULL).
batch_replies = Table(
    "batch_replies",
    metadata,
    Column("session_id", String(32), ForeignKey("sessions.id"), nullable=False),
    Column("request_seq", Integer, nullable=False),
    Column("request_index", Integer, nullable=False),
    Column("reply_seq", Integer, nullable=False),
    Column("reply_index", Integer, nullable=False),
    Index("ix_batch_replies_request", "session_id", "request_seq", "request_index", unique=True),
)

events = Table(
    "events",
    metadata,
    Column("id", BIG_ID, primary_key=True, autoincrement=True),
    Column("session_id", String(32), ForeignKey("sessions.id"), nullable=False),
    Column("ts", Float, nullable=False),
    Column("kind", String(32), nullable=False),  # stderr, process_start, process_exit, error, signal
    Column("text", Text),
    Column("data", Text),  # JSON
    Index("ix_events_session", "session_id", "id"),
)

# A gateway replica's heartbeat: the others close the running sessions of one not seen for a while.
replicas = Table(
    "replicas",
    metadata,
    Column("name", Text, primary_key=True),
    Column("pid", Integer),
    Column("started_at", Float),
    Column("seen_at", Float, nullable=False),
)
