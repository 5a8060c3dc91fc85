"""The relay: carries frames both ways between two links through the addons, and owns the lifecycle.

Every mode is the same three pieces (shared/DESIGN.md): a client-facing link, this
relay, a server-facing link. ``record`` joins our stdio to a spawned process; the
gateway joins an HTTP session to any upstream; ``call`` and ``replay`` join an
in-process client or a tape player to any upstream. Links are described in
:mod:`mcptape.proxy.link`; this is what the relay does with them.

Frames: :meth:`Relay.deliver` is what a link calls for each frame it received, from
its reader thread or from the event loop. The addons' hooks run on the calling thread
and the frame is forwarded from there, so a stdio frame crosses without an event-loop
turn. When a hook or the destination link asks to wait (an async addon, the recorder's
back-pressure, a full pipe), ``deliver`` returns an awaitable: a thread blocks on it,
the loop awaits it; nothing ever blocks the event loop.

mcptape's own messages: :meth:`Relay.send` sends a frame mcptape wrote (recorded with
origin ``proxy``); :meth:`Relay.request` sends a request in an id space of mcptape's own
(``"mcptape-N"``) and returns the reply, which is recorded and never forwarded
(injection retries, replay, the ``call`` client). :meth:`Relay.cut` cuts the client's
connection where a frame would have gone (an injected fault).

Lifecycle (:meth:`Relay.run`), every wait bounded:

- the server ends (its output closes): what it still writes reaches the client, every
  client request still pending gets a JSON-RPC error saying how the server ended and
  the stderr line that says why (:func:`~mcptape.proxy.link.telling_line`), and the session
  ends ``ok`` or ``error`` with its exit status;
- the client ends: with ``answer_wait``, the server first sees the end of its input and
  has that long (from its last frame) to answer the requests the client still waits
  for, as it would answer them with nobody between (``echo request | mcptape record --
  server``); then it is shut down gracefully (``Link.aclose``: stdin closed, SIGTERM,
  SIGKILL, a grace apart) and the session ends ``closed``;
- :meth:`Relay.stop` (a signal): reading from the client stops, the server is shut
  down the same way, the session ends ``interrupted``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcptape.proxy.addonmanager import AddonManager, Flow, Outcome, SessionContext
from mcptape.proxy.hooks import Event, SessionEnd, SessionStart
from mcptape.proxy.link import Link, LinkBase, LinkClosed, LinkEnd, status_sentence, wait_from_thread
from mcptape.wire.frame import Direction, Frame, classify_batch, id_key, opposite
from mcptape.wire.ids import encode_id
from mcptape.wire.jsonrpc import error_response
from mcptape.wire.protocol import CANCELLED, PROGRESS

# JSON-RPC "server error" range; the MCP SDKs use -32000 for a closed connection.
CONNECTION_CLOSED = -32000
CLIENT_LINGER_S = 1.0  # how long the client link may take to take our last frames
ANSWER_POLL_S = 0.02  # how often a client's end looks whether its last requests were answered
OWN_PREFIX = "mcptape-"

_TRACKED = frozenset(("request", "response", "error", "batch"))  # kinds _track looks at (and cancellations)
_ANSWERS = frozenset(("response", "error"))

Pending = dict[str, list[tuple[str, str, int | None]]]  # id_key -> [(id text, method, batch group)]


def _chain(first: Awaitable[Any] | None, then: Callable[[], Awaitable[Any] | None]) -> Awaitable[Any] | None:
    """Run ``then`` after ``first`` (at once if ``first`` is None); an awaitable if anything waits."""
    if first is None:
        return then()

    async def both() -> None:
        await first
        nxt = then()
        if nxt is not None:
            await nxt

    return both()


class Relay:
    """Carries frames between a client-facing and a server-facing link through addons."""

    def __init__(
        self,
        client: Link,
        server: Link,
        addons: AddonManager,
        session: SessionContext,
        *,
        grace: float = 2.0,
        answer_wait: float = 0.0,
    ) -> None:
        self.client = client
        self.server = server
        self.addons = addons
        self.session = session
        self.grace = grace
        self.answer_wait = answer_wait
        # After the client's end (answer_wait): when the server last answered or reported
        # progress, time.monotonic(); log lines and other chatter do not count.
        self._draining = False
        self._heard = 0.0
        self._cut = False  # the client's connection was cut (a fault): it reads nothing more
        self.stop_reason: str | None = None
        self.server_end: LinkEnd | None = None
        self._pending: Pending = {}  # client requests forwarded and not yet answered
        self._batch_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._own: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[Frame]]] = {}
        self._own_ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._ended: dict[Direction, asyncio.Future[str]] = {}
        self._stop: asyncio.Event | None = None
        addons.on_error = lambda message: self.emit("error", message)
        # A link that says how it sends a frame (an HTTP upstream: method, path, headers; a
        # client-facing HTTP session: its stream and event id) is asked once the addons
        # have decided, before the frame is recorded (see LinkBase.prepare).
        self._prepares = {"c2s": _declares_prepare(server), "s2c": _declares_prepare(client)}
        self._prepare_step: Callable[[Flow], None] | None = (
            self._prepare if any(self._prepares.values()) else None
        )

    # -- events -----------------------------------------------------------------

    def emit(self, kind: str, text: str | None = None, data: object = None) -> None:
        """Report something that is not a frame (stderr line, exit, error) to the addons. Any thread."""
        self.addons.call_sync(Event(self.session, kind, text, data))

    def stop(self, reason: str) -> None:
        """Ask the relay to end the session (a signal arrived). Call on the loop; idempotent."""
        if self._stop is not None and not self._stop.is_set():
            self.stop_reason = reason
            self.emit("signal", reason)
            self._stop.set()
            # Whoever signalled us may not wait out the grace (see LinkBase.hurry).
            self.server.hurry()

    # -- frames -------------------------------------------------------------------

    def deliver(self, frame: Frame) -> Awaitable[Any] | None:
        """Take a frame a link received (any thread); None, or an awaitable to wait on first."""
        if self._draining and frame.direction == "s2c" and _is_progress(frame):
            self._heard = time.monotonic()
        if self._own and frame.kind in ("response", "error"):
            own = self._own.pop(f"{frame.direction}:{frame.rpc_id}", None)
            if own is not None:
                return self._own_reply(frame, *own)
        flow = Flow(frame)
        pending = self.addons.run_frame(flow, prepare=self._prepare_step)
        if pending is None:
            return self._forward(flow)
        loop = self._loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            # A reader thread waits here (back-pressure) and forwards the frame itself: the
            # frame does not hop to the loop and to a writer thread on its way.
            wait_from_thread(loop, pending)
            return self._forward(flow)
        return _chain(pending, lambda: self._forward(flow))

    def _prepare(self, flow: Flow) -> None:
        """The destination link says how the outgoing frame goes out: put on it before it is recorded."""
        out = flow.outgoing
        if out is None or not self._prepares[out.direction]:
            return
        old = out.meta or {}
        if old.get("forwarded") is False:
            return  # mcptape's own replies are never forwarded
        dst = self.server if out.direction == "c2s" else self.client
        try:
            meta = dst.prepare(out)
        except Exception:  # metadata must never stop a frame
            return
        if meta:
            # A frame that came over HTTP keeps its own request's metadata; the other side's goes beside it.
            side = "upstream" if out.direction == "c2s" else "downstream"
            out.meta = {**old, side: meta} if "stream" in old else {**old, **meta}

    def _forward(self, flow: Flow) -> Awaitable[Any] | None:
        frame = flow.frame
        waits = self._send_replies(flow.replies) if flow.replies else None
        out = flow.outgoing
        pending = None
        if out is not None:
            # A client request is pending before the server can answer it; what the server
            # sends is looked at once it is on its way (off the answer's path: a server
            # frame need not even be parsed before it is written).
            to_server = out.direction == "c2s"
            if to_server:
                self._track_sent(out)
            try:
                pending = (self.server if frame.direction == "c2s" else self.client).send(out)
            except LinkClosed:
                self._end(frame.direction, "peer-closed")
            if not to_server:
                self._track_sent(out)
        if not waits:
            return pending
        if pending is not None:
            waits.append(pending)
        return waits[0] if len(waits) == 1 else _gather(waits)

    def _send_replies(self, replies: list[Frame]) -> list[Awaitable[Any]]:
        """Send (and record) what addons answered a frame with; what to wait for."""
        waits = []
        for reply in replies:
            with contextlib.suppress(LinkClosed):
                pending = self._send_recorded(reply)
                if pending is not None:
                    waits.append(pending)
        return waits

    def _send_recorded(self, frame: Frame) -> Awaitable[Any] | None:
        """Record a frame mcptape wrote, then send it toward its direction's peer."""
        flow = Flow(frame, injected=True)
        dst = self.server if frame.direction == "c2s" else self.client
        return _chain(
            self.addons.run_frame(flow, decide=False, prepare=self._prepare_step), lambda: dst.send(frame)
        )

    def _track_sent(self, frame: Frame) -> None:
        """Track a frame being forwarded when it can start or end a request (or cancel one)."""
        found = frame.classification
        kind = found.kind
        if kind in _TRACKED or (
            kind == "notification" and found.method == CANCELLED and frame.direction == "c2s"
        ):
            self._track(frame)

    def _track(self, frame: Frame) -> None:
        """Keep the client requests the server has not answered yet (ids as peers compare them)."""
        found = frame.classification
        kind, rpc_id = found.kind, found.rpc_id
        with self._lock:
            if frame.direction == "c2s":
                if kind == "request":
                    if rpc_id is not None:
                        self._pending.setdefault(id_key(rpc_id), []).append(
                            (rpc_id, found.method or "", None)
                        )
                elif kind == "notification":
                    self._cancelled(frame)
                elif kind == "batch":
                    group = next(self._batch_ids)
                    for c in classify_batch(frame.data):
                        if c.kind == "request" and c.rpc_id is not None:
                            self._pending.setdefault(id_key(c.rpc_id), []).append(
                                (c.rpc_id, c.method or "", group)
                            )
            elif kind in _ANSWERS:
                if rpc_id is not None:
                    self._answered(rpc_id)
            elif kind == "batch":
                for c in classify_batch(frame.data):
                    if c.kind in _ANSWERS and c.rpc_id is not None:
                        self._answered(c.rpc_id)

    def _cancelled(self, frame: Frame) -> None:
        """Under _lock: a request the client cancelled is answered by nobody (the server SHOULD NOT)."""
        message = frame.message
        params = message.get("params") if isinstance(message, dict) else None
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
            self._answered(encode_id(request_id))

    def _answered(self, rpc_id: str) -> None:
        key = id_key(rpc_id)
        waiting = self._pending.get(key)
        if waiting:
            waiting.pop(0)
            if not waiting:
                del self._pending[key]

    # -- mcptape's own messages -------------------------------------------------------

    async def send(self, frame: Frame) -> None:
        """Send a frame mcptape wrote toward its direction's peer, recording it (origin proxy).

        It counts as forwarded: an answer mcptape gives in the server's place settles the
        client's request, and a client request mcptape sends late (a delayed frame) is
        answered with an error if the server ends without answering it.
        """
        await self._send_own(frame, track=True)

    async def _send_own(self, frame: Frame, *, track: bool) -> None:
        frame.origin = "proxy"
        if track:
            self._track(frame)
        pending = self._send_recorded(frame)
        if pending is not None:
            await pending

    def cut(self, frame: Frame) -> None:
        """Cut the client's connection where ``frame`` (not sent) would have gone: a fault mcptape injects.

        The client-facing link ends what would carry the frame (:meth:`LinkBase.cut`);
        when that is the whole connection (stdio), the session ends as if the client had
        left, without waiting for answers it can no longer read. Any thread.
        """
        try:
            whole = self.client.cut(frame)
        except Exception:  # a link that cannot cut is cut off altogether
            self.client.close_send()
            whole = True
        if whole:
            self._cut = True
            self._end("c2s", "cut")

    async def request(
        self,
        direction: Direction,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
    ) -> Frame:
        """Send a request of mcptape's own (``c2s``: to the server) and return the reply frame.

        The id is ``"mcptape-N"``; the reply is recorded and not forwarded. Raises
        TimeoutError after ``timeout`` and LinkClosed if the peer is gone.
        """
        loop = asyncio.get_running_loop()
        rid = f"{OWN_PREFIX}{next(self._own_ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        future: asyncio.Future[Frame] = loop.create_future()
        key = f"{opposite(direction)}:{orjson.dumps(rid).decode()}"
        self._own[key] = (loop, future)
        try:
            # Not tracked: the reply is intercepted (deliver) and never settles a peer's request.
            await self._send_own(Frame(orjson.dumps(message), direction, origin="proxy"), track=False)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._own.pop(key, None)

    def _own_reply(
        self, frame: Frame, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Frame]
    ) -> Awaitable[Any] | None:
        """A reply to :meth:`request`: recorded, handed to the caller, never forwarded.

        Recorded first: what the caller sends next then follows the reply in the recording.
        """
        frame.meta = {**(frame.meta or {}), "forwarded": False}

        def settle() -> None:
            if not future.done():
                future.set_result(frame)

        def settle_soon() -> None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle)

        return _chain(self.addons.run_frame(Flow(frame), decide=False), settle_soon)

    # -- lifecycle (on the event loop) -----------------------------------------------

    def _end(self, direction: Direction, why: str) -> None:
        """A side stopped (any thread): the first reason given wins."""
        loop = self._loop
        future = self._ended.get(direction)
        if loop is None or future is None:
            return

        def settle() -> None:
            if not future.done():
                future.set_result(why)

        with contextlib.suppress(RuntimeError):  # the loop is closed: the session is over anyway
            loop.call_soon_threadsafe(settle)

    async def run(self) -> Outcome:
        """Relay until one side ends or a stop is requested; returns how the session ended."""
        loop = self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._stop = asyncio.Event()
        await self.addons.call(SessionStart(self.session))
        c2s = self._ended["c2s"] = loop.create_future()
        s2c = self._ended["s2c"] = loop.create_future()
        self.server.start(self.deliver, lambda why: self._end("s2c", why), self.emit)
        self.client.start(self.deliver, lambda why: self._end("c2s", why), self.emit)
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            done, _ = await asyncio.wait({c2s, s2c, stop}, return_when=asyncio.FIRST_COMPLETED)
            # A stop request wins even when a side closed in the same moment (a Ctrl-C
            # often closes the client's stdin and kills the server as well).
            if self._stop.is_set():
                outcome = await self._interrupted()
            elif s2c in done and s2c.result() != "peer-closed":
                outcome = await self._upstream_ended()
            elif c2s in done and c2s.result() == "peer-closed":
                # The server stopped reading its stdin: it is going away; see how it ends.
                await _settle(s2c, self.grace)
                outcome = await self._upstream_ended()
            else:
                # The client closed its side (EOF on our stdin, or our stdout is gone).
                outcome = await self._client_ended()
        finally:
            stop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stop
        if self._stop.is_set() and outcome.ended_by not in ("signal", "client"):
            # The signal came while the session was ending anyway (the server's side
            # closed): it was stopped all the same. After the client closed its input, a
            # signal is how that client goes on shutting down (the SDKs send SIGTERM 2 s
            # later when the server has not exited): the client ended the session, and
            # the signal is an event of it.
            outcome = Outcome(
                "interrupted",
                outcome.exit_code,
                f"stopped by {self.stop_reason}",
                "signal",
                outcome.stopped_by_us,
            )
        await self._close_client()
        await self.addons.call(SessionEnd(self.session, outcome))
        return outcome

    async def _close_server(self) -> LinkEnd:
        end = self.server_end = await self.server.aclose(self.grace)
        self.emit(
            "process_exit" if end.reason == "exited" else "upstream_closed",
            end.detail or end.reason,
            {"returncode": end.exit_code, "stderr_tail": list(end.stderr_tail), "stopped": end.stopped_by_us},
        )
        return end

    async def _close_client(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.aclose(CLIENT_LINGER_S), CLIENT_LINGER_S + 1)

    async def _upstream_ended(self) -> Outcome:
        self.client.stop_receiving()
        end = await self._close_server()
        await self._fail_pending(end)
        code = end.exit_code
        if code == 0 or (code is None and end.reason == "closed"):
            return Outcome("ok", code, None, stopped_by_us=end.stopped_by_us)
        error = f"the server {status_sentence(code)}{end.stderr_words()}"
        return Outcome("error", code, error, stopped_by_us=end.stopped_by_us)

    async def _client_ended(self) -> Outcome:
        self.emit("client_closed", "the client closed the connection")
        gave_up = await self._await_answers()
        end = await self._close_server()
        if gave_up:
            # The client may still be reading (a pipeline): say what became of its requests.
            how = "was stopped after the client closed its input" if end.stopped_by_us else None
            await self._fail_pending(end, how)
        return Outcome("closed", end.exit_code, None, ended_by="client", stopped_by_us=end.stopped_by_us)

    async def _await_answers(self) -> bool:
        """After the client's end, let the server answer what the client still waits for.

        The server sees the end of its input at once, as it would directly; the wait
        ends when nothing is pending, the server ends, a stop is asked for, or the server
        has been silent for ``answer_wait`` seconds: neither answered nor reported progress
        (a server flooding log messages while it never answers does not keep us).
        True when it gave up on requests still pending (silence or a stop); a server that
        ends on its own without answering leaves the client no answer, as it would directly.
        """
        if self.answer_wait <= 0 or not self._pending or self._cut:
            return False
        assert self._stop is not None
        self.server.close_send()
        s2c = self._ended["s2c"]
        self._heard = time.monotonic()
        self._draining = True
        while self._pending and not s2c.done() and not self._stop.is_set():
            quiet = time.monotonic() - self._heard
            if quiet >= self.answer_wait:
                count = sum(len(waiting) for waiting in self._pending.values())
                self.emit(
                    "unanswered",
                    f"the client closed with {count} request(s) unanswered; "
                    f"the server was silent for {self.answer_wait:g} s",
                )
                return True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(s2c), min(ANSWER_POLL_S, self.answer_wait - quiet))
        return self._stop.is_set() and bool(self._pending)

    async def _interrupted(self) -> Outcome:
        self.client.stop_receiving()
        end = await self._close_server()
        await self._fail_pending(end)
        return Outcome(
            "interrupted",
            end.exit_code,
            f"stopped by {self.stop_reason}",
            ended_by="signal",
            stopped_by_us=True,
        )

    async def _fail_pending(self, end: LinkEnd, how: str | None = None) -> None:
        """Answer every client request the server left unanswered, in a form the client can match.

        ``how``: what became of the server, when the way it ended does not say it.
        """
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        tail = list(end.stderr_tail)
        if how is None and end.reason == "unreachable" and end.detail:
            how = f"could not be reached ({end.detail.removeprefix('cannot reach the MCP server at ')})"
        if how is None:
            how = status_sentence(end.exit_code) if end.reason == "exited" else "closed the connection"
        if self.stop_reason:
            how = f"was stopped ({self.stop_reason})"
        last = end.stderr_words()
        data = {"exitCode": end.exit_code, "stderr": tail[-5:]}
        singles: list[bytes] = []
        batches: dict[int, list[bytes]] = {}
        for entries in pending.values():
            for rpc_id, method, group in entries:
                message = f"mcptape: the MCP server {how} before answering {method or 'this request'}{last}"
                answer = error_response(rpc_id, CONNECTION_CLOSED, message, data)
                if group is None:
                    singles.append(answer)
                else:
                    batches.setdefault(group, []).append(answer)
        answers = singles + [b"[" + b",".join(items) + b"]" for items in batches.values()]
        for answer in answers:
            frame = Frame(answer, "s2c", "proxy")
            # Recorded first (the recorder's own waits are bounded), then sent; only the
            # client's reading is given a time limit, so a slow store never costs an answer.
            recorded = self.addons.run_frame(
                Flow(frame, injected=True), decide=False, prepare=self._prepare_step
            )
            if recorded is not None:
                await recorded
            try:
                waiting = self.client.send(frame)
                if waiting is not None:
                    await asyncio.wait_for(waiting, CLIENT_LINGER_S)
            except (LinkClosed, TimeoutError):
                break


def _is_progress(frame: Frame) -> bool:
    """Whether a server frame shows it is working on what the client asked (an answer, progress)."""
    kind = frame.kind
    if kind == "notification":
        return frame.method == PROGRESS
    return kind in ("response", "error", "batch")


async def _gather(waits: list[Awaitable[Any]]) -> None:
    for wait in waits:
        await wait


async def _settle(side: asyncio.Future[str], timeout: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(side), timeout)


def _declares_prepare(link: Link) -> bool:
    """Whether a link says how it sends frames (overrides :meth:`LinkBase.prepare`)."""
    return type(link).prepare is not LinkBase.prepare
