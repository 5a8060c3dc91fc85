"""mcptape on PostgreSQL end to end: psycopg, the writer, the migration race, the read commands.

One private server for the module (tests/postgres.py), a new database for each test.
Everything goes through mcptape's real paths: ``open_store`` with a
``postgresql+psycopg://`` URL, the batched ``Writer``, real ``mcptape`` processes with
``--db URL``. What the tests check is read back with psycopg directly. Skipped where no
PostgreSQL server binaries are installed.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mcptape.migrations import runner
from mcptape.store import Store, open_store
from mcptape.wire.frame import Frame
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.corpus import corpus_lines
from tests.helpers.paths import MCPTAPE
from tests.helpers.postgres import Postgres, private_server
from tests.helpers.recording import RAW_ECHO, Recording, frame_bytes

pytestmark = pytest.mark.slow

T0 = 1_700_000_000.0
CORPUS_FILE = "everything-ts-client.jsonl"
RELATIONS = "SELECT relname, relkind, oid FROM pg_class WHERE relnamespace = 'public'::regnamespace"


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


@dataclass
class Database:
    """A database of its own on the module's server."""

    server: Postgres
    name: str

    @property
    def url(self) -> str:
        return self.server.url(self.name)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self.server.query(self.name, sql, *params)


@pytest.fixture
def database(postgres: Postgres) -> Database:
    return Database(postgres, postgres.create_database())


def load_corpus(store: Store, name: str) -> str:
    """A corpus file recorded through the Writer as one finished session started at T0."""
    session_id = store.create_session(mode="record", name="everything", upstream="npx server-everything")
    store.update_session(session_id, started_at=T0)
    writer = store.writer()
    last = 0.0
    for seq, line in enumerate(corpus_lines(name), 1):
        entry = json.loads(line)
        writer.add_frame(session_id, seq, Frame(entry["frame"].encode(), entry["dir"], ts=T0 + entry["t"]))
        last = entry["t"]
    writer.add_event(session_id, "process_exit", "exit status 0", data={"exit_code": 0}, ts=T0 + last)
    writer.update_session(session_id, status="ok", exit_code=0, ended_at=T0 + last)
    writer.close()
    assert writer.errors == []
    return session_id


