"""Downstream links: mcptape as the HTTP server an MCP client talks to, one link per MCP session.

:class:`HttpSessionLink` is one streamable HTTP session that mcptape runs itself (it
minted the session id): each POST's frame is delivered to the relay; a POST carrying
requests gets an SSE response stream that stays open until every request in it is
answered; server messages go on the stream :class:`~mcptape.proxy.http.routing.Router`
chooses, else on the session's GET stream. Every stream keeps its events (an event
store per stream, bounded) so a client reconnecting with ``Last-Event-ID`` gets what it
missed. :class:`SseSessionLink` is a legacy HTTP+SSE session: one event stream for
everything the server sends.

The aiohttp handlers that feed these links live in :mod:`mcptape.proxy.gateway`.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import itertools
import threading
import time
from collections import deque
from collections.abc import Awaitable
from typing import Any

from mcptape.frames import Frame
from mcptape.proxy.http.routing import Router
from mcptape.proxy.http.sse import encode_event
from mcptape.proxy.link import Deliver, Ended, EventSink, LinkClosed, LinkEnd

KEEP_EVENTS = 1000  # per stream, for Last-Event-ID resumption
KEEP_STREAMS = 256  # closed streams remembered per session, for a late resumption


class EventStream:
    """One SSE stream of a session: numbered events, kept for replay, pumped to at most one response."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.events: deque[tuple[int, bytes]] = deque(maxlen=KEEP_EVENTS)
        self.count = 0
        self.closed = False
        self.attached = False
        self._changed = asyncio.Event()

    def push(self, data: bytes) -> str:
        self.count += 1
        event_id = f"{self.key}-{self.count}"
        self.events.append((self.count, encode_event(data, event="message", id=event_id)))
        self._changed.set()
        return event_id

    def push_raw(self, encoded: bytes) -> None:
        """An event that is not a numbered message (the legacy ``endpoint`` event)."""
        self.count += 1
        self.events.append((self.count, encoded))
        self._changed.set()

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    async def pump(self, write: Any, after: int = 0) -> None:
        """Write every event after number ``after`` with ``write`` (an async callable) until closed."""
        sent = after
        while True:
            pending = [(n, data) for n, data in self.events if n > sent]
            for n, data in pending:
                await write(data)
                sent = n
            if self.closed and not any(n > sent for n, _ in self.events):
                return
            self._changed.clear()
            if any(n > sent for n, _ in self.events) or self.closed:
                continue
            await self._changed.wait()


class DownstreamLink(abc.ABC):
    """Base of the client-facing HTTP links: frames in from handlers (loop), out from any thread."""

    def __init__(self, session_id: str, name: str) -> None:
        self.session_id = session_id
        self.name = name
        self.last_active = time.monotonic()
        self._deliver: Deliver | None = None
        self._ended_cb: Ended | None = None
        self._event: EventSink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._receiving = False
        self._send_closed = False
        self._has_ended = False
        self._end: LinkEnd | None = None
        self._started = asyncio.Event()

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._deliver, self._ended_cb, self._event = deliver, ended, event
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._receiving = True
        self._started.set()

    async def started(self, timeout: float) -> bool:
        """Wait until the relay has started this link (its first turn); False after ``timeout``."""
        try:
            await asyncio.wait_for(self._started.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def receive(self, frame: Frame) -> None:
        """A frame the client sent (from an aiohttp handler): to the relay, waiting while it asks."""
        self.last_active = time.monotonic()
        if not self._started.is_set():
            # The relay starts its links on its first turn; the session's first POST may come first.
            await self._started.wait()
        if not self._receiving or self._deliver is None:
            raise LinkClosed(f"{self.name}: the session is closing")
        pending = self._deliver(frame)
        if pending is not None:
            await pending

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        if self._send_closed or self._loop is None:
            raise LinkClosed(f"{self.name}: closed")
        if threading.get_ident() == self._loop_thread:
            self._route(frame)
        else:
            try:
                self._loop.call_soon_threadsafe(self._route, frame)
            except RuntimeError as exc:
                raise LinkClosed(f"{self.name}: closed") from exc
        return None

    @abc.abstractmethod
    def _route(self, frame: Frame) -> None:
        """Put a server frame on the client stream it belongs to (on the loop)."""

    @abc.abstractmethod
    def _close_streams(self) -> None:
        """End every open client stream (the session is over)."""

    def close_send(self) -> None:
        if not self._send_closed:
            self._send_closed = True
            if self._loop is not None:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._close_streams)

    def stop_receiving(self) -> None:
        self._receiving = False

    def client_gone(self, why: str) -> None:
        """The client ended the session (DELETE, idle timeout, its SSE stream closed)."""
        self.emit("http_session_closed", why, {"session_id": self.session_id})
        self._receiving = False
        if not self._has_ended and self._ended_cb is not None:
            self._has_ended = True
            self._ended_cb("eof")

    def emit(self, kind: str, text: str | None, data: object = None) -> None:
        if self._event is not None:
            self._event(kind, text, data)

    async def aclose(self, grace: float) -> LinkEnd:
        if self._end is None:
            self.close_send()
            self.stop_receiving()
            if not self._has_ended and self._ended_cb is not None:
                self._has_ended = True
                self._ended_cb("stopped")
            self._end = LinkEnd("closed")
        return self._end


class HttpSessionLink(DownstreamLink):
    """One streamable HTTP session whose id mcptape minted (any upstream behind it)."""

    def __init__(self, session_id: str, name: str = "client") -> None:
        super().__init__(session_id, name)
        self.router = Router()
        self._numbers = itertools.count(1)
        self.get_stream = EventStream("g")
        self.streams: dict[str, EventStream] = {"g": self.get_stream}
        self._closed_order: deque[str] = deque()

    async def post(self, frame: Frame) -> EventStream | None:
        """Deliver a POSTed frame; the stream its answers come on, or None (answer 202)."""
        stream: EventStream | None = None
        message = frame.message
        key = f"p{next(self._numbers)}"
        if message is not None and self.router.opened(key, message):
            stream = self.streams[key] = EventStream(key)
        try:
            await self.receive(frame)
        except LinkClosed:
            if stream is not None:
                self.router.closed(key)
                self._retire(key)
            raise
        return stream

    def _route(self, frame: Frame) -> None:
        message = frame.message
        target = self.router.route(message) if message is not None else None
        stream = self.streams.get(target) if target is not None else None
        (stream or self.get_stream).push(frame.data)
        if message is not None:
            for done in self.router.answered(message):
                self._retire(done)

    def _retire(self, key: str) -> None:
        stream = self.streams.get(key)
        if stream is None:
            return
        stream.close()
        self._closed_order.append(key)
        while len(self._closed_order) > KEEP_STREAMS:
            self.streams.pop(self._closed_order.popleft(), None)

    def resume(self, last_event_id: str) -> tuple[EventStream, int] | None:
        """The stream and position a ``Last-Event-ID`` names; None when unknown."""
        key, _, number = last_event_id.rpartition("-")
        stream = self.streams.get(key)
        if stream is None or not number.isdigit():
            return None
        return stream, int(number)

    def _close_streams(self) -> None:
        for stream in self.streams.values():
            stream.close()


class SseSessionLink(DownstreamLink):
    """One legacy HTTP+SSE session: everything the server sends goes on the one event stream."""

    def __init__(self, session_id: str, name: str = "client") -> None:
        super().__init__(session_id, name)
        self.stream = EventStream("s")

    def _route(self, frame: Frame) -> None:
        self.stream.push(frame.data)

    def _close_streams(self) -> None:
        self.stream.close()
