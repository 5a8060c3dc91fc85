"""The streamable HTTP upstream link against real aiohttp servers on loopback: GET stream timing, SEP-1699.

Each server here plays one behaviour the conformance suite's client scenarios check
(elicitation sent on the GET stream, a POST stream closed before its answer with an SSE
``retry`` field), in a form a test can assert on directly.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from mcptape.proxy.http.upstream_http import HttpClientLink, error_said
from mcptape.wire.frame import Frame

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def jsonrpc(**fields: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode()


INIT = jsonrpc(id=1, method="initialize", params={"protocolVersion": "2025-11-25"})
INITIALIZED = jsonrpc(method="notifications/initialized")
LIST = jsonrpc(id=2, method="tools/list")
CALL = jsonrpc(id=3, method="tools/call", params={"name": "slow"})
ANSWER = jsonrpc(id=3, result={"content": []})


async def serve(post: Handler, get: Handler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/mcp", post)
    app.router.add_get("/mcp", get)
    # A handler holding a stream open ends when the link hangs up.
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/mcp"


async def sse(request: web.Request, *events: bytes) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": "s1"})
    await response.prepare(request)
    for event in events:
        await response.write(event)
    return response


async def json_reply(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    if "id" not in body:
        return web.Response(status=202)
    result: dict[str, Any] = {"protocolVersion": "2025-11-25"} if body["method"] == "initialize" else {}
    return web.Response(
        body=jsonrpc(id=body["id"], result=result),
        content_type="application/json",
        headers={"Mcp-Session-Id": "s1"},
    )


async def run_link(url: str, frames: list[bytes], until: Callable[[list[Frame]], bool]) -> list[Frame]:
    got: list[Frame] = []
    link = HttpClientLink(url)
    link.start(got.append, lambda why: None, lambda kind, text, data: None)
    for data in frames:
        link.send(Frame(data, "c2s"))
    for _ in range(250):
        if until(got):
            break
        await asyncio.sleep(0.02)
    await link.aclose(0.5)
    return got


def test_the_request_after_initialized_waits_until_the_get_stream_is_open() -> None:
    """What a server sends on the GET stream about the next request (elicitation) is not lost."""
    get_open = asyncio.Event()
    open_when_listed: list[bool] = []

    async def post(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body.get("method") == "tools/list":
            open_when_listed.append(get_open.is_set())
        return await json_reply(request)

    async def get(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.3)  # a server slow to answer the GET
        response = await sse(request, b": open\n\n")
        get_open.set()
        await asyncio.sleep(5)
        return response

    async def main() -> list[Frame]:
        runner, url = await serve(post, get)
        try:
            return await run_link(url, [INIT, INITIALIZED, LIST], lambda got: len(got) == 2)
        finally:
            await runner.cleanup()

    got = asyncio.run(main())
    assert [json.loads(f.data)["id"] for f in got] == [1, 2]
    assert open_when_listed == [True]


def test_a_post_stream_closed_before_its_answer_is_resumed_after_retry_with_last_event_id() -> None:
    """SEP-1699: a graceful close is resumable; the client waits `retry` ms and sends Last-Event-ID."""
    closed_at: list[float] = []
    gets: list[tuple[float, str | None]] = []

    async def post(request: web.Request) -> web.StreamResponse:
        response = await sse(request, b"id: p1\nretry: 300\ndata: \n\n")
        await response.write_eof()
        closed_at.append(time.monotonic())
        return response

    async def get(request: web.Request) -> web.StreamResponse:
        gets.append((time.monotonic(), request.headers.get("Last-Event-ID")))
        response = await sse(request, b"id: p2\ndata: " + ANSWER + b"\n\n")
        await asyncio.sleep(5)  # the resumed stream stays open; the link leaves it once answered
        return response

    async def main() -> list[Frame]:
        runner, url = await serve(post, get)
        try:
            return await run_link(url, [CALL], lambda got: len(got) == 1)
        finally:
            await runner.cleanup()

    got = asyncio.run(main())
    assert [f.data for f in got] == [ANSWER]
    assert got[0].meta is not None and got[0].meta["resumed"] is True and got[0].meta["event_id"] == "p2"
    assert len(gets) == 1 and gets[0][1] == "p1"
    assert gets[0][0] - closed_at[0] >= 0.25  # the server's retry (300 ms), not the default 500


def test_a_post_stream_whose_answer_came_on_the_get_stream_is_not_resumed() -> None:
    gets: list[str | None] = []
    get_stream: list[web.StreamResponse] = []

    async def post(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if body.get("method") != "tools/call":
            return await json_reply(request)
        response = await sse(request, b"id: p1\nretry: 100\ndata: \n\n")
        await get_stream[0].write(b"id: g2\ndata: " + ANSWER + b"\n\n")
        await asyncio.sleep(0.05)
        await response.write_eof()
        return response

    async def get(request: web.Request) -> web.StreamResponse:
        gets.append(request.headers.get("Last-Event-ID"))
        response = await sse(request, b"id: g1\ndata: \n\n")
        get_stream.append(response)
        await asyncio.sleep(5)
        return response

    async def main() -> list[Frame]:
        runner, url = await serve(post, get)
        try:
            got = await run_link(url, [INIT, INITIALIZED, CALL], lambda got: len(got) == 2)
            await asyncio.sleep(0.4)  # past the retry delay: a resume GET would have come
            return got
        finally:
            await runner.cleanup()

    got = asyncio.run(main())
    assert [f.data for f in got][1] == ANSWER and got[1].meta is not None and got[1].meta["stream"] == "get"
    assert gets == [None]  # the GET stream, opened once; no resume of the answered POST stream


def test_an_error_body_answering_no_request_lends_its_words_to_the_error_mcptape_makes() -> None:
    refused = (
        b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}'
    )
    assert error_said(refused, "Bad Request") == "Server not initialized"  # the reason is not said twice
    assert error_said(refused, "Forbidden") == "Bad Request: Server not initialized"
    hostile = json.dumps({"error": {"message": "a\x1b[31m\nb" + "x" * 300}}).encode()
    said = error_said(hostile)
    assert said is not None and "\x1b" not in said and "\n" not in said and len(said) == 200
    assert error_said(b"<html>nope</html>") is None
    assert error_said(b'{"error": "plain"}') is None
    assert error_said(None) is None
    assert error_said(b'{"error": {"message": "   "}}') is None
