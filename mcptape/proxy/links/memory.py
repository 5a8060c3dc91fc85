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

from mcptape.proxy.link import LinkClosed, LinkEnd, LoopSideLink
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
        await self.link._receive_bytes(data.encode() if isinstance(data, str) else data, meta or None)

    def close(self) -> None:
        """The peer goes away: the link stops receiving with ``"eof"``."""
        self.link._peer_closed()

    async def next(self, timeout: float = 5.0) -> bytes:
        """Wait for the next frame the relay sends to this peer."""
        return await asyncio.wait_for(self.link._outbox.get(), timeout)


class MemoryLink(LoopSideLink):
    """A link whose peer is Python code on the same loop: frames are delivered from the loop.

    ``incoming`` is the direction of frames the peer sends (``"c2s"`` when the peer
    plays the client). ``exit_code`` is what :meth:`aclose` reports (a fake process).
    """

    def __init__(self, incoming: Direction, name: str, *, exit_code: int | None = None) -> None:
        super().__init__(name)
        self.incoming: Direction = incoming
        self.exit_code = exit_code
        self._outbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._lock = threading.Lock()
        self.peer = MemoryPeer(self)

    async def _receive_bytes(self, data: bytes, meta: dict[str, Any] | None) -> None:
        if self._receiving and self._deliver is not None:
            await self._receive(Frame(data, self.incoming, meta=meta))

    def _peer_closed(self) -> None:
        if self._receiving:
            self._peer_ended("eof")

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
        super().close_send()
        self.peer.closed_by_relay = True

    def _ending(self) -> LinkEnd:
        return LinkEnd("exited" if self.exit_code is not None else "closed", self.exit_code)


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
