"""The views of revision 0002: batches unpacked into `messages`, 2026-07-28 input requests.

Frames go in through the public store API (``open_store`` and its writer), as the
recorder writes them; the 2026-07-28 flow also runs for real, an SDK client and an
SDK server talking through a ``mcptape record`` process. The same scenarios are
checked on PostgreSQL in tests/test_store_views_v2_postgresql.py.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import sqlalchemy as sa
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcptape.migrations import runner
from mcptape.migrations.frozen.views_0001 import VIEWS_V1
from mcptape.migrations.frozen.views_0002 import VIEWS_V2
from mcptape.store import Store, open_store
from mcptape.store.engine import open_unmigrated
from mcptape.store.rows import FRAME_COLUMNS, frame_row
from mcptape.store.schema import frames
from mcptape.store.views import CURRENT
from mcptape.wire.frame import Direction, Frame, Origin, classify_message
from tests.helpers.db import session_rows
from tests.helpers.paths import CORPUS, MCPTAPE, ROOT
from tests.helpers.postgres import Postgres, private_server

T0 = 1_700_000_000.0
# (direction, origin, frame text, seconds after T0)
Wire = list[tuple[Direction, Origin, str, float]]

BATCH_TO_BATCH: Wire = [
    (
        "c2s",
        "client",
        '[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"m":"a"}}},'
        '{"jsonrpc":"2.0","id":2,"method":"ping"},'
        '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}]',
        1.0,
    ),
    (
        "s2c",
        "server",
        '[{"jsonrpc":"2.0","id":2,"result":{}},'
        '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}]',
        1.25,
    ),
]
BATCH_TO_SINGLES: Wire = [
    (
        "c2s",
        "client",
        '[{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///a"}},'
        '{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"p"}}]',
        2.0,
    ),
    ("s2c", "server", '{"jsonrpc":"2.0","id":4,"result":{"messages":[]}}', 2.5),
    ("s2c", "server", '{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"Resource not found"}}', 3.0),
]
# A plain request answered inside a batch, with a log line; a sampling request in a batch.
SINGLE_TO_BATCH: Wire = [
    ("c2s", "client", '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow"}}', 4.0),
    (
        "s2c",
        "server",
        '[{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"srv","data":"working"}},'
        '{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"boom"}}]',
        4.5,
    ),
    ("s2c", "server", '[{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}]', 5.0),
    ("c2s", "proxy", '{"jsonrpc":"2.0","id":0,"result":{"role":"assistant"}}', 5.75),
]
IDS_1_AND_STRING_1: Wire = [
    (
        "c2s",
        "client",
        '[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"number"}},'
        '{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"string"}}]',
        1.0,
    ),
    (
        "s2c",
        "server",
        '[{"jsonrpc":"2.0","id":"1","result":{"content":[],"answers":"string"}},'
        '{"jsonrpc":"2.0","id":1,"result":{"content":[],"answers":"number"}}]',
        1.5,
    ),
]


def _call(rpc_id: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})


def _result(rpc_id: int, result: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result})


WHEN = {"method": "elicitation/create", "params": {"message": "When?", "requestedSchema": {"type": "object"}}}
MODEL = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
ROOTS = {"method": "roots/list"}
ANSWER_A = {"action": "accept", "content": {"date": "Monday"}}
ANSWER_B = {"action": "accept", "content": {"date": "Friday"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
ASK = {"resultType": "input_required"}
# Two calls in flight ask under the same key, answered in the other order (told apart by
# requestState); a prompt asks without requestState, answered by an injected retry; a last
# call asks and is never retried.
INPUT_REQUIRED: Wire = [
    ("c2s", "client", _call(1, "tools/call", {"name": "book", "arguments": {"who": "a"}}), 10.0),
    ("c2s", "client", _call(2, "tools/call", {"name": "book", "arguments": {"who": "b"}}), 10.5),
    ("s2c", "server", _result(1, {**ASK, "inputRequests": {"when": WHEN}, "requestState": "A"}), 11.0),
    (
        "s2c",
        "server",
        _result(2, {**ASK, "inputRequests": {"when": WHEN, "model": MODEL}, "requestState": "B"}),
        12.0,
    ),
    (
        "c2s",
        "client",
        _call(
            3,
            "tools/call",
            {
                "name": "book",
                "arguments": {"who": "b"},
                "inputResponses": {"when": ANSWER_B, "model": SAMPLED},
                "requestState": "B",
            },
        ),
        13.5,
    ),
    (
        "c2s",
        "client",
        _call(
            4,
            "tools/call",
            {
                "name": "book",
                "arguments": {"who": "a"},
                "inputResponses": {"when": ANSWER_A},
                "requestState": "A",
            },
        ),
        14.0,
    ),
    ("s2c", "server", _result(3, {"content": [{"type": "text", "text": "b on Friday"}]}), 15.0),
    ("s2c", "server", _result(4, {"content": [{"type": "text", "text": "a on Monday"}]}), 16.0),
    ("c2s", "client", _call(5, "prompts/get", {"name": "p"}), 20.0),
    ("s2c", "server", _result(5, {**ASK, "inputRequests": {"roots": ROOTS}}), 21.0),
    (
        "c2s",
        "proxy",
        _call(6, "prompts/get", {"name": "p", "inputResponses": {"roots": {"roots": []}}}),
        21.25,
    ),
    ("s2c", "server", _result(6, {"messages": []}), 22.0),
    ("c2s", "client", _call(7, "tools/call", {"name": "book", "arguments": {"who": "c"}}), 30.0),
    ("s2c", "server", _result(7, {**ASK, "inputRequests": {"when": WHEN}, "requestState": "C"}), 31.0),
]
SCENARIOS: dict[str, Wire] = {
    "batch-to-batch": BATCH_TO_BATCH,
    "batch-to-singles": BATCH_TO_SINGLES,
    "single-to-batch": SINGLE_TO_BATCH,
    "ids-1-and-string-1": IDS_1_AND_STRING_1,
    "input-required": INPUT_REQUIRED,
}


def write_session(store: Store, name: str, wire: Wire) -> str:
    """Record ``wire`` as one session through the store's writer; returns the session id.

    At a revision before 0003 the rows are inserted as the mcptape of that time wrote them.
    """
    session_id = store.create_session(mode="record", name=name)
    if "request_seq" not in {column["name"] for column in sa.inspect(store.engine).get_columns("frames")}:
        old_columns = FRAME_COLUMNS[:-1]
        with store.engine.begin() as conn:
            for seq, (direction, origin, text, t) in enumerate(wire, 1):
                row = frame_row(session_id, seq, Frame(text.encode(), direction, origin, ts=T0 + t))
                conn.execute(frames.insert(), dict(zip(old_columns, row[:-1], strict=True)))
        return session_id
    writer = store.writer()
    for seq, (direction, origin, text, t) in enumerate(wire, 1):
        writer.add_frame(session_id, seq, Frame(text.encode(), direction, origin, ts=T0 + t))
    writer.close()
    assert writer.errors == []
    return session_id


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[sqlite3.Connection, dict[str, str]]]:
    db = tmp_path_factory.mktemp("views_v2") / "scenarios.db"
    with open_store(str(db)) as store:
        ids = {name: write_session(store, name, wire) for name, wire in SCENARIOS.items()}
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    yield conn, ids
    conn.close()


EXCHANGE = (
    "SELECT method, rpc_id, request_seq, request_batch_index, response_seq, response_batch_index,"
    " latency_ms, is_error, error_code, error_message, answered_by, request, response"
    " FROM exchanges WHERE session_id = :s ORDER BY request_seq, request_batch_index"
)


def test_batch_of_requests_answered_by_a_batch_pairs_each_request_with_its_element(recorded: Any) -> None:
    rows = session_rows(recorded, EXCHANGE, "batch-to-batch")
    assert [
        (r["method"], r["rpc_id"], r["request_seq"], r["request_batch_index"], r["response_seq"], r["response_batch_index"])
        for r in rows
    ] == [("tools/call", "1", 1, 0, 2, 1), ("ping", "2", 1, 1, 2, 0)]  # fmt: skip
    assert all(r["latency_ms"] == pytest.approx(250.0) and r["is_error"] == 0 for r in rows)
    assert json.loads(rows[0]["request"])["params"]["arguments"] == {"m": "a"}
    assert json.loads(rows[0]["response"]) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"content": [{"type": "text", "text": "a"}]},
    }
    assert json.loads(rows[1]["response"])["result"] == {}
    [call] = session_rows(
        recorded,
        "SELECT tool, arguments, is_error, result FROM tool_calls WHERE session_id = :s",
        "batch-to-batch",
    )
    assert (call["tool"], json.loads(call["arguments"]), call["is_error"]) == ("echo", {"m": "a"}, 0)
    assert json.loads(call["result"]) == {"content": [{"type": "text", "text": "a"}]}


def test_batch_of_requests_answered_by_separate_responses_pairs_each_with_its_frame(recorded: Any) -> None:
    rows = session_rows(recorded, EXCHANGE, "batch-to-singles")
    assert [
        (r["method"], r["rpc_id"], r["request_batch_index"], r["response_seq"], r["response_batch_index"], r["is_error"])
        for r in rows
    ] == [("resources/read", "3", 0, 3, None, 1), ("prompts/get", "4", 1, 2, None, 0)]  # fmt: skip
    assert [r["latency_ms"] for r in rows] == [pytest.approx(1000.0), pytest.approx(500.0)]
    assert (rows[0]["error_code"], rows[0]["error_message"]) == (-32002, "Resource not found")


def test_plain_request_answered_inside_a_batch_is_paired_and_its_error_decoded(recorded: Any) -> None:
    rows = session_rows(recorded, EXCHANGE, "single-to-batch")
    call = rows[0]
    where = (call["method"], call["request_batch_index"], call["response_seq"], call["response_batch_index"])
    assert where == ("tools/call", None, 2, 1)
    assert (call["is_error"], call["error_code"], call["error_message"]) == (1, -32603, "boom")
    assert call["latency_ms"] == pytest.approx(500.0)
    [log] = session_rows(
        recorded, "SELECT seq, level, logger, data FROM log_messages WHERE session_id = :s", "single-to-batch"
    )
    assert log == {"seq": 2, "level": "info", "logger": "srv", "data": '"working"'}
    [asked] = session_rows(
        recorded,
        "SELECT method, rpc_id, request_seq, answered_by, is_error, latency_ms, style, input_key"
        " FROM server_requests WHERE session_id = :s",
        "single-to-batch",
    )
    assert asked == {
        "method": "sampling/createMessage",
        "rpc_id": "0",
        "request_seq": 3,
        "answered_by": "proxy",
        "is_error": 0,
        "latency_ms": pytest.approx(750.0),
        "style": "request",
        "input_key": None,
    }


def test_notification_in_a_batch_is_a_message_but_not_an_exchange(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT seq, batch_index, direction, origin, kind, method, rpc_id, text, ts FROM messages"
        " WHERE session_id = :s ORDER BY seq, batch_index",
        "batch-to-batch",
    )
    assert [(r["seq"], r["batch_index"], r["kind"], r["method"], r["rpc_id"]) for r in rows] == [
        (1, 0, "request", "tools/call", "1"),
        (1, 1, "request", "ping", "2"),
        (1, 2, "notification", "notifications/progress", None),
        (2, 0, "response", None, "2"),
        (2, 1, "response", None, "1"),
    ]
    assert json.loads(rows[2]["text"]) == json.loads(BATCH_TO_BATCH[0][2])[2]
    assert {(r["direction"], r["origin"], r["ts"]) for r in rows[:3]} == {("c2s", "client", T0 + 1.0)}
    methods = [
        r["method"]
        for r in session_rows(
            recorded, "SELECT method FROM exchanges WHERE session_id = :s", "batch-to-batch"
        )
    ]
    assert sorted(methods) == ["ping", "tools/call"]


def test_plain_frames_are_messages_with_the_recorders_columns(recorded: Any) -> None:
    conn, _ = recorded
    plain = conn.execute(
        "SELECT id, session_id, seq, ts, direction, origin, kind, method, rpc_id, text, NULL FROM frames"
        " WHERE kind <> 'batch' ORDER BY id"
    ).fetchall()
    messages = conn.execute(
        "SELECT frame_id, session_id, seq, ts, direction, origin, kind, method, rpc_id, text, batch_index"
        " FROM messages WHERE batch_index IS NULL ORDER BY frame_id"
    ).fetchall()
    assert [tuple(row) for row in messages] == [tuple(row) for row in plain]
    assert len(plain) == sum(
        not text.startswith("[") for wire in SCENARIOS.values() for _, _, text, _ in wire
    )


def test_ids_1_and_string_1_in_batches_stay_distinct(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT rpc_id, request, response, response_batch_index FROM exchanges WHERE session_id = :s ORDER BY rpc_id",
        "ids-1-and-string-1",
    )
    pairs = [
        (r["rpc_id"], json.loads(r["request"])["params"]["name"], json.loads(r["response"])["result"]["answers"], r["response_batch_index"])
        for r in rows
    ]  # fmt: skip
    assert pairs == [('"1"', "string", "string", 0), ("1", "number", "number", 1)]
    calls = session_rows(
        recorded,
        "SELECT tool, result FROM tool_calls WHERE session_id = :s ORDER BY tool",
        "ids-1-and-string-1",
    )
    assert [(c["tool"], json.loads(c["result"])["answers"]) for c in calls] == [
        ("number", "number"),
        ("string", "string"),
    ]


# Elements of every kind, ids of every JSON type the recorder meets.
ELEMENTS = [
    '{"jsonrpc":"2.0","id":1,"method":"a"}',
    '{"jsonrpc":"2.0","id":"1","method":"a"}',
    '{"jsonrpc":"2.0","id":-7,"method":"a"}',
    '{"jsonrpc":"2.0","id":1.5,"method":"a"}',
    '{"jsonrpc":"2.0","id":"\\u00e9 \\" \\\\ \\t \\u2028 ✓","method":"a"}',
    '{"jsonrpc":"2.0","id":true,"method":"a"}',
    '{"jsonrpc":"2.0","method":"n","params":{"x":[1,{"y":null}]}}',
    '{"jsonrpc":"2.0","id":7,"result":{}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
    '{"jsonrpc":"2.0","id":8,"error":{},"result":{}}',
    '{"jsonrpc":"2.0","id":9}',
    '{"jsonrpc":"2.0","id":10,"method":5}',
    '{"jsonrpc":"2.0","id":11,"method":null,"result":1}',
    '"a string"',
    "42",
    "null",
    "[1,2]",
]


def test_batch_elements_are_classified_as_the_recorder_classifies_frames(db_path: Path) -> None:
    with open_store(str(db_path)) as store:
        session_id = write_session(
            store, "elements", [("c2s", "client", "[" + ",".join(ELEMENTS) + "]", 1.0)]
        )
        with store.readonly_connection(10) as conn:
            rows = conn.exec_driver_sql(
                "SELECT batch_index, kind, method, rpc_id, text FROM messages WHERE session_id = ? ORDER BY batch_index",
                (session_id,),
            ).all()
    assert [row.batch_index for row in rows] == list(range(len(ELEMENTS)))
    for row, element in zip(rows, ELEMENTS, strict=True):
        expected = classify_message(json.loads(element))
        # A list inside a batch is not a nested batch: JSON-RPC has none.
        kind = "malformed" if expected.kind == "batch" else expected.kind
        assert (row.kind, row.method, row.rpc_id) == (kind, expected.method, expected.rpc_id), element
        assert json.loads(row.text) == json.loads(element)


def test_batch_whose_text_is_no_longer_json_is_one_malformed_message(db_path: Path) -> None:
    # A batch cut at 64 MiB keeps its kind but its text is no longer JSON.
    with open_store(str(db_path)) as store:
        session_id = store.create_session(mode="record")
        with store.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO frames (session_id, seq, ts, direction, origin, kind, size, text)"
                " VALUES (?, 1, 1.0, 'c2s', 'client', 'batch', 99, '[{\"jsonrpc\":\"2.0\",\"id\":1,\"meth')",
                (session_id,),
            )
        with store.readonly_connection(10) as conn:
            messages = conn.exec_driver_sql("SELECT seq, kind, rpc_id, batch_index, text FROM messages").all()
            exchanges = conn.exec_driver_sql("SELECT count(*) FROM exchanges").scalar()
    assert [tuple(row) for row in messages] == [
        (1, "malformed", None, None, '[{"jsonrpc":"2.0","id":1,"meth')
    ]
    assert exchanges == 0


INPUT_ROWS = (
    "SELECT request_seq, input_key, method, rpc_id, requested_at, answered_by, latency_ms, is_error,"
    " request, response FROM server_requests WHERE session_id = :s AND style = 'input_required'"
    " ORDER BY request_seq, input_key"
)


def test_each_input_request_is_a_server_request_answered_by_the_retry_that_carries_its_key(
    recorded: Any,
) -> None:
    rows = session_rows(recorded, INPUT_ROWS, "input-required")
    got = [
        (
            r["request_seq"],
            r["input_key"],
            r["method"],
            r["rpc_id"],
            r["answered_by"],
            r["latency_ms"],
            r["is_error"],
        )
        for r in rows
    ]
    assert got == [
        (3, "when", "elicitation/create", None, "client", pytest.approx(3000.0), 0),
        (4, "model", "sampling/createMessage", None, "client", pytest.approx(1500.0), 0),
        (4, "when", "elicitation/create", None, "client", pytest.approx(1500.0), 0),
        (10, "roots", "roots/list", None, "proxy", pytest.approx(250.0), 0),
        (14, "when", "elicitation/create", None, None, None, None),
    ]
    # Same key, two calls: each answer comes from the retry echoing that call's requestState.
    assert [json.loads(r["response"]) for r in rows[:4]] == [ANSWER_A, SAMPLED, ANSWER_B, {"roots": []}]
    assert rows[4]["response"] is None
    assert [json.loads(r["request"]) for r in rows] == [WHEN, MODEL, WHEN, ROOTS, WHEN]
    assert rows[0]["requested_at"] == pytest.approx(T0 + 11.0)


def test_tool_calls_leave_out_rounds_that_were_retried_and_keep_the_one_that_was_not(recorded: Any) -> None:
    rows = session_rows(
        recorded,
        "SELECT request_seq, arguments, is_error, result FROM tool_calls WHERE session_id = :s ORDER BY request_seq",
        "input-required",
    )
    assert [(r["request_seq"], json.loads(r["arguments"])["who"], r["is_error"]) for r in rows] == [
        (5, "b", 0),
        (6, "a", 0),
        (13, "c", 0),
    ]
    assert json.loads(rows[0]["result"])["content"][0]["text"] == "b on Friday"
    assert json.loads(rows[2]["result"])["resultType"] == "input_required"
    [rounds] = session_rows(
        recorded, "SELECT count(*) AS n FROM exchanges WHERE session_id = :s", "input-required"
    )
    assert rounds["n"] == 7  # every round is still an exchange


# -- a real 2026-07-28 session through `mcptape record` ---------------------------------------

ASK_NAME = [sys.executable, str(ROOT / "tests" / "servers" / "ask_name.py")]


def run_greetings(db: Path) -> tuple[str, str]:
    """Two greet calls: the user answers the first question and refuses the second."""
    answers: list[types.ElicitResult | types.ErrorData] = [
        types.ElicitResult(action="accept", content={"name": "Ada"}),
        types.ErrorData(code=-32600, message="the user closed the dialog"),
    ]

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        return answers.pop(0)

    async def main() -> tuple[str, str]:
        argv = [*MCPTAPE, "record", "--db", str(db), "--name", "greet", "--", *ASK_NAME]
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(params, mode="auto", elicitation_callback=elicit) as client:
            greeted = await client.call_tool("greet", {"greeting": "Hello"})
            with pytest.raises(MCPError) as refused:
                await client.call_tool("greet", {"greeting": "Bye"})
            assert isinstance(greeted.content[0], types.TextContent)
            return greeted.content[0].text, str(refused.value)

    return anyio.run(main)


@pytest.mark.slow
def test_2026_input_required_elicitation_recorded_through_record_is_a_server_request(db_path: Path) -> None:
    greeting, refusal = run_greetings(db_path)
    assert greeting == "Hello, Ada!" and "closed the dialog" in refusal
    con = sqlite3.connect(db_path)
    con.row_factory = sqlite3.Row
    try:
        assert con.execute("SELECT protocol_version FROM sessions").fetchone()[0] == "2026-07-28"
        rows = con.execute(
            "SELECT * FROM server_requests WHERE style = 'input_required' ORDER BY request_seq"
        ).fetchall()
        # The times of the frames: the input_required result, and the retry that answered it.
        asked = con.execute(
            "SELECT seq, ts FROM frames WHERE kind = 'response' AND text LIKE '%input_required%' ORDER BY seq"
        ).fetchall()
        [retry] = con.execute("SELECT seq, ts FROM frames WHERE text LIKE '%inputResponses%'").fetchall()
        calls = con.execute(
            "SELECT tool, arguments, is_error, result FROM tool_calls ORDER BY request_seq"
        ).fetchall()
        classic = con.execute("SELECT count(*) FROM server_requests WHERE style = 'request'").fetchone()[0]
    finally:
        con.close()
    assert [(r["method"], r["rpc_id"], r["request_seq"]) for r in rows] == [
        ("elicitation/create", None, asked[0]["seq"]),
        ("elicitation/create", None, asked[1]["seq"]),
    ]
    answered, unanswered = rows
    assert answered["input_key"].endswith("ask_name") and unanswered["input_key"] == answered["input_key"]
    assert (answered["answered_by"], answered["is_error"]) == ("client", 0)
    assert answered["latency_ms"] == pytest.approx((retry["ts"] - asked[0]["ts"]) * 1000)
    assert answered["latency_ms"] > 0
    assert json.loads(answered["response"]) == {"action": "accept", "content": {"name": "Ada"}}
    assert "'Hello'" in json.loads(answered["request"])["params"]["message"]
    assert (unanswered["answered_by"], unanswered["latency_ms"], unanswered["response"]) == (None, None, None)
    assert classic == 0  # 2026-07-28 has no server-to-client requests
    # The first call shows once, with the retried round's result; the refused one keeps its question.
    assert [(c["tool"], json.loads(c["arguments"]), c["is_error"]) for c in calls] == [
        ("greet", {"greeting": "Hello"}, 0),
        ("greet", {"greeting": "Bye"}, 0),
    ]
    assert json.loads(calls[0]["result"])["structuredContent"] == {"result": "Hello, Ada!"}
    assert json.loads(calls[1]["result"])["resultType"] == "input_required"


# -- migrations --------------------------------------------------------------------------------


def open_at_0001(db: str) -> Store:
    """A store whose database is at revision 0001, as a 0001-era mcptape left it."""
    from alembic import command

    store = open_unmigrated(db)
    config = runner.alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
    return store


def revision_of(db_path: Path) -> str:
    with sqlite3.connect(db_path) as conn:
        return str(conn.execute("SELECT version_num FROM alembic_version").fetchone()[0])


def views_of(db_path: Path) -> dict[str, str]:
    with sqlite3.connect(db_path) as conn:
        return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'").fetchall())


def test_database_at_0001_with_rows_is_migrated_on_open_and_its_views_see_batches(db_path: Path) -> None:
    old = open_at_0001(str(db_path))
    session_id = write_session(old, "old", BATCH_TO_BATCH)
    with old.readonly_connection(10) as conn:
        before = conn.exec_driver_sql("SELECT count(*) FROM exchanges").scalar()
    old.close()
    assert (revision_of(db_path), before) == ("0001", 0)  # the 0001 views skip batch frames
    assert set(views_of(db_path)) == {view.name for view in VIEWS_V1}
    with open_store(str(db_path)) as store, store.readonly_connection(10) as conn:
        pairs = conn.exec_driver_sql(
            "SELECT session_id, method, response_batch_index FROM exchanges ORDER BY request_batch_index"
        ).all()
        messages = conn.exec_driver_sql("SELECT count(*) FROM messages").scalar()
    assert revision_of(db_path) == runner.HEAD_REVISION
    assert set(views_of(db_path)) == {view.name for view in CURRENT}
    assert [tuple(row) for row in pairs] == [(session_id, "tools/call", 1), (session_id, "ping", 0)]
    assert messages == 5


def test_downgrade_to_0001_puts_back_the_0001_views_exactly(db_path: Path) -> None:
    from alembic import command

    open_store(str(db_path)).close()
    store = open_unmigrated(str(db_path))
    try:
        config = runner.alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0001")
    finally:
        store.close()
    assert revision_of(db_path) == "0001"
    # The very SQL 0001 was released with (tests/test_migrations_frozen.py pins that file).
    assert views_of(db_path) == {
        view.name: f"CREATE VIEW {view.name} AS {view.sqlite.strip()}" for view in VIEWS_V1
    }


def corpus_answers(db: Path, columns: dict[str, list[str]]) -> dict[str, list[tuple[Any, ...]]]:
    """Each view's rows, with the given columns, in a fixed order."""
    with sqlite3.connect(db) as conn:
        return {
            view: sorted(
                (tuple(row) for row in conn.execute(f"SELECT {', '.join(names)} FROM {view}")),
                key=repr,
            )
            for view, names in columns.items()
        }


