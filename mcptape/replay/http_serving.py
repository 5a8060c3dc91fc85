"""`serve --listen`: a recording's server side over streamable HTTP and legacy SSE, a fresh tape per session.

The HTTP is the gateway's (:mod:`mcptape.gateway.app`): its Host, Origin and token
checks, its streamable HTTP sessions (SSE streams, ``Last-Event-ID``, DELETE, idle
timeout) and its legacy SSE endpoint. :class:`TapeGateway` only puts a
:class:`~mcptape.replay.mock.TapeServer` where the gateway puts an upstream, so each
client session is answered from the start of the recording, and records each session
as mode ``serve`` whose ``replay_of`` is the recording. The recording is served at
``/servers/NAME/mcp`` and ``/servers/NAME/sse`` with NAME ``tape``.
"""

from __future__ import annotations

import asyncio
import signal
import time
from concurrent.futures import Executor
from typing import Final

from aiohttp import web

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import Gateway, GatewayConfig, GatewaySession, UpstreamUnavailable
from mcptape.gateway.listener import serve_gateway
from mcptape.gateway.store import GatewayStore
from mcptape.proxy.addonmanager import AddonManager, SessionContext
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.http.downstream import DownstreamLink
from mcptape.proxy.links.process import SpawnError
from mcptape.proxy.relay import Relay
from mcptape.replay.mock import TapeServer
from mcptape.replay.serving import ServePlan, forward_problem, open_fallback, strict_failures
from mcptape.terminal import say as _say

NAME: Final = "tape"
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ServeStore(GatewayStore):
    """The gateway's one store and writer, with rows of mode ``serve``; nothing opened with recording off."""

    def __init__(self, db: str | None, record: bool, replay_of: str | None, description: str) -> None:
        super().__init__(db)
        self.record = record
        self.replay_of = replay_of
        self.description = description

    def open_in_background(self) -> None:
        if self.record:
            super().open_in_background()
        else:
            self._opened.set()

    def attach_serve(self, pool: Executor, recorder: Recorder, transport: str) -> None:
        """Create the session's row off the loop, then attach its recorder to the writer."""
        pool.submit(self._attach_serve, recorder, transport, time.time())

    def _attach_serve(self, recorder: Recorder, transport: str, started: float) -> None:
        self._opened.wait()
        if self.store is None or self.writer is None:
            recorder.abandon(self.error or "the recording database is not open")
            return
        try:
            session_id = self.store.create_session(
                mode="serve", transport=transport, upstream=self.description, replay_of=self.replay_of
            )
            self.writer.update_session(session_id, started_at=started)
        except Exception as exc:
            recorder.abandon(f"cannot create the session row: {exc}")
            return
        recorder.attach(self.writer, session_id)


class TapeGateway(Gateway):
    """The gateway app with the recording as its one upstream, ``tape``."""

    def __init__(self, config: GatewayConfig, plan: ServePlan) -> None:
        super().__init__(config)
        self.plan = plan
        self.description = f"tape {plan.tape.source}"
        self.store = ServeStore(config.db, plan.record, plan.tape.session_id, self.description)
        self.tapes: list[TapeServer] = []

    def _passed(self, request: web.Request) -> UpstreamSpec | None:
        return None  # the tape is always played here, never passed through

    async def open_session(self, request: web.Request, link: DownstreamLink, kind: str) -> GatewaySession:
        try:
            fallback = open_fallback(self.plan)
        except SpawnError as exc:
            raise UpstreamUnavailable(f"the server for --on-miss forward cannot be started: {exc}") from exc
        tape = TapeServer(
            self.plan.tape, normaliser=self.plan.normaliser, fallback=fallback, pace=self.plan.pace
        )
        self.tapes.append(tape)
        transport = f"{kind}->tape"
        recorder = Recorder()
        context = SessionContext(None, "serve", transport, self.description, None)
        addons = AddonManager([recorder] if self.plan.record else [])
        relay = Relay(link, tape, addons, context, grace=self.config.grace)
        session = GatewaySession(link, relay, NAME, recorder)
        self.sessions[link.session_id] = session
        if self.plan.record:
            assert isinstance(self.store, ServeStore)
            self.store.attach_serve(self._pool, recorder, transport)
        session.task = asyncio.get_running_loop().create_task(relay.run())
        session.task.add_done_callback(lambda _: self._forget(link.session_id))
        return session


def tape_config(host: str, port: int, token: str | None, db: str | None, grace: float) -> GatewayConfig:
    """The gateway settings of `serve --listen`: one registry entry, the tape."""
    spec = UpstreamSpec(NAME, "stdio", command=["mcptape-tape"])
    return GatewayConfig(registry={NAME: spec}, host=host, port=port, token=token, db=db, grace=grace)


async def run_serve_http(plan: ServePlan, config: GatewayConfig, announce_token: str | None) -> int:
    """Serve the tape over HTTP until SIGINT/SIGTERM; the exit status (see ``serve --strict``)."""
    problem = forward_problem(plan)
    if problem is not None:
        _say(f"error: {problem}")
        return 2
    gateway = TapeGateway(config, plan)

    def describe(base: str) -> list[str]:
        tape = f"{base}/servers/{NAME}"
        return [f"serving {plan.tape.source} at {tape}/mcp (streamable HTTP) and {tape}/sse (legacy SSE)"]

    if await serve_gateway(gateway, config, announce_token, describe) is None:
        return 2
    return strict_failures(plan, gateway.tapes)