def mcptape(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPTAPE, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


# -- the store ------------------------------------------------------------------------------


def test_open_store_migrates_a_new_database_and_reopening_leaves_the_schema_alone(
    database: Database,
) -> None:
    with open_store(database.url) as store:
        assert (store.engine.dialect.name, store.engine.dialect.driver) == ("postgresql", "psycopg")
        store.create_session(mode="record", name="first")
    assert database.query("SELECT version_num FROM alembic_version") == [(runner.HEAD_REVISION,)]
    before = set(database.query(RELATIONS))
    kinds = {name: kind for name, kind, _ in before}
    for table in ("sessions", "events", "alembic_version", "replicas", "frames_default"):
        assert kinds[table] == "r"
    assert kinds["frames"] == "p"  # partitioned by day since revision 0006
    for view in ("exchanges", "tool_calls", "log_messages", "server_requests"):
        assert kinds[view] == "v"
    stamp = database.query("SELECT xmin::text FROM alembic_version")
    # A plain postgresql:// URL gets psycopg 3 too (SQLAlchemy alone would pick psycopg2).
    plain = database.url.replace("postgresql+psycopg://", "postgresql://")
    with open_store(plain) as store:
        assert store.engine.dialect.driver == "psycopg"
        store.create_session(mode="record", name="second")
    # Same objects (a migration would have created new ones) and an untouched version row.
    assert set(database.query(RELATIONS)) == before
    assert database.query("SELECT xmin::text FROM alembic_version") == stamp
    assert database.query("SELECT name FROM sessions ORDER BY started_at") == [("first",), ("second",)]


def test_writer_records_frames_events_and_session_updates_exactly(database: Database) -> None:
    frames = [
        Frame(
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"\xc3\xa9"}}}',
            "c2s",
            ts=T0 + 1,
        ),
        Frame(b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', "s2c", ts=T0 + 2),
        Frame(b'{"jsonrpc":"2.0","method":"bad utf8","params":"\xff\xfe"}', "c2s", ts=T0 + 3),
        Frame(b'{"jsonrpc":"2.0","method":"nul","params":"a\x00b"}', "s2c", ts=T0 + 4),
        Frame(b'{"jsonrpc":"2.0","id":"1","method":"ping"}', "c2s", "proxy", ts=T0 + 5, meta={"sse": "e1"}),
    ]
    with open_store(database.url) as store:
        session_id = store.create_session(mode="record", name="unit", transport="stdio->stdio")
        writer = store.writer(batch_size=2)  # several transactions, updates between frames
        for seq, frame in enumerate(frames, 1):
            writer.add_frame(session_id, seq, frame)
            if seq == 2:
                writer.update_session(session_id, protocol_version="2025-06-18", client_info={"name": "c"})
        writer.add_event(session_id, "stderr", "a line with a \x00 in it", ts=T0 + 6)
        writer.add_event(session_id, "process_exit", "exit status 0", data={"exit_code": 0}, ts=T0 + 7)
        writer.update_session(session_id, status="ok", exit_code=0, ended_at=T0 + 7, error="last: \x00")
        writer.close()
        assert writer.errors == []
        assert writer.frames_written == len(frames)
    rows = database.query(
        "SELECT seq, ts, direction, origin, kind, method, rpc_id, size, text, raw, meta, request_seq"
        " FROM frames ORDER BY seq"
    )
    assert [frame_bytes(row[8], row[9]) for row in rows] == [frame.data for frame in frames]
    assert [row[9] is not None for row in rows] == [False, False, True, True, False]
    assert [row[1] for row in rows] == [frame.ts for frame in frames]
    # The response gets its request's method and seq.
    assert [row[2:8] for row in rows] == [
        (
            f.direction,
            f.origin,
            f.kind,
            f.method or ("tools/call" if f.kind == "response" else None),
            f.rpc_id,
            len(f.data),
        )
        for f in frames
    ]
    assert [row[11] for row in rows] == [None, 1, None, None, None]
    assert "\x00" not in rows[3][8]
    assert json.loads(rows[4][10]) == {"sse": "e1"}
    assert database.query("SELECT kind, text, data FROM events ORDER BY id") == [
        ("stderr", "a line with a \ufffd in it", None),
        ("process_exit", "exit status 0", '{"exit_code":0}'),
    ]
    assert database.query(
        "SELECT name, status, exit_code, ended_at, error, protocol_version, client_info FROM sessions"
    ) == [("unit", "ok", 0, T0 + 7, "last: \ufffd", "2025-06-18", '{"name":"c"}')]


def ping(rpc_id: int) -> Frame:
    return Frame(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % rpc_id, "c2s")


def test_a_bad_row_costs_only_itself_and_the_rest_of_its_batch_is_written(database: Database) -> None:
    with open_store(database.url) as store:
        session_id = store.create_session(mode="record")
        writer = store.writer()
        writer.add_frame(session_id, 1, ping(1))
        writer.add_frame("no-such-session", 1, ping(2))  # violates the foreign key
        writer.add_frame(session_id, 2, ping(4))
        writer.close()
    # (A seq taken already is no longer refused here: a partitioned table's unique keys
    # must hold its partition column, so (session_id, seq) is indexed, not unique.)
    assert database.query("SELECT seq, rpc_id FROM frames ORDER BY seq") == [(1, "1"), (2, "4")]
    assert writer.frames_written == 2
    assert any("foreign key" in error for error in writer.errors)


def test_writer_waits_for_a_server_that_went_away_and_loses_nothing(
    postgres: Postgres, database: Database
) -> None:
    with open_store(database.url) as store:
        session_id = store.create_session(mode="record")
        writer = store.writer()
        for seq in range(1, 101):
            writer.add_frame(session_id, seq, ping(seq))
        writer.flush()
        postgres.halt()
        try:
            for seq in range(101, 201):
                writer.add_frame(session_id, seq, ping(seq))
            writer.update_session(session_id, status="ok")
            deadline = time.monotonic() + 30
            while not writer.notices and time.monotonic() < deadline:  # until it has tried and failed
                time.sleep(0.05)
        finally:
            postgres.start()
        writer.close()
    assert writer.notices, "the writer never met the stopped server"
    assert all("still retrying: nothing is dropped" in notice for notice in writer.notices), writer.notices
    assert "cannot connect to" in writer.notices[0]
    assert writer.errors == []  # a wait that lost nothing is no error: record exits 0
    assert database.query("SELECT count(*), max(seq) FROM frames") == [(200, 200)]
    assert database.query("SELECT status FROM sessions") == [("ok",)]


