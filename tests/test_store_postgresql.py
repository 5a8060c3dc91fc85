"""The PostgreSQL side of the migrations and views, checked with ``psql`` on a private server.

The migration's SQL comes from Alembic's offline mode (what a DBA gets from
``alembic upgrade head --sql``: the same revisions, rendered for PostgreSQL), the
corpus goes in as INSERTs built from the Writer's own rows, and every view must
answer as it does on SQLite. The Python path (psycopg, the writer, the read
commands) is tested in tests/test_postgres_e2e.py. Skipped where no PostgreSQL
server binaries are installed.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcptape.migrations import runner
from mcptape.store import open_store
from mcptape.store.correlation import Correlator
from mcptape.store.rows import FRAME_COLUMNS, frame_row
from mcptape.wire.frame import Frame
from tests.helpers.paths import CORPUS
from tests.helpers.postgres import Postgres, private_server

pytestmark = pytest.mark.slow

T0 = 1_700_000_000.0
VIEW_QUERIES = {
    "exchanges": "SELECT * FROM exchanges ORDER BY session_id, request_seq",
    "tool_calls": "SELECT * FROM tool_calls ORDER BY session_id, request_seq",
    "log_messages": "SELECT * FROM log_messages ORDER BY session_id, seq",
    "server_requests": "SELECT * FROM server_requests ORDER BY session_id, request_seq",
}
JSON_COLUMNS = {"arguments", "result", "data", "request", "response"}
# Frames beyond the corpus: an answer from the proxy, JSON-RPC errors, text cut short.
EXTRA = [
    ("s2c", "server", '{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}'),
    ("c2s", "proxy", '{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant"}}'),
    (
        "c2s",
        "client",
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gone","arguments":{"a":[1]}}}',
    ),
    ("s2c", "proxy", '{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"upstream exited"}}'),
    (
        "c2s",
        "client",
        '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"odd","arguments":[]}}',
    ),
    ("s2c", "server", '{"jsonrpc":"2.0","id":9,"error":{"code":1.5,"message":"odd code"}}'),
    ("c2s", "client", '{"jsonrpc":"2.0","id":10,"method":"ping"}'),
]
PREVIEW = "x" * (64 << 10)  # a cut frame's text is its first 64 KiB
CUT = [  # (seq, direction, kind, method, rpc_id, text): kinds from the whole frame, text cut
    (
        101,
        "c2s",
        "request",
        "tools/call",
        "8",
        '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"' + PREVIEW,
    ),
    (102, "s2c", "error", None, "8", '{"jsonrpc":"2.0","id":8,"error":{"message":"' + PREVIEW),
    (103, "s2c", "notification", "notifications/message", None, '{"jsonrpc":"2.0","method":"' + PREVIEW),
]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


def migration_sql(direction: str, target: str) -> str:
    from alembic import command

    buffer = io.StringIO()
    config = runner.alembic_config()
    config.output_buffer = buffer
    config.attributes["url"] = "postgresql+psycopg://nobody@nowhere/mcptape"
    getattr(command, direction)(config, target, sql=True)
    return buffer.getvalue()


def literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"'\\x{value.hex()}'::bytea"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def paired(
    correlator: Correlator, session: str, seq: int, frame: Frame, pairs: list[tuple[Any, ...]]
) -> tuple[Any, ...]:
    """The frames row as the writer stores it: a reply with its request's seq and method."""
    found = correlator.see(
        session, seq, frame.direction, frame.kind, frame.method, frame.rpc_id, frame.message
    )
    pairs.extend((session, *pair) for pair in found.batch_pairs)
    return frame_row(session, seq, frame, found.method, found.request_seq)


