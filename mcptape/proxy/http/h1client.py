"""The pass-through's upstream client: HTTP/1.1 requests on kept-alive connections, bodies streamed back.

Why not aiohttp's client here: forwarding a request through it cost about as much CPU
as the whole rest of the gateway (``bench/bench_gateway.py``), and it adds headers of
its own (``Accept-Encoding``, ``User-Agent``, ``Content-Type``). This client sends
exactly the headers it is given (plus ``Host`` and ``Content-Length``), and hands
back the body as the server sent it, chunked coding removed and nothing else
(no decompression). Idle connections are reused per origin; one that the server
closed while idle is dropped, and a request that meets such a close before any byte
of answer is sent again once on a new connection. A reader that falls behind pauses
the upstream socket (no unbounded buffering).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Final, cast
from urllib.parse import urlsplit

from mcptape.proxy.http.h1parse import ResponseError, ResponseHead, ResponseParser

HIGH_WATER: Final = 1 << 20  # bytes buffered from the upstream before its socket is paused
MAX_IDLE_PER_ORIGIN: Final = 64


class UpstreamError(ConnectionError):
    """The upstream cannot be reached or answered something that is not HTTP (the client gets a 502)."""


Origin = tuple[str, str, int]


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection; carries one request at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser: ResponseParser | None = None
        self.head: asyncio.Future[ResponseHead] | None = None
        self.body: deque[bytes] = deque()
        self.buffered = 0
        self.paused = False
        self.waiter: asyncio.Future[None] | None = None
        self.error: Exception | None = None
        self.closed = False
        self.got_bytes = False

    # -- protocol callbacks ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance test: other loops' transports (uvloop's) are not asyncio.Transport subclasses.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        parser = self.parser
        if parser is None or parser.done:
            self._fail(UpstreamError("the upstream sent bytes nobody asked for"))
            return
        self.got_bytes = True
        try:
            parts = parser.feed(data)
        except ResponseError as exc:
            self._fail(UpstreamError(str(exc)))
            return
        self._take(parts)

    def eof_received(self) -> bool | None:
        self._ended()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._ended()

    # -- internals ----------------------------------------------------------------

    def _ended(self) -> None:
        parser = self.parser
        if parser is None or parser.done:
            self.closed = True
            return
        try:
            self._take(parser.eof())
        except ResponseError as exc:
            self._fail(UpstreamError(str(exc)))

    def _take(self, parts: list[ResponseHead | bytes]) -> None:
        for part in parts:
            if isinstance(part, ResponseHead):
                if self.head is not None and not self.head.done():
                    self.head.set_result(part)
                continue
            self.body.append(part)
            self.buffered += len(part)
        if self.buffered > HIGH_WATER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def _fail(self, error: Exception) -> None:
        if self.error is None:
            self.error = error
        if self.head is not None and not self.head.done():
            self.head.set_exception(error)
        self._wake()
        if self.transport is not None:
            self.transport.abort()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def send(self, request: bytes, head_request: bool) -> asyncio.Future[ResponseHead]:
        assert self.transport is not None
        self.parser = ResponseParser(head_request=head_request)
        self.head = self.loop.create_future()
        self.body.clear()
        self.buffered = 0
        self.error = None
        self.got_bytes = False
        self.transport.write(request)
        return self.head

    async def read(self) -> bytes:
        """Body bytes buffered so far (joined), waiting for some; END once the body is complete."""
        body = self.body
        while not body:
            if self.error is not None:
                raise self.error
            self.waiter = self.loop.create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        if len(body) == 1 or not body[0]:
            data = body.popleft()
        else:
            pieces = []
            while body and body[0]:  # END (empty) stays for the next read
                pieces.append(body.popleft())
            data = b"".join(pieces)
        self.buffered -= len(data)
        if self.paused and self.buffered < HIGH_WATER // 2 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return data

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    @property
    def reusable(self) -> bool:
        parser = self.parser
        head = parser.head if parser is not None else None
        return (
            not self.closed
            and self.error is None
            and parser is not None
            and parser.done
            and not parser.until_close
            and head is not None
            and head.keep_alive
            and head.status != 101
        )


class Response:
    """An upstream's answer: the head at once, the body as it arrives. Call :meth:`release` when done."""

    def __init__(self, client: H1Client, origin: Origin, conn: _Connection, head: ResponseHead) -> None:
        self._client, self._origin, self._conn = client, origin, conn
        self.head = head
        self.status = head.status
        self.reason = head.reason
        self.headers = head.headers
        self._released = False

    async def chunks(self) -> AsyncIterator[bytes]:
        """Body bytes as they come (what arrived meanwhile in one piece), until the body ends."""
        while True:
            data = await self._conn.read()
            if not data:  # END
                return
            yield data

    async def next_chunk(self) -> tuple[bytes, bool]:
        """The next body bytes (all that arrived meanwhile) and whether the body ends with them.

        Knowing that the body ends lets the caller send its last bytes and its own end in
        one write (an answer that came in one packet leaves in one).
        """
        conn = self._conn
        data = await conn.read()
        if not data:
            return b"", True
        body = conn.body
        if len(body) == 1 and not body[0]:
            body.popleft()
            return data, True
        return data, False

    def release(self) -> None:
        """Give the connection back for reuse when the body was read to its end; else close it."""
        if self._released:
            return
        self._released = True
        self._client._put_back(self._origin, self._conn)


