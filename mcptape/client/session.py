"""A recorded client session: the client core on a client link, an upstream link, assembled into one session.

:class:`CallSession` is the thin imperative shell ``call`` (and later front ends) use::

    async with CallSession(target, options) as client:
        tools = await client.core.request("tools/list")

On entry it starts the server (or connects to it, with retries for network
failures), puts a :class:`~mcptape.client.link.ClientLink` on the client side of a
:class:`~mcptape.proxy.relay.Relay`, and negotiates within the connect timeout. The
recording store opens on a thread only once the first frame has been sent, so that
importing SQLAlchemy never delays the first request. On exit the server is shut
down gracefully and everything is written (mode ``call``, or ``client`` for the
interactive clients, whose sessions a person drove by hand).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcptape.assemble import OwnStore, Session, SessionPlan, assemble
from mcptape.client.core import ClientCore, ServerRequestHandler, State, Timeouts
from mcptape.client.errors import ConnectError, ConnectTimeout, HttpError, TransportError
from mcptape.client.link import ClientLink
from mcptape.client.negotiate import ServerHello, negotiate
from mcptape.client.retry import BACKOFF, with_retries
from mcptape.proxy.addonmanager import Outcome
from mcptape.proxy.link import Link, LinkClosed
from mcptape.proxy.relay import Relay
from mcptape.terminal import say as terminal_say
from mcptape.wire.frame import Frame

if TYPE_CHECKING:
    from mcptape.client.authflow import Authorizer
    from mcptape.client.authpolicy import ClientConfig
    from mcptape.proxy.http.upstream_http import HttpClientLink


@dataclass
class Target:
    """The server to talk to: a command (stdio) or a URL (http, sse)."""

    description: str
    argv: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    transport: str = "stdio"
    headers: dict[str, str] = field(default_factory=dict)
    name: str | None = None


@dataclass
class SessionOptions:
    """How to run the session."""

    db: str | None = None
    record: bool = True
    timeouts: Timeouts = field(default_factory=Timeouts)
    protocol_version: str | None = None
    handler: ServerRequestHandler | None = None
    capabilities: dict[str, Any] = field(default_factory=dict)
    on_state: Callable[[State, str], None] | None = None
    on_message: Callable[[str, Any], None] | None = None
    say: Callable[[str], None] = field(default=terminal_say)
    echo_stderr: bool = False
    grace: float = 2.0
    # A server started by call gets this long after its stdin is closed before SIGTERM
    # (then ``grace`` before SIGKILL): a one-shot client does not wait out idle timers.
    eof_wait: float = 0.1
    retry_delays: tuple[float, ...] = BACKOFF
    upstream_opener: Callable[[Target], Awaitable[Link]] | None = None
    oauth: ClientConfig | None = None  # a remote server's 401 runs the OAuth flow (None: it fails)
    otlp: str | None = None  # an OTLP/HTTP receiver: export spans and metrics there
    # The session row's mode: "client" for the interactive clients (a person's session),
    # "probe" for probe's sessions (recorded apart).
    mode: str = "call"
    # Each frame as the client sent it ("c2s") or received it ("s2c"): the terminal client's traffic pane.
    on_traffic: Callable[[str, bytes], None] | None = None
    # Sees each frame the server (or the relay) sends, with its transport metadata, before
    # the core does: probe checks how an answer came (its SSE event id, a resumed stream).
    on_frame: Callable[[Frame], None] | None = None


class CallSession:
    """One client connection through the relay; see the module docstring."""

    def __init__(self, target: Target, options: SessionOptions) -> None:
        self.target = target
        self.options = options
        self.link = ClientLink(self._on_frame)
        self.core = ClientCore(self._send, timeouts=options.timeouts, on_state=options.on_state)
        if options.handler is not None:
            self.core.handler = options.handler
        self.core.on_message = options.on_message
        self.hello: ServerHello | None = None
        self.relay: Relay | None = None
        self.outcome: Outcome | None = None
        self.session: Session | None = None  # the assembled session, once the server is reached
        self.recorded: bool | None = None
        self._run: asyncio.Task[Outcome] | None = None
        self._transport = f"inproc->{target.transport}"
        self._remote: Link | None = None
        self._authorizer: Authorizer | None = None
        if target.url is not None and options.oauth is not None:
            self.core.reauthorize = self._reauthorize

    # -- frames -------------------------------------------------------------------------

    def _on_frame(self, frame: Frame) -> None:
        if self.options.on_traffic is not None:
            self.options.on_traffic("s2c", frame.data)
        if self.options.on_frame is not None:
            self.options.on_frame(frame)
        self.core.on_frame(frame)

    async def _send(self, data: bytes) -> None:
        try:
            await self.link.put(data)
        except LinkClosed as exc:
            raise TransportError(self.core.lost or str(exc)) from exc
        if self.options.on_traffic is not None:
            self.options.on_traffic("c2s", data)
        if self.session is not None:
            self.session.start_store()

    # -- lifecycle ------------------------------------------------------------------------

    async def _open_upstream(self) -> Link:
        opener = self.options.upstream_opener
        if opener is not None:
            return await opener(self.target)
        if self.target.url is not None:
            return await self._open_remote(self.target.url)
        if self.target.argv is None:
            raise ConnectError(f"no way to reach {self.target.description}")
        from mcptape.proxy.links.looppipe import LoopProcessLink
        from mcptape.proxy.links.process import SpawnError

        try:
            link = LoopProcessLink.spawn(
                self.target.argv,
                env=self.target.env,
                cwd=self.target.cwd,
                echo_stderr=self.options.echo_stderr,
            )
        except SpawnError as exc:
            raise ConnectError(str(exc)) from exc
        link.eof_wait = self.options.eof_wait
        return link

    async def _open_remote(self, url: str) -> Link:
        """A TCP connection first (what the retries are for), then the HTTP or SSE link."""
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConnectError(f"{url} is not an http:// or https:// URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        _, writer = await asyncio.open_connection(parts.hostname, port)
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        from mcptape.proxy.http.upstream import remote_link

        link: Link = remote_link(url, self.target.transport, self.target.headers)
        self._remote = link
        return link

    async def _reauthorize(self, error: HttpError) -> bool:
        """A 401 (or 403 insufficient_scope): get a token and put it on the link; False: give up."""
        from mcptape.client.authflow import Authorizer
        from mcptape.client.authpolicy import auth_refusal

        refused = auth_refusal(error.data)
        if refused is None or self._remote is None or self.target.url is None:
            return False
        if self._authorizer is None:
            assert self.options.oauth is not None
            self._authorizer = Authorizer(self.target.url, self.options.oauth, self.options.say)
        token = await self._authorizer.token_for(*refused)
        if token is None:
            return False
        # The link sends its `headers` with every request; an AutoLink hands them on to
        # the link it chose.
        for link in (self._remote, getattr(self._remote, "active", None)):
            headers = getattr(link, "headers", None)
            if isinstance(headers, dict):
                headers["Authorization"] = f"Bearer {token}"
        return True

    async def __aenter__(self) -> CallSession:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> ServerHello:
        """Start or reach the server and negotiate; raises a ClientError."""
        core, options = self.core, self.options
        core.set_state("connecting", self.target.description)

        def retrying(number: int, delay: float, exc: BaseException) -> None:
            options.say(
                f"connecting to {self.target.description} failed ({exc}); retry {number} in {delay:g} s"
            )

        try:
            async with asyncio.timeout(options.timeouts.connect):
                try:
                    server = await with_retries(self._open_upstream, options.retry_delays, on_retry=retrying)
                except (OSError, ConnectionError) as exc:
                    raise ConnectError(f"cannot reach {self.target.description}: {exc}") from exc
                self._start_relay(server)
                await self.wait_started()
                self.hello = await negotiate(core, options.capabilities, options.protocol_version)
        except TimeoutError as exc:
            core.set_state("error", "connect timeout")
            raise ConnectTimeout(
                f"no answer to the handshake from {self.target.description} "
                f"within {options.timeouts.connect:g} s"
            ) from exc
        except BaseException as exc:
            core.set_state("error", str(exc))
            raise
        core.set_state("connected", f"protocol {self.hello.protocol_version} via {self.hello.via}")
        return self.hello

    def _start_relay(self, server: Link) -> None:
        description = self.target.description
        if self.target.argv:
            from mcptape.redact import redact_command

            _, description = redact_command(self.target.argv, description)  # secrets never reach the database
        plan = SessionPlan(
            self.options.mode,
            self._transport,
            description,
            name=self.target.name,
            store=OwnStore(self.options.db) if self.options.record else None,
            grace=self.options.grace,
            otlp=self.options.otlp,
        )
        # The store opens once the first frame is sent (_send): importing SQLAlchemy must
        # not delay the first request.
        self.session = assemble(plan, self.link, server, start_store=False)
        self.relay = self.session.relay
        assert self.relay is not None
        self._run = asyncio.ensure_future(self.relay.run())
        self._run.add_done_callback(self._relay_ended)
        # The relay starts the links in its first steps; a frame may only be put after that.

    def _relay_ended(self, task: asyncio.Task[Outcome]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.core.connection_lost(f"the relay failed: {exc}")
            return
        self.outcome = outcome = task.result()
        if self.core.state in ("connecting", "connected"):
            why = outcome.error or "the server closed the connection"
            self.core.connection_lost(why)
            self.core.set_state("error", why)

    async def wait_started(self) -> None:
        """Wait until the relay has started the links (its first loop turns)."""
        while not self.link.started and self._run is not None and not self._run.done():
            await asyncio.sleep(0)

    async def close(self) -> None:
        """Shut the server down gracefully and write the recording."""
        core = self.core
        if core.state != "error":
            core.set_state("disconnecting")
        self.link.finish()
        if self._run is not None:
            with contextlib.suppress(Exception):
                self.outcome = await self._run
        session = self.session
        if session is not None and session.store is not None:
            self.recorded = await session.finish_store()
            if not self.recorded:
                self.options.say(
                    f"warning: this session could not be fully recorded into {session.where()}"
                    + (f": {session.store.error}" if session.store.error else "")
                )
        if core.state != "error":
            core.set_state("disconnected")

    @property
    def http_link(self) -> HttpClientLink | None:
        """The streamable HTTP link to a remote server (also once ``auto`` settled on it), else None."""
        from mcptape.proxy.http.upstream import AutoLink
        from mcptape.proxy.http.upstream_http import HttpClientLink

        link = self._remote.active if isinstance(self._remote, AutoLink) else self._remote
        return link if isinstance(link, HttpClientLink) else None

    def where(self) -> str | None:
        """Where the session is recorded, once the server is reached."""
        return self.session.where() if self.session is not None else None


async def close_fully(session: CallSession, within: float | None = None) -> bool:
    """Close ``session`` (within ``within`` seconds) to its end; True if the caller was
    cancelled meanwhile (a signal), for it to raise the cancellation once closed.

    A cancellation cut a close short once the server's stdin was closed but before its
    SIGTERM: a server that outlives its stdin was left running.
    """
    closing = asyncio.ensure_future(asyncio.wait_for(session.close(), within))
    cancelled = False
    while not closing.done():
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError:
            cancelled = cancelled or not closing.done()
        except Exception:
            break
    if not closing.cancelled():
        closing.exception()  # a close that failed or timed out is the caller's to say, if at all
    return cancelled
