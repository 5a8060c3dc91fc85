"""Downstream links: mcptape as the HTTP server an MCP client talks to, one link per MCP session.

:class:`HttpSessionLink` is one streamable HTTP session that mcptape runs itself (it
minted the session id): each POST's frame is delivered to the relay; a POST carrying
requests gets an SSE response stream that stays open until every request in it is
answered; server messages go on the stream :class:`~mcptape.proxy.http.routing.Router`
chooses, else on the session's GET stream. Every stream keeps its events (an event
store per stream, bounded) so a client reconnecting with ``Last-Event-ID`` gets what it
missed. :class:`SseSessionLink` is a legacy HTTP+SSE session: one event stream for
everything the server sends. A stream never drops what it was given silently: a client
that reads slowly holds the upstream back (``send`` returns an awaitable), and the
bounds for clients that do not read at all are in :mod:`mcptape.proxy.http.eventstream`.

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
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcptape.proxy.http.eventstream import CLOSED, Backlog, EventStream
from mcptape.proxy.http.headers import that_matter
from mcptape.proxy.http.routing import Router
from mcptape.proxy.link import Deliver, Ended, EventSink, LinkClosed, LoopSideLink
from mcptape.redact import placeholder
from mcptape.wire.frame import Frame, encode_id
from mcptape.wire.ids import id_key

KEEP_STREAMS = 256  # closed streams remembered per session, for a late resumption (bytes: CLOSED)


class DownstreamLink(LoopSideLink, abc.ABC):
    """Base of the client-facing HTTP links: frames in from handlers (loop), out from any thread."""

    def __init__(self, session_id: str, name: str, path: str = "") -> None:
        super().__init__(name)
        self.session_id = session_id
        self.path = path
        # Routing state is shared by the loop (POSTs) and a stdio upstream's reader thread.
        self._lock = threading.Lock()
        self._placed: dict[int, tuple[Frame, EventStream]] = {}  # placed by prepare() before their send
        self.last_active = time.monotonic()
        self._started = asyncio.Event()
        # What the session's streams hold for its client, bounded; a cut is recorded.
        self.backlog = Backlog(lambda text, data: self.emit("stream_cut", text, data))

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
        """Put a frame on its stream (unless :meth:`prepare` did); an awaitable while the client
        reading that stream is behind (back-pressure: the relay stops reading the upstream)."""
        if self._send_closed or self._loop is None:
            raise LinkClosed(f"{self.name}: closed")
        with self._lock:
            placed = self._placed.pop(id(frame), None)
            stream = placed[1] if placed is not None and placed[0] is frame else self._place(frame)[1]
        return stream.room()

    def prepare(self, frame: Frame) -> dict[str, Any] | None:
        """Put a server frame on its client stream now (any thread); how it went out, or None.

        The returned metadata is the stream's (``http_method``, ``path``, ``stream``,
        ``status``, ``headers``) with the frame's SSE ``event_id``; the frame's later
        :meth:`send` does nothing more. None when the link is closed (``send`` says so).
        """
        with self._lock:
            if self._send_closed or self._loop is None:
                return None
            meta, stream = self._place(frame)
            self._placed[id(frame)] = (frame, stream)
            return meta

    @abc.abstractmethod
    def _place(self, frame: Frame) -> tuple[dict[str, Any], EventStream]:
        """Under the lock: push a server frame on the stream it belongs to; that stream's
        metadata (with the frame's event id), and the stream."""

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
        self.emit("http_session_closed", why, {"session_id": placeholder(self.session_id)})
        self._peer_ended("eof")


def _let_go(stream: EventStream | None) -> bool:
    return stream is None or stream.let_go


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
        self.get_stream = EventStream("g", stream_meta("GET", path, "get", {}), self.backlog)
        self.streams: dict[str, EventStream] = {"g": self.get_stream}
        self._closed_order: deque[str] = deque()
        # A pool session (2026-07-28, shared by clients): what routes a server frame, as the
        # upstream wrote it (its ids are the pool's, unique; see mcptape.gateway.poolids).
        self.route_view: Callable[[Frame], Any] | None = None
        # ... and for an answer mcptape wrote itself with a client's id (an injector's final
        # answer), the pool ids that client id was sent upstream as, oldest first.
        self._pool_ids: dict[str, list[str]] = {}

    async def post(
        self,
        frame: Frame,
        headers: dict[str, str] | None = None,
        *,
        prime: bool = False,
        routed: Frame | None = None,
    ) -> EventStream | None:
        """Deliver a POSTed frame; the stream its answers come on (sent with ``headers``), or None (202).

        ``prime``: the stream starts with a priming event (see :meth:`EventStream.prime`).
        ``routed``: the frame as the upstream gets it, when that differs (a pool's ids): what
        comes back is routed by it.
        """
        stream: EventStream | None = None
        carrier = routed or frame
        message = carrier.message
        key = f"p{next(self._numbers)}"
        if message is not None:
            with self._lock:
                if routed is not None:
                    for note in (frame.meta or {}).get("pool") or ():
                        if note.get("as") == "id":
                            self._pool_ids.setdefault(id_key(note["theirs"]), []).append(note["ours"])
                if self.router.opened(key, message):
                    stream = self._open_stream(key, headers, prime)
                # A cancelled request's stream ends: else it stays "the only request in
                # flight" and takes what the server sends later about anything else.
                for done in self.router.cancel(message):
                    self._retire(done)
        elif carrier.kind == "request" and carrier.rpc_id is not None:
            # Nested deeper than any parser goes, yet a request (its top level says so): its
            # answer comes on its stream (a 202 told the client none would).
            with self._lock:
                self.router.opened_one(key, carrier.rpc_id)
                stream = self._open_stream(key, headers, prime)
        try:
            await self.receive(frame)
        except LinkClosed:
            if stream is not None:
                with self._lock:
                    self.router.closed(key)
                    self._retire(key)
            raise
        return stream

    def _open_stream(self, key: str, headers: dict[str, str] | None, prime: bool) -> EventStream:
        meta = stream_meta("POST", self.path, "post", headers or {})
        stream = self.streams[key] = EventStream(key, meta, self.backlog)
        if prime:
            stream.prime()
        return stream

    def in_flight(self) -> set[str]:
        """The id keys of the client requests this session has not answered yet."""
        with self._lock:
            return {key for entry in self.router.open.values() for key in entry.ids}

    def _pool_view(self, frame: Frame) -> Any:
        """Under the lock: how a pool session's server frame is routed (None: by itself)."""
        view = self.route_view(frame) if self.route_view is not None else None
        theirs = frame.rpc_id if frame.kind in ("response", "error") else None
        if theirs is None or not self._pool_ids:
            return view
        lent = self._pool_ids.get(id_key(theirs))
        if not lent:
            return view
        if view is not None and "id" not in view:
            return view
        ours = encode_id(view["id"]) if view is not None else lent[0]
        if ours in lent:
            lent.remove(ours)
        if not lent:
            del self._pool_ids[id_key(theirs)]
        if view is None:  # written by mcptape with the client's id: routed as the oldest it stands for
            view = {"jsonrpc": "2.0", "id": orjson.loads(ours), "result": None}
        return view

    def _place(self, frame: Frame) -> tuple[dict[str, Any], EventStream]:
        message = self._pool_view(frame) if self.route_view is not None else None
        message = message or frame.message
        target = self.router.route(message) if message is not None else None
        stream = (self.streams.get(target) if target is not None else None) or self.get_stream
        event_id = stream.push(frame.data, droppable=frame.kind == "notification")
        if message is not None:
            for done in self.router.answered(message):
                self._retire(done)
        return {**stream.meta, "event_id": event_id}, stream

    def _retire(self, key: str) -> None:
        stream = self.streams.get(key)
        if stream is None or stream.closed:
            return
        stream.close()
        CLOSED.add(stream)
        self._closed_order.append(key)
        while self._closed_order and (
            len(self._closed_order) > KEEP_STREAMS or _let_go(self.streams.get(self._closed_order[0]))
        ):
            old = self.streams.pop(self._closed_order.popleft(), None)
            if old is not None:
                old.forget()

    def resume(self, last_event_id: str) -> tuple[EventStream, int] | None:
        """The stream and position a ``Last-Event-ID`` names; None when unknown.

        Whatever the client wrote: digits no ``int`` takes (``²``, thousands of them) and a
        number past the stream's last event (no event it was given) name nothing.
        """
        key, _, number = last_event_id.rpartition("-")
        with self._lock:
            stream = self.streams.get(key)
        if stream is None or stream.let_go or not (number.isascii() and number.isdigit()):
            return None
        if len(number.lstrip("0")) > len(str(stream.count)) or int(number) > stream.count:
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
        self.stream = EventStream("s", stream_meta("GET", path, "sse", {}), self.backlog)

    def _place(self, frame: Frame) -> tuple[dict[str, Any], EventStream]:
        event_id = self.stream.push(frame.data, droppable=frame.kind == "notification")
        return {**self.stream.meta, "event_id": event_id}, self.stream

    def _close_streams(self) -> None:
        self.stream.close()

    def cut(self, frame: Frame) -> bool:
        """Legacy SSE has one stream and no resumption: cutting it cuts the session off."""
        self.close_send()
        return True
