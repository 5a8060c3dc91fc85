"""The aiohttp application of `mcptape proxy`: every registered upstream over streamable HTTP and legacy SSE.

``/servers/NAME/mcp`` is a streamable HTTP endpoint and ``/servers/NAME/sse`` (with
``/servers/NAME/messages``) a legacy SSE endpoint for the registry entry NAME, whatever
transport that upstream speaks: each MCP session gets its own downstream link
(:mod:`mcptape.proxy.http.downstream`), its own upstream link (a spawned process, or an HTTP
or SSE client), a relay and a recorder. One store and one writer serve the whole
process. Only registry entries can be started: a request never names a command.

Every request passes the security checks first (:mod:`mcptape.gateway.security`):
``Host`` and ``Origin`` (403), then the token (401); ``GET /health`` needs no token.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway import security
from mcptape.gateway.legacy_sse import sse_get, sse_post
from mcptape.gateway.passthrough import WELL_KNOWN, PassThrough
from mcptape.gateway.store import GatewayStore
from mcptape.proxy.addonmanager import AddonManager, Outcome, SessionContext
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.http.bodies import read_body
from mcptape.proxy.http.downstream import DownstreamLink, EventStream, HttpSessionLink
from mcptape.proxy.http.headers import PROTOCOL_VERSION, SESSION_ID, HeaderError, that_matter
from mcptape.proxy.link import Link, LinkClosed
from mcptape.proxy.links.process import SpawnError
from mcptape.proxy.relay import Relay
from mcptape.wire.frame import Frame

if TYPE_CHECKING:
    from mcptape.rules.rules import Rules

# How the request carried the gateway's token: "authorization" (consumed) or "own-header".
AUTH_VIA = web.RequestKey("auth_via", str)
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class UpstreamUnavailable(Exception):
    """A registry entry could not be started or reached (the client gets a 502 saying why)."""


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
    # Each session may be a process: a client that opens sessions and never ends them
    # must meet a clear refusal before the machine runs out of memory or descriptors.
    max_sessions: int = 100


@dataclass(eq=False)
class GatewaySession:
    link: DownstreamLink
    relay: Relay
    upstream: str
    recorder: Recorder
    task: asyncio.Task[Any] | None = None
    streams_open: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def error_response(
    status: int, message: str, headers: dict[str, str] | None = None, code: int = -32000
) -> web.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": f"mcptape: {message}"}}
    return web.json_response(body, status=status, headers=headers)


PRIMING_FROM = "2025-11-25"


def primes(request: web.Request, frame: Frame) -> bool:
    """Whether a request's SSE answer starts with a priming event: clients of protocol
    2025-11-25 and later expect one (SEP-1699); older ones may not parse an empty event."""
    version = request.headers.get(PROTOCOL_VERSION)
    if version is None and frame.method == "initialize" and isinstance(frame.message, dict):
        params = frame.message.get("params")
        version = params.get("protocolVersion") if isinstance(params, dict) else None
    return isinstance(version, str) and version >= PRIMING_FROM


def not_json_rpc(frame: Frame, headers: dict[str, str] | None = None) -> web.Response:
    """400 for a POSTed body that is no JSON-RPC message, as a streamable HTTP server answers it."""
    try:
        orjson.loads(frame.data)  # only for a body that is no message: never on the hot path
    except orjson.JSONDecodeError:
        return error_response(400, "Parse error: the body is not JSON", headers, code=-32700)
    return error_response(400, "Invalid Request: the body is not a JSON-RPC message", headers, code=-32600)


class Gateway:
    """The sessions, the store and the aiohttp app of one `mcptape proxy` process."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.sessions: dict[str, GatewaySession] = {}
        self.ending: set[GatewaySession] = set()  # ended by the client, upstream still closing
        self.stateless: dict[str, list[GatewaySession]] = {}  # per entry: 2026-07-28 clients' pool
        self.store = GatewayStore(config.db, config.redact_paths)
        self.hosts: frozenset[str] = frozenset()
        self._sweeper: asyncio.Task[None] | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="mcptape-gateway-store")
        self.passthrough = PassThrough(self.store, self._pool, config.redact_names)

    # -- the app --------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=256 << 20)
        app.router.add_get("/health", self._health)
        app.router.add_post("/servers/{name}/mcp", self._mcp_post)
        app.router.add_get("/servers/{name}/mcp", self._mcp_get)
        app.router.add_delete("/servers/{name}/mcp", self._mcp_delete)
        app.router.add_get("/servers/{name}/sse", self._sse_get)
        app.router.add_post("/servers/{name}/messages", self._sse_post)
        app.router.add_get(WELL_KNOWN + "/servers/{name}/mcp", self._protected_resource)
        return app

    def bound(self, port: int) -> None:
        """The listener is bound: requests must name this host and port."""
        self.config.port = port
        self.hosts = security.allowed_hosts(self.config.host, port, self.config.extra_hosts)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        # Rebinding checks come before anything else, /health included.
        if (request.host or "").lower() not in self.hosts:
            return error_response(403, f"Host {request.host!r} is not this gateway's")
        if not security.origin_allowed(request.headers.get("Origin"), self.hosts, self.config.extra_origins):
            return error_response(403, f"Origin {request.headers.get('Origin')!r} is not allowed")
        if request.path == "/health":
            return await handler(request)
        auth = security.check_token(request.headers, self.config.token)
        if not auth.ok:
            return error_response(
                401, "missing or wrong gateway token", {"WWW-Authenticate": 'Bearer realm="mcptape"'}
            )
        unrouted = request.match_info.http_exception
        if isinstance(unrouted, web.HTTPMethodNotAllowed):
            allowed = ", ".join(sorted(unrouted.allowed_methods))
            return error_response(
                405, f"{request.method} is not allowed here (allowed: {allowed})", {"Allow": allowed}
            )
        name = request.match_info.get("name")
        if name is None:
            return error_response(404, f"nothing is served at {request.path!r}")
        if name not in self.config.registry:
            return error_response(404, f"no upstream named {name!r} is registered")
        request[AUTH_VIA] = auth.via or ""
        try:
            return await handler(request)
        except UpstreamUnavailable as exc:
            return error_response(502, str(exc))
        except SessionLimit as exc:
            return error_response(503, str(exc), {"Retry-After": "5"})

    async def _sse_get(self, request: web.Request) -> web.StreamResponse:
        return await sse_get(self, request)

    async def _sse_post(self, request: web.Request) -> web.StreamResponse:
        return await sse_post(self, request)

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    # -- sessions -------------------------------------------------------------------

    def _upstream_link(self, spec: UpstreamSpec, forward_auth: str | None) -> Link:
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

    async def open_session(self, request: web.Request, link: DownstreamLink, kind: str) -> GatewaySession:
        running = len(self.sessions) + len(self.ending)  # ending ones still have their upstream
        if running >= self.config.max_sessions:
            raise SessionLimit(
                f"the gateway already runs {running} sessions (--max-sessions {self.config.max_sessions}); "
                f"end sessions with DELETE, wait for idle ones to expire (--idle-timeout "
                f"{self.config.idle_timeout:g} s) or raise --max-sessions"
            )
        name = request.match_info["name"]
        spec = self.config.registry[name]
        # The client's own Authorization reaches the upstream only when our token came another way.
        forward = request.headers.get("Authorization") if request.get(AUTH_VIA) != "authorization" else None
        transport = f"{kind}->{spec.transport}"
        recorder = Recorder()
        context = SessionContext(None, "proxy", transport, self.store.describe(spec), name)
        try:
            upstream = self._upstream_link(spec, forward)
        except (SpawnError, HeaderError) as exc:
            # Recorded like any session, so `mcptape sessions` shows why the client got a 502.
            self.store.attach_later(self._pool, recorder, name, transport, spec)
            recorder.event(context, "error", str(exc), None)
            recorder.session_end(context, Outcome("error", None, str(exc)))
            raise UpstreamUnavailable(f"upstream {name!r} cannot be started: {exc}") from exc
        from mcptape.proxy.http.upstream import AutoLink

        if isinstance(upstream, AutoLink):

            def settled(actual: str) -> None:
                context.transport = f"{kind}->{actual}"
                recorder.update(transport=context.transport)

            upstream.on_settled = settled
        # The injector after the recorder, as in `record` (a retry follows what it answers).
        injector = None
        if self.config.rules is not None:
            from mcptape.proxy.addons.injector import Injector

            injector = Injector(self.config.rules, declare=self.config.declare_capabilities)
        addons = AddonManager([recorder, *([injector] if injector is not None else [])])
        relay = Relay(link, upstream, addons, context, grace=self.config.grace)
        if injector is not None:
            injector.use_relay(relay)
        session = GatewaySession(link, relay, name, recorder)
        self.sessions[link.session_id] = session
        self.store.attach_later(self._pool, recorder, name, transport, spec)
        session.task = asyncio.get_running_loop().create_task(relay.run())
        session.task.add_done_callback(lambda _: self._forget(link.session_id))
        return session

    def _forget(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.link.close_send()

    def _end(self, session_id: str, why: str) -> None:
        """The client ended a session (DELETE, idle): its id is unknown from now on (404)."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return
        self.ending.add(session)
        if session.task is not None:
            session.task.add_done_callback(lambda _: self.ending.discard(session))
        session.link.client_gone(why)

    def frame_meta(self, request: web.Request, stream: str) -> dict[str, Any]:
        return {
            "http_method": request.method,
            "path": request.path,
            "stream": stream,
            "headers": that_matter(request.headers.items(), self.config.redact_names),
        }

    # -- streamable HTTP -------------------------------------------------------------

    def _passed(self, request: web.Request) -> UpstreamSpec | None:
        """The upstream's entry when it speaks streamable HTTP itself: requests pass through.

        Not with injection rules: answering the server's requests takes a relay, so the
        gateway then runs the session itself, with an HTTP client link to the upstream.
        """
        spec = self.config.registry[request.match_info["name"]]
        return spec if spec.transport == "http" and self.config.rules is None else None

    def _gateway_url(self, request: web.Request) -> str:
        return f"{request.scheme}://{request.host}/servers/{request.match_info['name']}/mcp"

    async def _pass(self, request: web.Request, spec: UpstreamSpec) -> web.StreamResponse:
        import aiohttp

        strip = request.get(AUTH_VIA) == "authorization"
        try:
            return await self.passthrough.forward(
                request, request.match_info["name"], spec, strip, self._gateway_url(request)
            )
        except (aiohttp.ClientError, OSError) as exc:
            return error_response(502, f"the upstream {spec.url} cannot be reached: {exc}")
        except HeaderError as exc:  # an unset ${ENV} in the entry's headers
            return error_response(502, f"upstream {spec.name!r} cannot be used: {exc}")

    async def _protected_resource(self, request: web.Request) -> web.StreamResponse:
        spec = self._passed(request)
        if spec is None:
            return error_response(404, "this upstream has no OAuth protected-resource metadata")
        # The edit is recorded in the client connection's session, where its 401 was.
        key = f"{request.match_info['name']}:conn-{id(request.transport)}"
        try:
            return await self.passthrough.protected_resource(spec, self._gateway_url(request), key)
        except OSError as exc:
            return error_response(502, f"the upstream {spec.url} cannot be reached: {exc}")

    async def _mcp_post(self, request: web.Request) -> web.StreamResponse:
        passed = self._passed(request)
        if passed is not None:
            return await self._pass(request, passed)
        body = await read_body(request)
        frame = Frame(body, "c2s", meta=self.frame_meta(request, "post"))
        sid = request.headers.get(SESSION_ID)
        headers: dict[str, str] = {}
        stateless = False
        if sid is not None:
            session = self.sessions.get(sid)
            if (
                session is None
                or not isinstance(session.link, HttpSessionLink)
                or session.extra.get("stateless")
            ):
                return error_response(
                    404, f"session {sid!r} does not exist (it ended or expired); start a new one"
                )
        elif frame.method == "initialize" or frame.kind == "batch":
            sid = secrets.token_hex(16)
            headers[SESSION_ID] = sid
            session = await self.open_session(request, HttpSessionLink(sid, path=request.path), "http")
        elif frame.kind == "malformed":
            return not_json_rpc(frame)  # no session to record it in, and no server started for it
        else:
            stateless = True
            session = await self._stateless(request, frame)
        assert isinstance(session.link, HttpSessionLink)
        try:
            stream = await session.link.post(frame, headers, prime=primes(request, frame))
        except LinkClosed:
            if not stateless:
                return error_response(404, "the session is closing")
            # That pool session is ending (idle, its upstream died): a fresh one takes the request.
            session.extra["closing"] = True
            session = await self._stateless(request, frame)
            assert isinstance(session.link, HttpSessionLink)
            try:
                stream = await session.link.post(frame, headers, prime=primes(request, frame))
            except LinkClosed:
                return error_response(502, "the upstream session ended before it took the request")
        if stream is None:
            if frame.kind == "malformed":
                return not_json_rpc(frame, headers)  # recorded and passed on all the same
            return web.Response(status=202, headers=headers)
        return await self.pump(request, session, stream, 0, headers)

    async def _stateless(self, request: web.Request, frame: Frame) -> GatewaySession:
        """The pool session that takes a 2026-07-28 request (see :mod:`mcptape.gateway.stateless`)."""
        from mcptape.gateway.stateless import pick

        name = request.match_info["name"]
        pool = self.stateless.setdefault(name, [])
        pool[:] = [
            s for s in pool if self.sessions.get(s.link.session_id) is s and not s.extra.get("closing")
        ]
        index = pick([s.link.in_flight() for s in pool if isinstance(s.link, HttpSessionLink)], frame.message)
        if index is not None:
            return pool[index]
        sid = f"stateless-{secrets.token_hex(8)}"
        session = await self.open_session(request, HttpSessionLink(sid, path=request.path), "http")
        session.extra["stateless"] = True
        session.recorder.event(
            session.relay.session,
            "http_stateless",
            f"serves {name}'s 2026-07-28 requests (no session id) from any client connection",
            {"pool_size": len(pool) + 1},
        )
        pool.append(session)
        return session

    async def pump(
        self,
        request: web.Request,
        session: GatewaySession,
        stream: EventStream,
        after: int,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers={**SSE_HEADERS, **headers})
        await response.prepare(request)
        stream.attached = True
        session.streams_open += 1
        ended = False
        try:
            # A request's stream usually closes with its answer: the answer and the end of
            # the response then leave in one write.
            ended = await stream.pump(response.write, after, response.write_eof)
        except ConnectionResetError:
            pass  # the client went away: the events stay in the stream for Last-Event-ID
        finally:
            stream.attached = False
            session.streams_open -= 1
            session.link.last_active = time.monotonic()
        if not ended:
            with contextlib.suppress(ConnectionResetError):
                await response.write_eof()
        return response

    async def _mcp_get(self, request: web.Request) -> web.StreamResponse:
        passed = self._passed(request)
        if passed is not None:
            return await self._pass(request, passed)
        session, failure = self._existing(request)
        if failure is not None:
            return failure
        assert session is not None and isinstance(session.link, HttpSessionLink)
        if "text/event-stream" not in request.headers.get("Accept", ""):
            return error_response(406, "a GET stream needs Accept: text/event-stream")
        last = request.headers.get("Last-Event-ID")
        if last is not None:
            found = session.link.resume(last)
            if found is None:
                return error_response(404, f"no stream has event {last!r}")
            return await self.pump(request, session, found[0], found[1], {})
        if session.link.get_stream.attached:
            return error_response(409, "this session already has a GET stream open")
        get = session.link.get_stream
        return await self.pump(request, session, get, get.delivered, {})

    async def _mcp_delete(self, request: web.Request) -> web.StreamResponse:
        passed = self._passed(request)
        if passed is not None:
            return await self._pass(request, passed)
        session, failure = self._existing(request)
        if failure is not None:
            return failure
        assert session is not None
        self._end(session.link.session_id, "the client deleted the session")
        return web.Response(status=200)

    def _existing(self, request: web.Request) -> tuple[GatewaySession | None, web.Response | None]:
        sid = request.headers.get(SESSION_ID)
        if sid is None:
            return None, error_response(400, "Mcp-Session-Id header required")
        session = self.sessions.get(sid)
        if session is None or not isinstance(session.link, HttpSessionLink):
            return None, error_response(404, f"session {sid!r} does not exist (it ended or expired)")
        return session, None

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        self.store.open_in_background()
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def _sweep(self) -> None:
        """End sessions clients never DELETEd: idle (no open stream, no request) past the timeout."""
        period = max(0.05, min(self.config.idle_timeout / 4, 5.0))
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            self.passthrough.sweep(self.config.idle_timeout)
            for session in list(self.sessions.values()):
                if session.streams_open == 0 and now - session.link.last_active > self.config.idle_timeout:
                    self._end(session.link.session_id, f"idle for more than {self.config.idle_timeout:g} s")

    async def shutdown(self, reason: str) -> None:
        """Stop every session (upstreams shut down, session rows closed), then flush and close the store."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        active = list(self.sessions.values())
        everyone = [*active, *self.ending]
        tasks = [s.task for s in everyone if s.task is not None]
        # Sessions already ending (DELETE, idle timeout) end as they were going to: stopping
        # them too would record a session its client closed as interrupted by the signal.
        for session in active:
            session.relay.stop(reason)
        if tasks:
            await asyncio.wait(tasks, timeout=2 * self.config.grace + 3)
        for session in everyone:
            if session.task is not None and not session.task.done():
                # Bounded shutdown: a session that did not end in time is closed as interrupted.
                session.task.cancel()
                session.recorder.session_end(
                    session.relay.session,
                    Outcome("interrupted", None, f"stopped by {reason}", ended_by="signal"),
                )
        await self.passthrough.close(reason)
        await asyncio.get_running_loop().run_in_executor(self._pool, self.store.close)
        self._pool.shutdown(wait=False)
