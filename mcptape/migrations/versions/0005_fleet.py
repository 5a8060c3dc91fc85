"""A fleet of gateways: sessions.replica, sessions.conversation_id, and the `conversations` view.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

``replica``: the ``mcptape proxy`` replica that recorded the session (``--replica``).
``conversation_id``: shared by the session rows of one client session that several
replicas recorded (its sealed session id names it); NULL means the session's own id.
``replicas``: each replica's heartbeat (``seen_at``), so the others can close the sessions
of one that was killed. The `conversations` view (frozen in
mcptape/migrations/frozen/views_0005.py) gives every exchange its conversation; 0004's
views are unchanged. Nothing is backfilled: old
sessions have no replica, and each is its own conversation.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mcptape.migrations.frozen import views_0005

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    op.add_column("sessions", sa.Column("replica", sa.Text))
    op.add_column("sessions", sa.Column("conversation_id", sa.String(64)))
    op.create_index(
        "ix_sessions_conversation",
        "sessions",
        ["conversation_id"],
        sqlite_where=sa.text("conversation_id IS NOT NULL"),
        postgresql_where=sa.text("conversation_id IS NOT NULL"),
    )
    op.create_table(
        "replicas",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("pid", sa.Integer),
        sa.Column("started_at", sa.Float),
        sa.Column("seen_at", sa.Float, nullable=False),
    )
    for statement in views_0005.create_statements(dialect):
        op.execute(sa.text(statement))


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    for statement in views_0005.drop_statements(dialect):
        op.execute(sa.text(statement))
    op.drop_table("replicas")
    op.drop_index("ix_sessions_conversation", "sessions")
    # ALTER TABLE, not a batch copy: SQLite (3.35+) drops a column in place, where copying
    # the table would drop `sessions`, which frames and events refer to.
    op.execute(sa.text("ALTER TABLE sessions DROP COLUMN conversation_id"))
    op.execute(sa.text("ALTER TABLE sessions DROP COLUMN replica"))
