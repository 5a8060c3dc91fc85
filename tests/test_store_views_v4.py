"""The views of revision 0004, on real recordings: proxy edits, mcptape's own copies, HTTP metadata.

- A request a proxy edit replaced (``--declare-capabilities`` rewrites every 2026-07-28
  request) is not an unanswered exchange: its replacement carries the exchange.
- The trimmed copy of an ``input_required`` round that the injector forwards to the
  client is not a second set of questions in `server_requests`.
- `http_frames` shows how each frame of a gateway recording travelled.

The same answers on PostgreSQL, and a database at 0003 with rows upgrades to 0004, are
checked at the end.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, types

from mcptape.migrations import runner
from mcptape.migrations.frozen import views_0003
from mcptape.store import Store, open_store
from mcptape.store.engine import open_unmigrated
from mcptape.store.views import CURRENT
from mcptape.wire.frame import Frame
from tests.helpers.db import query
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.http_servers import everything_http
from tests.helpers.paths import MCPTAPE, ROOT, everything_server_cmd
from tests.helpers.postgres import Postgres, private_server

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

TRIP_PLANNER = [sys.executable, str(ROOT / "tests" / "servers" / "trip_planner.py")]
SAMPLE = {
    "role": "assistant",
    "content": {"type": "text", "text": "canned by mcptape"},
    "model": "tape-model",
}


def record_params(db: Path, *options: str) -> StdioServerParameters:
    argv = [*MCPTAPE, "record", "--db", str(db), *options, "--", *TRIP_PLANNER]
    return StdioServerParameters(command=argv[0], args=argv[1:])


async def _client_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Bo"})


def plan_trip(db: Path, *, client_elicits: bool) -> str:
    """One plan_trip call through `record` with injection; the client answers elicitation when asked to."""
    options = ["--handle-sampling", json.dumps(SAMPLE), "--roots", "file:///trips", "--declare-capabilities"]
    if not client_elicits:
        options += ["--handle-elicitation", '{"action": "accept", "content": {"name": "Ada"}}']

    async def main() -> str:
        callback = _client_elicitation if client_elicits else None
        async with Client(
            record_params(db, *options), read_timeout_seconds=30, elicitation_callback=callback
        ) as c:
            result = await c.call_tool("plan_trip", {"city": "Oslo"})
            return "".join(part.text for part in result.content if isinstance(part, types.TextContent))

    return asyncio.run(main())


@pytest.fixture(scope="module")
def partly_injected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2026-07-28 session: mcptape answers sampling and roots, the client elicitation."""
    db = tmp_path_factory.mktemp("views_v4") / "partly.db"
    assert (
        plan_trip(db, client_elicits=True)
        == "Bo goes to Oslo: canned by mcptape [tape-model] roots=file:///trips"
    )
    return db


@pytest.mark.slow
def test_a_request_a_proxy_edit_replaced_is_not_an_unanswered_exchange(partly_injected: Path) -> None:
    replaced = query(
        partly_injected,
        "select o.seq, o.method from frames as o join frames as n on n.session_id = o.session_id"
        " and n.seq = o.seq + 1 and json_extract(n.meta, '$.replaces') = o.seq where o.kind = 'request'"
        " order by o.seq",
    )
    methods = [m for _, m in replaced]
    # The handshake, the call and the client's retry all gained the declared capabilities.
    assert methods.count("tools/call") == 2 and "server/discover" in methods
    listed = {seq for (seq,) in query(partly_injected, "select request_seq from exchanges")}
    assert not listed & {seq for seq, _ in replaced}
    assert query(partly_injected, "select method from exchanges where response_seq is null") == []
    # The replacements carry the exchanges: each answered, and one tool call with its result.
    assert {seq + 1 for seq, _ in replaced} <= listed
    calls = query(
        partly_injected, "select tool, is_error, json_extract(result, '$.content[0].text') from tool_calls"
    )
    assert calls == [("plan_trip", 0, "Bo goes to Oslo: canned by mcptape [tape-model] roots=file:///trips")]


