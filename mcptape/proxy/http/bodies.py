"""Reading a request body without letting a client that stops sending hold a handler forever.

aiohttp bounds a body's size (``client_max_size``) but not how long it may take: a
client that sends headers announcing a body, then a byte now and then, or nothing at all,
keeps the handler, its connection and the session it names waiting for good. As a web
server's client-body timeout does, a body that makes no progress for
:data:`BODY_IDLE_S` ends the request with a 408. A compressed body is refused (415): the
gateway inflates nothing a client sends (see :func:`mcptape.gateway.listener.make_runner`).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

BODY_IDLE_S = 60.0
_TICK_S = 1.0


async def read_body(request: web.Request) -> bytes:
    """The whole body of ``request``; HTTP 408 when none of it arrives for :data:`BODY_IDLE_S`,
    415 when it is compressed (``Content-Encoding``: a few KB of gzip unpack to gigabytes)."""
    coding = request.headers.get("Content-Encoding", "").strip().lower()
    if coding not in ("", "identity"):
        raise web.HTTPUnsupportedMediaType(
            text=f"mcptape: a request body with Content-Encoding {coding[:40]!r} is not taken; send it uncompressed",
            headers={"Accept-Encoding": "identity", "Connection": "close"},
        )
    content = request.content
    if content.is_eof():
        return await request.read()  # the usual case: the body came with the headers
    reading = asyncio.ensure_future(request.read())
    seen, idle = -1, 0.0
    tick = min(_TICK_S, BODY_IDLE_S / 2)
    while True:
        done, _ = await asyncio.wait({reading}, timeout=tick)
        if done:
            return reading.result()
        if content.total_bytes != seen:
            seen, idle = content.total_bytes, 0.0
            continue
        idle += tick
        if idle >= BODY_IDLE_S:
            reading.cancel()
            raise web.HTTPRequestTimeout(
                text=f"mcptape: the request body stopped arriving ({seen} bytes in {BODY_IDLE_S:g} s without more)",
                headers={"Connection": "close"},
            )