class H1Client:
    """Keeps idle connections per origin; :meth:`request` sends one request and returns its head."""

    def __init__(self, connect_timeout: float = 10.0) -> None:
        self.connect_timeout = connect_timeout
        self._idle: dict[Origin, list[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None
        self._targets: dict[str, tuple[Origin, str, str]] = {}

    async def request(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        body: bytes | None,
        sent: Callable[[], None] | None = None,
    ) -> Response:
        """Send a request (exactly these headers, plus Host and Content-Length); UpstreamError on failure.

        ``sent`` is called once the request is on its way, before its answer is awaited:
        work done there overlaps with the upstream's (the gateway records the request then).
        """
        origin, host, target = self._targets.get(url) or self._target(url)
        lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
        for name, value in headers:
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
                raise UpstreamError(f"header {name!r} has a line break or colon in it; not sent")
            lines.append(f"{name}: {value}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape")
        if body:
            raw += body
        head_request = method == "HEAD"
        while True:
            conn, reused = await self._connection(origin)
            try:
                head_future = conn.send(raw, head_request)
                if sent is not None:
                    call, sent = sent, None  # once: not again for a retry
                    call()
                head = await head_future
            except UpstreamError:
                conn.abort()
                if reused and not conn.got_bytes:
                    continue  # the server closed an idle connection as we used it: once more, on a new one
                raise
            except BaseException:  # cancelled (the client went away): this connection is mid-request
                conn.abort()
                raise
            return Response(self, origin, conn, head)

    def _target(self, url: str) -> tuple[Origin, str, str]:
        """Where a URL's requests go: (scheme, host, port), the Host header, the request target."""
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise UpstreamError(f"cannot forward to {url!r}: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamError(f"cannot forward to {url!r}: not an http(s) URL")
        origin: Origin = (parts.scheme, parts.hostname, port)
        host = parts.netloc.rpartition("@")[2]
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if len(self._targets) < 1024:  # a gateway has a handful of upstream URLs
            self._targets[url] = (origin, host, target)
        return origin, host, target

    async def _connection(self, origin: Origin) -> tuple[_Connection, bool]:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn, True
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            context = self._ssl
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(loop), host, port, ssl=context),
                self.connect_timeout,
            )
        except TimeoutError:
            raise UpstreamError(f"no connection to {host}:{port} within {self.connect_timeout:g} s") from None
        except OSError as exc:
            raise UpstreamError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from exc
        return conn, False

    def _put_back(self, origin: Origin, conn: _Connection) -> None:
        idle = self._idle.setdefault(origin, [])
        if conn.reusable and len(idle) < MAX_IDLE_PER_ORIGIN:
            conn.parser = None
            idle.append(conn)
        elif conn.transport is not None and not conn.closed:
            conn.transport.close()

    async def close(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for conn in idle:
                if conn.transport is not None:
                    conn.transport.close()
        self._idle.clear()
