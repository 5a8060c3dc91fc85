"""The recording tables (sessions, frames, events), their indexes and the SQL views.

Revision ID: 0001
Revises:
Create Date: 2026-05-10

The tables are spelled out here rather than taken from mcptape/store/schema.py, and
the views come from the frozen mcptape/migrations/frozen/views_0001.py, so this
revision stays what it was when released; tests/test_store_engine.py checks that the
database at head matches schema.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mcptape.migrations.frozen import views_0001

# 64-bit ids on PostgreSQL (SERIAL stops at 2**31 frames); on SQLite an INTEGER
# PRIMARY KEY is the 64-bit rowid already, and BIGINT would stop it being one.
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.Text),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("transport", sa.String(32)),
        sa.Column("upstream", sa.Text),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("ended_at", sa.Float),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("exit_code", sa.Integer),
        sa.Column("error", sa.Text),
        sa.Column("protocol_version", sa.String(32)),
        sa.Column("client_name", sa.Text),
        sa.Column("client_version", sa.Text),
        sa.Column("server_name", sa.Text),
        sa.Column("server_version", sa.Text),
        sa.Column("client_info", sa.Text),
        sa.Column("server_info", sa.Text),
        sa.Column("client_capabilities", sa.Text),
        sa.Column("server_capabilities", sa.Text),
        sa.Column("replay_of", sa.String(32)),
        sa.Column("pid", sa.Integer),
        sa.Column("mcptape_version", sa.String(32)),
    )
    op.create_table(
        "frames",
        sa.Column("id", BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("direction", sa.String(3), nullable=False),
        sa.Column("origin", sa.String(8), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("method", sa.Text),
        sa.Column("rpc_id", sa.Text),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("raw", sa.LargeBinary),
        sa.Column("meta", sa.Text),
    )
    op.create_index("ix_frames_session_seq", "frames", ["session_id", "seq"], unique=True)
    op.create_index("ix_frames_session_rpc", "frames", ["session_id", "rpc_id", "direction"])
    op.create_index("ix_frames_method", "frames", ["method"])
    op.create_table(
        "events",
        sa.Column("id", BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("ts", sa.Float, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("text", sa.Text),
        sa.Column("data", sa.Text),
    )
    op.create_index("ix_events_session", "events", ["session_id", "id"])
    for statement in views_0001.create_statements(op.get_context().dialect.name):
        op.execute(sa.text(statement))


def downgrade() -> None:
    for statement in views_0001.drop_statements(op.get_context().dialect.name):
        op.execute(sa.text(statement))
    op.drop_table("events")
    op.drop_table("frames")
    op.drop_table("sessions")
