"""Replies paired with their requests when written: frames.request_seq, batch_replies, views V3.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26

A reply frame gets ``request_seq`` (the seq of the frame holding its request) and its
request's ``method``; pairs involving a batch element go to the new ``batch_replies``
table. Partial indexes serve the views: replies by (session_id, request_seq), and batch
frames by (session_id, seq). Existing recordings are backfilled by running the writer's
pairing (mcptape.store.correlation.pair_stored) over their frames. The views are
recreated from mcptape/migrations/frozen/views_0003.py; the downgrade puts 0002's back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import sqlalchemy as sa
from alembic import op

from mcptape.migrations.frozen import views_0002, views_0003

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

_BACKFILL_CHUNK = 5000


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    for statement in views_0002.drop_statements(dialect):
        op.execute(sa.text(statement))
    with op.batch_alter_table("frames") as batch:
        batch.add_column(sa.Column("request_seq", sa.Integer))
    op.create_table(
        "batch_replies",
        sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("request_seq", sa.Integer, nullable=False),
        sa.Column("request_index", sa.Integer, nullable=False),
        sa.Column("reply_seq", sa.Integer, nullable=False),
        sa.Column("reply_index", sa.Integer, nullable=False),
    )
    op.create_index(
        "ix_batch_replies_request",
        "batch_replies",
        ["session_id", "request_seq", "request_index"],
        unique=True,
    )
    if op.get_context().as_sql:
        # `alembic upgrade --sql` prints SQL for a DBA: the pairing needs Python, so a
        # database migrated that way shows its older replies unpaired in `exchanges`.
        op.execute(sa.text("-- frames recorded before 0003 are not paired: migrate online to backfill"))
    else:
        _backfill(op.get_bind())
    op.create_index(
        "ix_frames_session_request",
        "frames",
        ["session_id", "request_seq"],
        sqlite_where=sa.text("request_seq IS NOT NULL"),
        postgresql_where=sa.text("request_seq IS NOT NULL"),
    )
    op.create_index(
        "ix_frames_batches",
        "frames",
        ["session_id", "seq"],
        sqlite_where=sa.text("kind = 'batch'"),
        postgresql_where=sa.text("kind = 'batch'"),
    )
    for statement in views_0003.create_statements(dialect):
        op.execute(sa.text(statement))


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    for statement in views_0003.drop_statements(dialect):
        op.execute(sa.text(statement))
    op.drop_index("ix_frames_batches", "frames")
    op.drop_index("ix_frames_session_request", "frames")
    op.drop_index("ix_batch_replies_request", "batch_replies")
    op.drop_table("batch_replies")
    with op.batch_alter_table("frames") as batch:
        batch.drop_column("request_seq")
    for statement in views_0002.create_statements(dialect):
        op.execute(sa.text(statement))


def _stored_frames(conn: sa.Connection) -> Iterator[tuple[Any, ...]]:
    """Every frame that can take part in a pair, in (session, seq) order, batches parsed."""
    rows = conn.exec_driver_sql(
        "SELECT id, session_id, seq, direction, kind, method, rpc_id,"
        " CASE WHEN kind = 'batch' THEN text END"
        " FROM frames WHERE kind IN ('request', 'response', 'error', 'batch')"
        " ORDER BY session_id, seq"
    )
    for frame_id, session_id, seq, direction, kind, method, rpc_id, text in rows:
        batch = None
        if text is not None:
            try:
                batch = orjson.loads(text)
            except orjson.JSONDecodeError:
                batch = None
        yield frame_id, session_id, seq, direction, kind, method, rpc_id, batch


def _backfill(conn: sa.Connection) -> None:
    # The pairing the writer does from now on, run once over what was recorded before.
    from mcptape.store.correlation import pair_stored

    replies, pairs = pair_stored(list(_stored_frames(conn)))
    update = sa.text("UPDATE frames SET request_seq = :request_seq, method = :method WHERE id = :id")
    for start in range(0, len(replies), _BACKFILL_CHUNK):
        chunk = replies[start : start + _BACKFILL_CHUNK]
        conn.execute(
            update, [{"id": r.frame_id, "request_seq": r.request_seq, "method": r.method} for r in chunk]
        )
    insert = sa.text(
        "INSERT INTO batch_replies (session_id, request_seq, request_index, reply_seq, reply_index)"
        " VALUES (:s, :q, :qi, :r, :ri)"
    )
    for start in range(0, len(pairs), _BACKFILL_CHUNK):
        rows = pairs[start : start + _BACKFILL_CHUNK]
        conn.execute(insert, [{"s": s, "q": q, "qi": qi, "r": r, "ri": ri} for s, q, qi, r, ri in rows])
