"""Streamable HTTP pass-through: an HTTP client in front of an HTTP upstream, request for request.

When both sides speak streamable HTTP the gateway does not run the MCP session
itself: each request goes to the upstream as it came (hop-by-hop headers dropped,
``Host`` set for the upstream, the gateway's own token removed), and the response
comes back as it is: status (202, 400, 401, 404 for an expired session, 405), the
upstream's ``Mcp-Session-Id``, ``WWW-Authenticate``, and the body streamed chunk by
chunk as it arrives, never buffered nor decompressed (``Accept-Encoding`` is not
forwarded, so a copy can be parsed for the recording); an answer with a header no HTTP
response may carry (a control character in it) is a 502 saying so. One recorded session per
upstream session id (per client connection when there is none).

Upstream requests go through :class:`~mcptape.gateway.passthrough_client.UpstreamClient`
(aiohttp's, kept-alive connections, exactly the client's end-to-end headers, nothing added); each answer's
bytes are written to the client before its copy is parsed and queued for the recorder,
which never makes forwarding wait unless the store is ~100 ms behind.

OAuth: a 401's ``WWW-Authenticate`` and the protected-resource metadata pass through,
with their ``resource_metadata`` URL and ``resource`` field pointed at the gateway (an
OAuth client rejects a document naming another origin): the one edit, recorded as an
event. Tokens are never minted or swapped.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
from aiohttp import web

from mcptape.assemble import Session, SessionPlan, StoreSource, assemble
from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.passthrough_client import UpstreamClient, UpstreamError
from mcptape.gateway.responses import http_error
from mcptape.gateway.sealed import Sealed, Sealer, open_passed_through
from mcptape.gateway.security import without_token
from mcptape.proxy.addonmanager import Outcome
from mcptape.proxy.flow import Flow
from mcptape.proxy.http.bodies import read_body
from mcptape.proxy.http.headers import SESSION_ID, end_to_end, expand_headers, media_type, that_matter
from mcptape.proxy.http.sse import SseParser
from mcptape.redact import placeholder
from mcptape.wire.frame import Frame

MAX_JSON_COPY = 64 << 20
# What aiohttp refuses to write in a header (it raises once the response is half begun).
_FORBIDDEN_IN_HEADERS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def upstream_headers(
    client: Iterable[tuple[str, str]], token: str | None, configured: dict[str, str]
) -> list[tuple[str, str]]:
    """The client's headers as sent upstream: end-to-end only, no ``Accept-Encoding``, the
    gateway's ``token`` gone from wherever it was (see :func:`~mcptape.gateway.security.without_token`),
    the config entry's headers in place of the client's of the same name. Repeated headers
    stay repeated."""
    headers = without_token(end_to_end(client, ("accept-encoding",)), token)
    if configured:
        names = {name.lower() for name in configured}
        headers = [(k, v) for k, v in headers if k.lower() not in names]
        headers.extend(configured.items())
    return headers


def _unwritable(headers: Iterable[tuple[str, str]]) -> str | None:
    """Why an upstream's answer cannot be forwarded: a header aiohttp read but writes no such."""
    bad = next((k for k, v in headers if _FORBIDDEN_IN_HEADERS.search(k + v)), None)
    if bad is None:
        return None
    return f"the upstream's answer has a control character in its {bad!r} header: not forwarded"


class _HeadersWithFirstChunk(web.StreamResponse):
    """A response whose headers leave with its first body chunk: one write less per answer.

    Only for POST answers: the upstream itself sent its headers with its first event.
    A GET stream keeps sending headers at once (a client waits for them before any event).
    """

    _send_headers_immediately = False


MAX_PASSED_SESSIONS = 10_000  # ~11 KB each: a gateway follows at most this many at once


@dataclass(eq=False)
class PassSession:
    session: Session  # assembled without links: frames are handed to its addons here
    last_active: float
    busy: int = 0  # requests of it in flight (a GET stream may last the whole session)


def metadata_url(resource_url: str) -> str:
    """The protected-resource metadata URL of a resource (RFC 9728 §3.1: well-known prefix, then the path)."""
    parts = urlsplit(resource_url)
    return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN + parts.path.rstrip("/"), "", ""))