def frame_rows() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Frames rows of the corpus and the extra frames, and their batch_replies rows."""
    rows = []
    pairs: list[tuple[Any, ...]] = []
    correlator = Correlator()
    for path in sorted(CORPUS.glob("*.jsonl")):
        for seq, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            entry = json.loads(line)
            frame = Frame(entry["frame"].encode(), entry["dir"], ts=T0 + entry["t"])
            rows.append(paired(correlator, path.stem, seq, frame, pairs))
    for seq, (direction, origin, text) in enumerate(EXTRA, 1):
        frame = Frame(text.encode(), direction, origin, ts=T0 + seq)  # type: ignore[arg-type]
        rows.append(paired(correlator, "extra", seq, frame, pairs))
    for seq, direction, kind, method, rpc_id, text in CUT:
        rows.append(
            ("extra", seq, T0 + seq, direction, "server", kind, method, rpc_id, 99, text, None, None, None)
        )
    return rows, pairs


def inserts(rows: list[tuple[Any, ...]], pairs: list[tuple[Any, ...]]) -> str:
    sessions = sorted({row[0] for row in rows})
    lines = [
        f"INSERT INTO sessions (id, mode, started_at, status) VALUES ({literal(s)}, 'record', 0, 'ok');"
        for s in sessions
    ]
    lines += [
        f"INSERT INTO frames ({', '.join(FRAME_COLUMNS)}) VALUES ({', '.join(literal(v) for v in row)});"
        for row in rows
    ]
    lines += [f"INSERT INTO batch_replies VALUES ({', '.join(literal(v) for v in pair)});" for pair in pairs]
    return "\n".join(lines)


def normalise(column: str, value: Any) -> Any:
    if value is None or value == "":  # psql --csv prints NULL as an empty field
        return None
    if column in JSON_COLUMNS:
        try:
            return json.loads(value)
        except json.JSONDecodeError:  # the cut frames' text
            return ("not JSON", value)
    try:
        return round(float(value), 3)
    except ValueError:
        return str(value)


def test_migration_sql_creates_the_schema_and_views_and_downgrades_cleanly(postgres: Postgres) -> None:
    database = postgres.create_database()

    def psql(*args: str, stdin: str | None = None) -> str:
        return postgres.psql(*args, stdin=stdin, database=database)

    psql(stdin=migration_sql("upgrade", "head"))
    relations = psql(
        "-At", "-c", "SELECT relname, relkind FROM pg_class WHERE relnamespace = 'public'::regnamespace"
    )
    found = dict(line.split("|") for line in relations.split())
    for table in ("sessions", "events", "batch_replies", "alembic_version"):
        assert found[table] == "r"
    # frames is partitioned by time (0006): its rows live in monthly partitions made ahead.
    assert found["frames"] == "p"
    assert any(name.startswith("frames_") and kind == "r" for name, kind in found.items())
    for view in VIEW_QUERIES:
        assert found[view] == "v"
    # An index on a partitioned table is relkind "I"; each partition has its own.
    for index in (
        "ix_frames_session_seq",
        "ix_frames_session_rpc",
        "ix_frames_method",
        "ix_frames_session_request",
        "ix_frames_batches",
    ):
        assert found[index] == "I"
    assert found["ix_events_session"] == "i"
    assert psql("-At", "-c", "SELECT version_num FROM alembic_version").strip() == runner.HEAD_REVISION
    # Ids and sizes are 64-bit: a busy team database passes 2**31 frames.
    types = psql(
        "-At",
        "-c",
        "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
        "WHERE (table_name, column_name) IN (('frames','id'), ('events','id'), ('frames','size'))",
    )
    assert dict(line.split("|") for line in types.split()) == {
        "frames.id": "bigint",
        "events.id": "bigint",
        "frames.size": "bigint",
    }
    psql(stdin=migration_sql("downgrade", f"{runner.HEAD_REVISION}:base"))
    left = psql("-At", "-c", "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace")
    assert sorted(left.split()) == ["alembic_version", "alembic_version_pkc"]
    assert psql("-At", "-c", "SELECT count(*) FROM pg_proc WHERE proname = 'mcptape_jsonb'").strip() == "0"
    rounds = "SELECT count(*) FROM pg_proc WHERE proname = 'round' AND pronamespace = 'public'::regnamespace"
    assert psql("-At", "-c", rounds).strip() == "0"


def test_postgresql_views_answer_like_the_sqlite_views(postgres: Postgres, db_path: Path) -> None:
    rows, pairs = frame_rows()
    database = postgres.create_database()
    postgres.psql(stdin=migration_sql("upgrade", "head"), database=database)
    postgres.psql(stdin=inserts(rows, pairs), database=database)
    with open_store(str(db_path)) as store, store.engine.begin() as conn:
        for session in sorted({row[0] for row in rows}):
            conn.exec_driver_sql(
                "INSERT INTO sessions (id, mode, started_at, status) VALUES (?, 'record', 0, 'ok')",
                (session,),
            )
        marks = ", ".join("?" * len(FRAME_COLUMNS))
        conn.exec_driver_sql(f"INSERT INTO frames ({', '.join(FRAME_COLUMNS)}) VALUES ({marks})", rows)
        if pairs:
            conn.exec_driver_sql("INSERT INTO batch_replies VALUES (?, ?, ?, ?, ?)", pairs)
    with sqlite3.connect(db_path) as lite:
        for view, sql in VIEW_QUERIES.items():
            cursor = lite.execute(sql)
            columns = [d[0] for d in cursor.description]
            expected = [
                [normalise(c, v if v is None else str(v)) for c, v in zip(columns, r, strict=True)]
                for r in cursor
            ]
            table = list(csv.reader(io.StringIO(postgres.psql("--csv", "-c", sql, database=database))))
            assert table[0] == columns, view
            got = [[normalise(c, v) for c, v in zip(columns, r, strict=True)] for r in table[1:]]
            assert got == expected, view
            assert expected, view
