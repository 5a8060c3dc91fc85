"""Released migration SQL is frozen, and revision 0003 backfills the pairs older recordings lack."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from mcptape.migrations import runner
from mcptape.migrations.frozen import views_0001, views_0002, views_0004, views_0005
from mcptape.store import open_store
from mcptape.store.engine import open_unmigrated

FROZEN = Path(views_0001.__file__).parent

# A released revision's SQL never changes: a change goes into a new module and revision.
# When you add a module for a new revision, add its hash here in the same commit.
RELEASED = {
    "common.py": "41def52a3f9d72e21a563fac5b7b4d6f8f829ce8245b732f321185fb25f5c8e2",
    "views_0001.py": "3d848499879edd596258742c80b8bf0dc86d1b3423964a064f144db068e84765",
    "views_0002.py": "f826b83a8c5da4b8633095bd720eb24cecd95185cc57cc6bb5f35d627efbc9c8",
    "views_0003.py": "20754273b95dd4bb543f42c29407431396793219079e0120bb608c93d9870607",
    "views_0004.py": "eac359e5ca86662461b3799e8ee4e0d06f696f091fe39515e1ae52c00ce6b197",
    "views_0005.py": "44ed8b283e6ad709658de5c5aa899289b7bd7fb1df7cc19e4b0f66a76f36a1ef",
}


def test_released_view_sql_is_unchanged() -> None:
    got = {name: hashlib.sha256((FROZEN / name).read_bytes()).hexdigest() for name in RELEASED}
    assert got == RELEASED


def test_live_code_takes_the_current_views_from_the_newest_frozen_module() -> None:
    from mcptape.store import views

    assert views.CURRENT == views_0004.VIEWS_V4 + views_0005.VIEWS_V5
    assert [view.name for view in views_0002.VIEWS_V2] + ["http_frames", "conversations"] == list(
        views.VIEW_NAMES
    )
    assert runner.HEAD_REVISION == "0006"


def upgrade(db: Path, target: str) -> None:
    from alembic import command

    store = open_unmigrated(str(db))
    config = runner.alembic_config()
    try:
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, target)
    finally:
        store.close()


OLD_FRAMES = [  # (seq, direction, kind, method, rpc_id, text), as an 0002-era mcptape wrote them
    (
        1,
        "c2s",
        "request",
        "tools/call",
        "1",
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}',
    ),
    (2, "c2s", "request", "ping", "2", '{"jsonrpc":"2.0","id":2,"method":"ping"}'),
    (3, "s2c", "response", None, "1.0", '{"jsonrpc":"2.0","id":1.0,"result":{}}'),
    (4, "c2s", "request", "tools/list", "3", '{"jsonrpc":"2.0","id":3,"method":"tools/list"}'),
    (5, "s2c", "batch", None, None, '[{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}]'),
    (6, "c2s", "request", "never/answered", "4", '{"jsonrpc":"2.0","id":4,"method":"never/answered"}'),
]


def test_opening_an_0002_database_backfills_methods_and_pairs(db_path: Path) -> None:
    upgrade(db_path, "0002")
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO sessions (id, mode, started_at, status) VALUES ('s', 'record', 1, 'ok')")
        conn.executemany(
            "INSERT INTO frames (session_id, seq, ts, direction, origin, kind, method, rpc_id, size, text)"
            " VALUES ('s', ?, ?, ?, 'client', ?, ?, ?, 1, ?)",
            [
                (seq, float(seq), d, kind, method, rpc_id, text)
                for seq, d, kind, method, rpc_id, text in OLD_FRAMES
            ],
        )
    open_store(str(db_path)).close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (runner.HEAD_REVISION,)
        assert conn.execute("SELECT seq, method, request_seq FROM frames ORDER BY seq").fetchall() == [
            (1, "tools/call", None),
            (2, "ping", None),
            (3, "tools/call", 1),  # id 1.0 answers id 1, as peers compare ids
            (4, "tools/list", None),
            (5, None, None),
            (6, "never/answered", None),
        ]
        assert conn.execute("SELECT * FROM batch_replies").fetchall() == [("s", 4, -1, 5, 0)]
        exchanges = conn.execute(
            "SELECT method, request_seq, response_seq, response_batch_index FROM exchanges ORDER BY request_seq"
        ).fetchall()
    assert exchanges == [
        ("tools/call", 1, 3, None),
        ("ping", 2, None, None),
        ("tools/list", 4, 5, 0),
        ("never/answered", 6, None, None),
    ]


def test_downgrade_from_0003_gives_back_the_0002_schema_and_views_exactly(db_path: Path) -> None:
    from alembic import command

    open_store(str(db_path)).close()
    store = open_unmigrated(str(db_path))
    try:
        config = runner.alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0002")
    finally:
        store.close()
    with sqlite3.connect(db_path) as conn:
        views = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'").fetchall())
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        columns = [row[1] for row in conn.execute("PRAGMA table_info(frames)")]
    assert views == {
        view.name: f"CREATE VIEW {view.name} AS {view.sqlite.strip()}" for view in views_0002.VIEWS_V2
    }
    assert "batch_replies" not in tables and "request_seq" not in columns
