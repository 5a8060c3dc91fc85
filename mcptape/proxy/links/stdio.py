"""stdio links: newline-framed frames over a pair of file descriptors (our own stdin/stdout, pipes).

Receiving runs on a reader thread of the link's own: blocking reads on threads cost
about 0.03 ms a hop on our 2-core machines where an event-loop turn costs 0.15–0.3 ms
(bench/bench_relay.py), and the relay's budget is a fraction of a millisecond. That
holds when the other side is a pipe too (``record``); a spawned server whose other side
lives on the loop anyway (the gateway, ``call``) is served by the loop itself:
:mod:`mcptape.proxy.links.looppipe`.

Sending never blocks the event loop. A frame sent from a thread other than the loop's
(the other link's reader thread, the common case) is written at once with a blocking
write when nothing is queued: the reader thread waiting on a full pipe is the natural
back-pressure, and no hop to another thread is paid. A frame sent from the loop (an
answer mcptape writes itself, a loop-side link's frame) goes to a queue that a writer
thread of the link's own empties, so the loop never waits on a pipe. When the queue
passes :data:`QUEUE_LIMIT` bytes, ``send`` returns an awaitable (on the loop) or blocks
(on a thread) until it drains.

A frame that arrives without a trailing newline at end of stream is sent on without
one too (``meta["eol"] = False``), so forwarding stays byte-faithful.

A frame that came from a stream that is not line-delimited (an HTTP body, an SSE event
of several ``data:`` lines) may hold line feeds: it is written on one line
(:func:`~mcptape.wire.jsontext.one_line`), and a ``reframed`` event says so; the frame
is recorded as it was received.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable
from typing import Any

from mcptape.proxy.link import (
    BEFORE_WAIT,
    Deliver,
    Ended,
    EventSink,
    LinkBase,
    LinkClosed,
    LinkEnd,
    wait_from_thread,
)
from mcptape.proxy.links.framing import LineSplitter
from mcptape.wire.frame import Direction, Frame
from mcptape.wire.jsontext import one_line
from mcptape.wire.largeframes import LARGE, LARGE_FRAME_BYTES, give_large_blocks_back

READ_CHUNK = 1 << 18
IOV_MAX = 1024  # the buffers one writev takes on Linux
QUEUE_LIMIT = 8 << 20  # bytes queued for the writer thread before senders wait
HOLD_LIMIT = 256 << 10  # bytes a reader thread may hold back to write with the next frames

# Per reader thread: whether more frames of the same read follow at once, and the links
# holding frames back for this thread. Frames that arrived together leave together in
# one writev: a burst then costs a system call per read, not per frame.
_tls = threading.local()


def flush_held() -> None:
    """Write what links hold back for the calling thread (end of a read, before waiting)."""
    holding: list[FdLink] | None = _tls.__dict__.get("holding")
    if holding:
        _tls.holding = []
        for link in holding:
            link._flush_held()


BEFORE_WAIT.append(flush_held)


Part = bytes | memoryview


def line_parts(frame: Frame, event: EventSink | None) -> list[Part]:
    """The buffers that write ``frame`` as one line (bytes, not memoryviews: writev takes
    them as they are; views only for a partial write); a frame holding line feeds is
    re-framed onto one line, and ``event`` told (see the module docstring)."""
    data = one_line(frame.data)
    if data is not frame.data and event is not None:
        message = frame.message
        method = message.get("method") if isinstance(message, dict) else None
        event(
            "reframed",
            "a message with line breaks was written on one line for a line-delimited peer",
            {
                "direction": frame.direction,
                "method": method if isinstance(method, str) else None,
                "id": frame.rpc_id,
                "received_bytes": len(frame.data),
                "sent_bytes": len(data),
            },
        )
    meta = frame.meta
    return [data] if meta is not None and meta.get("eol") is False else [data, b"\n"]


class FdLink(LinkBase):
    """A newline-framed link over a readable and a writable file descriptor."""

    def __init__(self, read_fd: int, write_fd: int, incoming: Direction, name: str) -> None:
        self.name = name
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._incoming: Direction = incoming
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._receiving = True
        self._reader: threading.Thread | None = None
        self.reader_done = threading.Event()
        # When the reader entered its current read (None while it delivers frames): a
        # reader waiting long for bytes that never come is told apart from a busy one.
        self.reading_since: float | None = None
        # Sending state, under _lock: frames queued for the writer thread, whether some
        # thread is writing right now, and whether the sending side is closed. Threads
        # that wait for it to change (the writer thread, senders over QUEUE_LIMIT) wait on
        # _cv and count themselves in _sleepers, so a frame written directly (the common
        # case) notifies nobody when nobody waits.
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._sleepers = 0
        self._queue: deque[list[Part]] = deque()
        self._queued = 0
        self._writing = False
        self._send_closed = False  # no more frames accepted
        self._fd_closed = False
        self._broken: str | None = None  # the peer stopped reading (EPIPE)
        self._writer: threading.Thread | None = None
        self._held: list[list[Part]] = []  # frames a reader thread holds back
        self._held_bytes = 0
        self._holder: int | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._end: LinkEnd | None = None
        self._event: EventSink | None = None

    # -- receiving ----------------------------------------------------------------

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._event = event
        self._reader = threading.Thread(
            target=self._read_loop, args=(deliver, ended), name=f"mcptape-{self.name}-reader", daemon=True
        )
        self._reader.start()

    def _read_loop(self, deliver: Deliver, ended: Ended) -> None:
        loop = self._loop
        assert loop is not None
        splitter = LineSplitter()
        incoming = self._incoming
        why = "eof"
        waited = False  # whether the reader waited for the store during the current line
        _tls.more = False
        read, read_fd, monotonic = os.read, self._read_fd, time.monotonic
        try:
            while True:
                self.reading_since = monotonic()
                try:
                    chunk = read(read_fd, READ_CHUNK)
                except OSError as exc:
                    why = f"error: {exc.strerror or exc}"
                    chunk = b""
                self.reading_since = None
                if not self._receiving:
                    why = "stopped"
                    return
                if not chunk:
                    rest = splitter.finish()
                    if rest is not None:
                        pending = deliver(Frame(rest, incoming, meta={"eol": False}))
                        if pending is not None:
                            wait_from_thread(loop, pending)
                    return
                lines = splitter.feed(chunk)
                del chunk
                if len(lines) == 1:
                    # One frame per read (a client waiting for each answer): nothing is held
                    # back for the next, so there is nothing to flush after it either; and
                    # what is left in the splitter is less than a read (READ_CHUNK), so no
                    # large line is on its way yet.
                    waited = False
                    pending = deliver(Frame(lines.pop(), incoming))
                    if pending is not None:
                        wait_from_thread(loop, pending)
                        del pending
                    continue
                if lines:
                    waited = False
                # Lines are taken out of the list as they go: a large frame is released as
                # soon as it is forwarded and recorded, not when the next read returns.
                lines.reverse()
                while lines:
                    if not self._receiving:
                        why = "stopped"
                        return
                    _tls.more = len(lines) > 1
                    pending = deliver(Frame(lines.pop(), incoming))
                    if pending is not None:
                        wait_from_thread(loop, pending)
                        del pending
                _tls.more = False
                flush_held()
                if splitter.pending() >= LARGE_FRAME_BYTES and not waited:
                    # A large line is on its way: let the store finish the large frame it
                    # may still hold before this one is read whole (bounded; see largeframes).
                    waited = True
                    give_large_blocks_back()
                    LARGE.wait_idle()
        except Exception as exc:  # a bug must not leave the session hanging
            why = f"error: {type(exc).__name__}: {exc}"
        finally:
            _tls.more = False
            flush_held()
            self.reader_done.set()
            ended(why)

    def stop_receiving(self) -> None:
        self._receiving = False

    # -- sending ------------------------------------------------------------------

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        data: Part = frame.data
        parts: list[Part]
        if b"\n" in frame.data:
            parts = line_parts(frame, self._event)
            data = parts[0]
        else:  # line_parts, inline for the common case (a line already): this runs for every frame
            meta = frame.meta
            parts = [data] if meta is not None and meta.get("eol") is False else [data, b"\n"]
        me = threading.get_ident()
        with self._lock:
            if self._broken is not None or self._send_closed:
                self._check_open()
            held = self._held
            if me == self._loop_thread or self._writing or self._queue or (held and self._holder != me):
                return self._enqueue(parts, len(data) + 1, me == self._loop_thread)
            if _tls.__dict__.get("more") and self._held_bytes + len(data) + 1 <= HOLD_LIMIT:
                held.append(parts)
                self._held_bytes += len(data) + 1
                if self._holder != me:
                    self._holder = me
                    holding = _tls.__dict__.get("holding")
                    if holding is None:
                        holding = _tls.holding = []
                    holding.append(self)
                return None
            if held:
                parts = [*self._take_held(), *parts]
            self._writing = True
        try:
            self._write(parts)
        finally:
            with self._lock:
                self._writing = False
                if self._sleepers or self._waiters or self._send_closed:
                    self._after_write()
        return None

    def _enqueue(self, parts: list[Part], size: int, on_loop: bool) -> Awaitable[Any] | None:
        """Under _lock: queue a frame for the writer thread; wait (or say to) while over the limit."""
        if self._held and self._holder == threading.get_ident():
            # Frames this thread held back go first, with this one: a thread never waits
            # for the writer thread while holding frames it would wait for.
            size += self._held_bytes
            parts = [*self._take_held(), *parts]
        self._queue.append(parts)
        self._queued += size
        self._ensure_writer()
        if self._sleepers:
            self._cv.notify_all()
        if self._queued <= QUEUE_LIMIT:
            return None
        if on_loop:
            return self._wait_below_limit_async()
        flush_held()  # never wait while holding frames back
        while self._queued > QUEUE_LIMIT and not self._broken and not self._fd_closed:
            self._sleep(0.5)
        return None

    def _sleep(self, timeout: float | None = None) -> None:
        """Under _lock: wait on _cv, counted in _sleepers so that senders know to notify."""
        self._sleepers += 1
        try:
            self._cv.wait(timeout)
        finally:
            self._sleepers -= 1

    def _take_held(self) -> list[Part]:
        """Under _lock: the held frames' buffers, in order; nothing is held afterwards."""
        batch = [p for parts in self._held for p in parts]
        self._held.clear()
        self._held_bytes = 0
        self._holder = None
        return batch

    def _flush_held(self) -> None:
        with self._lock:
            if self._holder != threading.get_ident() or not self._held:
                return
            batch = self._take_held()
            self._writing = True
        try:
            self._write(batch)
        except LinkClosed:
            pass  # the next send says so
        finally:
            with self._lock:
                self._writing = False
                self._after_write()

    def _check_open(self) -> None:
        if self._broken is not None:
            raise LinkClosed(f"{self.name}: {self._broken}")
        if self._send_closed:
            raise LinkClosed(f"{self.name}: already closed")

    def _wait_below_limit_async(self) -> Awaitable[None]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.append((loop, future))
        return future

    def _after_write(self) -> None:
        """Under _lock: wake the writer thread, blocked senders and loop waiters; close when due."""
        if self._sleepers:
            self._cv.notify_all()
        if self._queued <= QUEUE_LIMIT or self._broken or self._fd_closed:
            waiters, self._waiters = self._waiters, []
            for loop, future in waiters:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_settle, future)
        if self._send_closed and not self._queue and not self._writing and not self._held:
            self._close_fd()

    def _ensure_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_loop, name=f"mcptape-{self.name}-writer", daemon=True
            )
            self._writer.start()

    def _write_loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue or self._writing or self._held:
                    if self._fd_closed or (
                        self._send_closed and not self._queue and not self._writing and not self._held
                    ):
                        return
                    self._sleep()
                batch = list(self._queue)
                self._queue.clear()
                size = sum(sum(len(p) for p in parts) for parts in batch)
                self._writing = True
            try:
                self._write([p for parts in batch for p in parts])
            except LinkClosed:
                pass
            finally:
                with self._lock:
                    self._writing = False
                    self._queued -= size
                    self._after_write()

    def _write(self, parts: list[Part]) -> None:
        """Write every part, blocking; raises LinkClosed when the peer stopped reading."""
        if self._broken is not None or self._fd_closed:
            raise LinkClosed(f"{self.name}: {self._broken or 'closed'}")
        first = 0
        try:
            while first < len(parts):
                n = os.writev(self._write_fd, parts[first : first + IOV_MAX])
                while first < len(parts) and n >= len(parts[first]):
                    n -= len(parts[first])
                    first += 1
                if n:
                    parts[first] = memoryview(parts[first])[n:]  # a view: the rest is not copied
        except OSError as exc:  # EPIPE: the peer closed its end
            self._broken = exc.strerror or str(exc)
            raise LinkClosed(f"{self.name}: {self._broken}") from exc

    def close_send(self) -> None:
        with self._lock:
            self._send_closed = True
            if not self._queue and not self._writing and not self._held:
                self._close_fd()
            elif self._sleepers:
                self._cv.notify_all()

    def _close_fd(self) -> None:
        if not self._fd_closed:
            self._fd_closed = True
            self._close_write_fd()

    def _close_write_fd(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._write_fd)

    def pending_bytes(self) -> int:
        """Bytes queued but not yet written."""
        return self._queued

    async def flushed(self, timeout: float) -> bool:
        """Wait (on the loop, at most ``timeout``) until nothing is queued or being written."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._queue or self._writing or self._held:
            if self._broken or asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    async def aclose(self, grace: float) -> LinkEnd:
        """Stop receiving, write what is queued (at most ``grace`` seconds), close."""
        if self._end is None:
            self.stop_receiving()
            await self.flushed(grace)
            self.close_send()
            self._end = LinkEnd("closed", detail=self._broken)
        return self._end


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def open_stdio_link() -> FdLink:
    """The client-facing link over our own stdin (frames c2s) and stdout (frames s2c).

    The descriptors are duplicated and fd 1 is pointed at stderr, so nothing else in
    the process (a stray print) can interleave bytes with the frames on stdout. A
    closed stdin or stdout (started with ``<&-`` or ``>&-``) is an error the caller
    reports, not a traceback.
    """
    # Python leaves sys.stdin/sys.stdout None when the descriptor was closed at start
    # (and fd 0 may since have been reused by a file opened during imports).
    if sys.stdin is None:
        raise LinkClosed("standard input is closed: an MCP client must be attached to it")
    if sys.stdout is None:
        raise LinkClosed("standard output is closed: an MCP client must be attached to it")
    try:
        in_fd = os.dup(0)
    except OSError as exc:
        raise LinkClosed("standard input is closed: an MCP client must be attached to it") from exc
    try:
        out_fd = os.dup(1)
        os.fstat(out_fd)
    except OSError as exc:
        os.close(in_fd)
        raise LinkClosed("standard output is closed: an MCP client must be attached to it") from exc
    with contextlib.suppress(OSError):
        os.dup2(2, 1)
    for fd in (in_fd, out_fd):
        with contextlib.suppress(OSError):
            os.set_blocking(fd, True)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    return FdLink(in_fd, out_fd, "c2s", "client")