def test_corpus_sessions_give_the_same_answers_at_0001_and_0002(db_path: Path) -> None:
    store = open_at_0001(str(db_path))
    for path in sorted(CORPUS.glob("*.jsonl")):
        wire: Wire = [
            (entry["dir"], "client" if entry["dir"] == "c2s" else "server", entry["frame"], entry["t"])
            for entry in map(json.loads, path.read_text(encoding="utf-8").split("\n")[:-1])
        ]
        write_session(store, path.stem, wire)
    store.close()
    with sqlite3.connect(db_path) as conn:
        columns = {
            view.name: [d[0] for d in conn.execute(f"SELECT * FROM {view.name} LIMIT 0").description]
            for view in VIEWS_V1
        }
    before = corpus_answers(db_path, columns)
    open_store(str(db_path)).close()
    assert revision_of(db_path) == runner.HEAD_REVISION
    assert corpus_answers(db_path, columns) == before
    assert all(before.values()) and len(before["exchanges"]) == 26  # tests/test_store_views.py's count


# -- PostgreSQL ----------------------------------------------------------------------------------

JSON_COLUMNS = {"arguments", "result", "data", "request", "response", "text"}
# Rows cut at 64 MiB keep their kind; their text, a 64 KiB preview, is no longer JSON.
PREVIEW = "x" * (64 << 10)
CUT = [
    (1, "c2s", "batch", None, None, '[{"jsonrpc":"2.0","id":1,"method":"' + PREVIEW),
    (
        2,
        "c2s",
        "request",
        "tools/call",
        "8",
        '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":"' + PREVIEW,
    ),
    (3, "s2c", "error", None, "8", '{"jsonrpc":"2.0","id":8,"error":{"message":"' + PREVIEW),
]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


