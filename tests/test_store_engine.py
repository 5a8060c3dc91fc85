"""Opening recording databases: files and permissions, SQLite settings, migrations, errors, read-only use."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa

from mcptape.migrations import runner
from mcptape.store import StoreError, default_db_path, open_store, resolve_url
from mcptape.store.engine import open_unmigrated
from mcptape.store.schema import metadata
from mcptape.store.views import CURRENT
from mcptape.wire.frame import Frame


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def sqlite_objects(path: Path, kind: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,)).fetchall()
    return {name for (name,) in rows if not name.startswith("sqlite_")}


def revision_of(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]


def test_new_database_its_directories_and_wal_files_are_private(tmp_path: Path) -> None:
    db = tmp_path / "made" / "by" / "mcptape" / "rec.db"
    store = open_store(str(db))
    try:
        writer = store.writer()
        session_id = store.create_session(mode="record")
        writer.add_frame(session_id, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s"))
        writer.flush()
        # While a connection is open the -wal and -shm files exist; SQLite gives them the file's mode.
        for suffix in ("", "-wal", "-shm", ".lock"):
            assert mode_of(Path(f"{db}{suffix}")) == 0o600, suffix
        for folder in (db.parent, db.parent.parent, db.parent.parent.parent):
            assert mode_of(folder) == 0o700, folder
    finally:
        store.close()


def test_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    open_store(str(tmp_path / "rec.db")).close()
    assert mode_of(tmp_path) == 0o755


def test_database_runs_in_wal_mode_with_normal_sync_foreign_keys_and_busy_timeout(db_path: Path) -> None:
    with open_store(str(db_path)) as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000


def test_write_transactions_take_the_write_lock_when_they_begin(db_path: Path) -> None:
    with open_store(str(db_path)) as store, store.engine.begin():
        # Nothing written yet, but BEGIN IMMEDIATE already holds the lock.
        other = sqlite3.connect(db_path, timeout=0, isolation_level=None)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        other.close()


def test_read_only_transactions_can_opt_out_of_the_write_lock(db_path: Path) -> None:
    with (
        open_store(str(db_path)) as store,
        store.engine.connect().execution_options(sqlite_begin="DEFERRED") as conn,
    ):
        assert conn.exec_driver_sql("SELECT count(*) FROM sessions").scalar() == 0
        other = sqlite3.connect(db_path, timeout=0, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        other.close()


def test_new_database_gets_tables_indexes_views_at_head_revision(db_path: Path) -> None:
    open_store(str(db_path)).close()
    assert sqlite_objects(db_path, "table") == {
        "sessions",
        "frames",
        "events",
        "batch_replies",
        "alembic_version",
        "replicas",
    }
    assert sqlite_objects(db_path, "view") == {view.name for view in CURRENT}
    assert {
        "ix_frames_session_seq",
        "ix_frames_session_rpc",
        "ix_frames_method",
        "ix_frames_session_request",
        "ix_frames_batches",
        "ix_events_session",
        "ix_batch_replies_request",
    } <= sqlite_objects(db_path, "index")
    assert revision_of(db_path) == runner.HEAD_REVISION


def test_reopening_keeps_data_and_does_not_migrate_again(db_path: Path) -> None:
    with open_store(str(db_path)) as store:
        session_id = store.create_session(mode="record", name="kept")
    before = sqlite_objects(db_path, "table") | sqlite_objects(db_path, "view")
    with open_store(str(db_path)) as store, store.engine.connect() as conn:
        assert (
            conn.exec_driver_sql("SELECT name FROM sessions WHERE id = ?", (session_id,)).scalar() == "kept"
        )
        assert conn.exec_driver_sql("SELECT count(*) FROM alembic_version").scalar() == 1
    assert sqlite_objects(db_path, "table") | sqlite_objects(db_path, "view") == before
    assert revision_of(db_path) == runner.HEAD_REVISION


def test_head_revision_constant_names_alembics_head() -> None:
    from alembic.script import ScriptDirectory

    assert ScriptDirectory.from_config(runner.alembic_config()).get_current_head() == runner.HEAD_REVISION


def test_migrated_database_matches_the_schema_module(db_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    with open_store(str(db_path)) as store, store.engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diffs == []


def test_database_at_revision_0001_opens_in_this_version(db_path: Path) -> None:
    from alembic import command

    old = open_unmigrated(str(db_path))
    config = runner.alembic_config()
    with old.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        # Rows as a 0001-era mcptape wrote them.
        conn.exec_driver_sql(
            "INSERT INTO sessions (id, mode, started_at, status) VALUES ('a' , 'record', 1.0, 'ok')"
        )
        conn.exec_driver_sql(
            "INSERT INTO frames (session_id, seq, ts, direction, origin, kind, method, rpc_id, size, text)"
            " VALUES ('a', 1, 1.0, 'c2s', 'client', 'request', 'ping', '7', 36,"
            ' \'{"jsonrpc":"2.0","id":7,"method":"ping"}\')'
        )
    old.close()
    assert revision_of(db_path) == "0001"
    with open_store(str(db_path)) as store, store.readonly_connection(10) as conn:
        assert conn.exec_driver_sql("SELECT method, rpc_id FROM exchanges").all() == [("ping", "7")]
    assert revision_of(db_path) == runner.HEAD_REVISION


def test_file_that_is_not_a_database_raises_a_one_line_store_error(db_path: Path) -> None:
    db_path.write_bytes(b"these are my notes, not a database\n" * 200)
    with pytest.raises(StoreError) as caught:
        open_store(str(db_path))
    message = str(caught.value)
    assert "\n" not in message
    assert str(db_path) in message
    assert "not a SQLite database" in message


def test_readonly_open_of_a_file_that_is_not_a_database_raises_store_error(db_path: Path) -> None:
    db_path.write_bytes(b"these are my notes, not a database\n" * 200)
    with pytest.raises(StoreError, match="not a SQLite database"):
        open_store(str(db_path), readonly=True)


def test_readonly_open_of_a_database_without_recordings_says_so(db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    with pytest.raises(StoreError, match="no mcptape recordings"):
        open_store(str(db_path), readonly=True)


def test_database_of_another_application_is_refused_untouched(db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(StoreError, match=r"another application \(tables: users\)"):
        open_store(str(db_path))
    assert sqlite_objects(db_path, "table") == {"users"}


def test_database_from_a_newer_mcptape_is_refused(db_path: Path) -> None:
    open_store(str(db_path)).close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(StoreError, match="newer mcptape"):
        open_store(str(db_path))


@pytest.mark.parametrize("readonly", [False, True])
def test_directory_given_as_database_raises_store_error(tmp_path: Path, readonly: bool) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        open_store(str(tmp_path), readonly=readonly)


@pytest.mark.parametrize("readonly", [False, True])
def test_unreadable_database_raises_store_error(
    db_path: Path, readonly: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_store(str(db_path)).close()
    db_path.chmod(0o000)
    # Root reads any file (CI and these machines run as root): answer as the kernel does for others.
    real_access = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda path, mode, **kw: False if Path(path) == db_path else real_access(path, mode, **kw),
    )
    with pytest.raises(StoreError, match="permission denied"):
        open_store(str(db_path), readonly=readonly)


def test_in_memory_database_is_refused() -> None:
    with pytest.raises(StoreError, match="not an in-memory"):
        open_store("sqlite://")


def test_readonly_store_neither_creates_nor_migrates(db_path: Path) -> None:
    with pytest.raises(StoreError, match="no recording database"):
        open_store(str(db_path), readonly=True)
    assert not db_path.exists()
    with pytest.raises(StoreError, match="no recording database"):
        open_store(str(db_path), create=False)
    assert not db_path.exists()


def test_readonly_store_reads_but_cannot_write(db_path: Path) -> None:
    with open_store(str(db_path)) as store:
        store.create_session(mode="record", name="one")
    with open_store(str(db_path), readonly=True) as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT name FROM sessions").scalar() == "one"
        with pytest.raises(sa.exc.OperationalError, match=r"readonly|read-only"):
            conn.exec_driver_sql("DELETE FROM sessions")


def test_readonly_connection_cannot_write(db_path: Path) -> None:
    with open_store(str(db_path)) as store:
        store.create_session(mode="record")
        with store.readonly_connection(10) as conn, pytest.raises(sa.exc.OperationalError, match="readonly"):
            conn.exec_driver_sql("DELETE FROM sessions")
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM sessions").scalar() == 1


def test_readonly_connection_stops_a_query_that_runs_past_its_time_limit(db_path: Path) -> None:
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    with open_store(str(db_path)) as store:
        with (
            pytest.raises(StoreError, match=r"time limit of 0\.2 s") as caught,
            store.readonly_connection(0.2) as conn,
        ):
            conn.exec_driver_sql(endless).scalar()
        assert "\n" not in str(caught.value)
        # The next connection has a fresh limit.
        with store.readonly_connection(10) as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM sessions").scalar() == 0


def test_sessions_are_created_running_and_updated(db_path: Path) -> None:
    with open_store(str(db_path)) as store:
        session_id = store.create_session(
            mode="replay", name="n", transport="stdio->stdio", upstream="cmd", replay_of="x"
        )
        store.update_session(session_id, status="ok", exit_code=0, server_info={"name": "s"})
        with pytest.raises(TypeError, match="no column colour"):
            store.update_session(session_id, colour="red")
        with store.engine.connect() as conn:
            row = conn.exec_driver_sql("SELECT * FROM sessions").mappings().one()
    assert len(session_id) == 32 and int(session_id, 16) >= 0
    assert row["mode"] == "replay" and row["replay_of"] == "x" and row["transport"] == "stdio->stdio"
    assert row["status"] == "ok" and row["exit_code"] == 0 and row["server_info"] == '{"name":"s"}'
    assert row["pid"] == os.getpid() and row["mcptape_version"] and row["started_at"] > 0


def test_a_session_row_waits_for_a_lock_held_past_the_busy_timeout_and_says_so_once(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # sqlite3 in a terminal held BEGIN IMMEDIATE longer than the busy timeout while a
    # recorder started: its session row gave up, and the whole session went unrecorded.
    import threading

    from mcptape.store import sqlite_engine

    monkeypatch.setattr(sqlite_engine, "BUSY_TIMEOUT_S", 0.1)  # so a short lock outlasts it
    open_store(str(db_path)).close()
    holder = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    releaser = threading.Timer(1.5, holder.execute, ("ROLLBACK",))
    releaser.start()
    try:
        with open_store(str(db_path)) as store:
            session_id = store.create_session(mode="record", name="late")
    finally:
        releaser.join()
        holder.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT id, name FROM sessions").fetchall() == [(session_id, "late")]
    err = capfd.readouterr().err
    assert err.count("another process holds its write lock") == 1 and err.count("\n") == 1, err


def test_a_session_row_that_must_not_wait_for_the_lock_says_the_database_is_busy(db_path: Path) -> None:
    from mcptape.store import StoreBusyError

    open_store(str(db_path)).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with (
            open_store(str(db_path)) as store,
            pytest.raises(StoreBusyError, match="locked by another process"),
        ):
            store.create_session(mode="record", wait_for_lock=False)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def test_resolve_url_turns_paths_into_absolute_sqlite_urls_and_keeps_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_url("rec.db") == f"sqlite:///{tmp_path / 'rec.db'}"
    assert resolve_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    monkeypatch.setenv("MCPTAPE_DB", str(tmp_path / "env.db"))
    assert resolve_url(None) == f"sqlite:///{tmp_path / 'env.db'}"
    assert default_db_path() == tmp_path / "env.db"
    monkeypatch.setenv("MCPTAPE_DB", "postgresql+psycopg://u@h/db")
    assert resolve_url(None) == "postgresql+psycopg://u@h/db"
    monkeypatch.delenv("MCPTAPE_DB")
    assert default_db_path().name == "mcptape.db"
    assert default_db_path().parent.name == "mcptape"


@pytest.mark.parametrize(
    ("db", "fragment"),
    [
        ("postgresql+psycopg://u@localhost:notaport/db", "the port is not a number"),
        ("postgresql+psycopg://u:secret@[::1/db", "no closing ']'"),
        ("sqlite:/x.db", "give the file path (/x.db) or the URL sqlite:////x.db"),
        ("sqlite:rec.db", "give the file path (rec.db)"),
        ("postgresql:db", "postgresql://user@host/dbname"),
    ],
)
def test_database_values_that_are_not_paths_or_urls_are_one_line_errors(
    db: str, fragment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError) as caught:
        open_store(db)
    message = str(caught.value)
    assert "\n" not in message and fragment in message and "secret" not in message
    assert list(tmp_path.iterdir()) == []  # nothing created, not even ./sqlite:


def test_a_file_name_with_a_colon_is_still_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    open_store("notes:v2.db").close()
    assert (tmp_path / "notes:v2.db").is_file()


def test_a_database_file_that_cannot_be_written_is_opened_read_only_without_migrating(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alembic import command

    store = open_unmigrated(str(db_path))
    config = runner.alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0002")
        conn.exec_driver_sql(
            "INSERT INTO sessions (id, mode, started_at, status) VALUES ('a', 'record', 1, 'ok')"
        )
    store.close()
    real_access = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda path, mode, **kw: (
            not mode & os.W_OK if Path(path) == db_path else real_access(path, mode, **kw)
        ),
    )
    with open_store(str(db_path), create=False) as store, store.engine.connect() as conn:
        assert store.readonly
        assert conn.exec_driver_sql("SELECT id FROM sessions").all() == [("a",)]
        with pytest.raises(StoreError, match="read-only for you"):
            store.create_session(mode="record")
    assert revision_of(db_path) == "0002"  # left as it was


def test_store_close_refreshes_the_planner_statistics(db_path: Path) -> None:
    with open_store(str(db_path)) as store:
        writer = store.writer()
        sid = writer.create_session(mode="record")
        for seq in range(1, 2001, 2):
            writer.add_frame(sid, seq, Frame(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % seq, "c2s"))
            writer.add_frame(sid, seq + 1, Frame(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % seq, "s2c"))
        writer.close()
        with store.engine.connect() as conn:  # queries that make SQLite note which indexes matter
            conn.exec_driver_sql("SELECT count(*) FROM exchanges").all()
    with sqlite3.connect(db_path) as conn:
        analysed = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()
    assert analysed == (1,)


def test_a_store_that_only_read_leaves_the_planner_statistics_alone(db_path: Path) -> None:
    # Every `show` and `sessions` ran PRAGMA optimize at its close: on 5 million frames a
    # full ANALYZE of them, 1.5 s holding the write lock, whatever the command read.
    from mcptape.store.queries import list_sessions, session_frames

    open_store(str(db_path)).close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO sessions (id, mode, started_at, status) VALUES ('a', 'record', 1, 'ok')")
        conn.executemany(
            "INSERT INTO frames (session_id, seq, ts, direction, origin, kind, size, text) "
            "VALUES ('a', ?, 1, 'c2s', 'client', 'notification', 2, '{}')",
            [(seq,) for seq in range(1, 2001)],
        )
    with open_store(str(db_path), create=False) as store:
        assert [row["frames"] for row in list_sessions(store)] == [2000]
        assert sum(1 for _ in session_frames(store, "a")) == 2000
    with sqlite3.connect(db_path) as conn:
        analysed = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()
    assert analysed == (0,)


@pytest.mark.slow
def test_sessions_show_and_export_read_a_database_file_nobody_may_write(db_path: Path) -> None:
    import shutil
    import subprocess

    from tests.helpers.paths import MCPTAPE, ROOT

    with open_store(str(db_path)) as store:
        writer = store.writer()
        sid = writer.create_session(mode="record", name="kept")
        writer.add_frame(sid, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s"))
        writer.close()
    chattr = shutil.which("chattr")
    # The immutable flag refuses writes to root too (permission bits do not): a real read-only file.
    if chattr is None or subprocess.run([chattr, "+i", str(db_path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available on this file system")
    try:
        env = {**os.environ, "MCPTAPE_DB": str(db_path)}
        outputs = [
            subprocess.run([*MCPTAPE, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            for args in (["sessions"], ["show", "kept"], ["export", "kept"])
        ]
    finally:
        subprocess.run([chattr, "-i", str(db_path)], check=True)
    for proc in outputs:
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (
        "kept" in outputs[0].stdout
        and "ping" in outputs[1].stdout
        and '"method":"ping"' in outputs[2].stdout.replace("\\", "")
    )
