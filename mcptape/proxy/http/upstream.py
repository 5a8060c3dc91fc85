"""Choosing the upstream link for a remote server: streamable HTTP, legacy SSE, or auto.

``auto`` follows the specification's backwards-compatibility rule: POST the first
frame (``initialize``) as streamable HTTP; if the server answers with a 4xx (405, 404,
400) or cannot take a POST at all, GET the same URL expecting a legacy SSE stream whose
first event is ``endpoint``, and send everything through that. A 4xx whose body is a
JSON-RPC error is a streamable HTTP server speaking (a 2025 server refusing a 2026-07-28
``server/discover``): no fallback, the error goes to the client.

``on_settled`` learns the transport actually used (``http`` or ``sse``) once it is known,
so the recording says which, not ``auto``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from mcptape.proxy.http.upstream_http import Fallback, HttpClientLink
from mcptape.proxy.http.upstream_sse import SseClientLink
from mcptape.proxy.link import Deliver, Ended, EventSink, Link, LinkBase, LinkEnd
from mcptape.wire.frame import Frame

TRANSPORTS = ("http", "sse", "auto")


class AutoLink(LinkBase):
    """Streamable HTTP first; legacy SSE when the first POST is refused."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None,
        *,
        name: str = "server",
        redact_names: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.url = url
        self.headers = headers
        self.redact_names = redact_names
        self.active: HttpClientLink | SseClientLink = HttpClientLink(
            url, headers, name=name, probe=True, redact_names=redact_names
        )
        self.active.on_fallback = self._fall_back
        self._callbacks: tuple[Deliver, Ended, EventSink] | None = None
        self._closing: asyncio.Task[LinkEnd] | None = None
        self.on_settled: Callable[[str], None] | None = None
        self._settled = False

    @property
    def transport(self) -> str:
        return "sse" if isinstance(self.active, SseClientLink) else "http"

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        def first_deliver(frame: Frame) -> Awaitable[Any] | None:
            # The first frame from the server: its transport is the one in use from now on.
            self._settle()
            return deliver(frame)

        self._callbacks = (first_deliver, ended, event)
        self.active.start(first_deliver, ended, event)

    def _settle(self) -> None:
        if not self._settled:
            self._settled = True
            if self.on_settled is not None:
                self.on_settled(self.transport)

    def _fall_back(self, fallback: Fallback) -> None:
        assert self._callbacks is not None
        old = self.active
        deliver, ended, event = self._callbacks
        event(
            "transport_fallback",
            f"POST {self.url} answered {'nothing' if not fallback.status else f'HTTP {fallback.status}'}; "
            "trying the legacy HTTP+SSE transport",
            {"status": fallback.status},
        )
        self.active = SseClientLink(
            self.url, self.headers, name=self.name, redact_names=self.redact_names, first=fallback.frames
        )
        self.active.start(deliver, ended, event)
        self._settle()
        old.stop_receiving()
        old._ended_cb = None  # the probe's end is not the session's
        self._closing = asyncio.get_running_loop().create_task(old.aclose(0.1))

    def prepare(self, frame: Frame) -> dict[str, Any] | None:
        return self.active.prepare(frame)

    def watch_transport(self, settled: Callable[[str], None]) -> None:
        self.on_settled = settled

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        return self.active.send(frame)

    def close_send(self) -> None:
        self.active.close_send()

    def stop_receiving(self) -> None:
        self.active.stop_receiving()

    async def aclose(self, grace: float) -> LinkEnd:
        closing = self.active
        end = await closing.aclose(grace)
        if self.active is not closing:
            # The probe fell back to SSE while it was being closed: that link is closed too
            # (its HTTP session would be left open, and aiohttp says so on stderr at exit).
            end = await self.active.aclose(grace)
        if self._closing is not None:
            # The refused probe's close (its HTTP session): done before the loop ends, or
            # aiohttp complains on stderr about an unclosed client session.
            with contextlib.suppress(Exception):
                await self._closing
        return end


def remote_link(
    url: str,
    transport: str,
    headers: dict[str, str] | None = None,
    *,
    name: str = "server",
    redact_names: tuple[str, ...] = (),
) -> Link:
    """The link to a remote MCP server for ``transport`` (``http``, ``sse`` or ``auto``)."""
    if transport == "http":
        return HttpClientLink(url, headers, name=name, redact_names=redact_names)
    if transport == "sse":
        return SseClientLink(url, headers, name=name, redact_names=redact_names)
    if transport == "auto":
        return AutoLink(url, headers, name=name, redact_names=redact_names)
    raise ValueError(f"unknown transport {transport!r}; expected one of {', '.join(TRANSPORTS)}")