# The scenarios' frames, the batch of ELEMENTS and the cut rows.
FRAMES_WRITTEN_BY_FILL = sum(len(wire) for wire in SCENARIOS.values()) + 1 + len(CUT)


def fill(store: Store) -> None:
    """Every scenario of this module, the batch of all element kinds and the cut frames."""
    for name, wire in SCENARIOS.items():
        write_session(store, name, wire)
    write_session(store, "elements", [("s2c", "server", "[" + ",".join(ELEMENTS) + "]", 1.0)])
    session_id = store.create_session(mode="record", name="cut")
    with store.engine.begin() as conn:
        conn.execute(
            frames.insert(),
            [
                {"session_id": session_id, "seq": seq, "ts": T0 + seq, "direction": direction, "origin": "client",
                 "kind": kind, "method": method, "rpc_id": rpc_id, "size": 99, "text": text}
                for seq, direction, kind, method, rpc_id, text in CUT
            ],
        )  # fmt: skip


def normalise(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in JSON_COLUMNS:
        try:
            return json.loads(value)
        except json.JSONDecodeError:  # the cut frames
            return ("not JSON", value)
    if isinstance(value, int | float | Decimal):
        return round(float(value), 3)
    return value


def answers(store: Store) -> dict[str, list[str]]:
    """Each V2 view's rows, with session names for ids (they differ between databases), sorted."""
    out: dict[str, list[str]] = {}
    with store.readonly_connection(10) as conn:
        for view in VIEWS_V2:
            result = conn.exec_driver_sql(
                f"SELECT s.name AS session_name, v.* FROM {view.name} AS v JOIN sessions AS s ON s.id = v.session_id"
            )
            columns = list(result.keys())
            rows = [
                {
                    c: normalise(c, v)
                    for c, v in zip(columns, row, strict=True)
                    if c not in ("session_id", "frame_id")
                }
                for row in result
            ]
            out[view.name] = sorted(json.dumps(row, sort_keys=True) for row in rows)
    return out


@pytest.mark.slow
def test_postgresql_v2_views_answer_like_the_sqlite_ones_after_migrating_from_0001(
    postgres: Postgres, db_path: Path
) -> None:
    database = postgres.create_database()
    url = postgres.url(database)
    for db in (url, str(db_path)):
        old = open_at_0001(db)
        fill(old)
        old.close()
    with open_store(url) as pg, open_store(str(db_path)) as lite:
        assert pg.engine.dialect.name == "postgresql"
        expected, got = answers(lite), answers(pg)
    assert postgres.query(database, "SELECT version_num FROM alembic_version") == [(runner.HEAD_REVISION,)]
    for view in VIEWS_V2:
        assert got[view.name] == expected[view.name], view.name
        assert expected[view.name], view.name
    # 5 input requests, a sampling request, and the 6 requests of the s2c batch of ELEMENTS.
    assert len(expected["server_requests"]) == 12
    wire_messages = sum(
        len(json.loads(text)) if text.startswith("[") else 1
        for wire in SCENARIOS.values()
        for _, _, text, _ in wire
    )
    assert len(expected["messages"]) == wire_messages + len(ELEMENTS) + len(CUT)


@pytest.mark.slow
def test_postgresql_downgrade_to_0001_restores_the_0001_views(postgres: Postgres) -> None:
    from alembic import command

    database = postgres.create_database()
    with open_store(postgres.url(database)) as store:
        write_session(store, "batch-to-batch", BATCH_TO_BATCH)
        config = runner.alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0001")
    views = postgres.query(database, "SELECT viewname FROM pg_views WHERE schemaname = 'public'")
    assert sorted(name for (name,) in views) == sorted(view.name for view in VIEWS_V1)
    assert postgres.query(database, "SELECT count(*) FROM pg_proc WHERE proname = 'mcptape_jsonb'") == [(1,)]
    assert postgres.query(database, "SELECT count(*) FROM exchanges") == [(0,)]  # 0001 skips batches
    with open_store(postgres.url(database)) as store, store.readonly_connection(10) as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM exchanges").scalar() == 2


@pytest.mark.slow
def test_postgresql_views_answer_when_the_planner_would_go_parallel(postgres: Postgres) -> None:
    # mcptape_jsonb catches bad JSON in a subtransaction, which a parallel worker cannot
    # start; the 0001 function was labelled PARALLEL SAFE, so large tables failed.
    database = postgres.create_database()
    with open_store(postgres.url(database)) as store:
        fill(store)
    queries = [
        "SELECT count(tool) FROM tool_calls",
        "SELECT count(error_code) FROM exchanges",
        "SELECT count(*) FROM frames WHERE mcptape_jsonb(text) IS NOT NULL",
    ]
    with postgres.connect(database) as conn:
        serial = [conn.execute(sql).fetchone() for sql in queries]
        for setting in ("parallel_setup_cost", "parallel_tuple_cost", "min_parallel_table_scan_size"):
            conn.execute(f"SET {setting} = 0")
        plan = "\n".join(
            row[0] for row in conn.execute("EXPLAIN SELECT count(*) FROM frames WHERE text <> ''")
        )
        assert "Gather" in plan  # these settings do make the planner go parallel where it may
        assert (
            [conn.execute(sql).fetchone() for sql in queries]
            == serial
            == [(7,), (2,), (FRAMES_WRITTEN_BY_FILL - len(CUT),)]
        )
