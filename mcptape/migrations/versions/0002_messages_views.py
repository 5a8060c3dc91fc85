"""The views of VIEWS_V2: `messages` (batches unpacked) and the views built on it.

Revision ID: 0002
Revises: 0001
Create Date: 2026-05-24

Only views change; the tables and their rows stay as they are. `exchanges` now pairs
requests and responses inside batches (2025-03-26), `server_requests` adds the
2026-07-28 input requests carried by `input_required` results, and `tool_calls`
leaves out the rounds that only asked for input. The downgrade puts VIEWS_V1 back. The SQL is frozen in
mcptape/migrations/frozen/views_0002.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mcptape.migrations.frozen import views_0001, views_0002

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    for statement in views_0001.drop_statements(dialect) + views_0002.create_statements(dialect):
        op.execute(sa.text(statement))


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    for statement in views_0002.drop_statements(dialect) + views_0001.create_statements(dialect):
        op.execute(sa.text(statement))
