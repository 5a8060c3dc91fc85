"""The pass-through's upstream client against real servers on loopback sockets."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from mcptape.gateway.passthrough_client import Response, UpstreamClient, UpstreamError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def serve(handler: Handler, keepalive_timeout: float = 75.0) -> tuple[web.AppRunner, str, list[int]]:
    """An aiohttp server; the third value lists the client ports of the connections it saw."""
    peers: list[int] = []

    async def wrapped(request: web.Request) -> web.StreamResponse:
        peers.append(request.transport.get_extra_info("peername")[1])  # type: ignore[union-attr]
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", wrapped)
    runner = web.AppRunner(app, keepalive_timeout=keepalive_timeout)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/mcp", peers


async def body_of(response: Response) -> bytes:
    try:
        return b"".join([chunk async for chunk in response.chunks()])
    finally:
        response.release()


def test_exactly_the_given_headers_go_out_and_connections_are_reused() -> None:
    seen: list[list[tuple[str, str]]] = []

    async def echo(request: web.Request) -> web.Response:
        seen.append(list(request.headers.items()))
        return web.Response(body=await request.read(), headers={"Mcp-Session-Id": "s1"})

    async def main() -> None:
        runner, url, peers = await serve(echo)
        client = UpstreamClient()
        try:
            for i in range(3):
                headers = [("Content-Type", "application/json"), ("X-Twice", "a"), ("X-Twice", "b")]
                response = await client.request("POST", url, headers, b'{"n":%d}' % i)
                assert response.status == 200 and response.head.get("mcp-session-id") == "s1"
                # The whole answer came at once: its bytes and its end together.
                assert await response.next_chunk() == (b'{"n":%d}' % i, True)
                response.release()
        finally:
            await client.close()
            await runner.cleanup()
        assert len(set(peers)) == 1  # one kept-alive connection for the three requests

    asyncio.run(main())
    host = seen[0][0]
    assert host[0] == "Host" and host[1].startswith("127.0.0.1:")
    assert [k for k, _ in seen[0][1:]] == ["Content-Type", "X-Twice", "X-Twice", "Content-Length"]


def test_a_streamed_answer_arrives_piece_by_piece_before_it_ends() -> None:
    release = asyncio.Event()
    was_sent = asyncio.Event()
    sent_calls: list[int] = []

    async def stream(request: web.Request) -> web.StreamResponse:
        await was_sent.wait()  # the client's `sent` ran before it waited for this answer
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: first\n\n")
        await release.wait()
        await response.write(b"data: second\n\n")
        await response.write_eof()
        return response

    async def main() -> None:
        runner, url, _ = await serve(stream)
        client = UpstreamClient()
        try:

            def sent() -> None:
                sent_calls.append(1)
                was_sent.set()

            response = await asyncio.wait_for(
                client.request("GET", url, [("Accept", "text/event-stream")], None, sent=sent), 5
            )
            assert sent_calls == [1]
            assert await asyncio.wait_for(response.next_chunk(), 5) == (b"data: first\n\n", False)
            release.set()
            rest = b"".join([c async for c in response.chunks()])
            response.release()
            assert rest == b"data: second\n\n"
        finally:
            await client.close()
            await runner.cleanup()

    asyncio.run(main())


def test_an_idle_connection_the_server_closed_is_replaced_without_a_failure() -> None:
    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def main() -> None:
        runner, url, peers = await serve(ok, keepalive_timeout=0.05)
        client = UpstreamClient()
        try:
            assert await body_of(await client.request("GET", url, [], None)) == b"ok"
            await asyncio.sleep(0.3)  # the server closes the kept-alive connection meanwhile
            assert await body_of(await client.request("POST", url, [], b"{}")) == b"ok"
        finally:
            await client.close()
            await runner.cleanup()
        assert len(set(peers)) == 2

    asyncio.run(main())


def test_a_big_body_is_paused_and_resumed_and_arrives_whole() -> None:
    blob = bytes(range(256)) * (16 << 10)  # 4 MiB

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=blob)

    async def main() -> None:
        runner, url, _ = await serve(big)
        client = UpstreamClient()
        try:
            response = await client.request("GET", url, [], None)
            await asyncio.sleep(0.2)  # the reader lags: the socket is paused, not read into memory
            buffered = response._response.content._size  # what aiohttp holds for us
            assert buffered < 1 << 20
            assert await body_of(response) == blob
        finally:
            await client.close()
            await runner.cleanup()

    asyncio.run(main())


def test_no_server_and_a_non_http_server_are_upstream_errors() -> None:
    async def main() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        client = UpstreamClient()
        with pytest.raises(UpstreamError, match="cannot connect"):
            await client.request("GET", f"http://127.0.0.1:{port}/mcp", [], None)

        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(garbage, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            with pytest.raises(UpstreamError, match="status line"):
                await client.request("GET", f"http://127.0.0.1:{port}/mcp", [], None)
            with pytest.raises(UpstreamError, match="line break"):
                await client.request("GET", f"http://127.0.0.1:{port}/mcp", [("X", "a\r\nEvil: 1")], None)
        finally:
            server.close()
            await client.close()

    asyncio.run(main())
