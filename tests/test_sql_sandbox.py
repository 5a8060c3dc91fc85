"""`mcptape sql` is a sandbox: it can read the recording and nothing else, within bounds.

The authorizer and the budget with plain values, then the command as a user types it
against a real recording: ATTACH, writes and pragma settings refused, --timeout checked,
huge values and results stopped with a clear message, Ctrl-C reported as such (130).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptape.cli.main import cli
from mcptape.store import open_store
from mcptape.store.sql_sandbox import Budget, QueryStopped, authorize
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.corpus import SESSIONS, load_corpus
from tests.helpers.paths import MCPTAPE
from tests.helpers.postgres import Postgres, private_server

BASE = 1_700_000_000.0
COUNT_FOREVER = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("sandbox") / "rec.db"
    file, _, _ = SESSIONS["everything-ts"]
    load_corpus(db, file, "everything-ts", BASE)
    return db


def sql(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mcptape sql --db DB ARGS` in this process (fast); the result as a subprocess's would be."""
    result = CliRunner().invoke(cli, ["sql", "--db", str(db), *args])
    return subprocess.CompletedProcess(["mcptape", "sql"], result.exit_code, result.stdout, result.stderr)


# -- the authorizer and the budget, plain values ---------------------------------------------


def test_authorizer_allows_reading_and_denies_everything_else() -> None:
    ok, deny = sqlite3.SQLITE_OK, sqlite3.SQLITE_DENY
    assert authorize(sqlite3.SQLITE_SELECT, None, None, None, None) == ok
    assert authorize(sqlite3.SQLITE_READ, "frames", "text", "main", None) == ok
    assert authorize(sqlite3.SQLITE_FUNCTION, None, "round", None, None) == ok
    assert authorize(sqlite3.SQLITE_PRAGMA, "table_info", "frames", None, None) == ok
    assert authorize(sqlite3.SQLITE_PRAGMA, "user_version", None, None, None) == ok
    for action, arg1, arg2 in [
        (sqlite3.SQLITE_ATTACH, "/tmp/x.db", None),
        (sqlite3.SQLITE_DETACH, "main", None),
        (sqlite3.SQLITE_INSERT, "frames", None),
        (sqlite3.SQLITE_UPDATE, "sessions", "status"),
        (sqlite3.SQLITE_DELETE, "frames", None),
        (sqlite3.SQLITE_CREATE_TABLE, "t", None),
        (sqlite3.SQLITE_DROP_VIEW, "exchanges", None),
        (sqlite3.SQLITE_TRANSACTION, "BEGIN", None),
        (sqlite3.SQLITE_PRAGMA, "user_version", "5"),
        (sqlite3.SQLITE_PRAGMA, "query_only", "0"),
        (sqlite3.SQLITE_PRAGMA, "writable_schema", None),
        (sqlite3.SQLITE_FUNCTION, None, "load_extension"),
        (sqlite3.SQLITE_FUNCTION, None, "LOAD_EXTENSION"),
    ]:
        assert authorize(action, arg1, arg2, None, None) == deny, (action, arg1, arg2)


def test_budget_stops_a_table_at_its_memory_limit_and_lets_streams_run() -> None:
    rows = [("x" * 1000,)] * 100
    assert len(list(Budget(60).guard(rows, buffered=False))) == 100
    with pytest.raises(QueryStopped) as stopped:
        list(Budget(60, max_table_bytes=50_000).guard(rows, buffered=True))
    assert stopped.value.reason == "memory" and "--nl or --csv" in str(stopped.value)


def test_budget_stops_when_time_is_up_or_ctrl_c_was_pressed() -> None:
    budget = Budget(60)
    budget.deadline = time.monotonic() - 1
    with pytest.raises(QueryStopped, match="time limit of 60 s"):
        budget.check()
    budget = Budget(60)
    budget.interrupted = True
    with pytest.raises(QueryStopped, match="interrupted"):
        list(budget.guard([(1,)], buffered=False))


# -- the command ----------------------------------------------------------------------------


