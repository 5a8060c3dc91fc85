"""The gateway's sessions: the map of session ids, the limit, idle reaping, the stateless pool, shutdown.

The MCP Python SDK's ``streamable_http_manager.py`` is the model: the manager owns which
sessions exist and how they start and end; a session's own HTTP verbs live in
:mod:`mcptape.gateway.session` (streamable HTTP) and :mod:`mcptape.gateway.legacy_sse`.

A session is opened through :class:`Upstreams`: which names are served, and for a name,
the server-facing link and the :class:`~mcptape.assemble.SessionPlan` of the session
(the registry's entries for ``mcptape proxy``; the recording for ``serve --listen``).
The session is then built by the one assembly (:mod:`mcptape.assemble`) and its relay
runs as a task until either side ends it. Only names the upstreams serve can be opened:
a request never names a command.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mcptape.assemble import Session, SessionPlan, assemble
from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.poolids import PoolIds, PoolUpstream, upstream_view
from mcptape.gateway.security import credential_of, same_credential
from mcptape.proxy.addonmanager import Outcome
from mcptape.proxy.http.downstream import DownstreamLink, HttpSessionLink
from mcptape.proxy.link import Link
from mcptape.wire.frame import Frame
from mcptape.wire.protocol import CANCELLED

if TYPE_CHECKING:
    from mcptape.gateway.sealed import Sealer
    from mcptape.gateway.store import GatewayStore
    from mcptape.rules.faults import FaultSet
    from mcptape.rules.rules import Rules


GIVE_UP_WAIT_S = 1.0  # after a second signal: how long killed upstreams' sessions get to end


class UpstreamUnavailable(Exception):
    """An upstream could not be started or reached (the client gets a 502 saying why).

    ``plan``: the session that was to be, recorded as failed so ``mcptape sessions`` shows why.
    """

    def __init__(self, message: str, plan: SessionPlan | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.plan = plan
        self.detail = detail or message  # what the session's row says


class SessionLimit(Exception):
    """The gateway already runs ``--max-sessions`` sessions (the client gets a 503 saying so)."""


@dataclass
class GatewayConfig:
    """What `mcptape proxy` serves and how it protects it."""

    registry: dict[str, UpstreamSpec]
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    db: str | None = None
    idle_timeout: float = 600.0
    grace: float = 2.0
    redact_names: tuple[str, ...] = ()
    redact_paths: tuple[tuple[str, ...], ...] = ()  # JSON paths redacted in recorded frames
    extra_hosts: tuple[str, ...] = ()
    extra_origins: tuple[str, ...] = ()
    rules: Rules | None = None  # injection rules: every session gets an Injector
    declare_capabilities: bool = False
    faults: FaultSet | None = None  # fault rules: every session gets the faults addon
    # Each session may be a process: a client that opens sessions and never ends them
    # must meet a clear refusal before the machine runs out of memory or descriptors.
    max_sessions: int = 100
    otlp: str | None = None  # an OTLP/HTTP receiver: every session's spans and metrics go there
    # A fleet: this replica's name on every session row (None: host name and port), and the
    # key ring that seals client-facing session ids (None: plain random ids, one process).
    replica: str | None = None
    sealer: Sealer | None = None

    def replica_name(self) -> str:
        """This replica's name: ``--replica``, else the host name and the port bound."""
        if self.replica is None:
            import socket

            self.replica = f"{socket.gethostname()}:{self.port}"
        return self.replica


class Upstreams(Protocol):
    """What a gateway serves, and how a session to one of its names begins."""

    def serves(self, name: str) -> bool:
        """Whether ``name`` is served here (else 404)."""

    def passes_through(self, name: str) -> UpstreamSpec | None:
        """The entry when requests to ``name`` pass through to an HTTP upstream unrelayed."""

    def open(self, name: str, downstream: str, forward_auth: str | None) -> tuple[Link, SessionPlan]:
        """The server-facing link and the session plan for a new session to ``name``.

        ``downstream``: ``http`` or ``sse``. Raises :class:`UpstreamUnavailable`.
        """


