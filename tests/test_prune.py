"""`mcptape prune`: frames past the cutoff go, emptied sessions with them; PostgreSQL drops day partitions.

SQLite deletes in short batches; PostgreSQL's ``frames`` is partitioned by day since
revision 0006, with partitions made ahead by every writer, and prune drops the days
wholly past the cutoff. Running sessions and newer frames are never touched.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from mcptape.cli.main import cli
from mcptape.store import open_store, partitions
from mcptape.store.engine import Store
from mcptape.store.prune import prune
from mcptape.wire.frame import Frame
from tests.helpers.postgres import Postgres, private_server

NOW = time.time()
OLD = NOW - 40 * 86400
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
PONG = b'{"jsonrpc":"2.0","id":1,"result":{}}'


def fill(store: Store) -> dict[str, str]:
    """An old ended session, an old running one, one old and new, one new; their ids by name."""
    ids = {}
    writer = store.writer()
    for name, times, status in (
        ("old", [OLD, OLD + 1], "ok"),
        ("old-running", [OLD], "running"),
        ("mixed", [OLD, NOW - 60], "ok"),
        ("new", [NOW - 60, NOW - 59], "ok"),
    ):
        sid = ids[name] = writer.create_session(mode="record", name=name, started_at=times[0])
        for seq, ts in enumerate(times, 1):
            writer.add_frame(sid, seq, Frame(PING if seq % 2 else PONG, "c2s" if seq % 2 else "s2c", ts=ts))
        writer.add_event(sid, "stderr", "line", ts=times[0])
        if status != "running":
            writer.update_session(sid, status=status, ended_at=times[-1])
    writer.close()
    return ids


def names_and_frames(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT s.name, count(f.id) FROM sessions s LEFT JOIN frames f ON f.session_id = s.id GROUP BY s.name"
        ).all()
    return dict(rows)  # type: ignore[arg-type]


def check_prune(store: Store) -> None:
    fill(store)
    before = names_and_frames(store)
    would = prune(store, NOW - 30 * 86400, dry_run=True)
    assert names_and_frames(store) == before == {"old": 2, "old-running": 1, "mixed": 2, "new": 2}
    done = prune(store, NOW - 30 * 86400)
    assert (
        (would.frames, would.sessions, would.events) == (done.frames, done.sessions, done.events) == (4, 1, 3)
    )
    assert names_and_frames(store) == {"old-running": 0, "mixed": 1, "new": 2}
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM events").scalar() == 1
        assert conn.exec_driver_sql("SELECT count(*) FROM exchanges").scalar() == 1


def test_prune_on_sqlite_removes_old_frames_in_batches_and_emptied_sessions(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("mcptape.store.prune.BATCH", 1)  # every row a transaction of its own
    with open_store(str(tmp_path / "p.db")) as store:
        check_prune(store)


def test_prune_cli_says_what_went_and_refuses_a_bad_duration(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "p.db")
    with open_store(db) as store:
        fill(store)
    runner = CliRunner()
    dry = runner.invoke(cli, ["prune", "--older-than", "30d", "--dry-run", "--db", db])
    assert (
        dry.exit_code == 0
        and "would remove 4 frame(s), 3 event(s) and 1 session(s) older than 30d" in dry.output
    )
    done = runner.invoke(cli, ["prune", "--older-than", "30d", "--db", db])
    assert done.exit_code == 0 and done.output.startswith("removed 4 frame(s)")
    bad = runner.invoke(cli, ["prune", "--older-than", "a month", "--db", db])
    assert bad.exit_code != 0 and "not a duration such as 30d" in bad.output and "Traceback" not in bad.output


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


@pytest.mark.slow
def test_postgresql_frames_are_partitioned_by_day_made_ahead_and_dropped_by_prune(postgres: Postgres) -> None:
    database = postgres.create_database()
    with open_store(postgres.url(database)) as store:
        with store.engine.connect() as conn:
            assert partitions.is_partitioned(conn)
            days = partitions.partition_days(conn)
        today = dt.datetime.fromtimestamp(NOW, dt.UTC).date()
        assert [today + dt.timedelta(days=n) for n in range(-1, partitions.AHEAD_DAYS + 1)] == days
        # A day of old frames in a partition of its own, as a writer then would have made it.
        old_day = dt.datetime.fromtimestamp(OLD, dt.UTC).date()
        with store.engine.begin() as conn:
            conn.exec_driver_sql(partitions.create_statement(old_day))
        check_prune(store)
    owners = postgres.query(
        database,
        "select c.relname, count(*) over () from pg_inherits i join pg_class c on c.oid = i.inhrelid "
        "join pg_class p on p.oid = i.inhparent where p.relname = 'frames' order by 1",
    )
    names = [name for name, _ in owners]
    assert partitions.name_of(old_day) not in names and "frames_default" in names
    assert postgres.query(database, "select count(*) from frames_default") == [(0,)]
