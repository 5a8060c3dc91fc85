"""Downstream links: mcptape as the HTTP server an MCP client talks to, one link per MCP session.

:class:`HttpSessionLink` is one streamable HTTP session that mcptape runs itself (it
minted the session id): each POST's frame is delivered to the relay; a POST carrying
requests gets an SSE response stream that stays open until every request in it is
answered; server messages go on the stream :class:`~mcptape.proxy.http.routing.Router`
chooses, else on the session's GET stream. Every stream keeps its events (an event
store per stream, bounded) so a client reconnecting with ``Last-Event-ID`` gets what it
missed. :class:`SseSessionLink` is a legacy HTTP+SSE session: one event stream for
everything the server sends.

Which stream a server frame goes on is decided once, by :meth:`DownstreamLink.prepare`,
from any thread: the relay calls it once the addons have decided and before the recorder
sees the frame, so the recorded frame says how it went out (``http_method``, ``path``,
``stream`` ``post``/``get``/``sse``, ``status``, ``headers``, ``event_id``: the keys
an HTTP upstream link records), and the frame's later ``send`` finds it placed.

The aiohttp handlers that feed these links live in :mod:`mcptape.gateway.app`.
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

from mcptape.proxy.http.headers import that_matter
from mcptape.proxy.http.routing import Router
from mcptape.proxy.http.sse import encode_event
from mcptape.proxy.link import Deliver, Ended, EventSink, LinkClosed, LoopSideLink
from mcptape.wire.frame import Frame

KEEP_EVENTS = 1000  # per stream, for Last-Event-ID resumption
KEEP_STREAMS = 256  # closed streams remembered per session, for a late resumption
# ... and at most this many bytes of their events (the newest closed stream is kept whatever
# its size): 256 answers of 8 MB would otherwise stay in memory for the session's life.
KEEP_CLOSED_BYTES = 16 << 20


class EventStream:
    """One SSE stream of a session: numbered events, kept for replay, pumped to at most one response.

    Events may be pushed from any thread (a stdio upstream's reader thread places its
    frames); the pump runs on the event loop.
    """

    def __init__(self, key: str, meta: dict[str, Any] | None = None) -> None:
        self.key = key
        self.meta: dict[str, Any] = meta or {}
        self.events: deque[tuple[int, bytes]] = deque(maxlen=KEEP_EVENTS)
        self.count = 0
        self.size = 0  # bytes of the events kept
        self.closed = False
        self.attached = False
        # The last event number written to a response: a GET stream opened without
        # Last-Event-ID starts after it, so what the server sent while no client stream was
        # open (right after initialize, or between reconnects) is delivered, not skipped.
        self.delivered = 0
        self._hangups = 0  # cut() ends the response being written; the stream itself goes on
        self._lock = threading.Lock()
        self._changed = asyncio.Event()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._loop_thread = threading.get_ident() if self._loop is not None else None

    def _notify(self) -> None:
        if self._loop is None or threading.get_ident() == self._loop_thread:
            self._changed.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody pumps any more
                self._loop.call_soon_threadsafe(self._changed.set)

    def _keep(self, encoded: bytes) -> None:
        # Under the lock: the event numbered count, and the bytes kept.
        if len(self.events) == self.events.maxlen:
            self.size -= len(self.events[0][1])
        self.events.append((self.count, encoded))
        self.size += len(encoded)

    def push(self, data: bytes) -> str:
        with self._lock:
            self.count += 1
            event_id = f"{self.key}-{self.count}"
            self._keep(encode_event(data, event="message", id=event_id))
        self._notify()
        return event_id

    def prime(self) -> None:
        """First an event with an id and empty data (SEP-1699, protocol 2025-11-25 on): a
        client that loses the stream before the answer can resume it with that id."""
        with self._lock:
            self.count += 1
            self._keep(encode_event(b"", id=f"{self.key}-{self.count}"))
        self._notify()

    def push_raw(self, encoded: bytes) -> None:
        """An event that is not a numbered message (the legacy ``endpoint`` event)."""
        with self._lock:
            self.count += 1
            self._keep(encoded)
        self._notify()

    def close(self) -> None:
        self.closed = True
        self._notify()

    def hang_up(self) -> None:
        """End the response now writing this stream (a fault): its events stay, a client may come back."""
        self._hangups += 1
        self._notify()

    def _after(self, sent: int) -> list[tuple[int, bytes]]:
        with self._lock:
            return [(n, data) for n, data in self.events if n > sent]

    async def pump(self, write: Any, after: int = 0, last: Any = None) -> bool:
        """Write every event after number ``after`` with ``write`` (an async callable) until closed.

        Events that are ready together go in one write. With ``last`` (an async callable
        that writes and ends the response), the events that end a closed stream go with
        the end in one write, and True is returned (the response is ended); else False.
        """
        sent = after
        hangups = self._hangups
        while True:
            if self._hangups != hangups:
                return False
            batch = self._after(sent)
            if batch:
                sent = batch[-1][0]
                data = batch[0][1] if len(batch) == 1 else b"".join(d for _, d in batch)
                if last is not None and self.closed and not self._after(sent):
                    await last(data)
                    self.delivered = max(self.delivered, sent)
                    return True
                await write(data)
                self.delivered = max(self.delivered, sent)
                continue
            if self.closed:
                return False
            self._changed.clear()
            if self._after(sent) or self.closed or self._hangups != hangups:
                continue
            await self._changed.wait()


class DownstreamLink(LoopSideLink, abc.ABC):
    """Base of the client-facing HTTP links: frames in from handlers (loop), out from any thread."""

    def __init__(self, session_id: str, name: str, path: str = "") -> None:
        super().__init__(name)
        self.session_id = session_id
        self.path = path
        # Routing state is shared by the loop (POSTs) and a stdio upstream's reader thread.
        self._lock = threading.Lock()
        self._placed: dict[int, Frame] = {}  # frames placed by prepare() before their send
        self.last_active = time.monotonic()
        self._started = asyncio.Event()

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        super().start(deliver, ended, event)
        self._started.set()

    async def wait_started(self, timeout: float) -> bool:
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
        await self._receive(frame)

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        if self._send_closed or self._loop is None:
            raise LinkClosed(f"{self.name}: closed")
        with self._lock:
            if self._placed.pop(id(frame), None) is frame:
                return None
            self._place(frame)
        return None

    def prepare(self, frame: Frame) -> dict[str, Any] | None:
        """Put a server frame on its client stream now (any thread); how it went out, or None.

        The returned metadata is the stream's (``http_method``, ``path``, ``stream``,
        ``status``, ``headers``) with the frame's SSE ``event_id``; the frame's later
        :meth:`send` does nothing more. None when the link is closed (``send`` says so).
        """
        with self._lock:
            if self._send_closed or self._loop is None:
                return None
            meta = self._place(frame)
            self._placed[id(frame)] = frame
            return meta

    @abc.abstractmethod
    def _place(self, frame: Frame) -> dict[str, Any]:
        """Under the lock: push a server frame on the stream it belongs to; that stream's metadata."""

    @abc.abstractmethod
    def _close_streams(self) -> None:
        """End every open client stream (the session is over)."""

    def close_send(self) -> None:
        if not self._send_closed:
            self._send_closed = True
            with self._lock:
                self._placed.clear()
            if self._loop is not None:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._close_streams)

    def client_gone(self, why: str) -> None:
        """The client ended the session (DELETE, idle timeout, its SSE stream closed)."""
        self.emit("http_session_closed", why, {"session_id": self.session_id})
        self._peer_ended("eof")