@pytest.mark.slow
def test_questions_are_listed_once_as_the_server_asked_them_with_who_answered(partly_injected: Path) -> None:
    # mcptape forwards a trimmed copy of the round (origin proxy) holding the client's question.
    copies = query(
        partly_injected,
        "select count(*) from frames where origin = 'proxy' and direction = 's2c' and text like '%input_required%'",
    )
    assert copies[0][0] >= 1
    answered = query(
        partly_injected, "select method, answered_by, style from server_requests order by method"
    )
    assert answered == [
        ("elicitation/create", "client", "input_required"),
        ("roots/list", "proxy", "input_required"),
        ("sampling/createMessage", "proxy", "input_required"),
    ]


@pytest.mark.slow
def test_fully_injected_rounds_list_each_question_once_answered_by_the_proxy(tmp_path: Path) -> None:
    db = tmp_path / "all.db"
    assert (
        plan_trip(db, client_elicits=False)
        == "Ada goes to Oslo: canned by mcptape [tape-model] roots=file:///trips"
    )
    assert query(db, "select method, answered_by from server_requests order by method") == [
        ("elicitation/create", "proxy"),
        ("roots/list", "proxy"),
        ("sampling/createMessage", "proxy"),
    ]
    assert query(db, "select method from exchanges where response_seq is null") == []
    assert query(db, "select tool, is_error from tool_calls") == [("plan_trip", 0)]


# -- http_frames: a real gateway in front of a real streamable HTTP server ---------------------


def run_http_client(url: str) -> str:
    async def main() -> str:
        async with Client(url) as client:
            await client.list_tools()
            result = await client.call_tool("echo", {"message": "over http"})
            return "".join(part.text for part in result.content if isinstance(part, types.TextContent))

    return asyncio.run(main())


@pytest.fixture(scope="module")
def gateway_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("views_v4_http")
    db = tmp / "gateway.db"
    with everything_http("streamableHttp") as url:
        gateway = GatewayProcess(db, {"ev": {"url": url, "type": "http"}}, "--no-auth", tmp=tmp)
        try:
            assert "over http" in run_http_client(gateway.url("ev"))
        finally:
            assert gateway.stop() == 0, gateway.stderr
    return db


HTTP = (
    "select direction, kind, method, http_method, path, stream, status, sse, event_id, http_session_id,"
    " protocol_version, content_type, headers from http_frames"
    " where session_id = (select session_id from frames where method = 'initialize') order by seq"
)


@pytest.mark.slow
def test_http_frames_say_how_each_frame_of_a_gateway_session_travelled(gateway_recording: Path) -> None:
    # Every frame the gateway recorded travelled over HTTP.
    assert query(gateway_recording, "select count(*) from http_frames") == query(
        gateway_recording, "select count(*) from frames"
    )
    # The SDK client first tried 2026-07-28 (server/discover), which the server refused with a 400.
    assert query(gateway_recording, "select method, status, sse from http_frames where kind = 'error'") == [
        (None, 400, 0)
    ]
    got = query(gateway_recording, HTTP)
    requests = [r for r in got if r[0] == "c2s"]
    replies = [r for r in got if r[1] in ("response", "error")]
    assert [r[2] for r in replies] == ["initialize", "tools/list", "tools/call"]
    for _, _, _, http_method, path, stream, status, sse, *_ in requests:
        assert (http_method, path, stream, status, sse) == ("POST", "/servers/ev/mcp", "post", None, 0)
    # Which responses came as SSE events, with the status of the HTTP response that carried them.
    for _, _, _, http_method, _, stream, status, sse, event_id, _, _, content_type, headers in replies:
        assert (http_method, stream, status) == ("POST", "post", 200)
        assert sse == (1 if content_type.startswith("text/event-stream") else 0)
        assert event_id is not None or not sse
        assert json.loads(headers)  # the headers that matter, as a JSON object
    assert any(r[7] == 1 for r in replies)
    # Which session id the server minted: on every reply, and the one the gateway logged.
    minted = {r[9] for r in replies}
    [(logged,)] = query(
        gateway_recording, "select json_extract(data, '$.session_id') from events where kind = 'http_session'"
    )
    assert minted == {logged} and logged
    versions = {r[10] for r in requests if r[2] != "initialize"}
    assert len(versions) == 1 and None not in versions  # MCP-Protocol-Version after the handshake