@pytest.mark.slow
def test_attach_is_refused_and_creates_no_file(rec: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.db"
    command = [*MCPTAPE, "sql", "--db", str(rec), f"attach database '{target}' as other"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert_one_line_error(proc, "only reads the recording", "ATTACH")
    assert not target.exists()


@pytest.mark.parametrize(
    "query",
    [
        "delete from frames",
        "update sessions set name = 'x'",
        "insert into events (session_id, ts, kind) values ('x', 0, 'x')",
        "create table t (x)",
        "drop view exchanges",
        "pragma query_only = 0",
        "pragma user_version = 7",
        "select load_extension('/tmp/evil')",
    ],
)
def test_writes_schema_changes_pragma_settings_and_extensions_are_refused(rec: Path, query: str) -> None:
    assert_one_line_error(sql(rec, query), "only reads the recording")
    assert sql(rec, "select count(*) as n from frames", "--nl").stdout == '{"n":47}\n'


def test_schema_pragmas_and_views_can_still_be_read(rec: Path) -> None:
    assert "rpc_id" in sql(rec, "pragma table_info(frames)").stdout
    assert sql(rec, "select count(*) as n from pragma_table_info('sessions')", "--nl").returncode == 0
    assert sql(rec, "select count(*) as n from tool_calls", "--nl").stdout == '{"n":8}\n'


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "soon"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_a_usage_error(rec: Path, value: str) -> None:
    proc = sql(rec, "select 1", "--timeout", value)
    assert proc.returncode == 2
    assert "Invalid value for '--timeout'" in proc.stderr and "Traceback" not in proc.stderr


def test_a_huge_value_stops_at_the_length_limit(rec: Path) -> None:
    assert_one_line_error(sql(rec, "select zeroblob(900000000)"), "over the 65 MiB limit")
    assert_one_line_error(sql(rec, "select length(zeroblob(900000000)) as n"), "over the 65 MiB limit")


def test_a_huge_cross_join_stops_at_the_table_memory_limit(rec: Path) -> None:
    # 47^3 rows of whole frames: far over what a table may hold; stopped, not swapped.
    query = "select a.text, b.text, c.text from frames a, frames b, frames c"
    assert_one_line_error(sql(rec, query), "more than a table can hold", "--nl or --csv")


def test_the_time_limit_covers_printing_streamed_rows_too(rec: Path) -> None:
    # Each row comes fast; printing millions of them is what runs over the limit.
    proc = sql(
        rec,
        "select a.seq, b.seq, c.seq, d.seq from frames a, frames b, frames c, frames d",
        "--nl",
        "--timeout",
        "1",
    )
    assert proc.returncode == 2 and proc.stdout.count("\n") > 1000
    assert proc.stderr.startswith("mcptape: error: the query ran longer than its time limit of 1 s")


@pytest.mark.slow
def test_ctrl_c_during_a_long_query_says_interrupted_and_exits_130(rec: Path) -> None:
    proc = subprocess.Popen(
        [*MCPTAPE, "sql", "--db", str(rec), COUNT_FOREVER, "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(2.5)  # well into the query (the command starts in well under a second)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.startswith("mcptape: the query was interrupted (Ctrl-C) after "), err
    assert "time limit" not in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_even_a_schema_write_is_refused_by_the_file_itself(rec: Path) -> None:
    # The authorizer lets SQLite touch sqlite_master for table-valued pragmas; the
    # read-only file and query_only stop any real change.
    proc = sql(rec, "update sqlite_master set sql = 'x' where name = 'frames'")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert sql(rec, "select count(*) as n from frames", "--nl").stdout == '{"n":47}\n'


# -- PostgreSQL -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


@pytest.mark.slow
def test_on_postgresql_rows_stream_and_the_time_limit_covers_printing(postgres: Postgres) -> None:
    url = postgres.url(postgres.create_database())
    open_store(url).close()  # the tables, so the database is a recording
    proc = subprocess.run(
        [
            *MCPTAPE,
            "sql",
            "--db",
            url,
            "select a, b, repeat('x', 100) from generate_series(1, 20000) a, generate_series(1, 20000) b",
            "--nl",
            "--timeout",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_line_error(proc, "time limit of 2 s")
    assert proc.stdout.count("\n") > 1000  # rows were printed as they came, not held back
    refused = subprocess.run(
        [*MCPTAPE, "sql", "--db", url, "delete from frames"], capture_output=True, text=True, timeout=60
    )
    assert_one_line_error(refused, "read-only")