def rewrite_www_authenticate(value: str, upstream_url: str, gateway_url: str) -> str:
    """Point a ``resource_metadata`` parameter naming the upstream's document at the gateway's."""
    return value.replace(metadata_url(upstream_url), metadata_url(gateway_url))


def rewrite_resource(body: bytes, gateway_url: str) -> bytes | None:
    """A protected-resource document with ``resource`` set to the gateway's URL; None if not one."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict) or "resource" not in document:
        return None
    document["resource"] = gateway_url
    return orjson.dumps(document)


class PassThrough:
    """Forwards streamable HTTP requests to HTTP upstreams, recording the frames that cross."""

    def __init__(
        self,
        store: StoreSource,
        redact_names: tuple[str, ...],
        *,
        otlp: str | None = None,
        sealer: Sealer | None = None,
        replica: Callable[[], str] | None = None,
        max_sessions: int = MAX_PASSED_SESSIONS,
    ) -> None:
        self.store = store
        self.max_sessions = max_sessions
        self.otlp = otlp
        self.redact_names = redact_names
        # A fleet: client-facing session ids are the upstream's sealed (any replica opens them).
        self.sealer = sealer
        self.replica = replica
        # Least recently used first: a session used again moves to the end.
        self.sessions: dict[str, PassSession] = {}
        self._http: UpstreamClient | None = None

    def _client(self) -> UpstreamClient:
        if self._http is None:
            self._http = UpstreamClient(connect_timeout=10.0)
        return self._http

    def _session(
        self,
        key: str,
        name: str,
        spec: UpstreamSpec,
        conversation: str | None = None,
        held: list[PassSession] | None = None,
    ) -> PassSession:
        """The session ``key`` names, opened if new; ``held``: in flight until the request ends."""
        session = self.sessions.pop(key, None)
        if session is not None:
            self.sessions[key] = session  # the most recently used now
        else:
            if len(self.sessions) >= self.max_sessions:
                self._let_go_of_one()
            plan = SessionPlan(
                "proxy",
                "http->http",
                spec.describe(),
                name=name,
                store=self.store,
                otlp=self.otlp,
                replica=self.replica() if self.replica is not None else None,
                conversation_id=conversation,
            )
            session = self.sessions[key] = PassSession(assemble(plan), time.monotonic())
        session.last_active = time.monotonic()
        if held is not None:
            session.busy += 1
            held.append(session)
        return session

    def _let_go_of_one(self) -> None:
        """Memory stays bounded whatever clients do (most never DELETE, and each INIT opens a
        session): the least recently used session with nothing in flight ends, as if idle. A
        later request in it opens a new recorded session; the upstream's own is untouched."""
        for key, session in self.sessions.items():
            if not session.busy:
                self.end(
                    key, "closed", f"the least recently used of {self.max_sessions} sessions followed at once"
                )
                return

    def end(self, key: str, status: str, why: str) -> None:
        session = self.sessions.pop(key, None)
        if session is not None:
            session.session.event("http_session_closed", why, None)
            ended_by = "client" if status == "closed" else "signal"
            session.session.end(Outcome(status, None, None, ended_by=ended_by))

    async def forward(
        self, request: web.Request, name: str, spec: UpstreamSpec, token: str | None, gateway_url: str
    ) -> web.StreamResponse:
        """Forward one request and its answer, recording both (in flight meanwhile: neither
        the idle sweep nor the bound ends a session while its stream is open)."""
        held: list[PassSession] = []
        try:
            return await self._forward(request, name, spec, token, gateway_url, held)
        finally:
            for session in held:
                session.busy -= 1
                session.last_active = time.monotonic()  # idle from when its last stream ended

    async def _forward(
        self,
        request: web.Request,
        name: str,
        spec: UpstreamSpec,
        token: str | None,
        gateway_url: str,
        held: list[PassSession],
    ) -> web.StreamResponse:
        assert spec.url is not None
        http = self._http or self._client()
        body = await read_body(request) if request.method == "POST" else None
        headers = upstream_headers(request.headers.items(), token, expand_headers(spec.headers))
        client_sid = key_sid = request.headers.get(SESSION_ID)
        conversation: str | None = None
        if self.sealer is not None and client_sid is not None:
            opened = open_passed_through(self.sealer, client_sid, name)
            if isinstance(opened, str):
                return http_error(404, opened)
            upstream_sid = key_sid = opened.upstream_sid or ""
            conversation = opened.conversation
            headers = [(k, upstream_sid if k.lower() == "mcp-session-id" else v) for k, v in headers]
        meta = {
            "http_method": request.method,
            "path": request.path,
            "stream": "post" if body is not None else "get",
        }
        received = time.time()
        waits: list[Awaitable[Any]] = []

        def record_request(session: PassSession) -> None:
            if body is not None and body.strip():
                headers_meta = that_matter(request.headers.items(), self.redact_names)
                c2s = Frame(body, "c2s", ts=received, meta={**meta, "headers": headers_meta})
                pending = session.session.addons.run_frame(Flow(c2s), decide=False)
                if pending is not None:
                    waits.append(pending)

        # A request in a known session is recorded while the upstream works on it; the one
        # that opens a session (the id comes with the answer) once the answer is there.
        # A session id the gateway has not seen: if the upstream refuses it, its session ends
        # with this answer (a client naming ids at random kept a session open for each).
        claimed = bool(key_sid) and f"{name}:{key_sid}" not in self.sessions
        known = self._session(f"{name}:{key_sid}", name, spec, conversation, held) if key_sid else None
        upstream = await http.request(
            request.method,
            spec.url,
            headers,
            body,
            sent=(lambda: record_request(known)) if known is not None else None,
        )
        sid = key_sid or upstream.head.get(SESSION_ID) or None
        key = f"{name}:{sid}" if sid else f"{name}:conn-{id(request.transport)}"
        if sid and not key_sid and self.sealer is not None:
            conversation = uuid.uuid4().hex  # a new session: every replica's rows of it share this
        session = known or self._session(key, name, spec, conversation, held)
        recorded = session.session
        if sid and not key_sid:
            hidden = placeholder(sid)  # a session id opens the session: recorded like a token
            recorded.event("http_session", f"the server minted session {hidden}", {"session_id": hidden})
        if known is None:
            record_request(session)
        for wait in waits:  # back-pressure: only when the store is ~100 ms behind
            await wait
        out_headers = end_to_end(upstream.headers)
        if self.sealer is not None:
            out_headers = self._sealed_headers(out_headers, name, key_sid, client_sid, conversation)
        edited = []
        for i, (k, v) in enumerate(out_headers):
            if k.lower() == "www-authenticate" and "resource_metadata" in v:
                new = rewrite_www_authenticate(v, spec.url, gateway_url)
                if new != v:
                    out_headers[i] = (k, new)
                    edited.append(("www-authenticate", v, new))
        why = _unwritable(out_headers)
        if why is not None:
            upstream.release()
            recorded.event("error", why, None)
            return http_error(502, why)
        kind = _HeadersWithFirstChunk if request.method == "POST" else web.StreamResponse
        response = kind(status=upstream.status, reason=upstream.reason, headers=out_headers)
        for _, old, new in edited:
            recorded.event("proxy_edit", "WWW-Authenticate resource_metadata", {"from": old, "to": new})
        s2c_meta = {
            **meta,
            "status": upstream.status,
            "headers": that_matter(upstream.headers, self.redact_names),
        }
        await response.prepare(request)
        ctype = media_type(upstream.head.get("Content-Type"))
        parser = SseParser() if ctype == "text/event-stream" else None
        copy = bytearray()
        overflowed = False
        try:
            while True:
                chunk, last = await upstream.next_chunk()
                # The bytes go out first (the last ones with the end of the response, in one
                # write); the copy is parsed and recorded after.
                if last:
                    await response.write_eof(chunk)
                else:
                    await response.write(chunk)
                if parser is not None:
                    try:
                        events = parser.feed(chunk)
                    except ValueError as exc:
                        # The client still gets every byte; the recording says what it lacks.
                        recorded.event("error", f"not recorded from here on: {exc}", None)
                        parser, events, overflowed = None, [], True
                    for event in events:
                        if event.event == "message" and event.data:
                            frame = Frame(event.data, "s2c", meta={**s2c_meta, "event_id": event.id})
                            pending = recorded.addons.run_frame(Flow(frame), decide=False)
                            if pending is not None:
                                await pending
                elif not overflowed:
                    if len(copy) + len(chunk) > MAX_JSON_COPY:
                        # A cut copy would be recorded as a malformed frame the server never sent.
                        overflowed, copy = True, bytearray()
                        recorded.event(
                            "error",
                            f"an answer larger than {MAX_JSON_COPY} bytes was forwarded whole but not recorded",
                            None,
                        )
                    else:
                        copy += chunk
                if last:
                    break
            if parser is None and copy.strip() and ctype == "application/json":
                pending = recorded.addons.run_frame(
                    Flow(Frame(bytes(copy), "s2c", meta=s2c_meta)), decide=False
                )
                if pending is not None:
                    await pending
        except UpstreamError as exc:
            # Too late for a 502: the client's stream is cut as the upstream cut ours.
            recorded.event("error", f"the upstream's answer broke off: {exc}", None)
            if request.transport is not None:
                request.transport.abort()
            return response
        finally:
            upstream.release()
        await response.write_eof()
        if request.method == "DELETE" and upstream.status < 300:
            self.end(key, "closed", "the client deleted the session")
        elif upstream.status == 404 and key_sid:
            self.end(key, "closed", "the server no longer knows this session (404)")
        elif claimed and upstream.status >= 400:
            self.end(key, "closed", f"the server refused the session id the client named ({upstream.status})")
        return response

    def _sealed_headers(
        self,
        headers: list[tuple[str, str]],
        name: str,
        upstream_sid: str | None,
        client_sid: str | None,
        conversation: str | None,
    ) -> list[tuple[str, str]]:
        """The answer's ``Mcp-Session-Id`` sealed: the client's own id again for the session it
        named, a new sealed id for a session the upstream just opened."""
        assert self.sealer is not None
        out = []
        for k, v in headers:
            if k.lower() == "mcp-session-id":
                if v == upstream_sid and client_sid is not None:
                    v = client_sid
                else:
                    v = self.sealer.seal(Sealed(name, conversation or uuid.uuid4().hex, upstream_sid=v))
            out.append((k, v))
        return out

    async def protected_resource(
        self, spec: UpstreamSpec, gateway_url: str, session_key: str
    ) -> web.Response:
        """The upstream's protected-resource metadata, its ``resource`` pointed at the gateway."""
        assert spec.url is not None
        http = self._http or self._client()
        upstream = await http.request("GET", metadata_url(spec.url), [("Accept", "application/json")], None)
        read = bytearray()
        try:
            # Held whole to be rewritten: bounded as a recorded answer's copy is.
            async for chunk in upstream.chunks():
                read += chunk
                if len(read) > MAX_JSON_COPY:
                    return http_error(
                        502,
                        f"the upstream's protected-resource metadata is larger than {MAX_JSON_COPY} bytes: not forwarded",
                    )
        finally:
            upstream.release()
        body = bytes(read)
        del read
        headers = dict(end_to_end(upstream.headers, ["content-encoding"]))
        why = _unwritable(headers.items())
        if why is not None:
            return http_error(502, why)
        rewritten = rewrite_resource(body, gateway_url) if upstream.status == 200 else None
        if rewritten is not None and session_key:
            session = self._session(session_key, spec.name, spec)
            edit = {"from": orjson.loads(body)["resource"], "to": gateway_url}
            session.session.event("proxy_edit", "protected-resource resource", edit)
        return web.Response(
            status=upstream.status, body=rewritten if rewritten is not None else body, headers=headers
        )

    def sweep(self, idle_timeout: float) -> None:
        now = time.monotonic()
        for key, session in list(self.sessions.items()):
            if not session.busy and now - session.last_active > idle_timeout:
                self.end(key, "closed", f"idle for more than {idle_timeout:g} s")

    async def close(self, reason: str) -> None:
        for key in list(self.sessions):
            self.end(key, "interrupted", f"the gateway stopped ({reason})")
        if self._http is not None:
            await self._http.close()