def test_views_answer_over_a_corpus_session(database: Database) -> None:
    with open_store(database.url) as store:
        load_corpus(store, CORPUS_FILE)
        with store.readonly_connection(10) as conn:

            def rows(sql: str) -> list[tuple[Any, ...]]:
                return [tuple(row) for row in conn.exec_driver_sql(sql)]

            [(requests,)] = rows("SELECT count(*) FROM frames WHERE kind = 'request'")
            [(paired,)] = rows("SELECT count(*) FROM exchanges WHERE response_seq > request_seq")
            id_0 = rows(
                "SELECT direction, method, request_seq, response_seq, answered_by, is_error FROM exchanges"
                " WHERE rpc_id = '0' ORDER BY request_seq"
            )
            [(ping_latency,)] = rows("SELECT latency_ms FROM exchanges WHERE method = 'ping'")
            calls = rows("SELECT tool, arguments, is_error FROM tool_calls ORDER BY request_seq")
            logs = rows("SELECT seq, direction, level, logger, data FROM log_messages")
            asked = rows(
                "SELECT method, rpc_id, answered_by, is_error FROM server_requests ORDER BY requested_at"
            )
    assert requests == paired == 19
    assert id_0 == [
        ("c2s", "initialize", 1, 2, "server", 0),
        ("s2c", "sampling/createMessage", 27, 28, "client", 0),
    ]
    assert ping_latency == pytest.approx((1.302342 - 1.301736) * 1000, abs=1e-3)
    assert len(calls) == 8
    assert [tool for tool, _, is_error in calls if is_error] == ["no-such-tool"]
    by_tool = {tool: arguments for tool, arguments, _ in calls}
    assert json.loads(by_tool["echo"]) == {"message": 'héllo \u2028 ✓ "q"'}
    assert logs == [
        (37, "s2c", "info", "everything-server", '"Roots updated: 1 root(s) received from client"')
    ]
    assert asked == [
        ("sampling/createMessage", "0", "client", 0),
        ("elicitation/create", "1", "client", 0),
        ("roots/list", "2", "client", 0),
    ]


# -- mcptape record --------------------------------------------------------------------------

ODD_FRAMES = [
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":5,"method":"bad utf8","params":"\xff\xfe"}',
    b'{"jsonrpc":"2.0","method":"nul","params":"a\x00b"}',
    '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"héllo ✓ 🎉"}}'.encode(),
    b'{"jsonrpc":"2.0","id":2,"result":{"blob":"' + b"A" * (2 << 20) + b'"}}',
]


def test_record_forwards_odd_and_large_frames_byte_for_byte_and_records_them(database: Database) -> None:
    rec = Recording(database.url, RAW_ECHO)
    try:
        for frame in ODD_FRAMES:
            rec.send(frame + b"\n")
            assert rec.recv(timeout=60) == frame + b"\n"
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        rec.kill()
    assert b"error" not in rec.stderr, rec.stderr.decode(errors="replace")
    rows = database.query("SELECT direction, origin, text, raw, size FROM frames ORDER BY seq")
    for direction, origin in (("c2s", "client"), ("s2c", "server")):
        recorded = [row for row in rows if row[0] == direction]
        assert [frame_bytes(row[2], row[3]) for row in recorded] == ODD_FRAMES
        assert [row[4] for row in recorded] == [len(frame) for frame in ODD_FRAMES]
        assert {row[1] for row in recorded} == {origin}
    assert database.query("SELECT status, exit_code FROM sessions") == [("closed", 0)]
    # And back out through mcptape: the export gives every frame's exact bytes.
    exported = [
        json.loads(line) for line in mcptape("export", "last", "--db", database.url).stdout.splitlines()
    ]
    as_bytes = [base64.b64decode(e["raw_b64"]) if "raw_b64" in e else e["frame"].encode() for e in exported]
    assert as_bytes == [frame for frame in ODD_FRAMES for _ in ("c2s", "s2c")]