@pytest.mark.slow
def test_http_frames_of_a_stdio_upstream_behind_the_gateway_name_their_client_stream(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run `cd tests/npm && npm ci`"
    entry = {"command": server[0], "args": server[1:]}
    gateway = GatewayProcess(db, {"ev": entry}, "--no-auth", tmp=tmp_path)
    try:
        assert "over http" in run_http_client(gateway.url("ev"))
    finally:
        assert gateway.stop() == 0, gateway.stderr
    session = "(select session_id from frames where method = 'initialize')"
    replies = query(
        db,
        "select method, http_method, stream, status, sse, event_id is not null from http_frames"
        f" where direction = 's2c' and kind = 'response' and session_id = {session} order by seq",
    )
    assert replies == [(m, "POST", "post", 200, 1, 1) for m in ("initialize", "tools/list", "tools/call")]
    # The session id mcptape minted comes with the answer to initialize; the client sends it back.
    [(minted,)] = query(
        db, "select http_session_id from http_frames where method = 'initialize' and direction = 's2c'"
    )
    sent = query(
        db,
        f"select distinct http_session_id from http_frames where direction = 'c2s' and session_id = {session}",
    )
    assert minted and set(sent) == {(None,), (minted,)}


@pytest.mark.slow
def test_frames_without_http_metadata_are_not_http_frames(partly_injected: Path) -> None:
    assert query(partly_injected, "select count(*) from http_frames") == [(0,)]
    assert query(partly_injected, "select count(*) from frames where meta is not null")[0][0] > 0


# -- migrations and PostgreSQL --------------------------------------------------------------------

T0 = 1_700_000_000.0
REPLACED_WIRE: list[tuple[str, str, str, dict[str, Any] | None]] = [
    ("c2s", "client", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}', {"forwarded": False}),
    ("c2s", "proxy", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{}}}', {"replaces": 1}),
    ("s2c", "server", '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', {
        "http_method": "POST", "path": "/mcp", "stream": "post", "status": 200, "event_id": "e-1",
        "headers": {"MCP-SESSION-ID": "s-1", "Content-Type": "text/event-stream"},
    }),
    ("c2s", "client", '{"jsonrpc":"2.0","id":2,"method":"ping"}', None),
    ("s2c", "server", '{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":'
     '{"k":{"method":"roots/list"}},"requestState":"S"}}', None),
    ("s2c", "proxy", '{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":'
     '{"k":{"method":"roots/list"}},"requestState":"S"}}', {"replaces": 5}),
]  # fmt: skip


def write_wire(store: Store) -> str:
    session_id = store.create_session(mode="proxy", name="v4")
    writer = store.writer()
    for seq, (direction, origin, text, meta) in enumerate(REPLACED_WIRE, 1):
        frame = Frame(text.encode(), direction, origin, ts=T0 + seq, meta=meta)  # type: ignore[arg-type]
        writer.add_frame(session_id, seq, frame)
    writer.close()
    assert writer.errors == []
    return session_id


def open_at(db: str, revision: str) -> Store:
    from alembic import command

    store = open_unmigrated(db)
    config = runner.alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    return store


ANSWERS = {
    "exchanges": "select method, request_seq, response_seq from exchanges order by request_seq",
    "server_requests": "select method, request_seq, style, input_key from server_requests order by request_seq",
    "http_frames": "select seq, http_method, path, stream, status, sse, event_id, http_session_id, content_type"
    " from http_frames order by seq",
}
EXPECTED = {
    # 1 was replaced by 2; ping (4) stays unanswered, as it was.
    "exchanges": [("tools/call", 2, 3), ("ping", 4, None)],
    "server_requests": [("roots/list", 5, "input_required", "k")],
    "http_frames": [(3, "POST", "/mcp", "post", 200, 1, "e-1", "s-1", "text/event-stream")],
}


