"""The aiohttp application of `mcptape proxy`: routes, the guard every request passes, pass-through.

``/servers/NAME/mcp`` is a streamable HTTP endpoint and ``/servers/NAME/sse`` (with
``/servers/NAME/messages``) a legacy SSE endpoint for each name the upstreams serve,
whatever transport that upstream speaks. The sessions are the
:class:`~mcptape.gateway.manager.SessionManager`'s; their verbs are in
:mod:`mcptape.gateway.session` and :mod:`mcptape.gateway.legacy_sse`. When both sides
speak streamable HTTP, requests pass through (:mod:`mcptape.gateway.passthrough`). One
store and one writer serve the whole process.

Every request passes the security checks first (:mod:`mcptape.gateway.security`):
``Host`` and ``Origin`` (403), then the token (401); ``GET /health`` needs no token.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway import cors, security
from mcptape.gateway.legacy_sse import LegacySseSessions
from mcptape.gateway.manager import (
    GatewayConfig,
    GatewaySession,
    RegistryUpstreams,
    SessionLimit,
    SessionManager,
    Upstreams,
    UpstreamUnavailable,
)
from mcptape.gateway.passthrough import WELL_KNOWN, PassThrough
from mcptape.gateway.responses import http_error
from mcptape.gateway.session import StreamableSessions
from mcptape.gateway.store import GatewayStore
from mcptape.proxy.http.headers import HeaderError

__all__ = ["Gateway", "GatewayConfig", "GatewaySession", "SessionLimit", "UpstreamUnavailable"]

# A replica whose oldest unwritten row is older than this is taken out of rotation by /health:
# its frames wait in memory (bounded), and another replica may be recording fine.
MAX_HEALTHY_LAG = 30.0


class Gateway:
    """The sessions, the store and the aiohttp app of one gateway process.

    ``upstreams``: what is served (by default the config's registry); ``store``: where it
    is recorded (by default the config's database).
    """

    def __init__(
        self, config: GatewayConfig, upstreams: Upstreams | None = None, store: GatewayStore | None = None
    ) -> None:
        self.config = config
        self.store = store if store is not None else GatewayStore(config.db, config.redact_paths)
        self.store.replica = config.replica_name
        self.upstreams = upstreams if upstreams is not None else RegistryUpstreams(config, self.store)
        self.manager = SessionManager(config, self.upstreams)
        self.streamable = StreamableSessions(self.manager)
        self.legacy = LegacySseSessions(self.manager)
        self.passthrough = PassThrough(
            self.store,
            config.redact_names,
            otlp=config.otlp,
            sealer=config.sealer,
            replica=config.replica_name,
        )
        self.hosts: frozenset[str] = frozenset()

    @property
    def sessions(self) -> dict[str, GatewaySession]:
        return self.manager.sessions

    def session_count(self) -> int:
        """The sessions open now: those the gateway runs and those passed through to an HTTP upstream."""
        return len(self.manager.sessions) + len(self.passthrough.sessions)

    # -- the app --------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=256 << 20)
        app.on_response_prepare.append(self._cors_headers)
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
        self.config.replica_name()  # settled now: host name and this port unless --replica
        self.hosts = security.allowed_hosts(self.config.host, port, self.config.extra_hosts)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        # Rebinding checks come before anything else, /health included.
        if (request.host or "").lower() not in self.hosts:
            return http_error(403, f"Host {request.host!r} is not this gateway's")
        if not security.origin_allowed(request.headers.get("Origin"), self.hosts, self.config.extra_origins):
            return http_error(403, f"Origin {request.headers.get('Origin')!r} is not allowed")
        allowed = cors.cors_origin(request.headers.get("Origin"), self.config.extra_origins)
        if allowed is not None and cors.is_preflight(request.method, request.headers):
            # A browser's preflight never carries credentials: the request that follows does.
            return web.Response(status=204, headers=cors.preflight_headers(allowed, request.headers))
        if request.path == "/health":
            return await handler(request)
        auth = security.check_token(request.headers, self.config.token)
        if not auth.ok:
            return http_error(
                401, "missing or wrong gateway token", {"WWW-Authenticate": 'Bearer realm="mcptape"'}
            )
        unrouted = request.match_info.http_exception
        if isinstance(unrouted, web.HTTPMethodNotAllowed):
            allowed = ", ".join(sorted(unrouted.allowed_methods))
            return http_error(
                405, f"{request.method} is not allowed here (allowed: {allowed})", {"Allow": allowed}
            )
        name = request.match_info.get("name")
        if name is None:
            return http_error(404, f"nothing is served at {request.path!r}")
        if not self.upstreams.serves(name):
            return http_error(404, f"no upstream named {name!r} is registered")
        try:
            return await handler(request)
        except UpstreamUnavailable as exc:
            return http_error(502, str(exc))
        except SessionLimit as exc:
            return http_error(503, str(exc), {"Retry-After": "5"})

    async def _cors_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        """Every answer to an allowed origin (``--allow-origin``) may be read by its page."""
        allowed = cors.cors_origin(request.headers.get("Origin"), self.config.extra_origins)
        if allowed is not None:
            vary = response.headers.get("Vary")
            response.headers.update(cors.answer_headers(allowed))
            if vary and "origin" not in vary.lower():  # a pass-through upstream's own
                response.headers["Vary"] = f"{vary}, Origin"

    async def _health(self, request: web.Request) -> web.Response:
        """For a balancer's checks: 503 while this replica cannot record (its store failed for
        good, or is more than MAX_HEALTHY_LAG behind); the store's state either way."""
        store = self.store.health()
        failed = bool(store.get("failed")) or float(store.get("lag_s") or 0.0) > MAX_HEALTHY_LAG
        body = {
            "status": "unavailable" if failed else "ok",
            "replica": self.config.replica_name(),
            "sessions": self.session_count(),
            "store": store,
        }
        return web.json_response(body, status=503 if failed else 200)

    # -- routes -----------------------------------------------------------------------

    def _forward_auth(self, request: web.Request) -> str | None:
        """The client's own Authorization, for the upstream; never the gateway's token."""
        return next(
            (
                value
                for name, value in security.without_token(request.headers.items(), self.config.token)
                if name.lower() == "authorization"
            ),
            None,
        )

    async def _mcp_post(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        passed = self.upstreams.passes_through(name)
        if passed is not None:
            return await self._pass(request, passed)
        return await self.streamable.post(request, name, self._forward_auth(request))

    async def _mcp_get(self, request: web.Request) -> web.StreamResponse:
        passed = self.upstreams.passes_through(request.match_info["name"])
        if passed is not None:
            return await self._pass(request, passed)
        return await self.streamable.get(request, self._forward_auth(request))

    async def _mcp_delete(self, request: web.Request) -> web.StreamResponse:
        passed = self.upstreams.passes_through(request.match_info["name"])
        if passed is not None:
            return await self._pass(request, passed)
        return await self.streamable.delete(request, self._forward_auth(request))

    async def _sse_get(self, request: web.Request) -> web.StreamResponse:
        return await self.legacy.get(request, request.match_info["name"], self._forward_auth(request))

    async def _sse_post(self, request: web.Request) -> web.StreamResponse:
        return await self.legacy.post(request, self._forward_auth(request))

    # -- pass-through -------------------------------------------------------------------

    def _gateway_url(self, request: web.Request) -> str:
        return f"{request.scheme}://{request.host}/servers/{request.match_info['name']}/mcp"

    async def _pass(self, request: web.Request, spec: UpstreamSpec) -> web.StreamResponse:
        import aiohttp

        try:
            return await self.passthrough.forward(
                request, request.match_info["name"], spec, self.config.token, self._gateway_url(request)
            )
        except (aiohttp.ClientError, OSError) as exc:
            return http_error(502, f"the upstream {spec.url} cannot be reached: {exc}")
        except HeaderError as exc:  # an unset ${ENV} in the entry's headers
            return http_error(502, f"upstream {spec.name!r} cannot be used: {exc}")

    async def _protected_resource(self, request: web.Request) -> web.StreamResponse:
        spec = self.upstreams.passes_through(request.match_info["name"])
        if spec is None:
            return http_error(404, "this upstream has no OAuth protected-resource metadata")
        # The edit is recorded in the client connection's session, where its 401 was.
        key = f"{request.match_info['name']}:conn-{id(request.transport)}"
        try:
            return await self.passthrough.protected_resource(spec, self._gateway_url(request), key)
        except OSError as exc:
            return http_error(502, f"the upstream {spec.url} cannot be reached: {exc}")

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        self.store.open_in_background()
        self.manager.start(self.passthrough.sweep)

    def give_up(self) -> None:
        """A second signal during :meth:`shutdown`: see :meth:`SessionManager.give_up`."""
        self.manager.give_up()

    async def shutdown(self, reason: str) -> None:
        """Stop every session (upstreams shut down, session rows closed), then flush and close the store."""
        import asyncio

        await self.manager.shutdown(reason)
        await self.passthrough.close(reason)
        # On the store's own thread: after every session row still being created.
        await asyncio.get_running_loop().run_in_executor(self.store.pool, self.store.close)
