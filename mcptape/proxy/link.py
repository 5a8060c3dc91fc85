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
import re
import signal
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

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
    (a transport error, see ``detail``), ``"unreachable"`` (a remote peer that could not be
    reached at all: the session never started, see ``detail``) or ``"stopped"`` (we ended it).
    ``stopped_by_us`` says whether mcptape had to signal or cut the peer.
    """

    reason: str
    exit_code: int | None = None
    detail: str | None = None
    stderr_tail: tuple[str, ...] = ()
    stopped_by_us: bool = False

    def stderr_words(self) -> str:
        """``; its last stderr line: …``, or ``; its stderr says: Error: …`` when the line that
        says why comes before the last (a stack trace, Node's version footer); empty without stderr."""
        line = telling_line(self.stderr_tail)
        if line is None:
            return ""
        if line == self.stderr_tail[-1].strip():
            return f"; its last stderr line: {line}"
        return f"; its stderr says: {line}"


def describe_status(returncode: int | None) -> str:
    """Words for a process's exit status as Python reports it (negative: killed by a signal)."""
    if returncode is None:
        return "ended"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit status {returncode}"


def status_sentence(returncode: int | None) -> str:
    """A sentence fragment for how a server ended: 'exited with status 3', 'was killed by SIGKILL'."""
    if returncode is None:
        return "closed its output"
    if returncode < 0:
        return f"was {describe_status(returncode)}"
    return f"exited with status {returncode}"


# Lines of a crash report that say nothing of why: Node's version footer and its hint about
# --trace-uncaught, and the frames of a JavaScript stack.
_NOT_TELLING: Final = re.compile(r"Node\.js v\d|\(Use `node --trace")
_STACK_FRAME: Final = re.compile(r"\s+at\s")


def telling_line(tail: Sequence[str]) -> str | None:
    """The stderr line that says why a server ended: the error above the last stack trace
    (``Error: ENOENT …`` rather than Node's ``Node.js v20.11.1`` footer under it), else the
    last line that is not a footer; None when there is none."""
    lines = [line for line in tail if line.strip() and not _NOT_TELLING.match(line.strip())]
    if not lines:
        return None
    frames = [i for i, line in enumerate(lines) if _STACK_FRAME.match(line)]
    if frames:
        start = frames[-1]
        while start > 0 and _STACK_FRAME.match(lines[start - 1]):
            start -= 1
        if start > 0:
            return lines[start - 1].strip()
    return lines[-1].strip()


def shell_status(returncode: int) -> int:
    """The status a shell would report: 128 + signal number for a killed process."""
    return 128 - returncode if returncode < 0 else returncode


@runtime_checkable
class Link(Protocol):
    """A channel of frames to and from one peer; see the module docstring for the contract.

    The last four methods are optional abilities: :class:`LinkBase` gives each a
    default (nothing, but for ``cut``), and the relay calls them on every link.
    """

    name: str

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None: ...

    def send(self, frame: Frame) -> Awaitable[Any] | None: ...

    def close_send(self) -> None: ...

    def stop_receiving(self) -> None: ...

    async def aclose(self, grace: float) -> LinkEnd: ...

    def prepare(self, frame: Frame) -> dict[str, Any] | None: ...

    def hurry(self) -> None: ...

    def kill(self) -> None: ...

    def watch_transport(self, settled: Callable[[str], None]) -> None: ...

    def cut(self, frame: Frame) -> bool: ...


class LinkBase:
    """The optional abilities of a link, with their defaults; every link derives from it.

    ``prepare(frame)``
        Called by the relay on the link a frame is about to be sent to, once the addons
        have decided and before the frame is recorded: how the frame will go out, as
        transport metadata (an HTTP upstream: method, path, headers; a client-facing HTTP
        session: the SSE stream and event id), or None. A link may commit the frame here
        (a client-facing HTTP session puts it on its stream, so that the recorded event
        id is the one sent); its later :meth:`Link.send` then does nothing more.
    ``hurry()``
        mcptape itself was signalled: whoever did may not wait out the grace, so shorten
        the waits of :meth:`Link.aclose` (a process: stdin closed, then SIGTERM, sooner).
    ``kill()``
        mcptape was signalled again while it waited for its peers to end: end the peer now,
        without grace (a process: SIGKILL to its whole process group), so nothing it
        started outlives mcptape.
    ``watch_transport(settled)``
        ``settled(name)`` is called once the transport actually used is known, when the
        link chose it at run time (``auto``: streamable HTTP, or legacy SSE after a refusal).
    ``cut(frame) -> bool``
        A fault mcptape injects (:mod:`mcptape.proxy.addons.faults`): end what would carry
        ``frame`` to the peer, without it. By default the whole connection: the peer sees
        end of input (:meth:`Link.close_send`), and True says the link is cut off. A link
        with several streams (streamable HTTP) ends only the one the frame would go on and
        returns False. Any thread.
    """

    name: str = "link"

    def prepare(self, frame: Frame) -> dict[str, Any] | None:
        return None

    def hurry(self) -> None:
        return None

    def kill(self) -> None:
        return None

    def watch_transport(self, settled: Callable[[str], None]) -> None:
        return None

    def cut(self, frame: Frame) -> bool:
        self.close_send()  # type: ignore[attr-defined]
        return True

    @classmethod
    def prepares(cls) -> bool:
        """Whether this kind of link says how it sends frames (the relay skips the call if not)."""
        return cls.prepare is not LinkBase.prepare


class LoopSideLink(LinkBase):
    """A link whose peer lives on the event loop: frames come in from coroutines, and the
    start/stop/close bookkeeping every such link needs (an in-memory peer, the in-process
    client, a client-facing HTTP session)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._deliver: Deliver | None = None
        self._ended_cb: Ended | None = None
        self._event: EventSink | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._receiving = False
        self._send_closed = False
        self._has_ended = False
        self._end: LinkEnd | None = None

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._deliver, self._ended_cb, self._event = deliver, ended, event
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._receiving = True

    @property
    def started(self) -> bool:
        """Whether the relay has started this link (a frame may be delivered)."""
        return self._deliver is not None

    @property
    def taking(self) -> bool:
        """Whether a frame from the peer is still delivered (started, and the session not ending)."""
        return self._receiving and self._deliver is not None

    async def _receive(self, frame: Frame) -> None:
        """Deliver a frame from the peer to the relay, waiting while it asks (back-pressure)."""
        if not self._receiving or self._deliver is None:
            raise LinkClosed(f"{self.name}: the session is over")
        pending = self._deliver(frame)
        if pending is not None:
            await pending

    def _peer_ended(self, why: str = "eof") -> None:
        """The peer is gone: the relay hears it once."""
        self._receiving = False
        if not self._has_ended and self._ended_cb is not None:
            self._has_ended = True
            self._ended_cb(why)

    def emit(self, kind: str, text: str | None, data: object = None) -> None:
        """Report something that is not a frame (recorded as an event of the session)."""
        if self._event is not None:
            self._event(kind, text, data)

    def close_send(self) -> None:
        self._send_closed = True

    def stop_receiving(self) -> None:
        self._receiving = False

    def _ending(self) -> LinkEnd:
        """How :meth:`aclose` reports this link's end."""
        return LinkEnd("closed")

    async def aclose(self, grace: float) -> LinkEnd:
        if self._end is None:
            self.close_send()
            if self._receiving:
                self._peer_ended("stopped")
            self.stop_receiving()
            self._end = self._ending()
        return self._end


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
