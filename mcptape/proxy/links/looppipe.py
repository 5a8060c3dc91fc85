"""A spawned server whose pipes the event loop reads and writes: no reader or writer thread.

:class:`~mcptape.proxy.links.process.ProcessLink` reads the server's stdout on a thread of
its own and, when a frame is sent from the loop, writes on another. That is the fast
path when the other side is a pipe too (``record``: a reader thread writes straight
into the other pipe and the loop is never involved). When the other side lives on the
loop (an HTTP client behind the gateway, the tape player of ``replay``, ``call``'s
client) every frame crossed threads twice: a queue and a wake-up to the writer thread
on the way in, ``call_soon_threadsafe`` and a wake-up of the loop on the way out, plus
the GIL changing hands each time. Here the loop polls the pipes itself
(``add_reader``/``add_writer`` on non-blocking descriptors, the way asyncio's own pipe
transports do; those are made by a coroutine, and a link starts synchronously and may
be sent a frame at once).

Everything else (stderr, exit watching, the stdin-TERM-KILL shutdown) is the
ProcessLink's. Frames are delivered in order; while the relay holds a frame back
(``deliver`` returned an awaitable) the pipe is not read, which is the back-pressure.
Sending never blocks: what the pipe does not take at once is queued and written when
it is writable; past :data:`~mcptape.proxy.links.stdio.QUEUE_LIMIT` queued bytes ``send``
returns an awaitable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Awaitable
from typing import Any

from mcptape.proxy.link import Deliver, Ended, EventSink, LinkClosed
from mcptape.proxy.links.framing import LineSplitter
from mcptape.proxy.links.process import ProcessLink
from mcptape.proxy.links.stdio import IOV_MAX, QUEUE_LIMIT, READ_CHUNK, Part, line_parts
from mcptape.wire.frame import Frame


class LoopProcessLink(ProcessLink):
    """A :class:`ProcessLink` whose stdin and stdout are served by the event loop."""

    def _start_pipes(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        loop = asyncio.get_running_loop()
        self._loop, self._loop_thread = loop, threading.get_ident()
        self._deliver, self._ended, self._event = deliver, ended, event
        self._splitter = LineSplitter()
        self._backlog: deque[bytes] = deque()
        self._paused = False
        self._finished = False
        self._out: deque[Part] = deque()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self.reading_since = time.monotonic()
        loop.add_reader(self._read_fd, self._readable)

    # -- receiving ----------------------------------------------------------------

    def _readable(self) -> None:
        try:
            chunk = os.read(self._read_fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._finish(f"error: {exc.strerror or exc}")
            return
        if not chunk:
            rest = self._splitter.finish()
            if rest is not None:
                self._backlog.append(rest)
                self._eof_line = True
            self._eof = True
        else:
            self._backlog.extend(self._splitter.feed(chunk))
        self._pump()

    _eof = False
    _eof_line = False  # the last backlog line had no newline

    def _pump(self) -> None:
        """Deliver what was read, in order, until the relay asks us to wait."""
        self.reading_since = None
        incoming = self._incoming
        try:
            while self._backlog:
                if not self._receiving:
                    self._finish("stopped")
                    return
                line = self._backlog.popleft()
                last = self._eof_line and not self._backlog
                pending = self._deliver(Frame(line, incoming, meta={"eol": False} if last else None))
                if pending is not None:
                    self._hold(pending)
                    return
        except Exception as exc:  # a bug must not leave the session hanging
            self._finish(f"error: {type(exc).__name__}: {exc}")
            return
        if self._eof:
            self._finish("eof")
        elif not self._receiving:
            self._finish("stopped")
        else:
            self.reading_since = time.monotonic()

    def _hold(self, pending: Awaitable[Any]) -> None:
        assert self._loop is not None
        if not self._paused:
            self._paused = True
            self._loop.remove_reader(self._read_fd)
        asyncio.ensure_future(pending).add_done_callback(self._resume)

    def _resume(self, done: asyncio.Future[Any]) -> None:
        if self._finished:
            return
        if not done.cancelled() and (exc := done.exception()) is not None:
            self._finish(f"error: {type(exc).__name__}: {exc}")
            return
        self._pump()
        if self._paused and not self._finished and not self._backlog and not self._eof:
            self._paused = False
            assert self._loop is not None
            self._loop.add_reader(self._read_fd, self._readable)

    def _finish(self, why: str) -> None:
        if self._finished:
            return
        self._finished = True
        assert self._loop is not None
        self._loop.remove_reader(self._read_fd)
        self._backlog.clear()
        self.reading_since = None
        self.reader_done.set()
        self._ended(why)

    def stop_receiving(self) -> None:
        self._receiving = False
        loop = self._loop
        if loop is None or not hasattr(self, "_finished"):
            return
        # From the exit watcher's thread too: the loop ends the reading.
        if threading.get_ident() == self._loop_thread:
            loop.call_soon(self._finish, "stopped")
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                loop.call_soon_threadsafe(self._finish, "stopped")

    # -- sending ------------------------------------------------------------------

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        self._check_open()
        parts = line_parts(frame, self._event)
        if threading.get_ident() != self._loop_thread:
            assert self._loop is not None
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._send_quietly, parts)
            return None
        self._write_or_queue(parts)
        if self._queued > QUEUE_LIMIT:
            return self._wait_below_limit_async()
        return None

    def _send_quietly(self, parts: list[Part]) -> None:
        with contextlib.suppress(LinkClosed):
            self._write_or_queue(parts)

    def _write_or_queue(self, parts: list[Part]) -> None:
        if self._broken is not None or self._fd_closed:
            raise LinkClosed(f"{self.name}: {self._broken or 'closed'}")
        if self._out:
            self._queue_parts(parts)
            return
        rest = self._writev(parts)
        if rest:
            self._queue_parts(rest)
            assert self._loop is not None
            self._loop.add_writer(self._write_fd, self._writable)

    def _queue_parts(self, parts: list[Part]) -> None:
        self._out.extend(parts)
        self._queued += sum(len(p) for p in parts)

    def _writev(self, parts: list[Part]) -> list[Part]:
        """Write what the pipe takes now; the parts left over (raises LinkClosed on EPIPE)."""
        first = 0
        while first < len(parts):
            try:
                n = os.writev(self._write_fd, parts[first : first + IOV_MAX])
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:  # EPIPE: the server closed its stdin
                self._broken = exc.strerror or str(exc)
                self._drop_queue()
                raise LinkClosed(f"{self.name}: {self._broken}") from exc
            while first < len(parts) and n >= len(parts[first]):
                n -= len(parts[first])
                first += 1
            if n:
                parts[first] = memoryview(parts[first])[n:]  # a view: no copy of the rest
        return parts[first:]

    def _writable(self) -> None:
        batch = list(self._out)
        before = self._queued
        self._out.clear()
        self._queued = 0
        try:
            rest = self._writev(batch)
        except LinkClosed:
            return
        self._queue_parts(rest)
        if not rest:
            assert self._loop is not None
            self._loop.remove_writer(self._write_fd)
            if self._send_closed:
                self._close_fd()
        if self._queued < before:
            self._wake_senders()

    def _drop_queue(self) -> None:
        self._out.clear()
        self._queued = 0
        if self._loop is not None:
            self._loop.remove_writer(self._write_fd)
        self._wake_senders()

    def _wake_senders(self) -> None:
        if self._queued <= QUEUE_LIMIT or self._broken or self._fd_closed:
            waiters, self._waiters = self._waiters, []
            for _loop, future in waiters:
                if not future.done():
                    future.set_result(None)

    def close_send(self) -> None:
        if self._loop is None or not hasattr(self, "_out"):
            super().close_send()  # never started: nothing is queued
            return
        if threading.get_ident() != self._loop_thread:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self.close_send)
            return
        self._send_closed = True
        if not self._out:
            self._close_fd()

    def _close_fd(self) -> None:
        if not self._fd_closed and self._loop is not None:
            self._loop.remove_writer(self._write_fd)
        super()._close_fd()
        self._out.clear()
        self._queued = 0
        self._wake_senders()

    async def flushed(self, timeout: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout
        while self._out:
            if self._broken or asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True