def _frames_recorded(database: Database) -> int:
    """Frames in the database so far (0 while record has not created the tables yet)."""
    import psycopg

    try:
        return int(database.query("SELECT count(*) FROM frames")[0][0])
    except psycopg.errors.UndefinedTable:
        return 0


def test_a_server_restarted_while_record_writes_costs_nothing_and_record_exits_0(
    postgres: Postgres, database: Database
) -> None:
    # Every frame landed, yet record exited 1 saying "not every frame of this session could
    # be recorded": the retry notice counted as an error.
    rec = Recording(database.url, RAW_ECHO)
    halted = False
    try:
        for i in range(1, 151):
            if i == 51:
                deadline = time.monotonic() + 30
                while _frames_recorded(database) < 100:  # the store is open and writing
                    assert time.monotonic() < deadline, "the first frames were never recorded"
                    time.sleep(0.02)
                postgres.halt()
                halted = True
            if i == 101:
                postgres.start()
                halted = False
            line = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i
            rec.send(line)
            assert rec.recv(timeout=60) == line
        rec.close_stdin()
        assert rec.wait(60) == 0, rec.stderr.decode()
    finally:
        if halted:
            postgres.start()
        rec.kill()
    err = rec.stderr.decode()
    assert "not every frame" not in err and "Traceback" not in err, err
    assert database.query("SELECT count(*), max(seq) FROM frames") == [(300, 300)]
    assert database.query("SELECT status FROM sessions") == [("closed",)]


def test_a_nul_in_the_servers_stderr_is_recorded_and_the_session_still_closes(database: Database) -> None:
    server = [
        sys.executable,
        "-c",
        "import sys; sys.stdin.readline(); sys.stderr.write('crash\\x00ing\\n'); sys.stderr.flush(); sys.exit(3)",
    ]
    rec = Recording(database.url, server, "--no-echo-stderr")
    try:
        rec.send(b'{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x"}}\n')
        answer = rec.recv()
        assert answer is not None and json.loads(answer)["id"] == "abc"
        assert rec.wait() == 3
    finally:
        rec.kill()
    assert b"recording error" not in rec.stderr, rec.stderr.decode(errors="replace")
    [(status, exit_code, error)] = database.query("SELECT status, exit_code, error FROM sessions")
    assert (status, exit_code) == ("error", 3)
    assert "crash\ufffding" in error
    assert database.query("SELECT text FROM events WHERE kind = 'stderr'") == [("crash\ufffding",)]


def test_four_recorders_on_a_brand_new_database_lose_nothing(database: Database) -> None:
    n = 1000
    waiting = (
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )
    recs: list[Recording] = []
    try:
        # Hold the migration lock until all four wait for it, so they race for the new
        # database instead of arriving one after the other as Python starts up.
        with database.server.connect(database.name) as gate:
            gate.execute("SELECT pg_advisory_lock(%s)", (runner.PG_LOCK_KEY,))
            recs += [Recording(database.url, RAW_ECHO, "--name", f"s{i}") for i in range(4)]
            deadline = time.monotonic() + 30
            while database.query(waiting) != [(4,)] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert database.query(waiting) == [(4,)], "the recorders did not wait for the migration lock"
            gate.execute("SELECT pg_advisory_unlock(%s)", (runner.PG_LOCK_KEY,))
        payload = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"m"}\n' % i for i in range(n))
        for rec in recs:
            rec.send(payload)
        for rec in recs:
            for _ in range(n):
                assert rec.recv() is not None
            rec.close_stdin()
        for rec in recs:
            assert rec.wait() == 0, rec.stderr.decode(errors="replace")
            assert rec.stderr == b"", rec.stderr.decode(errors="replace")
    finally:
        for rec in recs:
            rec.kill()
    counts = database.query(
        "SELECT s.name, s.status, count(f.id) FROM sessions s JOIN frames f ON f.session_id = s.id"
        " GROUP BY 1, 2 ORDER BY 1"
    )
    assert counts == [(f"s{i}", "closed", 2 * n) for i in range(4)]
    assert database.query("SELECT version_num FROM alembic_version") == [(runner.HEAD_REVISION,)]


# -- the read commands -----------------------------------------------------------------------


