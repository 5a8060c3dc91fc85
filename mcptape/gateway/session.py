"""One streamable HTTP session's verbs, when the gateway runs the session itself: POST, GET, DELETE.

The MCP Python SDK's ``streamable_http.py`` is the model (the session manager beside it
is :mod:`mcptape.gateway.manager`). A POST that opens a session (``initialize``, or a
batch) gets a session id minted here; a POST without one from a 2026-07-28 client goes
to the stateless pool; a POST carrying requests is answered on an SSE stream that ends
with its last answer. GET opens the session's stream for what the server sends outside
a request (or resumes any stream from ``Last-Event-ID``); DELETE ends the session.
:func:`pump` writes a stream's events to a response, for this module and the legacy
SSE endpoint alike.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from aiohttp import web

from mcptape.gateway.manager import GatewaySession, SessionManager
from mcptape.gateway.responses import SSE_HEADERS, batch_too_large, http_error, not_json_rpc, primes
from mcptape.proxy.http.bodies import read_body
from mcptape.proxy.http.downstream import EventStream, HttpSessionLink
from mcptape.proxy.http.headers import SESSION_ID, accepts, that_matter
from mcptape.proxy.link import LinkClosed
from mcptape.wire.frame import Frame
from mcptape.wire.protocol import INITIALIZE


def frame_meta(request: web.Request, stream: str, redact_names: tuple[str, ...]) -> dict[str, Any]:
    """How a client frame came: the HTTP request's method, path, stream and the headers that matter."""
    return {
        "http_method": request.method,
        "path": request.path,
        "stream": stream,
        "headers": that_matter(request.headers.items(), redact_names),
    }


async def pump(
    request: web.Request,
    gateway_session: GatewaySession,
    stream: EventStream,
    after: int,
    headers: dict[str, str],
) -> web.StreamResponse:
    """Write ``stream``'s events after number ``after`` to an SSE response until the stream ends."""
    response = web.StreamResponse(status=200, headers={**SSE_HEADERS, **headers})
    await response.prepare(request)
    # A client that stops reading while it holds the upstream back is cut (see eventstream).
    stream.attach(request.transport.abort if request.transport is not None else None)
    gateway_session.streams_open += 1
    ended = False
    try:
        # A request's stream usually closes with its answer: the answer and the end of
        # the response then leave in one write.
        ended = await stream.pump(response.write, after, response.write_eof)
    except ConnectionResetError:
        pass  # the client went away: the events stay in the stream for Last-Event-ID
    finally:
        stream.detach()
        gateway_session.streams_open -= 1
        gateway_session.link.last_active = time.monotonic()
    if not ended:
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
    return response


class StreamableSessions:
    """The streamable HTTP verbs of the sessions a :class:`SessionManager` holds."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager

    async def post(self, request: web.Request, name: str, forward_auth: str | None) -> web.StreamResponse:
        manager = self.manager
        body = await read_body(request)
        frame = Frame(body, "c2s", meta=frame_meta(request, "post", manager.config.redact_names))
        if (refused := batch_too_large(frame)) is not None:
            return refused
        routed: Frame | None = None  # a pool's: the frame as the upstream gets it
        sid = request.headers.get(SESSION_ID)
        headers: dict[str, str] = {}
        if sid is not None:
            existing = manager.named(sid, forward_auth)
            if (
                existing is None
                or not isinstance(existing.link, HttpSessionLink)
                or existing.stateless
                or existing.name != name
            ):
                return http_error(404, manager.unknown(sid, name))
            gateway_session = existing
        elif frame.method == INITIALIZE or frame.kind == "batch":
            sid = manager.mint_sid(name)
            headers[SESSION_ID] = sid
            gateway_session = manager.open(
                name, HttpSessionLink(sid, path=request.path), "http", forward_auth
            )
        elif frame.kind == "malformed":
            return not_json_rpc(frame)  # no session to record it in, and no server started for it
        else:
            taken = manager.stateless(name, frame, request.path, forward_auth, id(request.transport))
            if taken is None:
                return web.Response(status=202)  # a cancellation sure of no request: passed to nobody
            gateway_session, routed = taken
        link = gateway_session.link
        assert isinstance(link, HttpSessionLink)
        try:
            stream = await link.post(frame, headers, prime=primes(request, frame), routed=routed)
        except LinkClosed:
            if not gateway_session.stateless:
                return http_error(404, "the session is closing")
            # That pool session is ending (idle, its upstream died): a fresh one takes the request.
            gateway_session.closing = True
            taken = manager.stateless(name, frame, request.path, forward_auth, id(request.transport))
            if taken is None:
                return web.Response(status=202)
            gateway_session, routed = taken
            link = gateway_session.link
            assert isinstance(link, HttpSessionLink)
            try:
                stream = await link.post(frame, headers, prime=primes(request, frame), routed=routed)
            except LinkClosed:
                return http_error(502, "the upstream session ended before it took the request")
        if stream is None:
            if frame.kind == "malformed":
                return not_json_rpc(frame, headers)  # recorded and passed on all the same
            return web.Response(status=202, headers=headers)
        return await pump(request, gateway_session, stream, 0, headers)

    async def get(self, request: web.Request, forward_auth: str | None) -> web.StreamResponse:
        gateway_session = self._existing(request, forward_auth)
        if isinstance(gateway_session, web.Response):
            return gateway_session
        link = gateway_session.link
        assert isinstance(link, HttpSessionLink)
        if not accepts(request.headers.get("Accept"), "text/event-stream"):
            return http_error(406, "a GET stream needs Accept: text/event-stream")
        last = request.headers.get("Last-Event-ID")
        if last is not None:
            found = link.resume(last)
            if found is None:
                return http_error(404, f"no stream has event {last!r}")
            return await pump(request, gateway_session, found[0], found[1], {})
        if link.get_stream.attached:
            return http_error(409, "this session already has a GET stream open")
        return await pump(request, gateway_session, link.get_stream, link.get_stream.delivered, {})

    async def delete(self, request: web.Request, forward_auth: str | None) -> web.StreamResponse:
        gateway_session = self._existing(request, forward_auth)
        if isinstance(gateway_session, web.Response):
            return gateway_session
        self.manager.end(gateway_session.sid, "the client deleted the session")
        return web.Response(status=200)

    def _existing(self, request: web.Request, forward_auth: str | None) -> GatewaySession | web.Response:
        """The session the request's ``Mcp-Session-Id`` names (for its credential), or the error to answer."""
        sid = request.headers.get(SESSION_ID)
        if sid is None:
            return http_error(400, "Mcp-Session-Id header required")
        gateway_session = self.manager.named(sid, forward_auth)
        name = request.match_info.get("name", "")
        if (
            gateway_session is None
            or not isinstance(gateway_session.link, HttpSessionLink)
            or gateway_session.name != name
        ):
            return http_error(404, self.manager.unknown(sid, name))
        if not gateway_session.link.taking:
            # Its upstream died (or it is ending): a POST is told so; a GET or a DELETE too,
            # not a stream that ends at once.
            return http_error(404, "the session is closing")
        return gateway_session
