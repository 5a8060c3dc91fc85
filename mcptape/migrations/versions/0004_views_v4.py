"""Views V4: proxy edits left out of `exchanges`, server questions once, `http_frames`, faster PostgreSQL JSON.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26

Only views change; tables and rows stay as they are. The SQL is frozen in
mcptape/migrations/frozen/views_0004.py (what changed is said there); the downgrade
puts 0003's views back.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mcptape.migrations.frozen import views_0003, views_0004

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    for statement in views_0003.drop_statements(dialect) + views_0004.create_statements(dialect):
        op.execute(sa.text(statement))


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    for statement in views_0004.drop_statements(dialect) + views_0003.create_statements(dialect):
        op.execute(sa.text(statement))
