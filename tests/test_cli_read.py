"""The read commands (sessions, show, sql, export) over the corpus loaded into a real store."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mcptape.cli.main import cli
from mcptape.store import open_store
from mcptape.wire.frame import Frame
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.corpus import BASE, SESSIONS, UPSTREAM, corpus_lines, load_corpus
from tests.helpers.paths import MCPTAPE


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A database holding the three corpus sessions; returns its path and name -> session id."""
    db = tmp_path_factory.mktemp("corpus") / "rec.db"
    ids = {name: load_corpus(db, file, name, BASE + offset) for name, (file, offset, _) in SESSIONS.items()}
    return db, ids


def run(db: Path, *args: str, columns: int = 200) -> Result:
    result = CliRunner().invoke(
        cli, [*args, "--db", str(db)], env={"COLUMNS": str(columns)}, catch_exceptions=False
    )
    return result


def run_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPTAPE, *args], capture_output=True, text=True, timeout=60, env=env or dict(os.environ)
    )


# -- sessions -------------------------------------------------------------------------------


def test_sessions_lists_latest_first_with_frames_duration_and_status(corpus_db: Any) -> None:
    db, ids = corpus_db
    lines = run(db, "sessions").output.splitlines()
    assert lines[0].split() == ["id", "name", "mode", "status", "started", "took", "frames", "server"]
    started = time.strftime("%Y-%m-%d", time.localtime(BASE + 200))  # another year: the date alone
    row = [ids["py2026"][:12], "py2026", "record", "ok", started, "0.68s", "6", *UPSTREAM.split()]
    assert lines[2].split() == row
    assert [line.split()[1] for line in lines[2:]] == ["py2026", "everything-py", "everything-ts"]
    assert lines[4].split()[3:7] == ["ok", time.strftime("%Y-%m-%d", time.localtime(BASE)), "1.35s", "47"]


def test_a_narrow_terminal_cuts_the_upstream_first_and_never_ids(corpus_db: Any) -> None:
    db, ids = corpus_db
    lines = run(db, "sessions", columns=80).output.splitlines()
    assert all(len(line) <= 80 for line in lines)
    day = time.strftime("%Y-%m-%d", time.localtime(BASE))
    # The server (upstream) is cut first, to its header's width; then a long name, then the status.
    assert (
        lines[4]
        == f"{ids['everything-ts'][:12]}  everything-ts  record  ok      {day}  1.35s      47  npx -y …"
    )


def test_sessions_json_gives_programs_full_ids_iso_times_and_seconds(corpus_db: Any) -> None:
    db, ids = corpus_db
    rows = json.loads(run(db, "sessions", "--json", "--name", "everything-ts").output)
    assert len(rows) == 1
    row = rows[0]
    assert row["id"] == ids["everything-ts"]
    assert (row["frames"], row["status"], row["exit_code"], row["duration_s"]) == (47, "ok", 0, 1.353243)
    assert row["started"].startswith(time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(BASE)))


def test_sessions_limit_and_csv(corpus_db: Any) -> None:
    db, ids = corpus_db
    lines = run(db, "sessions", "--csv", "--limit", "2").output.splitlines()
    assert lines[0].startswith("id,name,mode,transport,upstream,started,ended,duration_s,frames,status")
    assert [line.split(",")[0] for line in lines[1:]] == [ids["py2026"], ids["everything-py"]]


