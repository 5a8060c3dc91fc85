"""The legacy HTTP+SSE endpoint of the gateway: ``GET /servers/NAME/sse`` and its message POSTs.

A GET opens a session and its event stream; the first event, ``endpoint``, names where
the client POSTs its messages: mcptape's own ``/servers/NAME/messages?session_id=…``,
never the upstream's (when the upstream speaks SSE too, its own endpoint event is
recorded by the upstream link: both versions are in the recording). Everything the
server sends is a ``message`` event on the stream. The stream closing ends the session.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from aiohttp import web

from mcptape.proxy.http.bodies import read_body
from mcptape.proxy.http.downstream import SseSessionLink
from mcptape.proxy.http.sse import encode_event
from mcptape.proxy.link import LinkClosed
from mcptape.wire.frame import Frame

if TYPE_CHECKING:
    from mcptape.gateway.app import Gateway


async def sse_get(gateway: Gateway, request: web.Request) -> web.StreamResponse:
    """Open a legacy SSE session: the endpoint event, then every server message, until either side leaves."""
    from mcptape.gateway.app import error_response

    sid = secrets.token_hex(16)
    link = SseSessionLink(sid, path=request.path)
    session = await gateway.open_session(request, link, "sse")
    endpoint = f"/servers/{request.match_info['name']}/messages?session_id={sid}"
    link.stream.push_raw(encode_event(endpoint.encode(), event="endpoint"))
    if not await link.wait_started(5.0):
        return error_response(503, "the session did not start")
    link.emit("sse_endpoint", endpoint, {"endpoint": endpoint, "served_by": "mcptape"})
    try:
        return await gateway.pump(request, session, link.stream, 0, {})
    finally:
        link.client_gone("the client closed its SSE stream")


async def sse_post(gateway: Gateway, request: web.Request) -> web.StreamResponse:
    """One message of a legacy SSE session: delivered to the relay, answered 202 (replies go on the stream)."""
    from mcptape.gateway.app import error_response, not_json_rpc

    sid = request.query.get("session_id", "")
    session = gateway.sessions.get(sid)
    if session is None or not isinstance(session.link, SseSessionLink):
        return error_response(404, f"session {sid!r} does not exist (it ended or expired)")
    body = await read_body(request)
    frame = Frame(body, "c2s", meta=gateway.frame_meta(request, "sse-endpoint"))
    try:
        await session.link.receive(frame)
    except LinkClosed:
        return error_response(404, "the session is closing")
    if frame.kind == "malformed":
        return not_json_rpc(frame)  # recorded and passed on all the same
    return web.Response(status=202, text="Accepted")
