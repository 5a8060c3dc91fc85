"""The pass-through's upstream client: aiohttp's, set up to add nothing and decode nothing.

What a forwarding client must do differently from an application's: send exactly the
client's end-to-end headers (aiohttp otherwise adds ``Accept-Encoding``, ``User-Agent``,
``Accept`` and ``Content-Type`` of its own; gzip would hand the recorder compressed
bytes), hand the body back as the server sent it (no decompression), keep connections
alive without a pool limit (a GET stream holds its connection for as long as the
session lives: aiohttp's default of 100 would stall every request behind 100 open
streams), never follow redirects, and say in one line what went wrong when the upstream
cannot be reached or does not speak HTTP (the client gets a 502).

:class:`Response` hands the body over as it arrives, and says whether the bytes it
gives are the last ones, so that the gateway can send an answer's last bytes and its
end in one write.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import aiohttp
from multidict import CIMultiDict

# The headers aiohttp would add to a request of its own accord.
_AUTO_HEADERS: Final = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")


class UpstreamError(ConnectionError):
    """The upstream cannot be reached or answered something that is not HTTP (the client gets a 502)."""


class Head:
    """The response headers, looked up by name whatever its case; ``""`` when absent."""

    def __init__(self, headers: Any) -> None:
        self._headers = headers

    def get(self, name: str) -> str:
        value = self._headers.get(name)
        return value if isinstance(value, str) else ""


class Response:
    """An upstream's answer: the head at once, the body as it arrives. Call :meth:`release` when done."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.reason = response.reason or ""
        # Repeated headers stay repeated, in their order.
        self.headers: list[tuple[str, str]] = list(response.headers.items())
        self.head = Head(response.headers)

    async def next_chunk(self) -> tuple[bytes, bool]:
        """The next body bytes (all that arrived meanwhile) and whether the body ends with them."""
        content = self._response.content
        try:
            data = await content.readany()
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamError(_describe(exc)) from None
        return data, not data or content.at_eof()

    async def chunks(self) -> AsyncIterator[bytes]:
        """Body bytes as they come, until the body ends."""
        while True:
            data, last = await self.next_chunk()
            if data:
                yield data
            if last:
                return

    def release(self) -> None:
        """Give the connection back for reuse when the body was read to its end; else close it."""
        self._response.release()


class UpstreamClient:
    """One aiohttp session for every upstream of a gateway; :meth:`request` returns the head."""

    def __init__(self, connect_timeout: float = 10.0) -> None:
        self.connect_timeout = connect_timeout
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.connect_timeout),
                auto_decompress=False,
                skip_auto_headers=_AUTO_HEADERS,
            )
        return self._session

    async def request(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        body: bytes | None,
        sent: Callable[[], None] | None = None,
    ) -> Response:
        """Send a request with exactly these headers (aiohttp adds ``Host`` and ``Content-Length``).

        ``sent`` is called once the request is on its way, before its answer is awaited:
        work done there overlaps with the upstream's (the gateway records the request then).
        Raises UpstreamError, in one line, when there is no HTTP answer.
        """
        for name, value in headers:
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
                raise UpstreamError(f"header {name!r} has a line break or colon in it; not sent")
        pending = asyncio.ensure_future(
            self._http().request(
                method,
                url,
                data=body,
                headers=CIMultiDict(headers),
                allow_redirects=False,
                compress=None,
            )
        )
        try:
            if sent is not None:
                await asyncio.sleep(0)  # the request starts on its way first
                sent()
            response = await pending
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise UpstreamError(_describe(exc, url)) from None
        except TimeoutError:
            raise UpstreamError(f"no connection to {url} within {self.connect_timeout:g} s") from None
        except BaseException:  # cancelled (the client went away): nothing of it may linger
            pending.cancel()
            raise
        return Response(response)

    async def close(self) -> None:
        """Close every connection."""
        if self._session is not None:
            await self._session.close()
            self._session = None


def _describe(exc: BaseException, url: str | None = None) -> str:
    """One line for an upstream failure."""
    where = f" {url}" if url else ""
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect to{where}: {exc.os_error.strerror or exc.os_error}"
    if isinstance(exc, aiohttp.ClientResponseError | aiohttp.ServerDisconnectedError) or "status" in str(exc):
        return f"the upstream{where} did not answer with HTTP (bad status line or headers): {exc}"
    text = str(exc).replace("\n", " ").strip() or type(exc).__name__
    return f"the upstream{where} failed: {text}"
