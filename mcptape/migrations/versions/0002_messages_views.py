"""The views of VIEWS_V2: `messages` (batches unpacked) and the views built on it.

Revision ID: 0002
Revises: 0001
Create Date: 2026-05-24

Only views change; the tables and their rows stay as they are. `exchanges` now pairs
requests and responses inside batches (2025-03-26), `server_requests` adds the
2026-07-28 input requests carried by `input_required` results, and `tool_calls`
leaves out the rounds that only asked for input. The downgrade puts VIEWS_V1 back.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mcptape.store.views import VIEWS_V1, VIEWS_V2, View, create_statements, drop_statements

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def _replace_views(old: tuple[View, ...], new: tuple[View, ...]) -> None:
    dialect = op.get_context().dialect.name
    for statement in drop_statements(old, dialect) + create_statements(new, dialect):
        op.execute(sa.text(statement))


def upgrade() -> None:
    _replace_views(VIEWS_V1, VIEWS_V2)


def downgrade() -> None:
    _replace_views(VIEWS_V2, VIEWS_V1)
