"""An in-memory link pair: the relay, the addons and the recorder tested in-process.

httpx's MockTransport is the model: :func:`memory_pair` gives a client-facing and a
server-facing :class:`MemoryLink`, each with a :class:`MemoryPeer` a test drives.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

from mcptape.proxy.link import Deliver, Ended, EventSink, LinkClosed, LinkEnd
from mcptape.wire.frame import Direction, Frame


@dataclass
class MemoryPeer:
    """The far end of a :class:`MemoryLink`: what a test (or an in-process peer) holds.

    ``received`` collects the frames the relay sent to this peer (as bytes);
    :meth:`send` makes the peer send a frame to the relay (delivered from the loop);
    :meth:`close` ends the peer's side (the link reports ``"eof"``).
    """

    link: MemoryLink
    received: list[bytes] = field(default_factory=list)
    closed_by_relay: bool = False

    async def send(self, data: bytes | str, **meta: Any) -> None:
        """Send one frame from the peer to the relay, as the peer's transport would."""
        await self.link._receive(data.encode() if isinstance(data, str) else data, meta or None)

    def close(self) -> None:
        """The peer goes away: the link stops receiving with ``"eof"``."""
        self.link._peer_closed()

    async def next(self, timeout: float = 5.0) -> bytes:
        """Wait for the next frame the relay sends to this peer."""
        return await asyncio.wait_for(self.link._outbox.get(), timeout)


class MemoryLink:
    """A link whose peer is Python code on the same loop: frames are delivered from the loop.

    ``incoming`` is the direction of frames the peer sends (``"c2s"`` when the peer
    plays the client). ``exit_code`` is what :meth:`aclose` reports (a fake process).
    """

    def __init__(self, incoming: Direction, name: str, *, exit_code: int | None = None) -> None:
        self.name = name
        self.incoming: Direction = incoming
        self.exit_code = exit_code
        self._deliver: Deliver | None = None
        self._ended: Ended | None = None
        self._event: EventSink | None = None
        self._outbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._receiving = False
        self._send_closed = False
        self._end: LinkEnd | None = None
        self.peer = MemoryPeer(self)

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._deliver, self._ended, self._event = deliver, ended, event
        self._loop = asyncio.get_running_loop()
        self._receiving = True

    async def _receive(self, data: bytes, meta: dict[str, Any] | None) -> None:
        if not self._receiving or self._deliver is None:
            return
        pending = self._deliver(Frame(data, self.incoming, meta=meta))
        if pending is not None:
            await pending

    def _peer_closed(self) -> None:
        if self._receiving:
            self._receiving = False
            if self._ended is not None:
                self._ended("eof")

    def send(self, frame: Frame) -> None:
        with self._lock:
            if self._send_closed or self._end is not None:
                raise LinkClosed(f"{self.name}: closed")
        self.peer.received.append(frame.data)
        loop = self._loop
        if loop is not None and not _on_loop(loop):
            # send is thread-safe: a sender on another thread must wake the peer's loop
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody reads
                loop.call_soon_threadsafe(self._outbox.put_nowait, frame.data)
            return
        self._outbox.put_nowait(frame.data)

    def close_send(self) -> None:
        self._send_closed = True
        self.peer.closed_by_relay = True

    def stop_receiving(self) -> None:
        self._receiving = False

    async def aclose(self, grace: float) -> LinkEnd:
        if self._end is None:
            self.close_send()
            was_receiving = self._receiving
            self.stop_receiving()
            if was_receiving and self._ended is not None:
                self._ended("stopped")
            self._end = LinkEnd("exited" if self.exit_code is not None else "closed", self.exit_code)
        return self._end


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def memory_pair(*, exit_code: int | None = None) -> tuple[MemoryLink, MemoryLink]:
    """A client-facing and a server-facing in-memory link for testing a relay in-process.

    Returns ``(client_link, server_link)``; drive them through ``link.peer``.
    """
    return MemoryLink("c2s", "client"), MemoryLink("s2c", "server", exit_code=exit_code)
