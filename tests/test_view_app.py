"""The viewer's server in process: its protection, and what each page's route answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import orjson
import pytest
from aiohttp.test_utils import TestClient

from mcptape.store import Store, open_store
from tests.helpers.viewer_client import AUTH, TOKEN, viewer_client
from tests.helpers.viewer_data import Sample, build_sample

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sample(db_path: Path) -> Sample:
    return build_sample(db_path)


@pytest.fixture
def store(db_path: Path, sample: Sample) -> Iterator[Store]:
    opened = open_store(str(db_path), create=False)
    yield opened
    opened.close()


@pytest.fixture
async def client(store: Store) -> AsyncIterator[TestClient]:
    async with viewer_client(store) as test_client:
        yield test_client


async def test_data_needs_the_token_or_the_cookie_the_login_trades_it_for(client: TestClient) -> None:
    assert (await client.get("/api/sessions")).status == 401
    assert (await client.get("/api/sessions", headers={"X-Mcptape-Token": "wrong"})).status == 401
    assert (await client.get("/api/sessions", headers={"Authorization": f"Bearer {TOKEN}"})).status == 200
    assert (await client.post("/api/login", headers={"X-Mcptape-Token": "nope"})).status == 401
    login = await client.post("/api/login", headers=AUTH)
    assert login.status == 200
    cookie = login.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
    assert (await client.get("/api/sessions")).status == 200  # the cookie alone


async def test_host_and_origin_are_checked_before_the_token(client: TestClient) -> None:
    rebound = await client.get("/api/sessions", headers={**AUTH, "Host": "evil.example:80"})
    assert rebound.status == 403 and "Host" in (await rebound.json())["error"]
    foreign = await client.get("/api/sessions", headers={**AUTH, "Origin": "http://evil.example"})
    assert foreign.status == 403
    port = client.server.port
    same = await client.get("/api/sessions", headers={**AUTH, "Origin": f"http://127.0.0.1:{port}"})
    assert same.status == 200
    assert (await client.get("/", headers={"Host": "evil.example"})).status == 403


async def test_the_viewer_is_read_only_and_its_page_needs_no_token(client: TestClient) -> None:
    for method in ("PUT", "DELETE", "PATCH"):
        response = await client.request(method, "/api/sessions", headers=AUTH)
        assert response.status == 405
    assert (await client.post("/api/sessions", headers=AUTH)).status == 405
    page = await client.get("/")
    assert page.status == 200 and "/static/app.js" in await page.text()
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    script = await client.get("/static/app.js")
    assert script.status == 200 and "EventSource" in await script.text()


async def test_sessions_are_listed_with_counts_and_searched(client: TestClient, sample: Sample) -> None:
    body = await (await client.get("/api/sessions", headers=AUTH)).json()
    rows = {row["id"]: row for row in body["sessions"]}
    assert set(rows) == {sample.original, sample.replay, sample.modern}
    original = rows[sample.original]
    assert (original["label"], original["frames"], original["errors"]) == ("closed", 13, 2)
    assert (original["client_name"], original["server_name"], original["protocol_version"]) == (
        "inspector", "weather-server", "2025-06-18",
    )  # fmt: skip
    assert rows[sample.replay]["replay_of"] == sample.original
    found = await (await client.get("/api/sessions?q=BOOKING", headers=AUTH)).json()
    assert [row["id"] for row in found["sessions"]] == [sample.modern]
    replays = await (await client.get("/api/sessions?mode=replay", headers=AUTH)).json()
    assert [row["id"] for row in replays["sessions"]] == [sample.replay]


async def test_a_timeline_has_frames_latency_tool_bytes_and_grouped_operations(
    client: TestClient, sample: Sample
) -> None:
    body = await (await client.get(f"/api/sessions/{sample.modern}/timeline", headers=AUTH)).json()
    frames = body["frames"]
    assert frames["seq"] == list(range(1, 15))
    assert frames["method"][2] == "tools/call"  # SQLite sends the names (the page interns them)
    body = await (await client.get(f"/api/sessions/{sample.modern}/stats", headers=AUTH)).json()
    kinds = [g["kind"] for g in body["groups"]]
    assert kinds == ["input_required", "task"]
    rounds, task = body["groups"]
    assert (rounds["label"], rounds["seqs"], rounds["duration_ms"]) == (
        "tools/call book",
        [3, 5],
        pytest.approx(570.0),
    )
    assert task["seqs"] == [7, 9, 11, 13] and task["steps"] == 4
    by_tool = {t["tool"]: t for t in body["tools"]}
    assert by_tool["book"]["calls"] == 2
    calls = next(m for m in body["latency"] if m["method"] == "tools/call")
    assert calls["count"] == 3 and sum(calls["hist"]) == 3
    named = await (await client.get("/api/sessions/modern/timeline", headers=AUTH)).json()
    assert named["session"]["id"] == sample.modern
    missing = await client.get("/api/sessions/nothing-like-it/timeline", headers=AUTH)
    assert missing.status == 404 and "no session" in (await missing.json())["error"]


async def test_a_frame_shows_its_bytes_hex_metadata_and_call_command(
    client: TestClient, sample: Sample
) -> None:
    call = await (await client.get(f"/api/sessions/{sample.original}/frames/6", headers=AUTH)).json()
    assert call["kind"] == "request" and call["pair"] == 10
    assert call["call"] == (
        'mcptape call -m tools/call --tool-name weather --tool-args \'{"city":"Lisbon"}\' -- weather-server --port 0'
    )
    reply = await (await client.get(f"/api/sessions/{sample.original}/frames/2", headers=AUTH)).json()
    assert reply["meta"]["headers"]["mcp-session-id"] == "abc123" and reply["pair"] == 1
    bad = await (await client.get(f"/api/sessions/{sample.original}/frames/13", headers=AUTH)).json()
    assert not bad["is_text"] and "ff fe" in bad["hex"] and "|garbage" in bad["hex"]
    raw = await client.get(f"/api/sessions/{sample.original}/frames/13/bytes", headers=AUTH)
    assert await raw.read() == b"garbage \xff\xfe not json"
    assert (await client.get(f"/api/sessions/{sample.original}/frames/99", headers=AUTH)).status == 404


async def test_compare_marks_the_exchange_whose_answer_differs(client: TestClient, sample: Sample) -> None:
    body = await (await client.get(f"/api/compare?right={sample.replay}", headers=AUTH)).json()
    assert body["left"]["id"] == sample.original and body["summary"] == "3/4 exchanges match"
    differing = [row for row in body["rows"] if row["status"] != "match"]
    assert [(r["index"], r["left"]["subject"]) for r in differing] == [(3, "weather")]
    assert differing[0]["differences"] == [
        {
            "pointer": "/result/structuredContent/humidity",
            "left": 45,
            "right": 46,
            "left_absent": False,
            "right_absent": False,
        }
    ]
    not_replay = await client.get(f"/api/compare?right={sample.modern}", headers=AUTH)
    assert not_replay.status == 404 and "not a replay" in (await not_replay.json())["error"]


async def test_sql_lists_the_views_runs_read_only_queries_and_downloads_csv(client: TestClient) -> None:
    schema = await (await client.get("/api/sql/schema", headers=AUTH)).json()
    relations = {r["name"]: r for r in schema["relations"]}
    assert relations["tool_calls"]["type"] == "view" and "latency_ms" in relations["tool_calls"]["columns"]
    assert schema["relations"][0]["type"] == "view"
    query = {"query": "select tool, count(*) as n from tool_calls group by 1 order by 1"}
    body = await (await client.post("/api/sql", json=query, headers=AUTH)).json()
    assert body["columns"] == ["tool", "n"] and ["weather", 4] in body["rows"]
    refused = await client.post("/api/sql", json={"query": "delete from sessions"}, headers=AUTH)
    assert refused.status == 400 and "only reads" in (await refused.json())["error"]
    csv = await client.get(
        "/api/sql.csv", params={"q": "select id, mode from sessions order by mode"}, headers=AUTH
    )
    text = await csv.text()
    assert csv.headers["Content-Disposition"].startswith("attachment") and text.splitlines()[0] == "id,mode"
    assert len(text.splitlines()) == 4


async def test_a_recording_session_page_gets_new_frames_by_server_sent_events(
    client: TestClient, store: Store
) -> None:
    from mcptape.wire.frame import Frame

    writer = store.writer()
    session = writer.create_session(mode="record", name="live-one")
    writer.add_frame(session, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s"))
    writer.flush()
    loaded = await (await client.get(f"/api/sessions/{session}/timeline", headers=AUTH)).json()
    assert loaded["frames"]["seq"] == [1]
    response = await client.get(
        "/api/live", params={"session": session, "after": str(loaded["last_id"])}, headers=AUTH
    )
    assert response.headers["Content-Type"] == "text/event-stream"

    async def next_event() -> tuple[str, dict[str, object]]:
        name = data = None
        while True:
            line = (await asyncio.wait_for(response.content.readline(), 10)).decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = orjson.loads(line[6:])
            elif not line and name is not None:
                return name, data  # type: ignore[return-value]

    assert (await next_event())[0] == "hello"
    caught_up = await next_event()
    assert caught_up[0] == "frames" and caught_up[1]["frames"]["seq"] == []  # type: ignore[index]
    writer.add_frame(session, 2, Frame(b'{"jsonrpc":"2.0","id":1,"result":{}}', "s2c"))
    writer.add_event(session, "stderr", "pong sent")
    writer.close()
    seen: list[int] = []
    texts: list[str] = []
    while not (seen and texts):
        name, data = await next_event()
        if name == "frames":
            seen += data["frames"]["seq"]  # type: ignore[index]
            texts += [e["text"] for e in data["events"]]  # type: ignore[attr-defined]
    assert seen == [2] and texts == ["pong sent"]
    response.close()
