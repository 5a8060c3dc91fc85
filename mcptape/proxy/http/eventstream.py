"""One SSE stream of a client-facing session: numbered events, kept for resumption, pumped to one
response at a time, never dropped silently.

A stream holds two kinds of events: those already handed to a client (kept, bounded, for
``Last-Event-ID``) and those waiting for it. Waiting events are never evicted to make
room. Instead:

- back-pressure: while a client reads the stream and more than :data:`HOLD_BYTES` wait,
  :meth:`EventStream.room` makes whoever pushes wait (the relay then stops reading the
  upstream, as the stdio links do), until the client has taken half of them;
- a client that holds the upstream back and takes nothing for :data:`STALL_S` is cut:
  its response is ended, an ``error`` event is left in the stream for a resumption, and
  the cut is recorded (a ``stream_cut`` event);
- what was sent is kept for resumption within bounds: per open stream
  (:data:`KEEP_EVENTS`, :data:`KEEP_BYTES`), and for closed streams one bound for the
  whole process (:data:`KEEP_CLOSED_BYTES`, the oldest let go first);
- events waiting for nobody (a client that went away, a GET stream never opened) count
  against the session's :class:`Backlog`; past :data:`CUT_BYTES` the oldest waiting
  notifications of streams nobody reads are dropped, in their place an ``error`` event
  saying which event numbers went, and the cut is recorded. Answers and server requests
  are never dropped.

Events may be pushed from any thread (a stdio upstream's reader thread); the pump and
:meth:`EventStream.room` run on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcptape.proxy.http.sse import encode_event

HOLD_BYTES = 1 << 20  # bytes waiting on a stream a client reads before the upstream is held back
STALL_S = 30.0  # a client taking nothing this long while it holds the upstream back is cut
CUT_BYTES = 32 << 20  # bytes a session keeps waiting for clients that are not reading, at most
WRITE_BYTES = 256 << 10  # handed to a response in one write (one event at least)
KEEP_EVENTS = 1000  # events already sent kept per open stream, for Last-Event-ID resumption
KEEP_BYTES = 4 << 20  # ... and at most this many bytes of them (the last one whatever its size)
# What closed streams keep for a late resumption, for the whole process (the newest closed
# stream whatever its size): an answer of 8 MB per session would otherwise stay in memory
# for as long as each of a hundred sessions lives.
KEEP_CLOSED_BYTES = 16 << 20

Cut = Callable[[str, dict[str, Any]], None]
"""Told when a stream was cut: what happened, in a sentence, and the figures."""


class _Event:
    __slots__ = ("data", "droppable", "n", "upto")

    def __init__(self, n: int, data: bytes, droppable: bool, upto: int = 0) -> None:
        self.n = n
        self.data = data
        self.droppable = droppable
        self.upto = upto  # a gap marker: events n..upto were dropped (data is its error event)


def _error_event(key: str, first: int, last: int, why: str) -> bytes:
    text = f"mcptape: events {first} to {last} of this stream were dropped: {why}"
    body = orjson.dumps({"error": text, "first": f"{key}-{first}", "last": f"{key}-{last}"})
    return encode_event(body, event="error", id=f"{key}-{last}")


class Backlog:
    """What a session's streams hold for clients, across its streams: bounded by :data:`CUT_BYTES`."""

    def __init__(self, on_cut: Cut | None = None) -> None:
        self.waiting = 0  # bytes of events not yet handed to any client
        self.on_cut = on_cut
        self.streams: list[EventStream] = []
        self._lock = threading.Lock()

    def add(self, size: int) -> bool:
        """Count bytes that wait; whether the session is now over its bound."""
        with self._lock:
            self.waiting += size
            return self.waiting > CUT_BYTES

    def trim(self) -> None:
        """Past :data:`CUT_BYTES`: drop the oldest waiting notifications of streams nobody reads
        (a quarter of the bound more than needed, so that a flood is not trimmed event by event)."""
        why = f"more than {CUT_BYTES >> 20} MiB waited for clients that did not read them"
        for stream in list(self.streams):
            over = self.waiting - CUT_BYTES
            if over <= 0:
                return
            if not stream.attached and stream.droppable:
                stream.drop_notifications(over + CUT_BYTES // 4, why)


class EventStream:
    """One SSE stream: numbered events, kept for resumption, pumped to at most one response."""

    def __init__(self, key: str, meta: dict[str, Any] | None = None, backlog: Backlog | None = None) -> None:
        self.key = key
        self.meta: dict[str, Any] = meta or {}
        self.backlog = backlog if backlog is not None else Backlog()
        self.backlog.streams.append(self)
        self.events: deque[_Event] = deque()
        self.count = 0
        self.waiting = 0  # bytes of events after `delivered`
        self.droppable = 0  # ... of which notifications (a cut may drop them)
        self.kept = 0  # bytes of events up to `delivered`
        self.closed = False
        self.attached = False
        # The last event number handed to a response: a GET stream opened without
        # Last-Event-ID starts after it, so what the server sent while no client stream was
        # open (right after initialize, or between reconnects) is delivered, not skipped.
        self.delivered = 0
        self.progress_at = time.monotonic()  # when a client last took bytes of this stream
        self.let_go = False  # closed, and what it sent is no longer kept (a resumption is a 404)
        self._abort: Callable[[], None] | None = None
        self._hangups = 0  # hang_up() ends the response being written; the stream itself goes on
        self._lock = threading.Lock()
        self._changed = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._loop_thread = threading.get_ident() if self._loop is not None else None

    @property
    def size(self) -> int:
        """Bytes of the events this stream keeps."""
        return self.waiting + self.kept

    def _on_loop(self, call: Callable[[], None]) -> None:
        if self._loop is None or threading.get_ident() == self._loop_thread:
            call()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody pumps any more
                self._loop.call_soon_threadsafe(call)

    def _notify(self) -> None:
        self._on_loop(self._changed.set)

    def _append(self, data: bytes, droppable: bool) -> None:
        # Under the lock: the event numbered count waits for a client.
        self.events.append(_Event(self.count, data, droppable))
        self.waiting += len(data)
        if droppable:
            self.droppable += len(data)

    def push(self, data: bytes, droppable: bool = False) -> str:
        """A message event (``droppable``: a notification, which a cut may drop); its event id."""
        with self._lock:
            self.count += 1
            event_id = f"{self.key}-{self.count}"
            encoded = encode_event(data, event="message", id=event_id)
            self._append(encoded, droppable)
        self._after_push(len(encoded))
        return event_id

    def prime(self) -> None:
        """First an event with an id and empty data (SEP-1699, protocol 2025-11-25 on): a
        client that loses the stream before the answer can resume it with that id."""
        with self._lock:
            self.count += 1
            encoded = encode_event(b"", id=f"{self.key}-{self.count}")
            self._append(encoded, False)
        self._after_push(len(encoded))

    def push_raw(self, encoded: bytes) -> None:
        """An event that is not a numbered message (the legacy ``endpoint`` event)."""
        with self._lock:
            self.count += 1
            self._append(encoded, False)
        self._after_push(len(encoded))

    def _after_push(self, size: int) -> None:
        self._notify()
        if self.backlog.add(size):
            self.backlog.trim()

    def close(self) -> None:
        self.closed = True
        self._on_loop(self._room.set)
        self._notify()

    def hang_up(self) -> None:
        """End the response now writing this stream (a fault): its events stay, a client may come back."""
        self._hangups += 1
        self._notify()

    # -- the client's side --------------------------------------------------------------

    def attach(self, abort: Callable[[], None] | None = None) -> None:
        """A response pumps this stream now; ``abort`` ends it at once (a client that is cut)."""
        self.attached = True
        self._abort = abort
        self.progress_at = time.monotonic()

    def detach(self) -> None:
        self.attached = False
        self._abort = None
        self._room.set()  # nobody reads: nobody is held back for it (the backlog bounds it)

    def _take(self, sent: int) -> tuple[list[_Event], bool]:
        """Under the lock: events after number ``sent`` (at most about WRITE_BYTES); whether more follow."""
        batch: list[_Event] = []
        size = 0
        for event in self.events:
            if event.n <= sent and event.upto <= sent:
                continue
            if batch and size + len(event.data) > WRITE_BYTES:
                return batch, True
            batch.append(event)
            size += len(event.data)
        return batch, False

    def _handed(self, sent: int) -> None:
        """Events up to ``sent`` went to a response: they no longer wait; old ones are let go."""
        freed = 0
        with self._lock:
            if sent > self.delivered:
                for event in self.events:
                    if event.n > sent:
                        break
                    if event.n > self.delivered:
                        freed += len(event.data)
                        if event.droppable:
                            self.droppable -= len(event.data)
                self.delivered = sent
                self.waiting -= freed
                self.kept += freed
            self._evict()
        if freed:
            self.backlog.add(-freed)
        if self.waiting <= HOLD_BYTES // 2:
            self._room.set()

    def _evict(self) -> None:
        # Under the lock: what was sent is kept for resumption, within bounds; never what waits.
        events = self.events
        sent = 0
        for event in events:
            if event.n > self.delivered:
                break
            sent += 1
        while sent > 1 and (sent > KEEP_EVENTS or self.kept > KEEP_BYTES):
            self.kept -= len(events.popleft().data)
            sent -= 1

    def _gap_before(self, after: int) -> bytes | None:
        """Under the lock: an error event when a resumption asks for events no longer kept."""
        first = self.events[0].n if self.events else self.count + 1
        if after + 1 < first and after < self.delivered:
            return _error_event(
                self.key, after + 1, first - 1, "they were sent before and are no longer kept"
            )
        return None

    async def pump(self, write: Any, after: int = 0, last: Any = None) -> bool:
        """Write every event after number ``after`` with ``write`` (an async callable) until closed.

        Events that are ready together go in one write (up to about WRITE_BYTES). With
        ``last`` (an async callable that writes and ends the response), the events that
        end a closed stream go with the end in one write, and True is returned (the
        response is ended); else False.
        """
        sent = after
        hangups = self._hangups
        with self._lock:
            gap = self._gap_before(after)
        if gap is not None:
            await write(gap)
        while True:
            if self._hangups != hangups:
                return False
            with self._lock:
                batch, more = self._take(sent)
            if batch:
                sent = max(e.upto or e.n for e in batch)
                data = batch[0].data if len(batch) == 1 else b"".join(e.data for e in batch)
                del batch
                self._handed(sent)
                if last is not None and self.closed and not more:
                    with self._lock:
                        more = bool(self._take(sent)[0])
                    if not more:
                        await last(data)
                        self.progress_at = time.monotonic()
                        return True
                await write(data)
                self.progress_at = time.monotonic()
                continue
            if self.closed:
                return False
            self._changed.clear()
            with self._lock:
                ready = bool(self._take(sent)[0])
            if ready or self.closed or self._hangups != hangups:
                continue
            await self._changed.wait()

    # -- bounds -------------------------------------------------------------------------

    def room(self) -> Awaitable[None] | None:
        """None when a frame may follow at once; else an awaitable that waits until the client
        has taken enough (or the stream is closed, or nobody reads it any more), cutting a
        client that takes nothing for :data:`STALL_S`. Call after a push, from any thread."""
        if not (self.attached and self.waiting > HOLD_BYTES and not self.closed):
            return None
        return self._wait_room()

    async def _wait_room(self) -> None:
        # On the loop, as every change of `attached`, `closed` and what was handed out.
        while self.attached and not self.closed and self.waiting > HOLD_BYTES // 2:
            idle = time.monotonic() - self.progress_at
            if idle >= STALL_S:
                self.cut_client(
                    f"the client took nothing for {STALL_S:g} s while {self.waiting} bytes waited"
                )
                return
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), STALL_S - idle)

    def cut_client(self, why: str) -> None:
        """End the response of a client that does not read; what waits stays for a resumption."""
        abort = self._abort
        self.detach()
        if self.backlog.on_cut is not None:
            self.backlog.on_cut(
                f"stream {self.key}: {why}; its response was ended",
                {"stream": self.key, "waiting_bytes": self.waiting, "delivered": self.delivered},
            )
        if abort is not None:
            abort()

    def drop_notifications(self, wanted: int, why: str) -> int:
        """Drop about ``wanted`` bytes of the oldest waiting notifications, an ``error`` event in
        place of each run dropped (saying which numbers went); the bytes freed. Answers and
        server requests stay."""
        freed = dropped = 0
        with self._lock:
            out: deque[_Event] = deque()
            run: _Event | None = None
            for event in self.events:
                if event.n > self.delivered and freed < wanted and (event.droppable or event.upto):
                    if event.upto:  # the marker of an earlier cut: the runs join
                        if run is None:
                            run = event
                            out.append(event)
                        else:
                            run.upto = event.upto
                            freed += len(event.data)
                    else:
                        dropped += 1
                        freed += len(event.data)
                        self.droppable -= len(event.data)
                        if run is None:
                            run = _Event(event.n, b"", False, event.n)
                            out.append(run)
                        else:
                            run.upto = event.n
                    continue
                if run is not None:
                    freed -= self._mark(run, why)
                    run = None
                out.append(event)
            if run is not None:
                freed -= self._mark(run, why)
            self.events = out
            self.waiting -= freed
        if freed:
            self.backlog.add(-freed)
        if dropped and self.backlog.on_cut is not None:
            self.backlog.on_cut(
                f"stream {self.key}: {dropped} notification(s) dropped: {why}",
                {"stream": self.key, "dropped": dropped, "bytes": freed},
            )
        return freed

    def _mark(self, run: _Event, why: str) -> int:
        """Under the lock: write the error event of a run of dropped events; the bytes it adds."""
        old = len(run.data)
        run.data = _error_event(self.key, run.n, run.upto, why)
        return len(run.data) - old

    def drop_sent(self) -> int:
        """Let go of the events already sent (a closed stream past the process's bound); the bytes
        freed. What still waits for a client stays; a stream left empty is let go."""
        with self._lock:
            self.events = deque(e for e in self.events if e.n > self.delivered or e.upto > self.delivered)
            freed, self.kept = self.kept, 0
            self.let_go = not self.events
        return freed

    def forget(self) -> None:
        """The stream is let go (its session no longer keeps it): what it held no longer counts."""
        with contextlib.suppress(ValueError):
            self.backlog.streams.remove(self)
        with self._lock:
            waiting, self.waiting = self.waiting, 0
        if waiting:
            self.backlog.add(-waiting)


class ClosedStreams:
    """Closed streams kept for a late resumption, oldest first, within :data:`KEEP_CLOSED_BYTES`
    for the whole process. A leaf lock: it never takes a session's lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: deque[tuple[weakref.ref[EventStream], int]] = deque()
        self.bytes = 0

    def add(self, stream: EventStream) -> None:
        """A stream closed: keep what it holds while the bound allows, letting go of the oldest."""
        victims = []
        with self._lock:
            self._streams.append((weakref.ref(stream), stream.size))
            self.bytes += stream.size
            while self.bytes > KEEP_CLOSED_BYTES and len(self._streams) > 1:
                ref, size = self._streams.popleft()
                self.bytes -= size
                victims.append(ref())
        for victim in victims:
            if victim is not None:
                victim.drop_sent()


CLOSED = ClosedStreams()