@pytest.fixture
def corpus_database(database: Database) -> tuple[Database, str]:
    """A database holding one corpus session; returns it and the session id."""
    with open_store(database.url) as store:
        return database, load_corpus(store, CORPUS_FILE)


def test_sessions_lists_the_recorded_session(corpus_database: tuple[Database, str]) -> None:
    database, session_id = corpus_database
    proc = mcptape("sessions", "--db", database.url, "--json")
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    assert (row["id"], row["name"], row["frames"], row["status"], row["exit_code"]) == (
        session_id,
        "everything",
        len(corpus_lines(CORPUS_FILE)),
        "ok",
        0,
    )
    table = mcptape("sessions", "--db", database.url)
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith(session_id[:12]))
    assert row.split()[1:4] == ["everything", "record", "ok"]


def test_show_last_prints_the_timeline(corpus_database: tuple[Database, str]) -> None:
    database, session_id = corpus_database
    proc = mcptape("show", "last", "--db", database.url)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"session {session_id[:12]} · everything · ok"
    assert lines[1] == "upstream npx server-everything"
    assert "client" in lines[2] and "server" in lines[2]
    assert len(lines) == 3 + len(corpus_lines(CORPUS_FILE)) + 1  # header, frames, the exit event
    assert "initialize #0" in lines[3]
    frames = mcptape("show", session_id[:8], "--json", "--db", database.url)
    assert [json.loads(line)["seq"] for line in frames.stdout.splitlines()] == list(
        range(1, len(corpus_lines(CORPUS_FILE)) + 1)
    )


def test_export_last_gives_back_the_corpus_file_line_for_line(corpus_database: tuple[Database, str]) -> None:
    database, _ = corpus_database
    proc = mcptape("export", "last", "--db", database.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:-1] == corpus_lines(CORPUS_FILE)


def test_sql_passes_percent_signs_to_the_database(corpus_database: tuple[Database, str]) -> None:
    database, _ = corpus_database
    query = "select tool, is_error from tool_calls where tool like 'get-%' order by tool"
    proc = mcptape("sql", query, "--db", database.url, "--json")
    assert proc.returncode == 0, proc.stderr
    tools = json.loads(proc.stdout)
    assert tools and all(row["tool"].startswith("get-") and row["is_error"] == 0 for row in tools)


def test_sql_prints_postgresql_numerics_as_json_numbers(corpus_database: tuple[Database, str]) -> None:
    database, _ = corpus_database
    # sum(bigint) is numeric on PostgreSQL, which psycopg reads as Decimal.
    query = "select count(*) as n, sum(size) as total, 1.5::numeric as half from frames"
    proc = mcptape("sql", query, "--db", database.url, "--json")
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    sizes = [len(json.loads(line)["frame"].encode()) for line in corpus_lines(CORPUS_FILE)]
    assert row == {"n": len(sizes), "total": sum(sizes), "half": 1.5}


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ("delete from frames", "the database is opened read-only"),
        ("update sessions set status = 'x'", "the database is opened read-only"),
        # A second statement after COMMIT would run outside the read-only transaction.
        ("select 1; commit; delete from frames", "give one SQL statement at a time"),
    ],
)
def test_sql_refuses_to_write(corpus_database: tuple[Database, str], query: str, fragment: str) -> None:
    database, _ = corpus_database
    frames = database.query("SELECT count(*) FROM frames")
    assert_one_line_error(mcptape("sql", query, "--db", database.url), fragment)
    assert database.query("SELECT count(*) FROM frames") == frames
    assert database.query("SELECT DISTINCT status FROM sessions") == [("ok",)]


def test_sql_stops_a_query_past_its_time_limit(database: Database) -> None:
    open_store(database.url).close()
    proc = mcptape("sql", "select pg_sleep(5)", "--timeout", "0.5", "--db", database.url)
    assert_one_line_error(proc, "time limit of 0.5 s")


def test_sql_error_is_one_line_with_postgresqls_message(database: Database) -> None:
    open_store(database.url).close()
    proc = mcptape("sql", "select * from nope", "--db", database.url)
    assert_one_line_error(proc, 'SQL error: relation "nope" does not exist')


# -- wrong URLs ---------------------------------------------------------------------------------

