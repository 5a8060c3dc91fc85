"""The relay: pumps frames both ways between two links through the addons, and owns the lifecycle.

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

from mcptape.frames import Frame, classify_message, error_response
from mcptape.proxy.addons import AddonManager, Flow, Outcome, SessionContext
from mcptape.proxy.links import Link, LinkClosed

# JSON-RPC "server error" range; the MCP SDKs use -32000 for a closed connection.
CONNECTION_CLOSED = -32000


class Upstream(Link, Protocol):
    """A server-facing link that can also be shut down and report how it ended."""

    stderr_tail: Any

    async def shutdown(self, grace: float = ...) -> int:
        """Stop the server gracefully; its returncode."""
        ...

    async def wait(self) -> int:
        """Wait for the server to end on its own; its returncode."""
        ...


def _status_words(returncode: int | None) -> str:
    from mcptape.proxy.process import describe_status

    return "ended" if returncode is None else describe_status(returncode)


class Relay:
    """Pumps frames between a client-facing and a server-facing link through addons."""

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
        self._stop = asyncio.Event()
        self.stop_reason: str | None = None
        addons.on_error = lambda message: self.emit("error", message)

    # -- events -----------------------------------------------------------------

    def emit(self, kind: str, text: str | None = None, data: object = None) -> None:
        """Report something that is not a frame (stderr line, exit, error) to the addons."""
        self.addons.call_sync("event", self.session, kind, text, data)

    def stop(self, reason: str) -> None:
        """Ask the relay to end the session (a signal arrived). Safe to call repeatedly."""
        if not self._stop.is_set():
            self.stop_reason = reason
            self.emit("signal", reason)
            self._stop.set()

    # -- frames -----------------------------------------------------------------

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

    async def inject(self, frame: Frame) -> None:
        """Send a frame mcptape wrote itself toward its direction's peer, recording it."""
        flow = Flow(frame, injected=True)
        await self.addons.frame_done(flow)
        target = self.server if frame.direction == "c2s" else self.client
        await target.send(frame)

    async def _pump(self, src: Link, dst: Link) -> str:
        decide = self.addons.has("frame")
        while True:
            frame = await src.recv()
            if frame is None:
                return "eof"
            flow = Flow(frame)
            if decide:
                await self.addons.decide(flow)
            await self.addons.frame_done(flow)
            for reply in flow.replies:
                with contextlib.suppress(LinkClosed):
                    await self.inject(reply)
            out = flow.outgoing
            if out is None:
                continue
            if out.kind in ("request", "response", "error", "batch"):
                self._track(out)
            try:
                await dst.send(out)
            except LinkClosed:
                return "peer-closed"

    # -- lifecycle --------------------------------------------------------------

    async def run(self) -> Outcome:
        """Relay until one side ends or a stop is requested; returns how the session ended."""
        await self.addons.call("session_start", self.session)
        c2s = asyncio.ensure_future(self._pump(self.client, self.server))
        s2c = asyncio.ensure_future(self._pump(self.server, self.client))
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            done, _ = await asyncio.wait({c2s, s2c, stop}, return_when=asyncio.FIRST_COMPLETED)
            if stop in done:
                outcome = await self._interrupted(c2s, s2c)
            elif s2c in done and s2c.result() == "eof":
                outcome = await self._upstream_ended(c2s)
            elif c2s in done and c2s.result() == "peer-closed":
                # The server stopped reading its stdin: it is going away; see how it ends.
                outcome = await self._upstream_ended(c2s, s2c)
            else:
                # The client closed its side (EOF on our stdin, or our stdout is gone).
                outcome = await self._client_ended(c2s, s2c)
        finally:
            for task in (c2s, s2c, stop):
                if not task.done():
                    task.cancel()
            await asyncio.gather(c2s, s2c, stop, return_exceptions=True)
        await self.addons.call("session_end", self.session, outcome)
        return outcome

    async def _finish_stderr(self) -> None:
        done = getattr(self.server, "stderr_done", None)
        if done is not None:
            await done()

    def _stderr_tail(self) -> list[str]:
        return list(getattr(self.server, "stderr_tail", []) or [])

    async def _upstream_ended(
        self, c2s: asyncio.Future[str], s2c: asyncio.Future[str] | None = None
    ) -> Outcome:
        if s2c is not None:
            # Let what the server still writes reach the client before we judge.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(s2c), self.grace)
        try:
            returncode = await asyncio.wait_for(self.server.wait(), self.grace)
        except TimeoutError:
            # Its stdout closed but it lingers: do not leave it behind.
            returncode = await self.server.shutdown(self.grace)
        c2s.cancel()
        await self._finish_stderr()
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

    async def _client_ended(self, c2s: asyncio.Future[str], s2c: asyncio.Future[str]) -> Outcome:
        self.emit("client_closed", "the client closed the connection")
        # Closing stdin first lets a well-behaved server finish and flush its last replies.
        returncode = await self.server.shutdown(self.grace)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(s2c), self.grace)
        await self._finish_stderr()
        words = _status_words(returncode)
        self.emit("process_exit", words, {"returncode": returncode, "stderr_tail": self._stderr_tail()})
        return Outcome("ok", returncode, None, ended_by="client")

    async def _interrupted(self, c2s: asyncio.Future[str], s2c: asyncio.Future[str]) -> Outcome:
        c2s.cancel()
        returncode = await self.server.shutdown(self.grace)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(s2c), self.grace)
        await self._finish_stderr()
        self.emit("process_exit", _status_words(returncode), {"returncode": returncode})
        return Outcome("interrupted", returncode, f"stopped by {self.stop_reason}", ended_by="signal")
