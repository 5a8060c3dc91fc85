"""Floors for any HTTP man-in-the-middle written in Python, run by bench_gateway.py.

- ``splice``: a TCP relay on asyncio that copies bytes both ways and parses nothing. What
  an extra process hop on loopback costs by itself.
- ``aiohttp``: the least an HTTP-aware reverse proxy on aiohttp does: an aiohttp server
  that forwards each request (method, path, body, end-to-end headers) with an aiohttp
  client and streams the answer back chunk by chunk as it arrives. No MCP, no recording,
  no checks. mcptape's gateway is built on the same two halves, so the distance between
  this floor and the gateway is mcptape's own work.

    python bench/floor_proxies.py splice|aiohttp LISTEN_PORT UPSTREAM_PORT
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

import aiohttp
from aiohttp import web

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}


async def splice(listen: int, upstream: int) -> None:
    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(1 << 16):
                writer.write(chunk)
                await writer.drain()
        writer.close()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream)
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(accept, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


async def reverse_proxy(listen: int, upstream: int) -> None:
    http = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        auto_decompress=False,
        skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
    )
    base = f"http://127.0.0.1:{upstream}"

    async def forward(request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        async with http.request(
            request.method, base + request.path_qs, data=body, headers=headers, allow_redirects=False
        ) as answer:
            response = web.StreamResponse(
                status=answer.status,
                headers={k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP},
            )
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", listen).start()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await http.close()


def main() -> None:
    mode, listen, upstream = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    run = {"splice": splice, "aiohttp": reverse_proxy}[mode]
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(listen, upstream))


if __name__ == "__main__":
    main()
