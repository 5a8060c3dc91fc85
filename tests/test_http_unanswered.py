"""A streamable HTTP server that answers a POSTed request with something that is no answer
to it (an HTML page, ``{}``, another id, an SSE stream that ends without it): the request
gets an error saying what came, at once, instead of waiting for the client's timeout."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web

from mcptape.proxy.http import upstream_http
from mcptape.proxy.http.upstream_http import HttpClientLink
from mcptape.wire.frame import Frame
from tests.helpers.upstreams import serving

REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
# A tool call whose answer the server holds back, the client's cancellation of it, and a ping.
HELD_CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}'
HELD_CANCEL = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'
HELD_PING = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'


async def _answer(request: web.Request) -> web.StreamResponse:
    mode = request.query["mode"]
    if mode == "html":
        return web.Response(body=b"<html>login</html>", content_type="text/html")
    if mode == "empty-object":
        return web.Response(body=b"{}", content_type="application/json")
    if mode == "other-id":
        return web.json_response({"jsonrpc": "2.0", "id": 12345, "result": {}})
    if mode == "answered":
        return web.json_response({"jsonrpc": "2.0", "id": 1, "result": {}})
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b"not an event\n\ndata: not json either\n\n")
    return response


def _run(mode: str) -> list[Frame]:
    async def main() -> list[Frame]:
        app = web.Application()
        app.router.add_post("/mcp", _answer)
        async with serving(app, "") as base:
            got: list[Frame] = []
            link = HttpClientLink(f"{base}/mcp?mode={mode}")
            link.start(got.append, lambda why: None, lambda k, t, d: None)
            link.send(Frame(REQUEST, "c2s"))
            for _ in range(500):
                if any(f.kind in ("response", "error") and f.rpc_id == "1" for f in got):
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.05)  # nothing more is to come: a second answer would show here
            await link.aclose(0.5)
        return got

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("html", "answered HTTP 200 (text/html) with no answer to it: <html>login</html>"),
        ("empty-object", "(application/json) with no answer to it: {}"),
        ("other-id", '"id": 12345'),
        ("sse", "response stream ended before answering ['1']"),
    ],
)
def test_a_post_answered_with_no_answer_to_its_request_gets_an_error_at_once(mode: str, says: str) -> None:
    got = _run(mode)
    errors = [json.loads(f.data) for f in got if f.kind == "error" and f.rpc_id == "1"]
    assert len(errors) == 1, [f.data for f in got]
    assert says in errors[0]["error"]["message"]
    assert f"{got[-1].origin}" == "proxy"


def test_a_post_answered_properly_gets_no_made_up_error() -> None:
    got = _run("answered")
    assert [json.loads(f.data) for f in got] == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


def test_a_post_whose_headers_are_held_back_does_not_stall_the_requests_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A server that answers a tool call in JSON when the tool is done (or never) holds the
    # POST's headers that long: the client's cancellation and its other requests go on.
    monkeypatch.setattr(upstream_http, "HEADERS_WAIT_S", 0.5)  # ample for the POST to leave first
    call, cancel, ping = HELD_CALL, HELD_CANCEL, HELD_PING

    async def main() -> tuple[list[bytes], list[bytes]]:
        seen: list[bytes] = []
        cancelled = asyncio.Event()

        async def answer(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            seen.append(body)
            if body == call:
                await cancelled.wait()  # the headers come only once the client gave up
                return web.json_response({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}})
            if body == cancel:
                cancelled.set()
                return web.Response(status=202)
            return web.json_response({"jsonrpc": "2.0", "id": 2, "result": {}})

        app = web.Application()
        app.router.add_post("/mcp", answer)
        async with serving(app, "") as base:
            got: list[Frame] = []
            link = HttpClientLink(f"{base}/mcp")
            link.start(got.append, lambda why: None, lambda k, t, d: None)
            for data in (call, cancel, ping):
                link.send(Frame(data, "c2s"))
            for _ in range(500):
                if len(got) == 2:
                    break
                await asyncio.sleep(0.02)
            cancelled.set()
            await link.aclose(0.5)
        return seen, [f.data for f in got]

    seen, got = asyncio.run(main())
    assert seen == [call, cancel, ping]  # in the order the client sent them
    assert sorted(json.loads(d)["id"] for d in got) == [1, 2]


def test_a_401_whose_challenge_is_no_utf8_gets_its_error_at_once() -> None:
    # aiohttp reads header bytes that are no UTF-8 as lone surrogates, which no UTF-8
    # encoder takes: writing the made-up error failed, and the request waited for good.
    async def main() -> list[Frame]:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="\xff\xfe"\r\n'
                b"Content-Length: 0\r\nConnection: close\r\n\r\n"
            )
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        got: list[Frame] = []
        link = HttpClientLink(f"http://127.0.0.1:{port}/mcp")
        link.start(got.append, lambda why: None, lambda k, t, d: None)
        link.send(Frame(REQUEST, "c2s"))
        for _ in range(250):
            if got:
                break
            await asyncio.sleep(0.02)
        await link.aclose(0.5)
        server.close()
        return got

    got = asyncio.run(main())
    assert len(got) == 1
    error = json.loads(got[0].data)["error"]
    assert error["message"] == "mcptape: the MCP server answered HTTP 401 Unauthorized"
    assert error["data"] == {"status": 401, "www_authenticate": 'Bearer realm="\udcff\udcfe"'}


def test_a_session_id_no_header_may_carry_fails_the_requests_after_saying_so() -> None:
    # aiohttp read it, then refused to write it in the next request: that request's task
    # raised ValueError and the request was never answered.
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    hello = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}'

    async def main() -> list[Frame]:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nMcp-Session-Id: a\x01b\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(hello) + hello
            )
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        got: list[Frame] = []
        link = HttpClientLink(f"http://127.0.0.1:{port}/mcp")
        link.start(got.append, lambda why: None, lambda k, t, d: None)
        link.send(Frame(init, "c2s"))
        link.send(Frame(REQUEST.replace(b'"id":1', b'"id":2'), "c2s"))
        for _ in range(250):
            if len(got) == 2:
                break
            await asyncio.sleep(0.02)
        await link.aclose(0.5)
        server.close()
        return got

    got = asyncio.run(main())
    assert got[0].data == hello and len(got) == 2
    error = json.loads(got[1].data)
    assert error["id"] == 2 and "minted a session id" in error["error"]["message"]
    assert "no HTTP header may carry" in error["error"]["message"] and "a\x01b" not in got[1].data.decode()


def test_a_legacy_sse_post_never_answered_does_not_stall_the_messages_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcptape.proxy.http import upstream_sse
    from mcptape.proxy.http.upstream_sse import SseClientLink

    monkeypatch.setattr(upstream_sse, "HEADERS_WAIT_S", 0.5)  # ample for the POST to leave first
    call, cancel, ping = HELD_CALL, HELD_CANCEL, HELD_PING
    pong = b'{"jsonrpc":"2.0","id":2,"result":{}}'

    async def main() -> tuple[list[bytes], list[bytes]]:
        seen: list[bytes] = []
        cancelled = asyncio.Event()
        events: asyncio.Queue[bytes] = asyncio.Queue()

        async def stream(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(b"event: endpoint\ndata: /message\n\n")
            while data := await events.get():
                await response.write(b"event: message\ndata: " + data + b"\n\n")
            return response

        async def message(request: web.Request) -> web.Response:
            body = await request.read()
            seen.append(body)
            if body == call:
                await cancelled.wait()  # never answered while the client waits
            elif body == cancel:
                cancelled.set()
            else:
                events.put_nowait(pong)
            return web.Response(status=202)

        app = web.Application()
        app.router.add_get("/sse", stream)
        app.router.add_post("/message", message)
        async with serving(app, "") as base:
            got: list[Frame] = []
            link = SseClientLink(f"{base}/sse")
            link.start(got.append, lambda why: None, lambda k, t, d: None)
            for data in (call, cancel, ping):
                link.send(Frame(data, "c2s"))
            for _ in range(500):
                if got:
                    break
                await asyncio.sleep(0.02)
            cancelled.set()
            events.put_nowait(b"")  # the stream ends
            await link.aclose(0.5)
        return seen, [f.data for f in got]

    seen, got = asyncio.run(main())
    assert seen == [call, cancel, ping] and got == [pong]
