"""Links: bidirectional channels of frames, the one interface every transport and mode implements.

A link connects the relay to one peer: the client (downstream) or the server
(upstream). stdio pipes, a spawned process, an HTTP or SSE session, a tape player and
an in-process client are all links. The contract, small on purpose (httpx's transport
is the model):

``start(deliver, ended, event)``
    Begin receiving. Call ``deliver(frame)`` for every frame the peer sends, in order,
    from wherever the link runs: a reader thread of its own (pipes) or the event loop
    (aiohttp handlers, a tape player). ``deliver`` returns ``None`` or an awaitable: the
    link must not deliver its next frame before that awaitable is done. On the loop,
    ``await`` it; on a thread, block on it with :func:`wait_from_thread` (that is the
    back-pressure). Call ``ended(reason)`` once when receiving stops for good
    (``"eof"``, ``"error: ..."``, ``"stopped"``). Call ``event(kind, text, data)`` for
    anything worth recording that is not a frame (stderr lines, HTTP session created).
    ``start`` is called on the event loop.

``send(frame) -> Awaitable | None``
    Deliver a frame to the peer. Safe from any thread; never blocks the event loop
    (pipe links write on a writer thread of their own, or directly when called from a
    reader thread). Returns an awaitable when the link's outgoing buffer is over its
    limit: the caller waits on it (await on the loop, :func:`wait_from_thread` on a
    thread) before sending more. Raises :class:`LinkClosed` when the peer is gone.

``close_send()``
    No more frames will be sent: the peer sees end of input (its stdin closes, the
    HTTP stream ends). Queued frames are still written. Never blocks.

``stop_receiving()``
    Deliver no more frames, even if some still arrive. Never blocks.

``async aclose(grace) -> LinkEnd``
    End the link and say how it ended. For a process: close its stdin, wait ``grace``,
    SIGTERM, wait ``grace``, SIGKILL; returns at most about ``2 * grace + 1`` seconds
    later whatever the peer does. Idempotent: a second call returns the same
    :class:`LinkEnd`. The relay needs no knowledge of processes beyond this.

A link also has a ``name`` (``"client"``, ``"server"``, ``"http:SESSION"``) for messages.

:func:`memory_pair` gives an in-memory link and a handle to play its peer, so the relay,
the addons and the recorder are tested in-process (httpx's MockTransport is the model).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mcptape.frames import Direction, Frame

Deliver = Callable[[Frame], "Awaitable[Any] | None"]
"""The relay's entry for frames a link received; see :class:`Link`."""
Ended = Callable[[str], None]
"""Called once when a link stops receiving: ``"eof"``, ``"error: ..."`` or ``"stopped"``."""
EventSink = Callable[[str, "str | None", object], None]
"""Called with (kind, text, data) for what a link notices that is not a frame."""


class LinkClosed(Exception):
    """The peer of a link is gone: a frame could not be delivered."""


@dataclass(frozen=True)
class LinkEnd:
    """How a link ended, as :meth:`Link.aclose` reports it.

    ``reason``: ``"exited"`` (a process ended; ``exit_code`` is its returncode, negative
    when killed by a signal), ``"closed"`` (the peer closed the connection), ``"error"``
    (a transport error, see ``detail``) or ``"stopped"`` (we ended it).
    ``stopped_by_us`` says whether mcptape had to signal or cut the peer.
    """

    reason: str
    exit_code: int | None = None
    detail: str | None = None
    stderr_tail: tuple[str, ...] = ()
    stopped_by_us: bool = False


@runtime_checkable
class Link(Protocol):
    """A channel of frames to and from one peer; see the module docstring for the contract."""

    name: str

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None: ...

    def send(self, frame: Frame) -> Awaitable[Any] | None: ...

    def close_send(self) -> None: ...

    def stop_receiving(self) -> None: ...

    async def aclose(self, grace: float) -> LinkEnd: ...


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


BEFORE_WAIT: list[Callable[[], None]] = []
"""Called on a thread about to block in :func:`wait_from_thread` (stdio links write frames
they hold back for it first, so that nothing sits unsent while the thread waits)."""


def wait_from_thread(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[Any]) -> Any:
    """Block the calling thread (never the loop's) until ``awaitable`` is done on ``loop``.

    If the loop is closed meanwhile (the process is ending), returns without waiting.
    """
    for hook in BEFORE_WAIT:
        hook()
    try:
        future = asyncio.run_coroutine_threadsafe(_await(awaitable), loop)
    except RuntimeError:  # the loop is closed
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        return None
    return future.result()


# -- an in-memory link pair --------------------------------------------------------


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
