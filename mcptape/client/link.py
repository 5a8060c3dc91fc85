"""The client's side of the relay: a loop-side link whose peer is the in-process client.

The relay sees :class:`ClientLink` as any client-facing link (``MemoryLink`` in
:mod:`mcptape.proxy.link` is the model): frames the client writes are delivered
from the event loop with :meth:`ClientLink.put`, and what the relay sends to the
client (replies, notifications, server requests) is handed to ``on_frame`` on the
loop, whatever thread the relay sent it from.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from mcptape.proxy.link import Deliver, Ended, EventSink, LinkClosed, LinkEnd
from mcptape.wire.frame import Frame


class ClientLink:
    """A link whose peer is the client core on the same event loop."""

    def __init__(self, on_frame: Callable[[Frame], None], name: str = "client") -> None:
        self.name = name
        self._on_frame = on_frame
        self._deliver: Deliver | None = None
        self._ended: Ended | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._receiving = False
        self._send_closed = False
        self._end: LinkEnd | None = None

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._deliver, self._ended = deliver, ended
        self._loop = asyncio.get_running_loop()
        self._receiving = True

    @property
    def started(self) -> bool:
        return self._deliver is not None

    async def put(self, data: bytes) -> None:
        """The client sends one frame toward the server (through the relay)."""
        if not self._receiving or self._deliver is None:
            raise LinkClosed(f"{self.name}: the session is over")
        pending = self._deliver(Frame(data, "c2s"))
        if pending is not None:
            await pending

    def finish(self) -> None:
        """The client is done: the relay sees end of input and shuts the server down."""
        if self._receiving:
            self._receiving = False
            if self._ended is not None:
                self._ended("eof")

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

    def stop_receiving(self) -> None:
        self._receiving = False

    async def aclose(self, grace: float) -> LinkEnd:
        if self._end is None:
            self.close_send()
            was_receiving = self._receiving
            self.stop_receiving()
            if was_receiving and self._ended is not None:
                self._ended("stopped")
            self._end = LinkEnd("closed")
        return self._end
