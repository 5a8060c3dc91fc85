"""Streamable HTTP upstream link: mcptape as the HTTP client of a remote MCP server (aiohttp).

Each frame the client sends is POSTed on its own, in order, with ``Accept:
application/json, text/event-stream``. The sender waits only for the response's
headers before the next POST, and :data:`HEADERS_WAIT_S` at most (a server holding them
back must not stall the session), except for ``initialize`` (what follows needs its
session id) and auto mode's first POST. Each body is read in a task of its own: a JSON
body is one frame, an SSE body is delivered event by event as it arrives. 202 (notifications, responses) has
no body. After ``notifications/initialized`` the GET stream is opened for messages the
server sends on its own (405: the server offers none); the next POST waits (a bounded
time) until that stream is open, so what the server sends there in answer to it is not
lost. ``Mcp-Session-Id`` and
``MCP-Protocol-Version`` are carried on every request once known; a 2026-07-28 request
(protocol version in its ``_meta``) carries ``Mcp-Method``/``Mcp-Name`` and no session
id unless the server minted one: mcptape forwards what the client speaks, never
upgrading or downgrading a session. A stream that ends (dropped or closed by the
server, SEP-1699) before its answers came, on whatever stream, is resumed with a GET
carrying the last ``Last-Event-ID`` it saw, after the server's SSE ``retry`` delay (a
minute at most, :data:`MAX_RETRY_S`); the GET stream is re-opened the same way. The
session is DELETEd on close.

Every frame's ``meta`` says how it came: ``http_method``, ``path``, ``status``, ``stream``
(``post`` or ``get``), ``event_id`` and the headers that matter (credentials redacted).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import urlsplit

from mcptape.proxy.http import sse
from mcptape.proxy.http.headers import (
    ACCEPT_BOTH,
    LAST_EVENT_ID,
    PROTOCOL_VERSION,
    SESSION_ID,
    lowered,
    media_type,
    routing_headers,
    that_matter,
)
from mcptape.proxy.http.sse import SseParser
from mcptape.proxy.http.upstream_base import (
    HEADERS_WAIT_S,
    LoopLink,
    request_ids,
    response_ids,
    unreachable,
)
from mcptape.redact import placeholder
from mcptape.wire.frame import Frame
from mcptape.wire.protocol import INITIALIZE, INITIALIZED

RESUME_ATTEMPTS = 5
DEFAULT_RETRY_S = 0.5
# The longest wait before resuming a stream, whatever the server's SSE ``retry`` asks: a
# ``retry: 999999999999999`` would hold the requests it carried for ever.
MAX_RETRY_S = 60.0
# How long the POST after notifications/initialized waits for the GET stream to open: a
# server that holds the GET's headers back must not stall the session.
GET_OPEN_WAIT_S = 2.0
MAX_ERROR_BODY = 1 << 20


class Fallback(Exception):
    """The server refused the first POST with a 4xx: it may speak legacy HTTP+SSE (auto mode)."""

    def __init__(self, status: int, frames: list[Frame]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.frames = frames


def speaks_json_rpc(body: bytes) -> bool:
    """Whether an HTTP error body is a JSON-RPC answer (what a streamable HTTP server sends)."""
    import orjson

    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    items = message if isinstance(message, list) else [message]
    return bool(items) and all(
        isinstance(m, dict) and m.get("jsonrpc") == "2.0" and ("error" in m or "result" in m) for m in items
    )


def error_said(body: bytes | None, reason: str | None = None) -> str | None:
    """What a JSON-RPC error body that answers none of our requests (``"id": null``) says, cut short.

    A 2025 server asked a 2026-07-28 request without a session answers ``400`` with
    ``{"error": {"message": "Bad Request: Server not initialized"}, "id": null}``: the
    error mcptape makes up in its place keeps those words (printable, one line, at most
    200 characters, without a leading repeat of the HTTP reason).
    """
    import orjson

    if not body:
        return None
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = message.get("error") if isinstance(message, dict) else None
    text = error.get("message") if isinstance(error, dict) else None
    if not isinstance(text, str):
        return None
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    if reason and text.lower().startswith(reason.lower() + ":"):
        text = text[len(reason) + 1 :].strip()
    if len(text) > 200:
        text = text[:199] + "…"
    return text or None


class HttpClientLink(LoopLink):
    """A streamable HTTP session with one remote server, as a :class:`~mcptape.proxy.link.Link`."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        name: str = "server",
        probe: bool = False,
        redact_names: tuple[str, ...] = (),
    ) -> None:
        super().__init__(url, headers, name)
        self.path = urlsplit(url).path or "/"
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.probe = probe  # auto mode: a 4xx on the first POST raises Fallback
        self.fallback: Fallback | None = None
        self.on_fallback: Any = None
        self.redact_names = redact_names
        self._initialize_ids: set[str] = set()
        self._get_started = False
        self._get_open: asyncio.Event | None = None
        # Requests POSTed and not answered yet, on any stream: a stream that ends is
        # resumed only while one it carried is still waiting.
        self._unanswered: set[str] = set()
        # probe's resumption check: drop the next POST stream after this many events with
        # an id, as a network would, so that the resumption below runs.
        self.cut_after: int | None = None
        self._deleted = False
        self.session_refused: str | None = None  # why the session the server minted cannot be used

    # -- sending ------------------------------------------------------------------------

    async def _run(self) -> None:
        first = True
        while True:
            frame = await self._queue.get()
            if frame is None:
                return
            if self._get_open is not None:
                # The server may send on the GET stream about this very request (elicitation
                # from a tool call): it must be open before the request is.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._get_open.wait(), GET_OPEN_WAIT_S)
                self._get_open = None
            try:
                await self._post(frame, first)
                if self._unreachable is not None:
                    return
            except Fallback as fallback:
                while not self._queue.empty():
                    more = self._queue.get_nowait()
                    if more is not None:
                        fallback.frames.append(more)
                self.fallback = fallback
                if self.on_fallback is not None:
                    self.on_fallback(fallback)
                return
            first = False

    def prepare(self, frame: Frame) -> dict[str, Any] | None:
        """How a client frame is about to be sent (for its record): the POST and the headers
        that matter, as they stand when the relay hands it over (credentials redacted)."""
        return {
            "http_method": "POST",
            "path": self.path,
            "stream": "post",
            "headers": lowered(that_matter(self._headers(frame).items(), self.redact_names)),
        }

    def _headers(self, frame: Frame) -> dict[str, str]:
        headers = {**self.headers, "Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
        if self.session_id is not None:
            headers[SESSION_ID] = self.session_id
        if self.protocol_version is not None:
            headers[PROTOCOL_VERSION] = self.protocol_version
        headers.update(routing_headers(frame.message))
        return headers

    async def _post(self, frame: Frame, first: bool) -> None:
        if frame.kind == "request" and frame.method == INITIALIZE and frame.rpc_id is not None:
            self._initialize_ids.add(frame.rpc_id)
        self._unanswered.update(request_ids(frame))
        # `initialize` and auto mode's first POST are waited for: what follows needs their
        # answer (the session id; whether this server speaks streamable HTTP at all).
        if (first and self.probe) or frame.method == INITIALIZE:
            await self._answered(frame, first)
            return
        # Others a bounded time: the task goes on and reads the body as soon as it comes.
        answered = self.spawn(self._answered(frame, first))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(answered), HEADERS_WAIT_S)

    async def _answered(self, frame: Frame, first: bool) -> None:
        """The rest of :meth:`_post`: send it and handle the response once its headers come."""
        import aiohttp

        if self.session_refused is not None and frame.method != INITIALIZE:
            await self.fail_request(frame, self.session_refused)
            return
        try:
            response = await self._http.post(self.url, data=frame.data, headers=self._headers(frame))
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            if first and self.probe:
                raise Fallback(0, [frame]) from exc
            why = unreachable(self.url, exc)
            self.emit("error", why, {"url": self.url})
            if not await self.give_up_unreached(why, [frame]):
                await self.fail_request(frame, why)
            return
        self.reached()
        self._learn_session(response)
        status = response.status
        if first and self.probe and 400 <= status < 500 and status not in (401, 403):
            body = await response.content.read(MAX_ERROR_BODY)
            # 405: no POST here at all, whatever the body says (mcptape's own legacy SSE
            # endpoint words its 405 as a JSON-RPC error).
            if status == 405 or not speaks_json_rpc(body):
                response.release()
                raise Fallback(status, [frame])
            # A JSON-RPC error (a 2025 server asked `server/discover`): a streamable HTTP
            # server refusing this request, not a legacy one; its answer goes to the client.
            self.spawn(self._error_body(frame, response, self._meta(response, "POST", "post"), body))
            return
        if frame.method == INITIALIZED and not self._get_started and status < 300:
            self._get_started = True
            self._get_open = asyncio.Event()
            self.spawn(self._get_stream(None, self._get_open))
        if status == 202 or (status < 300 and response.content_length == 0):
            response.release()
            return
        ctype = media_type(response.headers.get("Content-Type"))
        meta = self._meta(response, "POST", "post")
        if status >= 300:
            self.spawn(self._error_body(frame, response, meta))
        elif ctype == "text/event-stream":
            self.spawn(self._read_stream(response, meta, set(request_ids(frame))))
        else:
            self.spawn(self._json_body(frame, response, meta))

    def _learn_session(self, response: Any) -> None:
        sid = response.headers.get(SESSION_ID)
        # Only an accepted request opens a session: a Python SDK 1.x server answers a
        # 2026-07-28 `server/discover` with 400 and the id of a session it ends at once,
        # which would make the `initialize` that follows a 404.
        if sid and sid != self.session_id and response.status < 300:
            if not all("!" <= c <= "~" for c in sid):
                # The spec allows visible ASCII only; aiohttp writes no header with a control
                # character (it raised in the next request's task, which answered nothing).
                self.session_refused = (
                    f"the MCP server minted a session id ({placeholder(sid)}) with characters no HTTP "
                    "header may carry (visible ASCII only): no request can name that session"
                )
                self.emit("error", self.session_refused, {"url": self.url})
                return
            self.session_id = sid
            self.emit(
                "http_session",
                f"the server minted session {placeholder(sid)}",
                {"session_id": placeholder(sid), "url": self.url},
            )

    def _meta(self, response: Any, method: str, stream: str) -> dict[str, Any]:
        return {
            "http_method": method,
            "path": self.path,
            "status": response.status,
            "stream": stream,
            "headers": that_matter(response.headers.items(), self.redact_names),
        }

    def _learn_version(self, frame: Frame) -> None:
        # Later requests carry the negotiated version in MCP-Protocol-Version (2025-06-18+).
        if frame.kind == "response" and frame.rpc_id in self._initialize_ids:
            result = (frame.message or {}).get("result")
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                self.protocol_version = result["protocolVersion"]

    # -- receiving ----------------------------------------------------------------------

    async def _json_body(self, frame: Frame, response: Any, meta: dict[str, Any]) -> None:
        limit = sse.MAX_EVENT_BYTES
        buffer = bytearray()
        try:
            # Bounded like an SSE event: a body that never ends must not take all memory.
            async for chunk in response.content.iter_any():
                buffer += chunk
                if len(buffer) > limit:
                    response.close()
                    await self.fail_request(frame, f"the MCP server's response is larger than {limit} bytes")
                    return
        except Exception as exc:
            await self.fail_request(frame, f"the MCP server's response was cut: {exc}")
            return
        body = bytes(buffer)
        del buffer
        if not body.strip():
            await self.fail_request(frame, f"the MCP server answered HTTP {response.status} with no body")
            return
        received = Frame(body, "s2c", meta=meta)
        self._learn_version(received)
        await self.deliver(received)
        # A JSON body is the whole answer to the POST: what it left unanswered never will be
        # (an HTML page, {}, another id), and the client must not wait for its timeout.
        left = set(request_ids(frame)) & self._unanswered
        if left:
            ctype = response.headers.get("Content-Type") or "no Content-Type"
            shown = body[:120].decode("utf-8", "replace") + ("..." if len(body) > 120 else "")
            await self.fail_ids(
                left,
                f"the MCP server answered HTTP {response.status} ({ctype}) with no answer to it: {shown}",
            )

    async def _error_body(
        self, frame: Frame, response: Any, meta: dict[str, Any], body: bytes | None = None
    ) -> None:
        """4xx/5xx: a JSON-RPC error body answering the request is delivered; else one is made up
        (with what the body says, if it is a JSON-RPC error answering nothing)."""
        with contextlib.suppress(Exception):
            if body is None:
                body = await response.content.read(MAX_ERROR_BODY)
            reply = Frame(body, "s2c", meta=meta) if body.strip() else None
            wanted = set(request_ids(frame))
            if reply is not None and wanted and set(response_ids(reply)) & wanted:
                await self.deliver(reply)
                return
        response.release()
        if response.status == 404 and self.session_id is not None:
            gone = placeholder(self.session_id)
            self.emit("http_session_expired", f"the server no longer knows session {gone}", None)
        auth = response.headers.get("WWW-Authenticate")
        detail = {"status": response.status, **({"www_authenticate": auth} if auth else {})}
        said = error_said(body, response.reason)
        why = f"the MCP server answered HTTP {response.status} {response.reason}" + (
            f": {said}" if said else ""
        )
        await self.fail_request(frame, why, detail)

    async def deliver(self, frame: Frame) -> None:
        """Deliver a received frame; what it answers is no longer waited for on any stream."""
        if frame.kind != "request":
            self._unanswered.difference_update(response_ids(frame))
        await super().deliver(frame)

    async def _read_stream(self, response: Any, meta: dict[str, Any], waiting: set[str]) -> None:
        """Deliver an SSE stream event by event; resume it with Last-Event-ID when it ends early.

        A POST's stream is done once every request it carried is answered (on it or on
        another stream); the GET stream lasts the whole session. Either, ended by a drop
        or by the server closing it (SEP-1699), is resumed after the SSE ``retry`` delay
        with the last event id it saw.
        """
        parser = SseParser()
        retry = DEFAULT_RETRY_S
        attempts = 0
        stream = meta["stream"]
        resumed = False
        identified = 0
        while True:
            cut: str | None = None
            try:
                async for chunk in response.content.iter_any():
                    for event in parser.feed(chunk):
                        if event.retry is not None:
                            retry = event.retry / 1000
                        if event.event != "message" or not event.data:
                            continue
                        frame = Frame(event.data, "s2c", meta={**meta, "event_id": event.id})
                        self._learn_version(frame)
                        await self.deliver(frame)
                        attempts = 0
                        identified += event.id is not None
                        if stream == "post" and self.cut_after is not None and identified >= self.cut_after:
                            self.cut_after = None
                            response.close()
                            raise ConnectionResetError("cut by mcptape probe to check resumption")
                    if resumed and stream == "post" and not waiting & self._unanswered:
                        break  # the resumed stream brought the answers: done with it
            except Exception as exc:
                cut = str(exc) or type(exc).__name__
                self.emit(
                    "http_stream_dropped",
                    f"{stream} stream dropped: {cut}",
                    {"event_id": parser.last_event_id},
                )
            finally:
                response.release()
            waiting &= self._unanswered
            if (stream == "post" and not waiting) or not self._receiving or self._send_closed:
                return
            if (stream == "post" and parser.last_event_id is None) or attempts >= RESUME_ATTEMPTS:
                if stream == "post":
                    why = f"a response stream ended before answering {sorted(waiting)}" + (
                        f" ({cut})" if cut else ""
                    )
                    self.emit("http_stream_lost", why, None)
                    await self.fail_ids(
                        waiting & self._unanswered, "the MCP server's " + why.removeprefix("a ")
                    )
                return
            attempts += 1
            if retry > MAX_RETRY_S:
                self.emit(
                    "http_retry_capped",
                    f"the server asked to wait {retry:g} s before resuming the {stream} stream; "
                    f"mcptape waits {MAX_RETRY_S:g} s at most",
                    {"retry_s": retry},
                )
                retry = MAX_RETRY_S
            # SEP-1699: wait what the server asked (its last `retry`) before reconnecting.
            await asyncio.sleep(retry)
            if not self._receiving or self._send_closed:
                return
            waiting &= self._unanswered
            if stream == "post" and not waiting:
                return  # answered on another stream meanwhile
            again = await self._get(parser.last_event_id)
            if again is None:
                if stream == "post":
                    why = f"a response stream could not be resumed before answering {sorted(waiting)}"
                    self.emit("http_stream_lost", why, None)
                    await self.fail_ids(
                        waiting & self._unanswered, "the MCP server's " + why.removeprefix("a ")
                    )
                return
            response, resumed = again, True
            parser.reset()  # an event the dropped stream left half-sent is not glued to this one's
            meta = {**self._meta(response, "GET", stream), "resumed": True}

    async def _get(self, last_event_id: str | None) -> Any:
        import aiohttp

        headers = {**self.headers, "Accept": "text/event-stream"}
        if self.session_id is not None:
            headers[SESSION_ID] = self.session_id
        if self.protocol_version is not None:
            headers[PROTOCOL_VERSION] = self.protocol_version
        if last_event_id is not None:
            headers[LAST_EVENT_ID] = last_event_id
        try:
            response = await self._http.get(self.url, headers=headers)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self.emit("error", f"GET {self.url} failed: {exc}", None)
            return None
        if response.status != 200 or media_type(response.headers.get("Content-Type")) != "text/event-stream":
            response.release()
            if response.status != 405:
                self.emit("http_get_refused", f"GET stream refused: HTTP {response.status}", None)
            return None
        return response

    async def _get_stream(self, last_event_id: str | None, opened: asyncio.Event) -> None:
        try:
            response = await self._get(last_event_id)
        finally:
            opened.set()
        if response is not None:
            await self._read_stream(response, self._meta(response, "GET", "get"), set())

    async def _goodbye(self) -> None:
        if not self._deleted:
            await self.end_session()

    async def end_session(self) -> int | None:
        """DELETE the session now: the HTTP status, or None when there is no session to end.

        Called on close; ``probe`` calls it before, to check that the server forgets the session.
        """
        if self.session_id is None or self._http is None:
            return None
        self._deleted = True
        headers = {**self.headers, SESSION_ID: self.session_id}
        if self.protocol_version is not None:
            headers[PROTOCOL_VERSION] = self.protocol_version
        async with self._http.delete(self.url, headers=headers) as response:
            self.emit(
                "http_session_deleted",
                f"DELETE {self.path}: HTTP {response.status}",
                {"status": response.status},
            )
            return response.status