@dataclass(eq=False)
class GatewaySession:
    """One MCP session the gateway runs: its client-facing link, the assembled session, its task."""

    link: DownstreamLink
    session: Session
    name: str
    task: asyncio.Task[Any] | None = None
    streams_open: int = 0
    stateless: bool = False  # a 2026-07-28 pool session: any client connection may use it
    closing: bool = False  # a pool session that takes no new request (its upstream is ending)
    credential: bytes = b""  # what opened it (security.credential_of): another is refused (404)

    @property
    def sid(self) -> str:
        return self.link.session_id


@dataclass
class SessionManager:
    """Which sessions exist, how they start, and how they end; see the module docstring."""

    config: GatewayConfig
    upstreams: Upstreams
    sessions: dict[str, GatewaySession] = field(default_factory=dict)
    ending: set[GatewaySession] = field(default_factory=set)  # ended by the client, upstream closing
    # per name and credential: stateless sessions
    pools: dict[tuple[str, bytes], list[GatewaySession]] = field(default_factory=dict)
    pool_ids: dict[tuple[str, bytes], PoolIds] = field(default_factory=dict)  # what each pool lent
    _sweeper: asyncio.Task[None] | None = None
    _gave_up: asyncio.Event = field(default_factory=asyncio.Event)

    # -- session ids ------------------------------------------------------------------

    def mint_sid(self, name: str) -> str:
        """A new client-facing session id: random, or in a fleet sealed with this replica's name
        (another replica can then say where the session lives, see gateway/sealed.py)."""
        local = secrets.token_hex(16)
        sealer = self.config.sealer
        if sealer is None:
            return local
        from mcptape.gateway.sealed import Sealed

        return sealer.seal(Sealed(name, "", replica=self.config.replica_name(), local_sid=local))

    def unknown(self, sid: str, name: str) -> str:
        """The one line of the 404 for a session id this replica does not hold."""
        from mcptape.gateway.sealed import unknown_session

        return unknown_session(self.config.sealer, sid, name, self.config.replica_name())

    # -- opening ----------------------------------------------------------------------

    def open(
        self,
        name: str,
        link: DownstreamLink,
        downstream: str,
        forward_auth: str | None,
        wrap: Callable[[Link], Link] | None = None,
    ) -> GatewaySession:
        """Start a session to ``name`` behind ``link``; raises SessionLimit or UpstreamUnavailable.

        ``wrap``: what the upstream link is seen through (a pool's, see mcptape.gateway.poolids).
        """
        running = len(self.sessions) + len(self.ending)  # ending ones still have their upstream
        if running >= self.config.max_sessions:
            raise SessionLimit(
                f"the gateway already runs {running} sessions (--max-sessions {self.config.max_sessions}); "
                f"end sessions with DELETE, wait for idle ones to expire (--idle-timeout "
                f"{self.config.idle_timeout:g} s) or raise --max-sessions"
            )
        try:
            upstream, plan = self.upstreams.open(name, downstream, forward_auth)
        except UpstreamUnavailable as exc:
            if exc.plan is not None:
                assemble(exc.plan).failed_to_start(exc.detail)
            raise
        if wrap is not None:
            upstream = wrap(upstream)
        gateway_session = GatewaySession(link, assemble(plan, link, upstream), name)
        gateway_session.credential = credential_of(forward_auth)
        self.sessions[link.session_id] = gateway_session
        relay = gateway_session.session.relay
        assert relay is not None
        gateway_session.task = asyncio.get_running_loop().create_task(relay.run())
        gateway_session.task.add_done_callback(lambda _: self._forget(link.session_id))
        return gateway_session

    def stateless(
        self, name: str, frame: Frame, path: str, forward_auth: str | None, connection: int
    ) -> tuple[GatewaySession, Frame] | None:
        """The pool session that takes a 2026-07-28 request (see :mod:`mcptape.gateway.stateless`),
        and the frame as it gets it (ids and progress tokens of the pool's own, see
        :mod:`mcptape.gateway.poolids`); None for a cancellation that is sure of no request.
        ``connection`` tells the client's requests apart when it cancels one."""
        from mcptape.gateway.stateless import pick

        # One pool per credential: a pooled upstream speaks with the credential that opened it,
        # so requests with another one never ride it.
        key = (name, credential_of(forward_auth))
        pool = self.pools.setdefault(key, [])
        pool[:] = [s for s in pool if self.sessions.get(s.sid) is s and not s.closing]
        ids = self.pool_ids.setdefault(key, PoolIds())
        if frame.method == CANCELLED:
            found = ids.cancel(frame, connection)
            target = self.sessions.get(found[0]) if found is not None else None
            if found is None or target is None:
                if pool:
                    pool[0].session.event(
                        "pool_cancel_not_forwarded",
                        "a cancellation that names no request of this client for sure reached nobody",
                        {"connection": connection},
                    )
                return None
            return target, found[1]
        index = pick([s.link.in_flight() for s in pool if isinstance(s.link, HttpSessionLink)], frame.message)
        if index is not None:
            gateway_session = pool[index]
        else:
            gateway_session = self._pool_session(name, path, forward_auth, len(pool) + 1, ids)
            pool.append(gateway_session)
        return gateway_session, ids.take(frame, gateway_session.sid, connection)

    def _pool_session(
        self, name: str, path: str, forward_auth: str | None, size: int, ids: PoolIds
    ) -> GatewaySession:
        sid = f"stateless-{secrets.token_hex(8)}"
        link = HttpSessionLink(sid, path=path)
        link.route_view = upstream_view  # what comes back is routed by the pool's own ids
        gateway_session = self.open(
            name, link, "http", forward_auth, wrap=lambda upstream: PoolUpstream(upstream, ids)
        )
        gateway_session.stateless = True
        gateway_session.session.event(
            "http_stateless",
            f"serves {name}'s 2026-07-28 requests (no session id) from any client connection; "
            "upstream, each request has an id and progress token of the pool's own (recorded as "
            "the client's, the pool's in each frame's pool metadata)",
            {"pool_size": size},
        )
        return gateway_session

    # -- ending -----------------------------------------------------------------------

    def named(self, sid: str | None, forward_auth: str | None) -> GatewaySession | None:
        """The session ``sid`` names, if the request carries the credential that opened it:
        to anyone else it does not exist (the spec's answer to an unknown session, 404)."""
        gateway_session = self.sessions.get(sid) if sid is not None else None
        if gateway_session is None or not same_credential(
            gateway_session.credential, credential_of(forward_auth)
        ):
            return None
        return gateway_session

    def _forget(self, sid: str) -> None:
        """The session's relay ended (its upstream went away, or shutdown)."""
        gateway_session = self.sessions.pop(sid, None)
        if gateway_session is not None:
            gateway_session.link.close_send()
            if gateway_session.stateless:
                for ids in self.pool_ids.values():
                    ids.forget(sid)

    def end(self, sid: str, why: str) -> None:
        """The client ended a session (DELETE, idle): its id is unknown from now on (404)."""
        gateway_session = self.sessions.pop(sid, None)
        if gateway_session is None:
            return
        self.ending.add(gateway_session)
        if gateway_session.task is not None:
            gateway_session.task.add_done_callback(lambda _: self.ending.discard(gateway_session))
        gateway_session.link.client_gone(why)

    def start(self, sweep_also: Any = None) -> None:
        """Begin reaping idle sessions (``sweep_also(timeout)`` is called on each sweep too)."""
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep(sweep_also))

    async def _sweep(self, sweep_also: Any) -> None:
        """End sessions clients never DELETEd: idle (no open stream, no request) past the timeout."""
        timeout = self.config.idle_timeout
        period = max(0.05, min(timeout / 4, 5.0))
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            if sweep_also is not None:
                sweep_also(timeout)
            for gateway_session in list(self.sessions.values()):
                if gateway_session.streams_open == 0 and now - gateway_session.link.last_active > timeout:
                    self.end(gateway_session.sid, f"idle for more than {timeout:g} s")

    def give_up(self) -> None:
        """A second signal during shutdown: stop waiting for upstreams, kill every one of them
        (process groups included); what was received is still written and rows are closed."""
        self._gave_up.set()
        for gateway_session in [*self.sessions.values(), *self.ending]:
            relay = gateway_session.session.relay
            if relay is not None:
                relay.server.kill()

    async def shutdown(self, reason: str) -> None:
        """Stop every session: upstreams shut down, session rows closed, within a bounded time."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        active = list(self.sessions.values())
        everyone = [*active, *self.ending]
        tasks = [s.task for s in everyone if s.task is not None]
        # Sessions already ending (DELETE, idle timeout) end as they were going to: stopping
        # them too would record a session its client closed as interrupted by the signal.
        for gateway_session in active:
            relay = gateway_session.session.relay
            if relay is not None:
                relay.stop(reason)
        if tasks:
            # A second signal (give_up) ends the wait for upstreams that are slow to go.
            gave_up = asyncio.ensure_future(self._gave_up.wait())
            all_done = asyncio.ensure_future(asyncio.wait(tasks, timeout=2 * self.config.grace + 3))
            await asyncio.wait({gave_up, all_done}, return_when=asyncio.FIRST_COMPLETED)
            gave_up.cancel()
            if self._gave_up.is_set():
                # The upstreams were killed: their relays record how they ended, at once.
                await asyncio.wait(tasks, timeout=GIVE_UP_WAIT_S)
            all_done.cancel()
        for gateway_session in everyone:
            if gateway_session.task is not None and not gateway_session.task.done():
                # Bounded shutdown: a session that did not end in time is closed as interrupted.
                gateway_session.task.cancel()
                gateway_session.session.end(
                    Outcome("interrupted", None, f"stopped by {reason}", ended_by="signal")
                )


class RegistryUpstreams:
    """The entries of an ``mcpServers`` registry, as ``mcptape proxy`` serves them."""

    def __init__(self, config: GatewayConfig, store: GatewayStore) -> None:
        self.config = config
        self.store = store

    def serves(self, name: str) -> bool:
        return name in self.config.registry

    def passes_through(self, name: str) -> UpstreamSpec | None:
        """Streamable HTTP both sides: requests pass through, unless injection or fault rules need a relay."""
        spec = self.config.registry[name]
        relayed = self.config.rules is not None or self.config.faults is not None
        return spec if spec.transport == "http" and not relayed else None

    def plan(self, spec: UpstreamSpec, transport: str) -> SessionPlan:
        return SessionPlan(
            "proxy",
            transport,
            spec.describe(),
            name=spec.name,
            store=self.store,
            rules=self.config.rules,
            declare_capabilities=self.config.declare_capabilities,
            faults=self.config.faults,
            grace=self.config.grace,
            otlp=self.config.otlp,
            replica=self.config.replica_name(),
        )

    def open(self, name: str, downstream: str, forward_auth: str | None) -> tuple[Link, SessionPlan]:
        from mcptape.proxy.http.headers import HeaderError
        from mcptape.proxy.links.process import SpawnError

        spec = self.config.registry[name]
        plan = self.plan(spec, f"{downstream}->{spec.transport}")
        try:
            return self._link(spec, forward_auth), plan
        except (SpawnError, HeaderError) as exc:
            raise UpstreamUnavailable(f"upstream {name!r} cannot be started: {exc}", plan, str(exc)) from exc

    def _link(self, spec: UpstreamSpec, forward_auth: str | None) -> Link:
        if spec.transport == "stdio":
            from mcptape.proxy.links.looppipe import LoopProcessLink

            assert spec.command is not None
            return LoopProcessLink.spawn(spec.command, env=spec.env, cwd=spec.cwd, echo_stderr=False)
        from mcptape.proxy.http.headers import expand_headers
        from mcptape.proxy.http.upstream import remote_link

        assert spec.url is not None
        headers = expand_headers(spec.headers)
        if forward_auth is not None:
            headers["Authorization"] = forward_auth
        return remote_link(spec.url, spec.transport, headers, redact_names=self.config.redact_names)
