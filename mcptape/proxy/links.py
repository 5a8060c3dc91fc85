"""Links: bidirectional channels of frames. stdio flavours live here.

A link receives frames from its peer (``recv``) and sends frames to it (``send``).
``StreamLink`` frames a byte stream by newline; our own stdin/stdout and a spawned
process's pipes are both stream links. When a frame arrives without a trailing
newline at end of stream, it is sent on without one too (``meta["eol"] = False``),
so forwarding stays byte-faithful even then.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections import deque
from typing import Protocol

from mcptape.frames import Direction, Frame
from mcptape.proxy.framing import LineSplitter

READ_CHUNK = 1 << 18
# Above this many bytes waiting in the write buffer we wait for the peer to read.
WRITE_HIGH_WATER = 1 << 20


class LinkClosed(Exception):
    """The peer of a link stopped reading: a frame could not be delivered."""


class Link(Protocol):
    """A channel of frames to and from one peer."""

    async def recv(self) -> Frame | None:
        """The next frame from the peer, or None at end of stream."""
        ...

    async def send(self, frame: Frame) -> None:
        """Deliver a frame to the peer; raises LinkClosed when the peer is gone."""
        ...

    async def close_send(self) -> None:
        """Tell the peer no more frames will come (close its stdin)."""
        ...


class StreamLink:
    """A newline-framed link over an asyncio stream pair."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter | None,
        incoming: Direction,
        *,
        raw_writer: _BlockingWriter | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._raw_writer = raw_writer
        self._incoming: Direction = incoming
        self._splitter = LineSplitter()
        self._ready: deque[bytes] = deque()
        self._eof = False
        self._closed = False
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False

    async def recv(self) -> Frame | None:
        while not self._ready:
            if self._eof:
                return None
            chunk = await self._reader.read(READ_CHUNK)
            if not chunk:
                self._eof = True
                rest = self._splitter.finish()
                if rest is None:
                    return None
                return Frame(rest, self._incoming, meta={"eol": False})
            self._ready.extend(self._splitter.feed(chunk))
        return Frame(self._ready.popleft(), self._incoming)

    async def send(self, frame: Frame) -> None:
        if self._closed:
            raise LinkClosed("link already closed")
        eol = not (frame.meta is not None and frame.meta.get("eol") is False)
        payload = frame.data + b"\n" if eol else frame.data
        if self._raw_writer is not None:
            await self._raw_writer.write(payload)
            return
        writer = self._writer
        if writer is None:
            raise LinkClosed("link has no writer")
        if writer.is_closing():
            raise LinkClosed("peer closed its input")
        # Frames sent in one turn of the event loop go out in one write: a burst costs a
        # few system calls instead of one per frame, and a lone frame waits for nothing.
        self._out.append(payload)
        self._out_bytes += len(payload)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        if self._out_bytes + writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
            self._flush()
            try:
                await writer.drain()
            except (ConnectionError, BrokenPipeError) as exc:
                raise LinkClosed(str(exc)) from exc

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._out or self._writer is None:
            return
        data = self._out[0] if len(self._out) == 1 else b"".join(self._out)
        self._out.clear()
        self._out_bytes = 0
        if not self._writer.is_closing():
            self._writer.write(data)

    async def close_send(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._raw_writer is not None:
            self._raw_writer.close()
            return
        if self._writer is not None and not self._writer.is_closing():
            with contextlib.suppress(ConnectionError, BrokenPipeError):
                await self._writer.drain()
            self._writer.close()


class _BlockingWriter:
    """Writes to a file descriptor that asyncio cannot watch (a regular file), off the loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, data: bytes) -> None:
        await asyncio.to_thread(self._write_all, data)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self._fd, view)
            except BrokenPipeError as exc:
                raise LinkClosed(str(exc)) from exc
            view = view[n:]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _feed_from_thread(fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    """Read a descriptor asyncio cannot watch (regular file, /dev/null) on a daemon thread."""

    def run() -> None:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                loop.call_soon_threadsafe(reader.feed_eof)
                return
            loop.call_soon_threadsafe(reader.feed_data, chunk)

    threading.Thread(target=run, name="mcptape-stdin", daemon=True).start()


async def open_stdio_link() -> StreamLink:
    """The client-facing link over our own stdin (frames c2s) and stdout (frames s2c).

    The descriptors are duplicated so nothing else in the process (a stray print)
    can interleave bytes with the frames written to stdout.
    """
    loop = asyncio.get_running_loop()
    in_fd = os.dup(sys.stdin.fileno())
    out_fd = os.dup(sys.stdout.fileno())
    # Anything printed by accident now goes to stderr instead of corrupting the stream.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    reader = asyncio.StreamReader(limit=1 << 26)
    try:
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_fd, "rb", buffering=0, closefd=False)
        )
    except (ValueError, OSError):
        _feed_from_thread(in_fd, reader, loop)

    writer: asyncio.StreamWriter | None = None
    raw_writer: _BlockingWriter | None = None
    # closefd=False: a failed attempt must not close the descriptor the fallback uses.
    out_file = os.fdopen(out_fd, "wb", buffering=0, closefd=False)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    except (ValueError, OSError):
        raw_writer = _BlockingWriter(out_fd)
    return StreamLink(reader, writer, "c2s", raw_writer=raw_writer)
