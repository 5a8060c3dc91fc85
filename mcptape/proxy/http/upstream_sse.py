"""Legacy HTTP+SSE upstream link (protocol 2024-11-05): GET the event stream, POST frames to its endpoint.

The server's first event, ``endpoint``, names the URL (relative to the stream's) that
messages are POSTed to; every server message then arrives as a ``message`` event on
the stream. Frames the client sends before the endpoint is known wait for it, in
order; each POST is waited for :data:`HEADERS_WAIT_S` at most before the next, so a
server that never answers one stalls nothing. The stream ending ends the link.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import urljoin, urlsplit

from mcptape.proxy.http.headers import lowered, media_type, that_matter
from mcptape.proxy.http.sse import SseParser
from mcptape.proxy.http.upstream_base import HEADERS_WAIT_S, LoopLink, same_origin, unreachable
from mcptape.redact import redact_url
from mcptape.wire.frame import Frame

ENDPOINT_TIMEOUT = 10.0
MAX_ERROR_BODY = 1 << 20


class SseClientLink(LoopLink):
    """A legacy HTTP+SSE session with one remote server, as a :class:`~mcptape.proxy.link.Link`."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        name: str = "server",
        redact_names: tuple[str, ...] = (),
        first: list[Frame] | None = None,
    ) -> None:
        super().__init__(url, headers, name)
        self.path = urlsplit(url).path or "/"
        self.endpoint: str | None = None
        self.redact_names = redact_names
        self._endpoint_known = asyncio.Event()
        self._first = list(first or [])

    async def _run(self) -> None:
        for frame in self._first:
            self._queue.put_nowait(frame)
        self.spawn(self._read_events())
        try:
            await asyncio.wait_for(self._endpoint_known.wait(), ENDPOINT_TIMEOUT)
        except TimeoutError:
            await self._give_up(
                f"the SSE stream at {self.url} sent no endpoint event within {ENDPOINT_TIMEOUT:g} s"
            )
            return
        if self.endpoint is None:
            return  # the stream failed; _read_events said why
        while True:
            item = await self._queue.get()
            if item is None:
                return
            # In order, each waited for a bounded time: a server that never answers a POST
            # must not hold back the client's cancellation and its other messages.
            posted = self.spawn(self._post(item))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(posted), HEADERS_WAIT_S)

    async def _give_up(self, why: str) -> None:
        self._error = why
        self.emit("error", why, {"url": self.url})
        while not self._queue.empty():
            frame = self._queue.get_nowait()
            if frame is not None:
                await self.fail_request(frame, why)
        self._ended(f"error: {why}")

    async def _read_events(self) -> None:
        import aiohttp

        headers = {**self.headers, "Accept": "text/event-stream"}
        try:
            response = await self._http.get(self.url, headers=headers)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self._unreachable = unreachable(self.url, exc)  # nothing was ever reached here
            await self._give_up(self._unreachable)
            self._endpoint_known.set()
            return
        self.reached()
        ctype = response.headers.get("Content-Type", "")
        if response.status != 200 or media_type(ctype) != "text/event-stream":
            response.release()
            what = f" ({ctype or 'no Content-Type'})" if response.status == 200 else ""
            await self._give_up(
                f"GET {self.url} answered HTTP {response.status} {response.reason}{what}, not an SSE stream"
            )
            self._endpoint_known.set()
            return
        meta = {
            "http_method": "GET",
            "path": self.path,
            "status": response.status,
            "stream": "sse",
            "headers": that_matter(response.headers.items(), self.redact_names),
        }
        parser = SseParser()
        try:
            async for chunk in response.content.iter_any():
                for event in parser.feed(chunk):
                    if event.event == "endpoint" and self.endpoint is None:
                        endpoint = urljoin(self.url, event.data.decode("utf-8", "replace").strip())
                        if not same_origin(endpoint, self.url):
                            # The SDKs refuse it too: the client's messages and the headers
                            # given for this server would be POSTed to whoever it names.
                            await self._give_up(
                                f"the legacy SSE server at {self.url} named a message endpoint on "
                                f"another origin ({redact_url(endpoint)}): not used"
                            )
                            return
                        self.endpoint = endpoint
                        # The endpoint's session id opens the session: recorded like a token.
                        shown = redact_url(self.endpoint)
                        self.emit("sse_endpoint", shown, {"endpoint": redact_url(event.data.decode())})
                        self._endpoint_known.set()
                    elif event.event == "message" and event.data:
                        await self.deliver(Frame(event.data, "s2c", meta={**meta, "event_id": event.id}))
            if self.endpoint is None:
                await self._give_up(f"the SSE stream at {self.url} ended before its endpoint event")
            else:
                self._ended("eof")
        except Exception as exc:
            self._ended(f"error: the SSE stream dropped: {exc}")
        finally:
            response.release()
            self._endpoint_known.set()

    def prepare(self, frame: Frame) -> dict[str, Any] | None:
        """How a client frame is about to be sent (for its record): POSTed to the endpoint."""
        headers = {**self.headers, "Content-Type": "application/json"}
        return {
            "http_method": "POST",
            "path": urlsplit(self.endpoint or self.url).path or "/",
            "stream": "sse-endpoint",
            "headers": lowered(that_matter(headers.items(), self.redact_names)),
        }

    async def _post(self, frame: Frame) -> None:
        import aiohttp

        assert self.endpoint is not None
        headers = {**self.headers, "Content-Type": "application/json"}
        try:
            async with self._http.post(self.endpoint, data=frame.data, headers=headers) as response:
                if response.status >= 300:
                    body = await response.content.read(MAX_ERROR_BODY)
                    why = f"the MCP server answered HTTP {response.status} {response.reason} to a message"
                    self.emit(
                        "error",
                        why,
                        {"status": response.status, "body": body[:2000].decode("utf-8", "replace")},
                    )
                    await self.fail_request(frame, why, {"status": response.status})
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            why = f"cannot POST to the MCP server at {self.endpoint}: {type(exc).__name__}: {exc}"
            self.emit("error", why, None)
            await self.fail_request(frame, why)
