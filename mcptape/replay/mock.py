"""The mock server: a server-facing link that plays a recording's server side to a live client.

It is the upstream link of ``mcptape serve`` (``Relay(client_link, TapeServer(tape), ...)``)
and lives on the event loop:

- a client request is matched by method and canonical (normalised) parameters, never
  by id; identical requests are answered in recorded order; the recorded response is
  sent with the live request's id;
- what the server sent while answering is sent again first, in recorded order:
  notifications (a progress notification carries the live request's progress token),
  and server-initiated requests, each sent to the client and its answer awaited (the
  relay records it) before the next; spaced as recorded by default, and a notification
  and the answer after it always apart (:mod:`mcptape.replay.pace`);
- what the server sent while no request was in flight (``notifications/initialized``
  often starts a ``tools/list_changed`` or a ``roots/list``) is sent again after the
  live client message that preceded it in the recording (:mod:`mcptape.replay.loose`);
- ``initialize`` and ``server/discover`` are answered from the recording whatever the
  client asks (``ping`` gets ``{}`` when the recording has none);
- a request with no match gets a JSON-RPC error naming the nearest recorded requests
  and the fields that differ, or, with a ``fallback`` link (``--on-miss forward``), is
  forwarded to a real server (:mod:`mcptape.replay.forwarding`), whose answer (recorded
  by the relay) goes to the client.

A request that came with nothing but its response, delivered from a reader thread while
nothing else is being played, is answered on that thread at once (no turn of the event
loop, no writer thread: what a stdio server does); everything else is played on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
from collections.abc import Awaitable
from typing import Any, Final

from mcptape.proxy.link import (
    Deliver,
    Ended,
    EventSink,
    Link,
    LinkBase,
    LinkClosed,
    LinkEnd,
    wait_from_thread,
)
from mcptape.replay.book import AnswerBook, Entry
from mcptape.replay.forwarding import Forwarder
from mcptape.replay.loose import Anchors, Item, anchored
from mcptape.replay.matchers import miss_message
from mcptape.replay.normalise import Normaliser
from mcptape.replay.pace import Pace, Pacer
from mcptape.replay.tape import Exchange, ServerCall, Tape, id_key
from mcptape.wire.frame import Frame, classify_message
from mcptape.wire.jsonrpc import dumps, error_response
from mcptape.wire.protocol import DISCOVER, HELLO_METHODS, INITIALIZE

MISS: Final = -32601  # the method (with these params) is not on the tape
CALL_TIMEOUT: Final = 60.0


def _token(message: dict[str, Any]) -> Any:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None


class TapeServer(LinkBase):
    """Plays the server side of ``tape``; see the module docstring."""

    def __init__(
        self,
        tape: Tape,
        *,
        normaliser: Normaliser | None = None,
        fallback: Link | None = None,
        call_timeout: float = CALL_TIMEOUT,
        pace: Pace | None = None,
    ) -> None:
        self.name = "tape"
        self.tape = tape
        self.pace = pace or Pace()
        self.forwarder = Forwarder(fallback) if fallback is not None else None
        self.call_timeout = call_timeout
        self.handshakes: dict[str, Exchange] = {}
        entries = []
        for e in tape.exchanges:
            if e.method in HELLO_METHODS:
                if e.response is not None and "result" in e.response:
                    self.handshakes.setdefault(e.method or "", e)
            else:
                entries.append(Entry(e.index, e.method, e.params, e))
        self.book = AnswerBook(entries, normaliser)
        self._anchors = Anchors(anchored(tape))
        self.misses: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._deliver: Deliver | None = None
        self._ended: Ended | None = None
        self._lock = asyncio.Lock()
        self._calls: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._call_ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._open = False
        self._loop_thread: int | None = None
        self._book_lock = threading.Lock()  # the book is taken from by reader threads and the loop
        self._queued = 0  # frames handed to the loop and not played yet (under _book_lock)

    # -- the Link interface ---------------------------------------------------------

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._deliver, self._ended = deliver, ended
        self._open = True
        if self.forwarder is not None:
            self.forwarder.start(self._out, self._to_client, self._spawn, event)

    @property
    def forwarded(self) -> int:
        """How many requests went to the real server (``--on-miss forward``)."""
        return self.forwarder.forwarded if self.forwarder is not None else 0

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        if not self._open:
            raise LinkClosed("tape: closed")
        after: list[Item] = []
        if self._anchors.items:
            with self._book_lock:
                after = self._anchors.after(self._messages(frame))
        if not after and threading.get_ident() != self._loop_thread and self._answer_here(frame):
            return None
        loop = self._loop
        if loop is not None:
            with self._book_lock:
                self._queued += 1
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._received, frame, after)
        return None

    def _answer_here(self, frame: Frame) -> bool:
        """Answer a plain request on the calling (reader) thread; False to play it on the loop."""
        if self.forwarder is not None or frame.kind != "request" or frame.method in HELLO_METHODS:
            return False
        message = _exact(frame)
        if not isinstance(message, dict):
            return False
        with self._book_lock:
            # Behind frames the loop still plays, or answers it is sending, this one waits its turn.
            if self._queued or self._tasks:
                return False
            method = message.get("method")
            entry = self.book.take(method if isinstance(method, str) else None, message.get("params"))
            if entry is None:
                self._queued += 1  # the loop says which recorded requests are nearest
            elif entry.answer.timeline:
                self._queued += 1  # notifications and server requests first: played on the loop
        loop = self._loop
        if entry is None or entry.answer.timeline:
            if loop is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._request_played, message, entry)
            return True
        data = self._response_bytes(entry.answer, message)
        if data is not None and self._open and self._deliver is not None:
            pending = self._deliver(Frame(data, "s2c"))
            if pending is not None and loop is not None:
                wait_from_thread(loop, pending)
        return True

    def _request_played(self, message: dict[str, Any], entry: Entry | None) -> None:
        """On the loop: a request :meth:`_answer_here` looked up, played here."""
        with self._book_lock:
            self._queued -= 1
        if entry is not None:
            self._spawn(self._play(entry.answer, message))
        else:
            self._miss(message)

    def close_send(self) -> None:
        pass  # nothing is queued: answers are delivered as they are played

    def stop_receiving(self) -> None:
        self._open = False

    async def aclose(self, grace: float) -> LinkEnd:
        self._open = False
        for task in list(self._tasks):
            task.cancel()
        if self.forwarder is not None:
            await self.forwarder.aclose(grace)
        return LinkEnd("closed")

    # -- answering ------------------------------------------------------------------

    async def _out(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else dumps(message)
        async with self._lock:
            if not self._open or self._deliver is None:
                return
            pending = self._deliver(Frame(data, "s2c"))
            if pending is not None:
                await pending

    def _to_client(self, frame: Frame) -> Awaitable[Any] | None:
        """A frame of the real server's, to the client as it is."""
        if not self._open or self._deliver is None:
            return None
        return self._deliver(frame)

    def _spawn(self, coro: Any) -> None:
        if not self._open:
            coro.close()  # closing: nothing more is played or sent
            return
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _received(self, frame: Frame, after: list[Item] | None = None) -> None:
        with self._book_lock:
            self._queued -= 1
        if frame.kind == "malformed":
            error = _not_a_message(frame.data)
            if error is not None:  # answered as a JSON-RPC server answers it
                self._spawn(self._out({"jsonrpc": "2.0", "id": None, "error": error}))
        elif frame.kind == "request" and frame.message is None and frame.rpc_id is not None:
            # Nested deeper than any parser goes (its top level says it is a request): it
            # can match nothing recorded, and is told so rather than left unanswered.
            why = f"mcptape serve: no recorded response matches this {frame.method} request: it is nested too deep to read"
            self._spawn(self._out(error_response(frame.rpc_id, MISS, why)))
            return
        messages = self._messages(frame)
        requests = [m for m in messages if classify_message(m).kind == "request"]
        if after and not requests:
            self._spawn(self._play_items(after))
        for message in messages:
            kind = classify_message(message).kind
            if kind == "request":
                # What the server sent after this request's answer follows the last request's answer.
                self._request(message, frame, after if message is requests[-1] else None)
            elif kind in ("response", "error"):
                key = id_key(message.get("id"))
                call = self._calls.pop(key, None)
                if call is not None and not call.done():
                    call.set_result(message)
                elif self.forwarder is not None:
                    self.forwarder.answer(message)
            elif kind == "notification" and self.forwarder is not None:
                self.forwarder.notification(message)

    @staticmethod
    def _messages(frame: Frame) -> list[dict[str, Any]]:
        value = _exact(frame)
        items = value if isinstance(value, list) else [value]
        return [m for m in items if isinstance(m, dict)]

    def _request(self, message: dict[str, Any], frame: Frame, after: list[Item] | None = None) -> None:
        method, params = message.get("method"), message.get("params")
        if method in HELLO_METHODS:
            exchange = self.handshakes.get(method)
            if exchange is None and method == DISCOVER:
                self._spawn(
                    self._out(_error(message, MISS, "mcptape serve: the recording has no server/discover"))
                )
                if after:
                    self._spawn(self._play_items(after))
                return
            exchange = exchange or next(iter(self.handshakes.values()), None)
            if exchange is not None and exchange.response is not None:
                self._spawn(
                    self._out(
                        {"jsonrpc": "2.0", "id": message.get("id"), "result": exchange.response["result"]}
                    )
                )
                if after:
                    self._spawn(self._play_items(after))
                if self.forwarder is not None and method == INITIALIZE:
                    self.forwarder.initialize(message)
                return
        with self._book_lock:
            entry = self.book.take(method if isinstance(method, str) else None, params)
        if entry is not None:
            self._spawn(self._play(entry.answer, message, after))
        else:
            self._miss(message)
            if after:
                self._spawn(self._play_items(after))

    def _miss(self, message: dict[str, Any]) -> None:
        """A request the tape has no answer for: forwarded, ``ping``'s empty result, or the near misses."""
        method, params = message.get("method"), message.get("params")
        if self.forwarder is not None:
            self.forwarder.request(message)
        elif method == "ping":
            self._spawn(self._out({"jsonrpc": "2.0", "id": message.get("id"), "result": {}}))
        else:
            with self._book_lock:
                near = self.book.near(method, params)
            text = miss_message(method if isinstance(method, str) else None, near)
            self.misses.append(text)
            self._spawn(self._out(_error(message, MISS, text)))

    async def _play_items(self, items: list[Item]) -> None:
        """Loose server messages: notifications sent, server requests sent and their answers awaited."""
        pacer = Pacer(self.pace)
        for what, item, ts in items:
            await pacer.wait(ts)
            # Marked before a server request's answer is awaited: the recorded gap after it
            # holds the client's answer time too.
            pacer.sent(ts, notification=what == "notification")
            if what == "notification":
                await self._out(item)
            else:
                await self._server_call(item)

    async def _play(
        self, exchange: Exchange, request: dict[str, Any], after: list[Item] | None = None
    ) -> None:
        recorded_token, live_token = _token(exchange.request), _token(request)
        pacer = Pacer(self.pace)
        for what, item, ts in exchange.timeline:
            if what == "notification":
                params = item.get("params")
                if (
                    isinstance(params, dict)
                    and recorded_token is not None
                    and params.get("progressToken") == recorded_token
                ):
                    if live_token is None:
                        continue  # this client asked for no progress
                    item = {**item, "params": {**params, "progressToken": live_token}}
            await pacer.wait(ts)
            pacer.sent(ts, notification=what == "notification")  # as in _play_items
            if what == "notification":
                await self._out(item)
            else:
                await self._server_call(item)
        data = self._response_bytes(exchange, request)
        if data is not None:
            await pacer.wait(exchange.response_ts, answer=True)
            await self._out(data)
        if after:
            await self._play_items(after)

    @staticmethod
    def _response_bytes(exchange: Exchange, request: dict[str, Any]) -> bytes | None:
        """The recorded response with the live request's id; None when the server never answered."""
        response = exchange.response
        if response is None:
            return None
        body = {k: v for k, v in response.items() if k not in ("id", "jsonrpc")}
        return dumps({"jsonrpc": "2.0", "id": request.get("id"), **body})

    async def _server_call(self, call: ServerCall) -> None:
        assert self._loop is not None
        rid = f"mcptape-serve-{next(self._call_ids)}"
        future: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._calls[id_key(rid)] = future
        await self._out({**call.request, "id": rid})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(future, self.call_timeout)
        self._calls.pop(id_key(rid), None)


def _exact(frame: Frame) -> Any:
    """The frame's message, with ids exactly as the client wrote them.

    orjson reads an integer beyond 64 bits as a float: the answer's id would be
    ``1e+26`` and the client would never match it. Such a frame (rare) is read again
    with ``json``, which keeps integers whole.
    """
    value = frame.message
    items = value if isinstance(value, list) else [value]
    if any(isinstance(m, dict) and isinstance(m.get("id"), float) for m in items):
        return json.loads(frame.data)
    return value


def _not_a_message(data: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error for a line that is no message (-32700 not JSON, -32600 JSON but no
    request); None for what may be a broken reply (an object with an id), which gets none."""
    if not data.strip():
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return {"code": -32700, "message": "mcptape serve: Parse error: the line is not JSON"}
    except RecursionError:
        return {"code": -32700, "message": "mcptape serve: Parse error: the line is nested too deep to read"}
    if isinstance(value, dict) and "id" in value:
        return None
    return {"code": -32600, "message": "mcptape serve: Invalid Request: the line is not a JSON-RPC message"}


def _error(request: dict[str, Any], code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": code, "message": message}}