def stream_meta(method: str, path: str, stream: str, headers: dict[str, str]) -> dict[str, Any]:
    """How a client stream is served, in the keys an HTTP upstream link records for its frames."""
    return {
        "http_method": method,
        "path": path,
        "stream": stream,
        "status": 200,
        # Lower-case names, as HTTP/2 and most servers send them: one JSON key for views to query.
        "headers": {
            k.lower(): v
            for k, v in that_matter([("Content-Type", "text/event-stream"), *headers.items()]).items()
        },
    }


class HttpSessionLink(DownstreamLink):
    """One streamable HTTP session whose id mcptape minted (any upstream behind it)."""

    def __init__(self, session_id: str, name: str = "client", path: str = "") -> None:
        super().__init__(session_id, name, path)
        self.router = Router()
        self._numbers = itertools.count(1)
        self.get_stream = EventStream("g", stream_meta("GET", path, "get", {}))
        self.streams: dict[str, EventStream] = {"g": self.get_stream}
        self._closed_order: deque[str] = deque()
        self._closed_bytes = 0

    async def post(
        self, frame: Frame, headers: dict[str, str] | None = None, *, prime: bool = False
    ) -> EventStream | None:
        """Deliver a POSTed frame; the stream its answers come on (sent with ``headers``), or None (202).

        ``prime``: the stream starts with a priming event (see :meth:`EventStream.prime`).
        """
        stream: EventStream | None = None
        message = frame.message
        key = f"p{next(self._numbers)}"
        if message is not None:
            with self._lock:
                if self.router.opened(key, message):
                    meta = stream_meta("POST", self.path, "post", headers or {})
                    stream = self.streams[key] = EventStream(key, meta)
                    if prime:
                        stream.prime()
                # A cancelled request's stream ends: else it stays "the only request in
                # flight" and takes what the server sends later about anything else.
                for done in self.router.cancel(message):
                    self._retire(done)
        try:
            await self.receive(frame)
        except LinkClosed:
            if stream is not None:
                with self._lock:
                    self.router.closed(key)
                    self._retire(key)
            raise
        return stream

    def in_flight(self) -> set[str]:
        """The id keys of the client requests this session has not answered yet."""
        with self._lock:
            return {key for entry in self.router.open.values() for key in entry.ids}

    def _place(self, frame: Frame) -> dict[str, Any]:
        message = frame.message
        target = self.router.route(message) if message is not None else None
        stream = (self.streams.get(target) if target is not None else None) or self.get_stream
        event_id = stream.push(frame.data)
        if message is not None:
            for done in self.router.answered(message):
                self._retire(done)
        return {**stream.meta, "event_id": event_id}

    def _retire(self, key: str) -> None:
        stream = self.streams.get(key)
        if stream is None:
            return
        stream.close()
        self._closed_order.append(key)
        self._closed_bytes += stream.size
        while len(self._closed_order) > KEEP_STREAMS or (
            self._closed_bytes > KEEP_CLOSED_BYTES and len(self._closed_order) > 1
        ):
            old = self.streams.pop(self._closed_order.popleft(), None)
            if old is not None:
                self._closed_bytes -= old.size

    def resume(self, last_event_id: str) -> tuple[EventStream, int] | None:
        """The stream and position a ``Last-Event-ID`` names; None when unknown."""
        key, _, number = last_event_id.rpartition("-")
        with self._lock:
            stream = self.streams.get(key)
        if stream is None or not number.isdigit():
            return None
        return stream, int(number)

    def _close_streams(self) -> None:
        with self._lock:
            streams = list(self.streams.values())
        for stream in streams:
            stream.close()

    def cut(self, frame: Frame) -> bool:
        """End the SSE stream ``frame`` would go on, without it (a fault); the session goes on.

        A request's POST stream ends for good (what the server still sends for it is kept
        on it for ``Last-Event-ID``); the GET stream's response ends and the client may
        open it again. A client request is cut on the stream its answer would take.
        """
        message = frame.message
        with self._lock:
            if frame.direction == "c2s":
                key = self.router.carrier(message) if message is not None else None
            else:
                key = self.router.route(message) if message is not None else None
            if key is not None and key in self.streams and key != "g":
                self.router.cut(key)
                self._retire(key)
                return False
        self.get_stream.hang_up()
        return False


class SseSessionLink(DownstreamLink):
    """One legacy HTTP+SSE session: everything the server sends goes on the one event stream."""

    def __init__(self, session_id: str, name: str = "client", path: str = "") -> None:
        super().__init__(session_id, name, path)
        self.stream = EventStream("s", stream_meta("GET", path, "sse", {}))

    def _place(self, frame: Frame) -> dict[str, Any]:
        return {**self.stream.meta, "event_id": self.stream.push(frame.data)}

    def _close_streams(self) -> None:
        self.stream.close()

    def cut(self, frame: Frame) -> bool:
        """Legacy SSE has one stream and no resumption: cutting it cuts the session off."""
        self.close_send()
        return True
