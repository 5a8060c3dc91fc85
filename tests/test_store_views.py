"""The SQL views over real sessions from the corpus, recorded through the Writer."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcptape.migrations.frozen import views_0001, views_0004, views_0005
from mcptape.migrations.frozen.views_0001 import VIEWS_V1
from mcptape.store import Store, open_store
from mcptape.wire.frame import Frame
from tests.helpers.db import session_rows
from tests.helpers.paths import CORPUS

T0 = 1_700_000_000.0


def load_corpus(store: Store, name: str, *, limit: int | None = None) -> str:
    """Record a corpus file as one session, its frames timed from T0; returns the session id."""
    session_id = store.create_session(mode="record", name=name)
    writer = store.writer()
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()[:limit]
    for seq, line in enumerate(lines, 1):
        entry = json.loads(line)
        writer.add_frame(session_id, seq, Frame(entry["frame"].encode(), entry["dir"], ts=T0 + entry["t"]))
    writer.close()
    assert writer.errors == []
    return session_id


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[sqlite3.Connection, dict[str, str]]]:
    db = tmp_path_factory.mktemp("views") / "corpus.db"
    with open_store(str(db)) as store:
        ids = {path.stem: load_corpus(store, path.name) for path in sorted(CORPUS.glob("*.jsonl"))}
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    yield conn, ids
    conn.close()


def test_every_corpus_request_is_paired_with_its_response(recorded: Any) -> None:
    conn, _ = recorded
    requests = conn.execute("SELECT count(*) FROM frames WHERE kind = 'request'").fetchone()[0]
    paired = conn.execute("SELECT count(*) FROM exchanges WHERE response_seq > request_seq").fetchone()[0]
    assert requests == paired == 26


def test_id_0_correlates_both_ways_initialize_and_sampling(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT direction, method, request_seq, response_seq, answered_by, is_error FROM exchanges"
        " WHERE session_id = :s AND rpc_id = '0' ORDER BY request_seq",
        "everything-ts-client",
    )
    assert rows == [
        {"direction": "c2s", "method": "initialize", "request_seq": 1, "response_seq": 2, "answered_by": "server", "is_error": 0},
        {"direction": "s2c", "method": "sampling/createMessage", "request_seq": 27, "response_seq": 28, "answered_by": "client", "is_error": 0},
    ]  # fmt: skip


def test_exchange_times_and_latency_come_from_the_frames(recorded: Any) -> None:
    [row] = session_rows(
        recorded,
        "SELECT requested_at, responded_at, latency_ms, request, response FROM exchanges"
        " WHERE session_id = :s AND method = 'ping'",
        "everything-ts-client",
    )
    assert row["requested_at"] == pytest.approx(T0 + 1.301736)
    assert row["responded_at"] == pytest.approx(T0 + 1.302342)
    assert row["latency_ms"] == pytest.approx((1.302342 - 1.301736) * 1000, abs=1e-3)
    assert orjson.loads(row["request"])["method"] == "ping"
    assert orjson.loads(row["response"])["result"] == {}


def test_unknown_tool_call_is_an_error_and_echo_is_not(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT tool, arguments, is_error, result FROM tool_calls WHERE session_id = :s ORDER BY request_seq",
        "everything-ts-client",
    )
    by_tool = {row["tool"]: row for row in rows}
    assert len(rows) == 8
    assert by_tool["no-such-tool"]["is_error"] == 1
    assert (
        "Tool no-such-tool not found" in orjson.loads(by_tool["no-such-tool"]["result"])["content"][0]["text"]
    )
    assert by_tool["echo"]["is_error"] == 0
    assert orjson.loads(by_tool["echo"]["arguments"]) == {"message": 'héllo \u2028 ✓ "q"'}  # U+2028 kept
    assert orjson.loads(by_tool["get-sum"]["arguments"]) is not None
    assert [row["tool"] for row in rows if row["is_error"]] == ["no-such-tool"]


def test_tool_calls_have_latency_and_request_time(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT latency_ms, requested_at FROM tool_calls WHERE session_id = :s",
        "everything-ts-client",
    )
    assert all(row["latency_ms"] > 0 and row["requested_at"] > T0 for row in rows)
    [slow] = session_rows(
        recorded,
        "SELECT latency_ms FROM tool_calls WHERE session_id = :s AND tool = 'trigger-long-running-operation'",
        "everything-ts-client",
    )
    assert slow["latency_ms"] == pytest.approx((1.300746 - 0.29814) * 1000)


def test_json_rpc_error_is_decoded_into_code_and_message(recorded: Any) -> None:
    [row] = session_rows(
        recorded,
        "SELECT method, is_error, error_code, error_message FROM exchanges WHERE session_id = :s AND is_error = 1",
        "everything-py-client",
    )
    assert row == {
        "method": "server/discover",
        "is_error": 1,
        "error_code": -32601,
        "error_message": "Method not found",
    }


def test_log_messages_have_level_logger_and_data(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT seq, direction, level, logger, data FROM log_messages WHERE session_id = :s",
        "everything-ts-client",
    )
    assert rows == [
        {
            "seq": 37,
            "direction": "s2c",
            "level": "info",
            "logger": "everything-server",
            "data": '"Roots updated: 1 root(s) received from client"',
        }
    ]


def test_server_requests_are_sampling_elicitation_and_roots_answered_by_the_client(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT method, rpc_id, answered_by, is_error, latency_ms FROM server_requests"
        " WHERE session_id = :s ORDER BY requested_at",
        "everything-ts-client",
    )
    assert [(r["method"], r["rpc_id"], r["answered_by"], r["is_error"]) for r in rows] == [
        ("sampling/createMessage", "0", "client", 0),
        ("elicitation/create", "1", "client", 0),
        ("roots/list", "2", "client", 0),
    ]
    assert all(row["latency_ms"] > 0 for row in rows)


def test_2026_session_without_initialize_has_its_tool_call(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT tool, is_error, result FROM tool_calls WHERE session_id = :s",
        "py2026-client-server",
    )
    assert [(row["tool"], row["is_error"]) for row in rows] == [("echo", 0)]
    assert orjson.loads(rows[0]["result"])["isError"] is False


def test_request_without_response_has_null_response_columns(db_path: Path) -> None:
    with open_store(str(db_path)) as store:
        load_corpus(store, "everything-ts-client.jsonl", limit=1)
        with store.readonly_connection(10) as conn:
            row = conn.exec_driver_sql(
                "SELECT method, response_seq, responded_at, latency_ms, is_error, response, answered_by FROM exchanges"
            ).one()
    assert tuple(row) == ("initialize", None, None, None, None, None, None)


def test_answer_injected_by_the_proxy_and_error_answers_are_told_apart(db_path: Path) -> None:
    frames = [
        Frame(b'{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}', "s2c"),
        Frame(b'{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant"}}', "c2s", origin="proxy"),
        Frame(
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gone","arguments":{"a":[1]}}}',
            "c2s",
        ),
        Frame(
            b'{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"upstream exited"}}',
            "s2c",
            origin="proxy",
        ),
    ]
    with open_store(str(db_path)) as store:
        session_id = store.create_session(mode="proxy")
        writer = store.writer()
        for seq, frame in enumerate(frames, 1):
            writer.add_frame(session_id, seq, frame)
        writer.close()
        with store.readonly_connection(10) as conn:
            server = conn.exec_driver_sql("SELECT method, answered_by, is_error FROM server_requests").all()
            call = conn.exec_driver_sql("SELECT tool, arguments, is_error, result FROM tool_calls").one()
    assert [tuple(row) for row in server] == [("sampling/createMessage", "proxy", 0)]
    assert call.tool == "gone" and call.arguments == '{"a":[1]}' and call.is_error == 1
    assert orjson.loads(call.result) == {"code": -32000, "message": "upstream exited"}


def test_views_survive_frames_whose_text_is_not_json(db_path: Path) -> None:
    # A frame cut at 64 MiB keeps its kind but its text is no longer JSON.
    with open_store(str(db_path)) as store:
        session_id = store.create_session(mode="record")
        with store.engine.begin() as conn:
            # As the writer stores them: the error paired with its request (request_seq 1).
            for seq, direction, kind, method, text, request_seq in [
                (
                    1,
                    "c2s",
                    "request",
                    "tools/call",
                    '{"jsonrpc":"2.0","id":1,"method":"tools/call","par',
                    None,
                ),
                (2, "s2c", "error", "tools/call", '{"jsonrpc":"2.0","id":1,"error":{"co', 1),
                (3, "s2c", "notification", "notifications/message", '{"jsonrpc":"2.0","meth', None),
            ]:
                conn.exec_driver_sql(
                    "INSERT INTO frames (session_id, seq, ts, direction, origin, kind, method, rpc_id, size, text,"
                    " request_seq) VALUES (?, ?, 1.0, ?, 'server', ?, ?, '1', 99, ?, ?)",
                    (session_id, seq, direction, kind, method, text, request_seq),
                )
        with store.readonly_connection(10) as conn:
            call = conn.exec_driver_sql("SELECT tool, arguments, is_error, result FROM tool_calls").one()
            log = conn.exec_driver_sql("SELECT level, data FROM log_messages").one()
            error = conn.exec_driver_sql("SELECT is_error, error_code FROM exchanges").one()
    assert tuple(call) == (None, None, 1, None)
    assert tuple(log) == (None, None)
    assert tuple(error) == (1, None)


def test_view_sets_can_be_dropped_and_created_again(db_path: Path) -> None:
    open_store(str(db_path)).close()
    with sqlite3.connect(db_path) as conn:
        # The newest set first: conversations (0005) is built on exchanges (0004).
        for statement in views_0005.drop_statements("sqlite") + views_0004.drop_statements("sqlite"):
            conn.execute(statement)
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'view'").fetchone()[0] == 0
        for statement in views_0001.create_statements("sqlite"):
            conn.execute(statement)
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'view'").fetchone()[0] == 4
        for statement in views_0004.drop_statements("sqlite") + views_0004.create_statements("sqlite"):
            conn.execute(statement)
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'view'").fetchone()[0] == 6


def test_postgresql_statements_create_the_helper_function_first_and_drop_it_last() -> None:
    created = views_0001.create_statements("postgresql")
    dropped = views_0001.drop_statements("postgresql")
    assert created[0].startswith("CREATE OR REPLACE FUNCTION mcptape_jsonb(doc text)")
    assert [s.split(" AS ")[0] for s in created[1:]] == [f"CREATE VIEW {v.name}" for v in VIEWS_V1]
    assert dropped[-1] == "DROP FUNCTION IF EXISTS mcptape_jsonb(text)"
    assert dropped[0] == "DROP VIEW IF EXISTS server_requests"
    # The SQL goes to the driver untouched: a "%" would be read as a parameter marker by psycopg.
    assert not any("%" in statement for statement in created + dropped)
