"""The client's side of the relay: a loop-side link whose peer is the in-process client.

The relay sees :class:`ClientLink` as any client-facing link (``MemoryLink`` in
:mod:`mcptape.proxy.links.memory` is the model): frames the client writes are delivered
from the event loop with :meth:`ClientLink.put`, and what the relay sends to the
client (replies, notifications, server requests) is handed to ``on_frame`` on the
loop, whatever thread the relay sent it from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from mcptape.proxy.link import LinkClosed, LoopSideLink
from mcptape.wire.frame import Frame


class ClientLink(LoopSideLink):
    """A link whose peer is the client core on the same event loop."""

    def __init__(self, on_frame: Callable[[Frame], None], name: str = "client") -> None:
        super().__init__(name)
        self._on_frame = on_frame
        self._lock = threading.Lock()

    async def put(self, data: bytes) -> None:
        """The client sends one frame toward the server (through the relay)."""
        await self._receive(Frame(data, "c2s"))

    def finish(self) -> None:
        """The client is done: the relay sees end of input and shuts the server down."""
        if self._receiving:
            self._peer_ended("eof")

    # -- what the relay calls -------------------------------------------------------

    def send(self, frame: Frame) -> None:
        with self._lock:
            if self._send_closed or self._end is not None or self._loop is None:
                raise LinkClosed(f"{self.name}: closed")
            loop = self._loop
        try:
            loop.call_soon_threadsafe(self._on_frame, frame)
        except RuntimeError as exc:  # the loop is closed: the process is ending
            raise LinkClosed(f"{self.name}: closed") from exc

    def close_send(self) -> None:
        with self._lock:
            self._send_closed = True