COMMANDS = [
    ["record", "--", sys.executable, "-c", "pass"],
    ["sessions"],
    ["show", "last"],
    ["export", "last"],
    ["sql", "select 1"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_missing_database_is_a_one_line_error(postgres: Postgres, command: list[str]) -> None:
    url = postgres.url("no_such_database")
    line = assert_one_line_error(mcptape(*command[:1], "--db", url, *command[1:]))
    assert "the database no_such_database does not exist" in line
    assert "createdb no_such_database" in line


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_wrong_socket_directory_is_a_one_line_error(
    postgres: Postgres, command: list[str], tmp_path: Any
) -> None:
    url = postgres.url().replace(str(postgres.home), str(tmp_path / "nowhere"))
    line = assert_one_line_error(mcptape(*command[:1], "--db", url, *command[1:]))
    assert f"cannot connect to postgresql+psycopg://postgres@/postgres?host={tmp_path / 'nowhere'}" in line
    assert "check that the PostgreSQL server is running" in line


def test_without_psycopg_a_postgresql_url_says_how_to_install_it() -> None:
    # psycopg is installed for the tests: hide it from this one process.
    hide = "import sys; sys.modules['psycopg'] = None; from mcptape.cli.main import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", hide, "sessions", "--db", "postgresql://u@/recordings?host=/nowhere"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_line_error(proc, "no module psycopg", "pip install 'mcptape[postgres]'")


# -- the queries we print work on both databases --------------------------------------------------


def printed_queries() -> list[str]:
    """Every `mcptape sql "..."` of the README, and the query the demo runs."""
    import re

    from mcptape.cli.demo import TOOL_CALLS_SQL
    from tests.helpers.paths import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(r'^mcptape sql "([^"]+)"', readme, flags=re.MULTILINE)
    assert len(found) >= 4, "the README's SQL examples moved: update printed_queries()"
    return [*found, TOOL_CALLS_SQL]


def comparable(stdout: str) -> list[str]:
    """JSON rows as value lists, sorted, numbers to two decimals (floats may differ in the last bit).

    Column names are left out: each database names an unnamed column its own way
    (``count(*)`` on SQLite, ``count`` on PostgreSQL). Minted ids (session and
    conversation ids, 32 hex digits) differ between the two loads: they read as ``<id>``.
    """
    import re

    def tidy(value: Any) -> Any:
        if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{32}", value):
            return "<id>"
        return (
            round(float(value), 2)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else value
        )

    return sorted(json.dumps([tidy(value) for value in row.values()]) for row in json.loads(stdout))


def test_every_query_the_readme_and_the_demo_print_answers_alike_on_sqlite_and_postgresql(
    database: Database, tmp_path: Any
) -> None:
    lite = str(tmp_path / "rec.db")
    for db in (database.url, lite):
        with open_store(db) as store:
            load_corpus(store, CORPUS_FILE)
            session_id = load_corpus(store, CORPUS_FILE)
            store.update_session(session_id, name="demo", started_at=T0 + 1)
    for query in printed_queries():
        answers = []
        for db in (lite, database.url):
            proc = mcptape("sql", query, "--db", db, "--json")
            assert proc.returncode == 0, f"{query}: {proc.stderr}"
            answers.append(comparable(proc.stdout))
        assert answers[0] == answers[1], query
        assert answers[0], query
    # A response carries its request's method: no blank row in the README's count by method.
    proc = mcptape(
        "sql", "select method, count(*) as n from frames group by 1", "--db", database.url, "--json"
    )
    assert all(row["method"] for row in json.loads(proc.stdout)), proc.stdout


def test_the_demo_runs_on_postgresql(database: Database) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "demo", "--db", database.url, "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "does not exist" not in proc.stderr
    assert database.query("SELECT count(*) FROM tool_calls WHERE latency_ms IS NOT NULL")[0][0] > 0


def test_closing_a_store_after_a_large_recording_refreshes_the_planners_statistics(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcptape.store import engine

    monkeypatch.setattr(engine, "ANALYZE_AFTER", 10)  # the corpus session stands for a large one
    with open_store(database.url) as store:
        load_corpus(store, CORPUS_FILE)
    [(analyzed,)] = database.query(
        "select coalesce(analyze_count, 0) + coalesce(autoanalyze_count, 0) from pg_stat_user_tables"
        " where relname = 'frames'"
    )
    assert analyzed >= 1
