"""Streams resumed with Last-Event-ID, on both sides, and 2026-07-28 stateless clients through the gateway.

Upstream side: a real aiohttp server on loopback drops a POST's SSE stream after its
first event; mcptape's streamable HTTP link must resume it with a GET carrying
``Last-Event-ID`` and deliver the answer. Downstream side: the gateway keeps each
stream's events, so a client that lost a response stream gets it back.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from mcptape.proxy.http import upstream_http
from mcptape.proxy.http.upstream_http import HttpClientLink
from mcptape.wire.frame import Frame
from tests.helpers.gateway_http import INIT, request
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.scenarios import run_modern_scenario

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CALL = (
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"t"}}}'
)
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}'
ANSWER = b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'


async def dropping_server(
    retry: bytes = b"10", tail: bytes = b""
) -> tuple[web.AppRunner, str, list[dict[str, str]]]:
    seen: list[dict[str, str]] = []

    async def post(request: web.Request) -> web.StreamResponse:
        seen.append({"method": "POST", **request.headers})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": "s1"})
        await response.prepare(request)
        await response.write(b"id: e1\nretry: " + retry + b"\ndata: " + PROGRESS + b"\n\n" + tail)
        assert request.transport is not None
        request.transport.close()  # the stream drops before the answer
        return response

    async def get(request: web.Request) -> web.StreamResponse:
        seen.append({"method": "GET", **request.headers})
        if request.headers.get("Last-Event-ID") != "e1":
            return web.Response(status=405)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"id: e2\ndata: " + ANSWER + b"\n\n")
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/mcp", post)
    app.router.add_get("/mcp", get)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/mcp", seen


def _resumed(
    retry: bytes = b"10", tail: bytes = b""
) -> tuple[list[Frame], list[dict[str, str]], list[tuple[str, Any]]]:
    async def main() -> tuple[list[Frame], list[dict[str, str]], list[tuple[str, Any]]]:
        runner, url, seen = await dropping_server(retry, tail)
        got: list[Frame] = []
        events: list[tuple[str, Any]] = []
        link = HttpClientLink(url)
        link.start(lambda f: got.append(f), lambda why: None, lambda k, t, d: events.append((k, t)))
        link.send(Frame(CALL, "c2s"))
        for _ in range(200):
            if len(got) == 2:
                break
            await asyncio.sleep(0.02)
        await link.aclose(0.5)
        await runner.cleanup()
        return got, seen, events

    return asyncio.run(main())


def test_a_dropped_response_stream_is_resumed_with_last_event_id() -> None:
    got, seen, events = _resumed()
    assert [f.data for f in got] == [PROGRESS, ANSWER]
    assert [f.meta["stream"] for f in got if f.meta] == ["post", "post"]
    assert got[1].meta is not None and got[1].meta.get("resumed") is True and got[1].meta["event_id"] == "e2"
    resumed = [h for h in seen if h["method"] == "GET"]
    assert resumed and resumed[0]["Last-Event-ID"] == "e1" and resumed[0]["Mcp-Session-Id"] == "s1"
    assert any(kind == "http_stream_dropped" for kind, _ in events)


@pytest.mark.parametrize(
    "tail",
    [
        # The resumed stream's first line was read as the rest of the half-sent one: the
        # answer arrived inside one malformed frame, and the request got an error.
        b'data: {"jsonrpc":"2.0","method":"notifications/pro',
        # The half-sent event's id was sent as Last-Event-ID: a server resumes after it,
        # so that event is never sent again (here, one that knows no such id: an error).
        b'id: e1b\ndata: {"jsonrpc":"2.0","method":"notifications/pro',
    ],
    ids=["half-a-line", "its-id"],
)
def test_an_event_the_dropped_stream_left_half_sent_counts_for_nothing(tail: bytes) -> None:
    got, seen, _ = _resumed(tail=tail)
    assert [h["Last-Event-ID"] for h in seen if h["method"] == "GET"] == ["e1"]
    assert [f.data for f in got] == [PROGRESS, ANSWER]
    assert got[1].meta is not None and got[1].meta["event_id"] == "e2"


def test_a_retry_of_centuries_is_waited_at_most_the_bound_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_http, "MAX_RETRY_S", 0.01)
    got, _, events = _resumed(b"999999999999999")  # ms: 31,000 years
    assert [f.data for f in got] == [PROGRESS, ANSWER]  # resumed after the bound, not never
    capped = [text for kind, text in events if kind == "http_retry_capped"]
    assert capped == [
        "the server asked to wait 1e+12 s before resuming the post stream; mcptape waits 0.01 s at most"
    ]


@pytest.mark.slow
def test_the_gateway_replays_a_lost_response_stream_from_its_event_store(tmp_path: Path) -> None:
    demo = {"demo": {"command": sys.executable, "args": ["-m", "mcptape.servers.demo"]}}
    g = GatewayProcess(tmp_path / "g.db", demo, "--no-auth", tmp=tmp_path)
    try:
        accept = {"Accept": "application/json, text/event-stream"}
        status, headers, body = request(g.base, "POST", "/servers/demo/mcp", accept, INIT)
        assert status == 200 and headers["content-type"].startswith("text/event-stream")
        first_id = next(line[4:] for line in body.decode().splitlines() if line.startswith("id: "))
        sid = headers["mcp-session-id"]
        # A client that lost that stream asks for what followed the event before it.
        key, _, number = first_id.rpartition("-")
        status, _, replay = request(
            g.base,
            "GET",
            "/servers/demo/mcp",
            {
                "Mcp-Session-Id": sid,
                "Accept": "text/event-stream",
                "Last-Event-ID": f"{key}-{int(number) - 1}",
            },
        )
        assert status == 200
        data = [json.loads(line[6:]) for line in replay.decode().splitlines() if line.startswith("data: ")]
        assert data and data[0]["id"] == 1 and data[0]["result"]["serverInfo"]["name"] == "mcptape-demo"
        status, _, _ = request(
            g.base,
            "GET",
            "/servers/demo/mcp",
            {"Mcp-Session-Id": sid, "Accept": "text/event-stream", "Last-Event-ID": "zz-1"},
        )
        assert status == 404
        status, _, _ = request(g.base, "DELETE", "/servers/demo/mcp", {"Mcp-Session-Id": sid})
        assert status == 200
        status, _, _ = request(g.base, "DELETE", "/servers/demo/mcp", {"Mcp-Session-Id": sid})
        assert status == 404
    finally:
        g.stop()


@pytest.mark.slow
def test_2026_07_28_stateless_clients_work_through_the_gateway(tmp_path: Path) -> None:
    demo = [sys.executable, "-m", "mcptape.servers.demo"]
    from mcp import StdioServerParameters

    plain = run_modern_scenario(StdioServerParameters(command=demo[0], args=demo[1:]))
    g = GatewayProcess(
        tmp_path / "g.db", {"demo": {"command": demo[0], "args": demo[1:]}}, "--no-auth", tmp=tmp_path
    )
    try:
        through = run_modern_scenario(g.url("demo"))
    finally:
        g.stop()
    assert through == plain and through["version"] == "2026-07-28"
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        assert con.execute("select count(*) from frames where method='initialize'").fetchone() == (0,)
        versions = {v for (v,) in con.execute("select distinct protocol_version from sessions")}
        assert versions == {"2026-07-28"}
        # The client's routing headers are recorded as they came, never invented by mcptape.
        headers = [
            json.loads(m)["headers"]
            for (m,) in con.execute("select meta from frames where direction='c2s' and method='tools/call'")
        ]
        assert headers and all(
            h.get("mcp-name") == "add" and h.get("mcp-method") == "tools/call" for h in headers
        )
    finally:
        con.close()
