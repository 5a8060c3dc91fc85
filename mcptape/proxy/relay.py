"""The relay: carries frames both ways between two links through the addons, and owns the lifecycle.

Each link's reader thread pushes its frames through :meth:`Relay._deliver`, which runs
the addons' hooks and writes the frame to the other link, so a frame crosses the
relay without waiting for the event loop. The loop (:meth:`Relay.run`) owns
everything else: it notices when a side ends, shuts the other down, handles a stop
request and answers requests left pending.

Rules it keeps (shared/DESIGN.md): frames are forwarded byte for byte and in order per
direction; when the upstream dies, every client request still pending gets a JSON-RPC
error naming the exit status and the last stderr lines; when the client goes away the
upstream is shut down gracefully; on a stop request (SIGINT/SIGTERM) reading stops,
the upstream is shut down and the session is closed as interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from mcptape.frames import Direction, Frame, classify_message, error_response
from mcptape.proxy.addons import AddonManager, Flow, Outcome, SessionContext
from mcptape.proxy.links import Link, LinkClosed
from mcptape.proxy.process import describe_status

# JSON-RPC "server error" range; the MCP SDKs use -32000 for a closed connection.
CONNECTION_CLOSED = -32000
_TRACKED = frozenset({"request", "response", "error", "batch"})


class Upstream(Link, Protocol):
    """A server-facing link that can also be shut down and report how it ended."""

    stderr_tail: Any

    async def shutdown(self, grace: float = ...) -> int:
        """Stop the server gracefully; its returncode."""
        ...

    async def wait(self) -> int:
        """Wait for the server to end on its own; its returncode."""
        ...

    async def stderr_done(self, timeout: float = ...) -> None:
        """Wait until every stderr line has been reported."""
        ...


def _status_words(returncode: int | None) -> str:
    return "ended" if returncode is None else describe_status(returncode)


class Relay:
    """Carries frames between a client-facing and a server-facing link through addons."""

    def __init__(
        self,
        client: Link,
        server: Upstream,
        addons: AddonManager,
        session: SessionContext,
        *,
        grace: float = 2.0,
    ) -> None:
        self.client = client
        self.server = server
        self.addons = addons
        self.session = session
        self.grace = grace
        self.pending: dict[str, str] = {}  # c2s request id (JSON text) -> method
        self.stop_reason: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ended: dict[Direction, asyncio.Future[str]] = {}
        self._stop: asyncio.Event | None = None
        self._decide = addons.has("frame")
        addons.on_error = lambda message: self.emit("error", message)

    # -- events -----------------------------------------------------------------

    def emit(self, kind: str, text: str | None = None, data: object = None) -> None:
        """Report something that is not a frame (stderr line, exit, error) to the addons."""
        self.addons.call_sync("event", self.session, kind, text, data)

    def stop(self, reason: str) -> None:
        """Ask the relay to end the session (a signal arrived). Call on the loop; idempotent."""
        if self._stop is not None and not self._stop.is_set():
            self.stop_reason = reason
            self.emit("signal", reason)
            self._stop.set()

    # -- frames (on the links' reader threads) -------------------------------------

    def _track(self, frame: Frame) -> None:
        kind = frame.kind
        if frame.direction == "c2s":
            if kind == "request":
                self.pending[frame.rpc_id or ""] = frame.method or ""
            elif kind == "batch":
                for item in frame.message:
                    c = classify_message(item)
                    if c.kind == "request" and c.rpc_id is not None:
                        self.pending[c.rpc_id] = c.method or ""
        elif kind in ("response", "error"):
            self.pending.pop(frame.rpc_id or "", None)
        elif kind == "batch":
            for item in frame.message:
                c = classify_message(item)
                if c.kind in ("response", "error") and c.rpc_id is not None:
                    self.pending.pop(c.rpc_id, None)

    def _deliver(self, frame: Frame, more: bool, dst: Link, direction: Direction) -> bool:
        loop = self._loop
        assert loop is not None
        flow = Flow(frame)
        if self._decide:
            self.addons.decide_blocking(flow, loop)
        self.addons.frame_done_blocking(flow, loop)
        for reply in flow.replies:
            self.addons.frame_done_blocking(Flow(reply, injected=True), loop)
            with contextlib.suppress(LinkClosed):
                (self.server if reply.direction == "c2s" else self.client).send(reply)
        out = flow.outgoing
        try:
            if out is None:
                if not more:
                    dst.flush()
                return True
            if out.kind in _TRACKED:
                self._track(out)
            dst.send(out, more=more)
        except LinkClosed:
            self._end(direction, "peer-closed")
            return False
        return True

    def _end(self, direction: Direction, why: str) -> None:
        """A side stopped (from a reader thread): the first reason given wins."""
        loop = self._loop
        future = self._ended.get(direction)
        if loop is None or future is None:
            return

        def settle() -> None:
            if not future.done():
                future.set_result(why)

        with contextlib.suppress(RuntimeError):  # the loop is closed: the session is over anyway
            loop.call_soon_threadsafe(settle)

    async def inject(self, frame: Frame) -> None:
        """Send a frame mcptape wrote itself toward its direction's peer, recording it."""
        await self.addons.frame_done(Flow(frame, injected=True))
        (self.server if frame.direction == "c2s" else self.client).send(frame)

    # -- lifecycle (on the event loop) -----------------------------------------------

    async def run(self) -> Outcome:
        """Relay until one side ends or a stop is requested; returns how the session ended."""
        loop = self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        await self.addons.call("session_start", self.session)
        c2s = self._ended["c2s"] = loop.create_future()
        s2c = self._ended["s2c"] = loop.create_future()
        self.server.start(
            lambda f, more: self._deliver(f, more, self.client, "s2c"), lambda why: self._end("s2c", why)
        )
        self.client.start(
            lambda f, more: self._deliver(f, more, self.server, "c2s"), lambda why: self._end("c2s", why)
        )
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            done, _ = await asyncio.wait({c2s, s2c, stop}, return_when=asyncio.FIRST_COMPLETED)
            # A stop request wins even when a side closed in the same moment (a Ctrl-C
            # often closes the client's stdin and kills the server as well).
            if self._stop.is_set():
                outcome = await self._interrupted(s2c)
            elif s2c in done and s2c.result() != "peer-closed":
                outcome = await self._upstream_ended()
            elif c2s in done and c2s.result() == "peer-closed":
                # The server stopped reading its stdin: it is going away; see how it ends.
                outcome = await self._upstream_ended(s2c)
            else:
                # The client closed its side (EOF on our stdin, or our stdout is gone).
                outcome = await self._client_ended(s2c)
        finally:
            self.client.stop_reading()
            stop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stop
        await self.addons.call("session_end", self.session, outcome)
        return outcome

    async def _settle(self, side: asyncio.Future[str]) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(side), self.grace)

    def _stderr_tail(self) -> list[str]:
        return list(getattr(self.server, "stderr_tail", []) or [])

    async def _upstream_ended(self, s2c: asyncio.Future[str] | None = None) -> Outcome:
        if s2c is not None:
            await self._settle(s2c)  # let what the server still writes reach the client first
        self.client.stop_reading()
        try:
            returncode = await asyncio.wait_for(self.server.wait(), self.grace)
        except TimeoutError:
            # Its stdout closed but it lingers: do not leave it behind.
            returncode = await self.server.shutdown(self.grace)
        await self.server.stderr_done()
        tail = self._stderr_tail()
        words = _status_words(returncode)
        self.emit("process_exit", words, {"returncode": returncode, "stderr_tail": tail})
        await self._fail_pending(returncode, tail)
        error = None
        if returncode != 0:
            error = f"server {words}" + (": " + " | ".join(tail[-5:]) if tail else "")
        return Outcome("ok" if returncode == 0 else "error", returncode, error)

    async def _fail_pending(self, returncode: int | None, tail: list[str]) -> None:
        pending, self.pending = self.pending, {}
        words = _status_words(returncode)
        last = f"; last stderr: {tail[-1]}" if tail else ""
        for rpc_id, method in pending.items():
            message = f"mcptape: the MCP server {words} before answering {method or 'this request'}{last}"
            data = {"exitCode": returncode, "stderr": tail[-5:]}
            with contextlib.suppress(LinkClosed):
                await self.inject(
                    Frame(error_response(rpc_id, CONNECTION_CLOSED, message, data), "s2c", "proxy")
                )

    async def _client_ended(self, s2c: asyncio.Future[str]) -> Outcome:
        self.emit("client_closed", "the client closed the connection")
        # Closing stdin first lets a well-behaved server finish and flush its last replies.
        returncode = await self.server.shutdown(self.grace)
        await self._settle(s2c)
        await self.server.stderr_done()
        words = _status_words(returncode)
        self.emit("process_exit", words, {"returncode": returncode, "stderr_tail": self._stderr_tail()})
        return Outcome("ok", returncode, None, ended_by="client")

    async def _interrupted(self, s2c: asyncio.Future[str]) -> Outcome:
        self.client.stop_reading()
        returncode = await self.server.shutdown(self.grace)
        await self._settle(s2c)
        await self.server.stderr_done()
        self.emit("process_exit", _status_words(returncode), {"returncode": returncode})
        return Outcome("interrupted", returncode, f"stopped by {self.stop_reason}", ended_by="signal")
