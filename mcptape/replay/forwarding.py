"""`serve --on-miss forward`: the real server behind the tape, asked what the recording does not hold.

:class:`Forwarder` owns the link to that server (a spawned command, or a remote one over
HTTP) for one served session. The tape hands it the requests it has no answer for, the
client's ``initialize`` (sent under an id of mcptape's own, so the server is initialised
while the client keeps the recorded answer), the client's notifications and its answers
to the server's own requests. What the server sends goes to the client as it is.

A client is never left waiting on a server that is gone: when the server ends, each
forwarded request it left unanswered, and each miss after that, gets a JSON-RPC error
saying how it ended (``exited with status 3``, ``failed (cannot reach ...)``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final

import orjson

from mcptape.proxy.link import EventSink, Link, LinkClosed, LinkEnd, status_sentence
from mcptape.replay.tape import id_key
from mcptape.wire.frame import Frame

GONE: Final = -32000  # the server ended (the SDKs' code for a closed connection)
INIT_ID: Final = "mcptape-serve-init"
_INIT_ID_TEXT: Final = orjson.dumps(INIT_ID).decode()

Out = Callable[[dict[str, Any]], Coroutine[Any, Any, None]]
"""Sends a message to the client, in turn with the tape's own answers."""
ToClient = Callable[[Frame], "Awaitable[Any] | None"]
"""Delivers a frame of the server's to the client as it is (None once the session is closed)."""
Spawn = Callable[[Coroutine[Any, Any, None]], None]
"""Runs a coroutine as one of the tape's tasks (cancelled when it closes)."""


class Forwarder:
    """The real server for one served session; see the module docstring."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.forwarded = 0
        self._calls: set[str] = set()  # ids of the server's requests to the client
        self._waiting: dict[str, dict[str, Any]] = {}  # forwarded requests not answered yet
        self._end: LinkEnd | None = None  # how the server ended, once it has
        self._out: Out | None = None
        self._spawn: Spawn | None = None
        self._to_client: ToClient | None = None

    def start(self, out: Out, to_client: ToClient, spawn: Spawn, event: EventSink) -> None:
        """Start the link (on the loop): the server's frames go to ``to_client``."""
        loop = asyncio.get_running_loop()
        self._out, self._to_client, self._spawn = out, to_client, spawn

        def ended(why: str) -> None:  # any thread
            event("upstream_closed", why, None)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(lambda: spawn(self._ended()))

        self.link.start(self._received, ended, event)

    async def aclose(self, grace: float) -> LinkEnd:
        """Stop the server (its stdin closed, then signals; or the HTTP session ended)."""
        return await self.link.aclose(grace)

    # -- from the client ------------------------------------------------------------

    def request(self, request: dict[str, Any]) -> None:
        """A request the tape has no answer for: to the server, remembered until it answers or ends."""
        self.forwarded += 1
        if self._end is not None:
            assert self._spawn is not None and self._out is not None
            self._spawn(self._out(gone(request, self._end)))
            return
        self._waiting[id_key(request.get("id"))] = request
        self._send(request)

    def initialize(self, request: dict[str, Any]) -> None:
        """The client's ``initialize`` (answered from the tape): the server gets it under our own id."""
        self._send({**request, "id": INIT_ID})

    def notification(self, message: dict[str, Any]) -> None:
        self._send(message)

    def answer(self, message: dict[str, Any]) -> bool:
        """The client's answer to a request of the server's: passed on; False when it is not one."""
        key = id_key(message.get("id"))
        if key not in self._calls:
            return False
        self._calls.discard(key)
        self._send(message)
        return True

    def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(LinkClosed):
            pending = self.link.send(Frame(orjson.dumps(message), "c2s"))
            if pending is not None and self._spawn is not None:
                self._spawn(_await(pending))

    # -- from the server ------------------------------------------------------------

    def _received(self, frame: Frame) -> Awaitable[Any] | None:
        if frame.rpc_id == _INIT_ID_TEXT and frame.kind in ("response", "error"):
            return None  # the server's answer to our initialize: the client has the recorded one
        if frame.kind == "request" and frame.rpc_id is not None:
            self._calls.add(id_key(orjson.loads(frame.rpc_id)))
        elif frame.kind in ("response", "error") and frame.rpc_id is not None:
            self._waiting.pop(id_key(orjson.loads(frame.rpc_id)), None)
        if self._to_client is None:
            return None
        return self._to_client(Frame(frame.data, "s2c"))

    async def _ended(self) -> None:
        """The server stopped answering: what it left unanswered gets an error saying how it ended."""
        end = await self.link.aclose(0.5)
        self._end = end
        left, self._waiting = self._waiting, {}
        assert self._out is not None
        for request in list(left.values()):  # a late answer may still pop from it on a reader thread
            await self._out(gone(request, end))


def gone(request: dict[str, Any], end: LinkEnd) -> dict[str, Any]:
    """The JSON-RPC error for ``request`` when the server has ended as ``end`` says."""
    if end.reason == "unreachable" and end.detail:  # never reached: its own words, for each miss
        text = f"mcptape serve: --on-miss forward: {end.detail}"
        return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": GONE, "message": text}}
    if end.reason == "exited":
        how = status_sentence(end.exit_code)
    elif end.reason == "error" and end.detail:
        how = f"failed ({end.detail.removeprefix('mcptape: ')})"
    else:
        how = "closed the connection"
    last = end.stderr_words()
    method = request.get("method")
    what = method if isinstance(method, str) else "this request"
    text = f"mcptape serve: the server for --on-miss forward {how} before answering {what}{last}"
    return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": GONE, "message": text}}


async def _await(pending: Awaitable[Any]) -> None:
    await pending
