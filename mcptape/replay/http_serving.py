"""`serve --listen`: a recording's server side over streamable HTTP and legacy SSE, a fresh tape per session.

The HTTP is the gateway's (:mod:`mcptape.gateway.app`): its Host, Origin and token
checks, its streamable HTTP sessions (SSE streams, ``Last-Event-ID``, DELETE, idle
timeout) and its legacy SSE endpoint. :class:`TapeUpstreams` only puts a
:class:`~mcptape.replay.mock.TapeServer` where the gateway puts an upstream, so each
client session is answered from the start of the recording, and records each session
as mode ``serve`` whose ``replay_of`` is the recording. The recording is served at
``/servers/NAME/mcp`` and ``/servers/NAME/sse`` with NAME ``tape``.
"""

from __future__ import annotations

from typing import Final

from mcptape.assemble import SessionPlan
from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import Gateway, GatewayConfig, UpstreamUnavailable
from mcptape.gateway.listener import serve_gateway
from mcptape.gateway.store import GatewayStore
from mcptape.proxy.link import Link
from mcptape.proxy.links.process import SpawnError
from mcptape.replay.mock import TapeServer
from mcptape.replay.serving import ServePlan, forward_problem, open_fallback, serve_plan, strict_failures
from mcptape.terminal import say as _say

NAME: Final = "tape"


class TapeUpstreams:
    """The recording as the gateway's one upstream, ``tape``: a fresh tape per client session."""

    def __init__(self, plan: ServePlan, store: GatewayStore) -> None:
        self.plan = plan
        self.store = store
        self.tapes: list[TapeServer] = []

    def serves(self, name: str) -> bool:
        return name == NAME

    def passes_through(self, name: str) -> UpstreamSpec | None:
        return None  # the tape is always played here, never passed through

    def open(self, name: str, downstream: str, forward_auth: str | None) -> tuple[Link, SessionPlan]:
        session_plan = serve_plan(self.plan, downstream, self.store)
        try:
            fallback = open_fallback(self.plan)
        except SpawnError as exc:
            raise UpstreamUnavailable(f"the server for --on-miss forward cannot be started: {exc}") from exc
        tape = TapeServer(
            self.plan.tape, normaliser=self.plan.normaliser, fallback=fallback, pace=self.plan.pace
        )
        self.tapes.append(tape)
        return tape, session_plan


def tape_config(host: str, port: int, token: str | None, db: str | None, grace: float) -> GatewayConfig:
    """The gateway settings of `serve --listen` (the tape is its one upstream; no registry)."""
    return GatewayConfig(registry={}, host=host, port=port, token=token, db=db, grace=grace)


async def run_serve_http(plan: ServePlan, config: GatewayConfig, announce_token: str | None) -> int:
    """Serve the tape over HTTP until SIGINT/SIGTERM/SIGHUP; the exit status (see ``serve --strict``)."""
    problem = forward_problem(plan)
    if problem is not None:
        _say(f"error: {problem}")
        return 2
    store = GatewayStore(config.db, record=plan.record)
    upstreams = TapeUpstreams(plan, store)
    gateway = Gateway(config, upstreams, store)

    def describe(base: str) -> list[str]:
        tape = f"{base}/servers/{NAME}"
        return [f"serving {plan.tape.source} at {tape}/mcp (streamable HTTP) and {tape}/sse (legacy SSE)"]

    if await serve_gateway(gateway, config, announce_token, describe) is None:
        return 2
    return strict_failures(plan, upstreams.tapes)
