"""Links: bidirectional channels of frames. The stdio flavours live here.

A link pushes each frame it receives to a callback, on a reader thread of its own,
and sends frames to its peer with blocking writes. stdio frames travel on threads,
not through the event loop, because the relay's budget is 0.1 ms added per round
trip and, measured on our 2-core machines, asyncio's pipe transports alone add
0.15–0.3 ms (an event-loop turn per hop) where blocking reads on threads add about
0.03 ms. The event loop keeps the lifecycle: signals, timers, shutdown, async addons.

A frame that arrives without a trailing newline at end of stream is sent on
without one too (``meta["eol"] = False``), so forwarding stays byte-faithful.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Protocol

from mcptape.frames import Direction, Frame
from mcptape.proxy.framing import LineSplitter

READ_CHUNK = 1 << 18
IOV_MAX = 1024  # the buffers one writev takes on Linux

FrameSink = Callable[[Frame, bool], bool]
"""Called with each frame received and whether more frames from the same read follow
at once; returns False to stop reading."""
EndSink = Callable[[str], None]
"""Called once when a link stops receiving: ``"eof"``, or ``"error: ..."``."""


class LinkClosed(Exception):
    """The peer of a link stopped reading: a frame could not be delivered."""


class Link(Protocol):
    """A channel of frames to and from one peer."""

    def start(self, on_frame: FrameSink, on_end: EndSink) -> None:
        """Begin receiving: frames go to ``on_frame`` in order, then ``on_end`` once."""
        ...

    def send(self, frame: Frame, *, more: bool = False) -> None:
        """Deliver a frame to the peer (blocking); raises LinkClosed when the peer is gone.

        ``more=True`` says another frame follows at once, so the link may hold this one
        back and write both together; a later ``send`` or ``flush`` writes it.
        """
        ...

    def flush(self) -> None:
        """Write any frame held back by ``send(..., more=True)``."""
        ...

    def close_send(self) -> None:
        """Tell the peer no more frames will come (close its stdin)."""
        ...

    def stop_reading(self) -> None:
        """Deliver no more frames, even if some still arrive."""
        ...


class FdLink:
    """A newline-framed link over a pair of file descriptors (pipes, files, terminals)."""

    def __init__(self, read_fd: int, write_fd: int, incoming: Direction, name: str) -> None:
        self.name = name
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._incoming: Direction = incoming
        self._lock = threading.Lock()  # writers: the peer's reader thread and the event loop
        self._held: list[bytes] = []
        self._closed = False
        self._stopped = False
        self._thread: threading.Thread | None = None

    # -- receiving ----------------------------------------------------------------

    def start(self, on_frame: FrameSink, on_end: EndSink) -> None:
        self._thread = threading.Thread(
            target=self._read_loop, args=(on_frame, on_end), name=f"mcptape-{self.name}", daemon=True
        )
        self._thread.start()

    def _read_loop(self, on_frame: FrameSink, on_end: EndSink) -> None:
        splitter = LineSplitter()
        incoming = self._incoming
        why = "eof"
        try:
            while True:
                try:
                    chunk = os.read(self._read_fd, READ_CHUNK)
                except OSError as exc:
                    why = f"error: {exc.strerror or exc}"
                    chunk = b""
                if not chunk:
                    rest = splitter.finish()
                    if rest is not None and not self._stopped:
                        on_frame(Frame(rest, incoming, meta={"eol": False}), False)
                    return
                lines = splitter.feed(chunk)
                last = len(lines) - 1
                for i, line in enumerate(lines):
                    if self._stopped or not on_frame(Frame(line, incoming), i < last):
                        why = "stopped"
                        return
        finally:
            on_end(why)

    def stop_reading(self) -> None:
        self._stopped = True

    # -- sending ------------------------------------------------------------------

    def send(self, frame: Frame, *, more: bool = False) -> None:
        eol = not (frame.meta is not None and frame.meta.get("eol") is False)
        with self._lock:
            if self._closed:
                raise LinkClosed(f"{self.name}: already closed")
            self._held.append(frame.data)
            if eol:
                self._held.append(b"\n")
            if not more:
                self._write_held()

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._write_held()

    def _write_held(self) -> None:
        held = self._held
        if not held:
            return
        # One writev for everything held: no copy of a large frame to append its newline.
        parts = [memoryview(part) for part in held]
        held.clear()
        first = 0  # parts before this index are written
        try:
            while first < len(parts):
                n = os.writev(self._write_fd, parts[first : first + IOV_MAX])
                while first < len(parts) and n >= len(parts[first]):
                    n -= len(parts[first])
                    first += 1
                if n:
                    parts[first] = parts[first][n:]
        except OSError as exc:  # EPIPE: the peer closed its end
            self._closed = True
            raise LinkClosed(f"{self.name}: {exc.strerror or exc}") from exc

    def close_send(self) -> None:
        with self._lock:
            if self._closed:
                return
            with contextlib.suppress(LinkClosed):
                self._write_held()
            self._closed = True
            self._close_write_fd()

    def _close_write_fd(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._write_fd)


def open_stdio_link() -> FdLink:
    """The client-facing link over our own stdin (frames c2s) and stdout (frames s2c).

    The descriptors are duplicated and fd 1 is pointed at stderr, so nothing else in
    the process (a stray print) can interleave bytes with the frames on stdout.
    """
    in_fd = os.dup(sys.stdin.fileno())
    out_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for fd in (in_fd, out_fd):
        with contextlib.suppress(OSError):
            os.set_blocking(fd, True)
    return FdLink(in_fd, out_fd, "c2s", "client")