def test_sessions_on_an_empty_database_prints_the_header_and_says_so(db_path: Path) -> None:
    open_store(str(db_path)).close()
    result = CliRunner().invoke(cli, ["sessions", "--db", str(db_path)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].split() == [
        "id",
        "name",
        "mode",
        "status",
        "started",
        "took",
        "frames",
        "server",
    ]
    assert "no sessions in" in result.stderr


# -- show -----------------------------------------------------------------------------------


def test_show_header_names_the_session_its_peers_and_protocol(corpus_db: Any) -> None:
    db, ids = corpus_db
    header = run(db, "show", "everything-ts").output.splitlines()[:3]
    assert header == [
        f"session {ids['everything-ts'][:12]} · everything-ts · ok",
        f"upstream {UPSTREAM}",
        "protocol 2025-11-25 · client acceptance 1.0.0 · server mcp-servers/everything 2.0.0",
    ]


def test_show_header_reads_2026_handshake_metadata(corpus_db: Any) -> None:
    db, _ = corpus_db
    header = run(db, "show", "py2026").output.splitlines()[2]
    assert header == "protocol 2026-07-28 · client mcp 0.1.0 · server py-2026"


def test_show_header_prefers_what_the_recorder_stored(db_path: Path) -> None:
    sid = load_corpus(db_path, "py2026-client-server.jsonl", "stored", BASE)
    store = open_store(str(db_path))
    store.update_session(
        sid,
        protocol_version="2026-07-28",
        client_name="claude",
        client_version="9",
        server_name="srv",
        server_version="1.2",
    )
    store.close()
    header = run(db_path, "show", sid).output.splitlines()[2]
    assert header == "protocol 2026-07-28 · client claude 9 · server srv 1.2"


def test_show_prints_one_line_per_frame_and_event_in_time_order(corpus_db: Any) -> None:
    db, _ = corpus_db
    lines = run(db, "show", "everything-py").output.splitlines()[3:]
    assert len(lines) == 10 + 2
    assert lines[:3] == [
        " +0.000s → req    server/discover #1",
        " +0.100s · stderr                        Starting default (STDIO) server...",
        " +0.204s ← error  server/discover #1     -32601 Method not found",
    ]
    assert lines[-2:] == [
        " +0.229s ← resp   tools/call #4          echo: Echo: hi",
        " +0.279s · exit                          exit 0",
    ]


def test_show_without_events_and_with_line_separators_keeps_one_line_per_frame(corpus_db: Any) -> None:
    db, _ = corpus_db
    lines = run(db, "show", "everything-ts", "--no-events").output.split("\n")[3:-1]
    assert len(lines) == 47
    assert lines[9].endswith('echo {"message":"héllo \\u2028 ✓ \\"q\\""}')


def test_show_cuts_lines_to_the_terminal_width(corpus_db: Any) -> None:
    db, _ = corpus_db
    lines = run(db, "show", "everything-ts", columns=70).output.splitlines()
    assert all(len(line) <= 70 for line in lines)
    assert lines[12].endswith("…")


def test_show_full_prints_each_message_whole_and_pretty(corpus_db: Any) -> None:
    db, _ = corpus_db
    output = run(db, "show", "py2026", "--full", columns=40).output
    assert '"name": "echo",' in [line.strip() for line in output.splitlines()]
    assert "Echo a message." in output
    assert max(len(line) for line in output.splitlines()) > 40


def test_show_json_is_one_object_per_frame_with_the_parsed_message(corpus_db: Any) -> None:
    db, _ = corpus_db
    objects = [json.loads(line) for line in run(db, "show", "everything-ts", "--json").output.splitlines()]
    assert len(objects) == 47
    first = objects[0]
    assert {k: first[k] for k in ("seq", "direction", "origin", "kind", "method", "id", "size", "meta")} == {
        "seq": 1, "direction": "c2s", "origin": "client", "kind": "request", "method": "initialize",
        "id": 0, "size": 218, "meta": None,
    }  # fmt: skip
    assert first["ts"] == pytest.approx(BASE + 0.000195)
    assert first["message"]["params"]["clientInfo"] == {"name": "acceptance", "version": "1.0.0"}
    assert [
        o["message"] == json.loads(json.loads(line)["frame"])
        for o, line in zip(objects, corpus_lines("everything-ts-client.jsonl"), strict=True)
    ] == [True] * 47


@pytest.fixture
def odd_session(db_path: Path) -> str:
    """A session with a frame mcptape wrote (origin proxy), invalid UTF-8 and a line that is not JSON."""
    store = open_store(str(db_path))
    sid = store.create_session(mode="proxy", name="odd")
    store.update_session(sid, started_at=BASE)
    writer = store.writer()
    writer.add_frame(
        sid,
        1,
        Frame(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}', "c2s", ts=BASE + 1),
    )
    writer.add_frame(
        sid,
        2,
        Frame(
            b'{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"upstream exited"}}',
            "s2c",
            "proxy",
            ts=BASE + 2,
        ),
    )
    writer.add_frame(
        sid, 3, Frame(b'{"jsonrpc":"2.0","method":"log","params":{"x":"\xff\xfe"}}', "s2c", ts=BASE + 3)
    )
    writer.add_frame(sid, 4, Frame(b"Traceback (most recent call last):", "s2c", ts=BASE + 4))
    writer.close()
    store.close()
    return sid


def test_show_marks_proxy_answers_and_summarises_malformed_frames(db_path: Path, odd_session: str) -> None:
    lines = run(db_path, "show", "odd").output.splitlines()
    assert lines[2] == " +2.000s ← error  tools/call #7          [proxy] -32000 upstream exited"
    assert (
        lines[4]
        == " +4.000s ← bad                           not JSON-RPC: 'Traceback (most recent call last):'"
    )


def test_show_json_gives_text_for_non_json_and_base64_for_invalid_utf8(
    db_path: Path, odd_session: str
) -> None:
    objects = [json.loads(line) for line in run(db_path, "show", "odd", "--json").output.splitlines()]
    assert objects[1]["origin"] == "proxy"
    assert objects[2]["raw_b64"] == "eyJqc29ucnBjIjoiMi4wIiwibWV0aG9kIjoibG9nIiwicGFyYW1zIjp7IngiOiL//iJ9fQ=="
    assert objects[3]["text"] == "Traceback (most recent call last):"
    assert "message" not in objects[3]


# -- sql ------------------------------------------------------------------------------------


def test_sql_answers_questions_over_the_views(corpus_db: Any) -> None:
    db, ids = corpus_db
    query = (
        "select tool, count(*) as calls, sum(is_error) as errors from tool_calls"
        f" where session_id = '{ids['everything-ts']}' group by 1 order by 1"
    )
    rows = json.loads(run(db, "sql", query, "--json").output)
    assert {r["tool"]: (r["calls"], r["errors"]) for r in rows}["no-such-tool"] == (1, 1)
    assert len(rows) == 8


def test_sql_table_and_nl_formats(corpus_db: Any) -> None:
    db, _ = corpus_db
    query = "select method, answered_by from server_requests order by requested_at"
    assert run(db, "sql", query).output.splitlines() == [
        "method                  answered_by",
        "----------------------  -----------",
        "sampling/createMessage  client",
        "elicitation/create      client",
        "roots/list              client",
    ]
    nl = run(db, "sql", "select count(*) as n, null as absent from frames", "--nl").output
    assert json.loads(nl) == {"n": 63, "absent": None}


def test_sql_help_all_lists_the_columns_each_view_really_has(corpus_db: Any) -> None:
    db, _ = corpus_db
    help_text = " ".join(run(db, "sql", "--help-all").output.split())
    for view in ("exchanges", "tool_calls", "log_messages", "server_requests"):
        columns = json.loads(run(db, "sql", f"select * from {view} limit 1", "--json").output)[0]
        for column in columns:
            assert column in help_text, f"{view}.{column} is missing from `mcptape sql --help-all`"


@pytest.mark.slow
def test_sql_error_is_one_line_with_sqlites_message(corpus_db: Any) -> None:
    db, _ = corpus_db
    proc = run_process("sql", "select * from nope", "--db", str(db))
    assert_one_line_error(proc, "SQL error: no such table: nope")


@pytest.mark.slow
def test_sql_refuses_to_write(corpus_db: Any) -> None:
    db, _ = corpus_db
    proc = run_process("sql", "delete from frames", "--db", str(db))
    assert_one_line_error(proc, "`mcptape sql` only reads the recording")
    assert json.loads(run(db, "sql", "select count(*) as n from frames", "--nl").output) == {"n": 63}


@pytest.mark.slow
def test_sql_stops_a_query_at_the_time_limit(corpus_db: Any) -> None:
    db, _ = corpus_db
    endless = "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
    proc = run_process("sql", endless, "--timeout", "0.3", "--db", str(db))
    assert_one_line_error(proc, "time limit of 0.3 s")


@pytest.mark.slow
def test_missing_database_is_a_one_line_error(tmp_path: Path) -> None:
    for command in (["sql", "select 1"], ["sessions"], ["show", "last"], ["export", "last"]):
        proc = run_process(*command, "--db", str(tmp_path / "absent.db"))
        assert_one_line_error(proc, "absent.db")
        assert not (tmp_path / "absent.db").exists()


@pytest.mark.slow
def test_a_file_that_is_not_a_database_is_a_one_line_error(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("these are my notes, not a database\n" * 100)
    for command in (["sql", "select 1"], ["sessions"]):
        assert_one_line_error(run_process(*command, "--db", str(bogus)), "notes.db")


@pytest.mark.slow
def test_an_unreadable_database_is_a_one_line_error(tmp_path: Path) -> None:
    # a directory cannot be opened as a database, even by root (who can read any file)
    for command in (["sql", "select 1"], ["show", "last"]):
        assert_one_line_error(run_process(*command, "--db", str(tmp_path)))


# -- export ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SESSIONS))
def test_export_round_trips_the_corpus_line_for_line(corpus_db: Any, name: str) -> None:
    db, _ = corpus_db
    exported = run(db, "export", name).output.split("\n")[:-1]
    original = corpus_lines(SESSIONS[name][0])
    assert len(exported) == len(original)
    for ours, theirs in zip(exported, original, strict=True):
        a, b = json.loads(ours), json.loads(theirs)
        assert (a["dir"], a["frame"]) == (b["dir"], b["frame"])
        assert a["t"] == pytest.approx(b["t"], abs=1e-6)
    assert exported == original  # even byte for byte: same key order, escapes and rounding


def test_export_to_a_file_and_marks_proxy_frames_and_raw_bytes(
    db_path: Path, odd_session: str, tmp_path: Path
) -> None:
    target = tmp_path / "odd.jsonl"
    result = run(db_path, "export", odd_session[:8], "-o", str(target))
    assert result.stdout == ""
    assert f"exported 4 frames of session {odd_session[:12]} to {target}" in result.stderr
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert lines[0] == {
        "dir": "c2s",
        "t": 1.0,
        "frame": '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}',
    }
    assert lines[1]["origin"] == "proxy"
    assert "origin" not in lines[2]
    assert lines[2]["raw_b64"] == "eyJqc29ucnBjIjoiMi4wIiwibWV0aG9kIjoibG9nIiwicGFyYW1zIjp7IngiOiL//iJ9fQ=="
    assert not (tmp_path / "odd.jsonl.partial").exists()


# -- session references ---------------------------------------------------------------------


def test_a_session_is_found_by_id_prefix_name_or_last(corpus_db: Any) -> None:
    db, ids = corpus_db
    sid = ids["everything-py"]
    for ref in (sid, sid[:12], sid[:6].upper(), "everything-py"):
        assert run(db, "show", ref, "--json").output.count("\n") == 10, ref
    assert run(db, "show", "last", "--json").output.count("\n") == 6


def test_a_name_means_the_latest_session_with_that_name(db_path: Path) -> None:
    older = load_corpus(db_path, "py2026-client-server.jsonl", "twice", BASE)
    newer = load_corpus(db_path, "everything-py-client.jsonl", "twice", BASE + 50)
    assert run(db_path, "show", "twice").output.startswith(f"session {newer[:12]} ")
    assert run(db_path, "show", older[:10]).output.startswith(f"session {older[:12]} ")


@pytest.mark.slow
def test_unknown_session_is_a_one_line_error_naming_the_latest(corpus_db: Any) -> None:
    db, ids = corpus_db
    proc = run_process("show", "no-such-session", "--db", str(db))
    assert_one_line_error(
        proc, "no session or conversation 'no-such-session'", f"{ids['py2026'][:12]} (py2026)"
    )


@pytest.mark.slow
def test_ambiguous_prefix_is_a_one_line_error_listing_candidates(db_path: Path) -> None:
    store = open_store(str(db_path))
    ids = [store.create_session(mode="record", name=f"s{i}") for i in range(17)]
    store.close()
    # 17 ids over 16 hex digits: at least two start alike
    prefix = next(c for c in "0123456789abcdef" if sum(i.startswith(c) for i in ids) > 1)
    proc = run_process("export", prefix, "--db", str(db_path))
    assert_one_line_error(proc, f"session prefix {prefix!r} is ambiguous")
    assert sum(i[:12] in proc.stderr for i in ids if i.startswith(prefix)) >= 2


def test_session_frames_stream_instead_of_loading_the_session(db_path: Path) -> None:
    import tracemalloc

    from mcptape.store.queries import session_frames

    store = open_store(str(db_path))
    sid = store.create_session(mode="record", name="big")
    writer = store.writer()
    payload = "x" * (512 << 10)
    for seq in range(1, 41):  # 20 MiB in all
        text = f'{{"jsonrpc":"2.0","id":{seq},"result":{{"blob":"{payload}"}}}}'
        writer.add_frame(sid, seq, Frame(text.encode(), "s2c"))
    writer.close()
    tracemalloc.start()
    try:
        seen = sum(frame.size for frame in session_frames(store, sid))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        store.close()
    assert seen > 40 * (512 << 10)
    assert peak < 6 * (512 << 10), f"peak {peak} bytes: frames were not streamed"


@pytest.mark.slow
def test_commands_find_the_database_through_mcptape_db(db_path: Path, cli_env: dict[str, str]) -> None:
    load_corpus(db_path, "py2026-client-server.jsonl", "from-env", BASE)
    proc = run_process("sessions", "--nl", env=cli_env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["name"] == "from-env"
    exported = run_process("export", "from-env", env=cli_env).stdout.split("\n")[:-1]
    assert exported == corpus_lines("py2026-client-server.jsonl")
