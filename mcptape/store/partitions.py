"""PostgreSQL's ``frames`` partitioned by day: partitions made ahead by whoever writes, dropped by prune.

Since revision 0006 ``frames`` on PostgreSQL is a partitioned table (``PARTITION BY
RANGE (ts)``): one partition per UTC day, named ``frames_pYYYYMMDD``, and a default
partition that catches a frame whose clock is far off. Every writer makes sure the
partitions of yesterday to :data:`AHEAD_DAYS` days ahead exist when it starts and once
an hour after (``CREATE TABLE IF NOT EXISTS ... PARTITION OF``: replicas racing to
create one are fine), so a frame never waits for DDL. Retention drops whole partitions
(:func:`drop_before`), which costs no scan and no vacuum, where deleting rows would.
Readers see one table: the views and queries are unchanged. SQLite has no partitions.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

import sqlalchemy as sa

DAY_S: Final = 86400
AHEAD_DAYS: Final = 3
CHECK_EVERY_S: Final = 3600.0
_NAME = re.compile(r"frames_p(\d{8})")


def name_of(day: dt.date) -> str:
    return f"frames_p{day:%Y%m%d}"


def day_start(day: dt.date) -> float:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()


def is_partitioned(conn: sa.Connection) -> bool:
    """Whether ``frames`` is a partitioned table here (PostgreSQL at revision 0006 or later)."""
    if conn.dialect.name != "postgresql":
        return False
    found = conn.exec_driver_sql(
        "SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
        "WHERE c.relname = 'frames' AND c.relnamespace = to_regnamespace(current_schema())::oid"
    ).first()
    return found is not None


def create_statement(day: dt.date) -> str:
    start = day_start(day)
    return (
        f"CREATE TABLE IF NOT EXISTS {name_of(day)} PARTITION OF frames "
        f"FOR VALUES FROM ({start!r}) TO ({start + DAY_S!r})"
    )


def days_around(now: float, before: int = 1, ahead: int = AHEAD_DAYS) -> list[dt.date]:
    today = dt.datetime.fromtimestamp(now, dt.UTC).date()
    return [today + dt.timedelta(days=n) for n in range(-before, ahead + 1)]


def ensure_ahead(engine: sa.Engine, now: float) -> None:
    """Create the partitions of yesterday to AHEAD_DAYS ahead that are missing (PostgreSQL only)."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect() as conn:
        if not is_partitioned(conn):
            return
        existing = set(partition_days(conn))
        conn.commit()  # end the reads' transaction: each partition is made in one of its own
        for day in days_around(now):
            if day in existing:
                continue
            try:
                with conn.begin():
                    conn.exec_driver_sql(create_statement(day))
            except sa.exc.DBAPIError:
                # Another replica created it meanwhile, or rows of that day sit in the default
                # partition (a clock far off): the default partition keeps taking them.
                conn.rollback()


def partition_days(conn: sa.Connection) -> list[dt.date]:
    """The days that have a partition of their own, oldest first (in the connection's transaction)."""
    rows = conn.exec_driver_sql(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'frames'"
    ).all()
    days = []
    for (name,) in rows:
        match = _NAME.fullmatch(name)
        if match:
            days.append(dt.datetime.strptime(match.group(1), "%Y%m%d").date())
    return sorted(days)


def drop_before(conn: sa.Connection, cutoff: float, *, dry_run: bool = False) -> tuple[int, int]:
    """Drop the day partitions wholly older than ``cutoff``; (partitions, frames) they held."""
    dropped = frames = 0
    for day in partition_days(conn):
        if day_start(day) + DAY_S > cutoff:
            continue
        name = name_of(day)
        frames += int(conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar() or 0)
        conn.commit()
        if not dry_run:
            with conn.begin():
                conn.exec_driver_sql(f"DROP TABLE {name}")
        dropped += 1
    return dropped, frames
