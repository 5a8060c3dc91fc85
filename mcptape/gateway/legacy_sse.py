"""The legacy HTTP+SSE endpoint of the gateway: ``GET /servers/NAME/sse`` and its message POSTs.

A GET opens a session and its event stream; the first event, ``endpoint``, names where
the client POSTs its messages: mcptape's own ``/servers/NAME/messages?session_id=…``,
never the upstream's (when the upstream speaks SSE too, its own endpoint event is
recorded by the upstream link: both versions are in the recording). Everything the
server sends is a ``message`` event on the stream. The stream closing ends the session.
"""

from __future__ import annotations

from aiohttp import web

from mcptape.gateway.manager import SessionManager
from mcptape.gateway.responses import batch_too_large, http_error, not_json_rpc
from mcptape.gateway.session import frame_meta, pump
from mcptape.proxy.http.bodies import read_body
from mcptape.proxy.http.downstream import SseSessionLink
from mcptape.proxy.http.headers import SESSION_ID
from mcptape.proxy.http.sse import encode_event
from mcptape.proxy.link import LinkClosed
from mcptape.redact import redact_url
from mcptape.wire.frame import Frame


class LegacySseSessions:
    """The legacy SSE verbs of the sessions a :class:`SessionManager` holds."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager

    async def get(self, request: web.Request, name: str, forward_auth: str | None) -> web.StreamResponse:
        """Open a legacy SSE session: the endpoint event, then every server message, until either side leaves."""
        sid = self.manager.mint_sid(name)
        link = SseSessionLink(sid, path=request.path)
        gateway_session = self.manager.open(name, link, "sse", forward_auth)
        endpoint = f"/servers/{name}/messages?session_id={sid}"
        link.stream.push_raw(encode_event(endpoint.encode(), event="endpoint"))
        if not await link.wait_started(5.0):
            return http_error(503, "the session did not start")
        recorded = redact_url(endpoint)  # its session id opens the session: recorded like a token
        link.emit("sse_endpoint", recorded, {"endpoint": recorded, "served_by": "mcptape"})
        try:
            # The id in a header too: a balancer learns from it where the session's POSTs go
            # (deploy/haproxy.cfg sticks on it, and on the endpoint's session_id).
            return await pump(request, gateway_session, link.stream, 0, {SESSION_ID: sid})
        finally:
            link.client_gone("the client closed its SSE stream")

    async def post(self, request: web.Request, forward_auth: str | None) -> web.StreamResponse:
        """One message of a legacy SSE session: delivered to the relay, answered 202 (replies go on the stream)."""
        sid = request.query.get("session_id", "")
        gateway_session = self.manager.named(sid, forward_auth)
        name = request.match_info.get("name", "")
        if (
            gateway_session is None
            or not isinstance(gateway_session.link, SseSessionLink)
            or gateway_session.name != name
        ):
            return http_error(404, self.manager.unknown(sid, name))
        body = await read_body(request)
        frame = Frame(body, "c2s", meta=frame_meta(request, "sse-endpoint", self.manager.config.redact_names))
        if (refused := batch_too_large(frame)) is not None:
            return refused
        try:
            await gateway_session.link.receive(frame)
        except LinkClosed:
            return http_error(404, "the session is closing")
        if frame.kind == "malformed":
            return not_json_rpc(frame)  # recorded and passed on all the same
        return web.Response(status=202, text="Accepted")
