"""An upstream never sends a client's messages and the headers given for it to another origin.

A streamable HTTP server that redirects a request to another origin, or a legacy SSE
server that names a message endpoint on one, is not followed: the request is answered
with an error saying where it was sent, and the other origin receives nothing. In
process: aiohttp servers on loopback, the upstream links themselves.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from functools import partial

from aiohttp import web

from mcptape.proxy.http.upstream_base import LoopLink, same_origin
from mcptape.proxy.http.upstream_http import HttpClientLink
from mcptape.proxy.http.upstream_sse import SseClientLink
from mcptape.wire.frame import Frame

SECRET = {"X-Api-Key": "s3cret"}
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'


class Site:
    """An aiohttp app on a loopback port; what its handlers saw."""

    def __init__(self) -> None:
        self.app = web.Application()
        self.seen: list[tuple[str, str, str | None]] = []  # (method, path, X-Api-Key)
        self.runner: web.AppRunner | None = None
        self.port = 0

    def note(self, request: web.Request) -> None:
        self.seen.append((request.method, request.path, request.headers.get("X-Api-Key")))

    async def start(self) -> None:
        self.runner = web.AppRunner(self.app, handler_cancellation=True)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


async def _answer(site: Site, request: web.Request) -> web.StreamResponse:
    site.note(request)
    body = await request.json()
    if "id" not in body:
        return web.Response(status=202)
    answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"protocolVersion": "2025-11-25"}}
    return web.json_response(answer, headers={"Mcp-Session-Id": "s1"})


async def _exchange(
    sites: list[Site], make_link: Callable[[], LoopLink]
) -> tuple[list[Frame], list[tuple[str, str]]]:
    """Start ``sites`` in order, send INIT through the link made then, stop them all: what
    the link delivered (the answer) and the events it said."""
    got: list[Frame] = []
    events: list[tuple[str, str]] = []
    try:
        for site in sites:
            await site.start()
        link = make_link()
        link.start(got.append, lambda why: None, lambda kind, text, data: events.append((kind, text or "")))
        link.send(Frame(INIT, "c2s"))
        for _ in range(250):
            if got:
                break
            await asyncio.sleep(0.02)
        await link.aclose(0.5)
    finally:
        for site in sites:
            if site.runner is not None:
                await site.stop()
    return got, events


def _redirecting(elsewhere: Site, target: str) -> Site:
    site = Site()

    async def redirect(request: web.Request) -> web.StreamResponse:
        site.note(request)
        raise web.HTTPTemporaryRedirect(target.format(port=elsewhere.port))

    site.app.router.add_route("*", "/mcp", redirect)
    return site


def test_a_redirect_to_another_origin_is_not_followed_and_the_request_gets_an_error() -> None:
    async def main() -> tuple[list[Frame], Site, Site]:
        elsewhere = Site()
        elsewhere.app.router.add_route("*", "/mcp", partial(_answer, elsewhere))
        # 127.0.0.1 and localhost are two origins, as are two ports of one host.
        server = _redirecting(elsewhere, "http://localhost:{port}/mcp")
        got, _ = await _exchange(
            [elsewhere, server], lambda: HttpClientLink(f"http://127.0.0.1:{server.port}/mcp", dict(SECRET))
        )
        return got, server, elsewhere

    got, server, elsewhere = asyncio.run(main())
    assert elsewhere.seen == []  # neither the key nor the client's message went there
    assert server.seen and server.seen[0] == ("POST", "/mcp", "s3cret")
    error = json.loads(got[0].data)
    assert error["id"] == 1
    message = error["error"]["message"]
    assert f"redirected to http://localhost:{elsewhere.port}/mcp, another origin" in message


def test_a_redirect_within_the_origin_is_followed_with_the_headers() -> None:
    async def main() -> tuple[list[Frame], Site]:
        server = Site()

        async def moved(request: web.Request) -> web.StreamResponse:
            server.note(request)
            raise web.HTTPPermanentRedirect("/mcp/")  # a server mounted at /mcp/ (Starlette)

        server.app.router.add_route("*", "/mcp", moved)
        server.app.router.add_route("*", "/mcp/", partial(_answer, server))
        got, _ = await _exchange(
            [server], lambda: HttpClientLink(f"http://127.0.0.1:{server.port}/mcp", dict(SECRET))
        )
        return got, server

    got, server = asyncio.run(main())
    assert json.loads(got[0].data)["result"]["protocolVersion"] == "2025-11-25"
    assert ("POST", "/mcp/", "s3cret") in server.seen


def test_a_legacy_sse_endpoint_on_another_origin_is_not_used() -> None:
    async def main() -> tuple[list[Frame], list[tuple[str, str]], Site]:
        elsewhere = Site()
        elsewhere.app.router.add_route("*", "/messages", partial(_answer, elsewhere))
        server = Site()

        async def events(request: web.Request) -> web.StreamResponse:
            server.note(request)
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(
                b"event: endpoint\ndata: http://127.0.0.1:%d/messages?s=1\n\n" % elsewhere.port
            )
            await asyncio.sleep(5)
            return response

        server.app.router.add_get("/sse", events)
        got, said = await _exchange(
            [elsewhere, server], lambda: SseClientLink(f"http://127.0.0.1:{server.port}/sse", dict(SECRET))
        )
        return got, said, elsewhere

    got, said, elsewhere = asyncio.run(main())
    assert elsewhere.seen == []
    assert any("named a message endpoint on another origin" in text for kind, text in said if kind == "error")
    assert "another origin" in json.loads(got[0].data)["error"]["message"]


def test_one_origin_is_one_scheme_host_and_port() -> None:
    assert same_origin("http://h/mcp", "http://h:80/messages?x=1")
    assert same_origin("https://H.example/a", "https://h.example:443/b")
    assert not same_origin("http://h/mcp", "https://h/mcp")
    assert not same_origin("http://h:8000/", "http://h:8001/")
    assert not same_origin("http://127.0.0.1/", "http://localhost/")
    assert not same_origin("http://h:x/", "http://h/")
    assert not same_origin("http://h@evil/", "http://h/")  # the host is what follows the @
