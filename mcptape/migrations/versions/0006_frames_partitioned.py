"""PostgreSQL: ``frames`` partitioned by day (declarative partitioning); nothing changes on SQLite.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

A team's database grows by millions of frames a day; keeping 30 days should cost
dropping a day's partition, not deleting rows and vacuuming. ``frames`` becomes
``PARTITION BY RANGE (ts)`` with a partition per UTC day (``frames_pYYYYMMDD``, see
mcptape/store/partitions.py: writers create them ahead) and a default partition. The
existing rows are copied into partitions of their days, ids kept (the id sequence
carries on). A partitioned table's keys must hold the partition column, so the primary
key is (id, ts) and (session_id, seq) is indexed without a uniqueness constraint there
(mcptape numbers a session's frames itself). Views are dropped and created again as
they were: readers see the same ``frames``.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

from mcptape.migrations.frozen import views_0004, views_0005
from mcptape.store import partitions

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

_COLUMNS = (
    "id, session_id, seq, ts, direction, origin, kind, method, rpc_id, size, text, raw, meta, request_seq"
)
_INDEXES = (
    "CREATE INDEX ix_frames_session_seq ON frames (session_id, seq)",
    "CREATE INDEX ix_frames_session_rpc ON frames (session_id, rpc_id, direction)",
    "CREATE INDEX ix_frames_method ON frames (method)",
    "CREATE INDEX ix_frames_session_request ON frames (session_id, request_seq) WHERE request_seq IS NOT NULL",
    "CREATE INDEX ix_frames_batches ON frames (session_id, seq) WHERE kind = 'batch'",
)


def _views(create: bool) -> None:
    statements = (
        views_0004.create_statements("postgresql") + views_0005.create_statements("postgresql")
        if create
        else views_0005.drop_statements("postgresql") + views_0004.drop_statements("postgresql")
    )
    for statement in statements:
        op.execute(sa.text(statement))


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    _views(create=False)
    op.execute(sa.text("ALTER TABLE frames RENAME TO frames_unpartitioned"))
    op.execute(sa.text("ALTER SEQUENCE frames_id_seq OWNED BY NONE"))
    op.execute(
        sa.text(
            """CREATE TABLE frames (
  id BIGINT NOT NULL DEFAULT nextval('frames_id_seq'),
  session_id VARCHAR(32) NOT NULL REFERENCES sessions (id),
  seq INTEGER NOT NULL,
  ts DOUBLE PRECISION NOT NULL,
  direction VARCHAR(3) NOT NULL,
  origin VARCHAR(8) NOT NULL,
  kind VARCHAR(16) NOT NULL,
  method TEXT,
  rpc_id TEXT,
  size BIGINT NOT NULL,
  text TEXT NOT NULL,
  raw BYTEA,
  meta TEXT,
  request_seq INTEGER,
  PRIMARY KEY (id, ts)
) PARTITION BY RANGE (ts)"""
        )
    )
    op.execute(sa.text("CREATE TABLE frames_default PARTITION OF frames DEFAULT"))
    days = set(partitions.days_around(time.time()))
    if not op.get_context().as_sql:
        rows = op.get_bind().exec_driver_sql(
            f"SELECT DISTINCT floor(ts / {partitions.DAY_S})::bigint FROM frames_unpartitioned"
        )
        days |= {
            partitions.dt.datetime.fromtimestamp(d * partitions.DAY_S, partitions.dt.UTC).date()
            for (d,) in rows
        }
    for day in sorted(days):
        op.execute(sa.text(partitions.create_statement(day)))
    op.execute(sa.text(f"INSERT INTO frames ({_COLUMNS}) SELECT {_COLUMNS} FROM frames_unpartitioned"))
    op.execute(sa.text("DROP TABLE frames_unpartitioned"))
    op.execute(sa.text("ALTER SEQUENCE frames_id_seq OWNED BY frames.id"))
    for statement in _INDEXES:
        op.execute(sa.text(statement))
    _views(create=True)


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    _views(create=False)
    op.execute(sa.text("ALTER TABLE frames RENAME TO frames_partitioned"))
    op.execute(sa.text("ALTER SEQUENCE frames_id_seq OWNED BY NONE"))
    op.execute(
        sa.text(
            "CREATE TABLE frames (LIKE frames_partitioned INCLUDING DEFAULTS, "
            "CONSTRAINT frames_pkey PRIMARY KEY (id), "
            "CONSTRAINT frames_session_id_fkey FOREIGN KEY (session_id) REFERENCES sessions (id))"
        )
    )
    op.execute(sa.text(f"INSERT INTO frames ({_COLUMNS}) SELECT {_COLUMNS} FROM frames_partitioned"))
    op.execute(sa.text("DROP TABLE frames_partitioned"))
    op.execute(sa.text("ALTER SEQUENCE frames_id_seq OWNED BY frames.id"))
    for statement in _INDEXES:
        op.execute(
            sa.text(statement.replace("INDEX ix_frames_session_seq", "UNIQUE INDEX ix_frames_session_seq"))
        )
    _views(create=True)