def answers(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    with store.readonly_connection(10) as conn:
        return {
            name: [
                tuple(float(v) if type(v).__name__ == "Decimal" else v for v in row)
                for row in conn.exec_driver_sql(sql)
            ]
            for name, sql in ANSWERS.items()
        }


def test_database_at_0003_with_rows_upgrades_to_0004_and_downgrades_back(db_path: Path) -> None:
    old = open_at(str(db_path), "0003")
    write_wire(old)
    with old.readonly_connection(10) as conn:
        before = conn.exec_driver_sql("select request_seq from exchanges where response_seq is null").all()
    old.close()
    assert [tuple(r) for r in before] == [(1,), (4,)]  # 0003 listed the replaced request
    with open_store(str(db_path)) as store:
        assert answers(store) == EXPECTED
    assert query(db_path, "select version_num from alembic_version") == [(runner.HEAD_REVISION,)]
    views = dict(query(db_path, "select name, sql from sqlite_master where type = 'view'"))
    assert views == {v.name: f"CREATE VIEW {v.name} AS {v.sqlite.strip()}" for v in CURRENT}
    store = open_at(str(db_path), "0004")
    from alembic import command

    config = runner.alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0003")
    store.close()
    views = dict(query(db_path, "select name, sql from sqlite_master where type = 'view'"))
    assert views == {v.name: f"CREATE VIEW {v.name} AS {v.sqlite.strip()}" for v in views_0003.VIEWS_V3}


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    with private_server() as server:
        yield server


@pytest.mark.slow
def test_postgresql_database_at_0003_upgrades_and_its_views_answer_like_sqlite(postgres: Postgres) -> None:
    database = postgres.create_database()
    old = open_at(postgres.url(database), "0003")
    write_wire(old)
    old.close()
    with open_store(postgres.url(database)) as store:
        assert store.engine.dialect.name == "postgresql"
        assert answers(store) == EXPECTED
    assert postgres.query(database, "select version_num from alembic_version") == [(runner.HEAD_REVISION,)]
    views = postgres.query(database, "select viewname from pg_views where schemaname = 'public'")
    assert sorted(name for (name,) in views) == sorted(v.name for v in CURRENT)
    store = open_at(postgres.url(database), "0004")
    from alembic import command

    config = runner.alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0003")
    store.close()
    views = postgres.query(database, "select viewname from pg_views where schemaname = 'public'")
    assert sorted(name for (name,) in views) == sorted(v.name for v in views_0003.VIEWS_V3)
    assert postgres.query(database, "select count(*) from exchanges where response_seq is null") == [(2,)]


@pytest.mark.slow
def test_postgresql_views_read_texts_a_direct_cast_would_refuse(postgres: Postgres) -> None:
    # The views cast most texts directly (no call per row); these ones must not reach a
    # direct jsonb cast, or the whole query would fail: jsonb refuses \\u0000 and numbers
    # past numeric's range, and a cut frame is no JSON any more.
    database = postgres.create_database()
    cut = '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"' + "x" * (64 << 10)
    wire = [
        ("c2s", '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nul\\u0000"}}'),
        ("s2c", '{"jsonrpc":"2.0","id":1,"result":{"n":1e-20000}}'),
        ("c2s", '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok"}}'),
        ("s2c", '{"jsonrpc":"2.0","id":2,"result":{"isError":true}}'),
        ("c2s", '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"big"}}'),
        ("s2c", '{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"m","data":1e200000}}'),
        (
            "s2c",
            '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\\u0000"}}',
        ),
    ]
    with open_store(postgres.url(database)) as store:
        session_id = store.create_session(mode="record")
        writer = store.writer()
        for seq, (direction, text) in enumerate(wire, 1):
            writer.add_frame(session_id, seq, Frame(text.encode(), direction, ts=T0 + seq))  # type: ignore[arg-type]
        writer.close()
        with store.engine.begin() as conn:  # as the writer keeps a frame it cut: a 64 KiB preview
            conn.exec_driver_sql(
                "UPDATE frames SET text = %s WHERE session_id = %s AND seq = 4", (cut, session_id)
            )
        with store.readonly_connection(10) as conn:
            calls = conn.exec_driver_sql(
                "select tool, is_error, result from tool_calls order by request_seq"
            ).all()
            errors = conn.exec_driver_sql(
                "select is_error, error_code from exchanges order by request_seq"
            ).all()
            logs = conn.exec_driver_sql("select level, data from log_messages").all()
    # json keeps the number as written; the cut reply has no result to show.
    assert [tuple(c) for c in calls] == [
        (None, 0, '{"n":1e-20000}'),
        ("ok", 0, None),
        ("big", 1, '{"code":-32000,"message":"m","data":1e200000}'),
    ]
    assert [tuple(e) for e in errors] == [(0, None), (0, None), (1, None)]
    assert [tuple(log) for log in logs] == [(None, None)]
