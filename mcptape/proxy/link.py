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

:func:`mcptape.proxy.links.memory.memory_pair` gives an in-memory link and a handle to
play its peer, so the relay, the addons and the recorder are tested in-process (httpx's
MockTransport is the model).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mcptape.wire.frame import Frame

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
