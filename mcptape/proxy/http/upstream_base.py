"""What the HTTP upstream links share: a sender task on the loop fed from any thread, and delivery.

``send`` may be called from a stdio reader thread (``record --url``) or from the loop
(the gateway); frames go into a queue the link's sender task drains in order, so the
upstream sees them in the order the client sent them, and nothing blocks the loop.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Iterable
from typing import Any
from urllib.parse import urlsplit

from mcptape.proxy.link import Deliver, Ended, EventSink, LinkClosed, LinkEnd, LoopSideLink
from mcptape.wire.frame import Frame
from mcptape.wire.jsonrpc import error_response

# JSON-RPC "server error" range; the MCP SDKs use -32000 for a closed connection.
UPSTREAM_ERROR = -32000
CONNECT_TIMEOUT = 10.0
# How long the next POST waits for the response headers of the one before: long enough
# that the server has it first, while a server that holds them back (a JSON answer sent
# when the tool is done, or never) does not stall the session: the client's
# `notifications/cancelled` for that request and its other requests go on.
HEADERS_WAIT_S = 2.0


class CrossOriginRedirect(ConnectionError):
    """The server redirected a request to another origin (scheme, host or port): not followed.

    The request carries the headers given for this server (``--header``, a config entry's
    ``headers``: an API key, a cookie) and the client's messages; following the redirect
    would hand them to whoever the Location names. aiohttp drops only ``Authorization``
    there. A redirect within the origin (``/mcp`` to ``/mcp/``) is followed as before.
    """

    def __init__(self, target: str) -> None:
        super().__init__(
            f"it redirected to {target}, another origin: not followed, as the headers given for "
            "this server (its credentials) and the client's messages would go there too; "
            "give that URL if it is the server"
        )


_DEFAULT_PORTS = {"http": 80, "https": 443}


def same_origin(a: str, b: str) -> bool:
    """Whether two absolute URLs have one origin: scheme, host and port (a default port spelt or not)."""
    one, other = urlsplit(a), urlsplit(b)
    try:
        ports = (
            one.port or _DEFAULT_PORTS.get(one.scheme.lower()),
            other.port or _DEFAULT_PORTS.get(other.scheme.lower()),
        )
    except ValueError:  # a port that is not a number
        return False
    return (
        one.scheme.lower() == other.scheme.lower()
        and (one.hostname or "") == (other.hostname or "")
        and ports[0] == ports[1]
    )


async def _same_origin_only(_session: Any, _context: Any, params: Any) -> None:
    """aiohttp's ``on_request_redirect``: stop a redirect to another origin before it is followed."""
    from yarl import URL

    location = params.response.headers.get("Location")
    if not location:
        return  # aiohttp does not follow it either
    try:
        target = params.url.join(URL(location))
    except ValueError:
        return  # aiohttp refuses it itself (InvalidUrlRedirectClientError)
    if target.origin() != params.url.origin():
        raise CrossOriginRedirect(str(target))


def client_session(timeout: Any) -> Any:
    """The aiohttp session of an upstream link: redirects followed within the server's origin only."""
    import aiohttp

    trace = aiohttp.TraceConfig()
    trace.on_request_redirect.append(_same_origin_only)
    return aiohttp.ClientSession(timeout=timeout, trace_configs=[trace])


def unreachable(url: str, exc: BaseException) -> str:
    """Why the server at ``url`` could not be reached, in one sentence (aiohttp's words for some
    are empty, and others speak of ``ssl:default`` for a connection that was merely refused)."""
    import aiohttp

    head = f"cannot reach the MCP server at {url}"
    if isinstance(exc, CrossOriginRedirect):
        return f"{head}: {exc}"
    if isinstance(exc, aiohttp.TooManyRedirects):
        last = exc.history[-1].url if exc.history else url
        return f"{head}: it redirected {len(exc.history)} times without answering (the last time to {last}): a redirect loop?"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"{head}: the host name {exc.host} cannot be resolved"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"{head}: its TLS certificate was refused ({exc.certificate_error})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        where = f"{exc.host}:{exc.port}"
        if isinstance(exc.os_error, ConnectionRefusedError):
            return f"{head}: the connection to {where} was refused (is the server running, on that port?)"
        return f"{head}: cannot connect to {where}: {exc.os_error.strerror or exc.os_error}"
    if isinstance(exc, TimeoutError | aiohttp.ServerTimeoutError):
        return f"{head}: no answer to connecting within {CONNECT_TIMEOUT:g} s"
    return f"{head}: {type(exc).__name__}: {exc}"


class LoopLink(LoopSideLink, abc.ABC):
    """Base of the upstream links whose I/O runs on the event loop (aiohttp's client)."""

    def __init__(self, url: str, headers: dict[str, str] | None, name: str) -> None:
        super().__init__(name)
        self.url = url
        self.headers = dict(headers or {})
        self._queue: asyncio.Queue[Frame | None] = asyncio.Queue()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._error: str | None = None
        # The server answered at least once over HTTP; until then a connection that fails
        # means it cannot be reached at all (LinkEnd "unreachable": record exits 2).
        self._reached = False
        self._unreachable: str | None = None
        self._http: Any = None  # aiohttp.ClientSession, created on the loop

    # -- Link ---------------------------------------------------------------------------

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        import aiohttp

        super().start(deliver, ended, event)
        # No total timeout: an SSE stream legitimately stays open for hours.
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
        # auto_decompress stays on for us as a client: we parse what we receive.
        self._http = client_session(timeout)
        self.spawn(self._run())

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        if self._unreachable is not None:
            raise LinkClosed(self._unreachable)  # the relay answers it saying so
        if self._send_closed or self._end is not None or self._loop is None:
            raise LinkClosed(f"{self.name}: closed")
        if threading.get_ident() == self._loop_thread:
            self._queue.put_nowait(frame)
        else:
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, frame)
            except RuntimeError as exc:
                raise LinkClosed(f"{self.name}: closed") from exc
        return None

    def close_send(self) -> None:
        if not self._send_closed:
            self._send_closed = True
            if self._loop is not None:
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def aclose(self, grace: float) -> LinkEnd:
        if self._end is not None:
            return self._end
        self.close_send()
        if self._unreachable is not None:
            self._end = LinkEnd("unreachable", None, self._unreachable)
        else:
            self._end = LinkEnd("error" if self._error else "closed", None, self._error)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._goodbye(), grace + 0.5)
        self.stop_receiving()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self._http is not None:
            with contextlib.suppress(Exception):
                await self._http.close()
        self._ended("stopped")
        return self._end

    # -- for subclasses -----------------------------------------------------------------

    @abc.abstractmethod
    async def _run(self) -> None:
        """Talk to the server until the link ends (each transport's own protocol)."""

    async def _goodbye(self) -> None:
        """What to tell the server when the session ends (DELETE for streamable HTTP)."""

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _ended(self, why: str) -> None:
        """Receiving ended for good (the relay hears it once); frames still in hand may follow."""
        if not self._has_ended and self._ended_cb is not None:
            self._has_ended = True
            self._ended_cb(why)

    async def deliver(self, frame: Frame) -> None:
        """Hand one received frame to the relay and wait while it asks to."""
        if not self._receiving or self._deliver is None:
            return
        pending = self._deliver(frame)
        if pending is not None:
            await pending

    def reached(self) -> None:
        """The server answered over HTTP (any status): it can be reached."""
        self._reached = True

    async def give_up_unreached(self, why: str, frames: Iterable[Frame] = ()) -> bool:
        """After a connection failure: if the server never answered, the link ends as
        ``unreachable`` (``frames`` and whatever is queued get ``why`` as their error) and
        True is returned; False when it answered before (a failure of one request)."""
        if self._reached:
            return False
        self._unreachable = self._error = why
        for frame in frames:
            await self.fail_request(frame, why)
        while not self._queue.empty():
            queued = self._queue.get_nowait()
            if queued is not None:
                await self.fail_request(queued, why)
        self._ended(f"error: {why}")
        return True

    async def fail_request(self, frame: Frame, message: str, data: object = None) -> None:
        """A request the server will never answer gets a JSON-RPC error so the client does not hang."""
        await self.fail_ids(request_ids(frame), message, data)

    async def fail_ids(self, rpc_ids: Iterable[str], message: str, data: object = None) -> None:
        """:meth:`fail_request` for requests named by their ids."""
        for rpc_id in sorted(rpc_ids):
            answer = error_response(rpc_id, UPSTREAM_ERROR, f"mcptape: {message}", data)
            await self.deliver(Frame(answer, "s2c", "proxy", meta={"upstream_error": message}))


def request_ids(frame: Frame) -> list[str]:
    """The ids of the requests in a frame (one, or each request of a batch)."""
    from mcptape.wire.frame import classify_message

    if frame.kind == "request" and frame.rpc_id is not None:
        return [frame.rpc_id]
    if frame.kind == "batch":
        out = []
        for item in frame.message or ():
            c = classify_message(item)
            if c.kind == "request" and c.rpc_id is not None:
                out.append(c.rpc_id)
        return out
    return []


def response_ids(frame: Frame) -> list[str]:
    """The ids answered by a frame (a response, an error, or those in a batch)."""
    from mcptape.wire.frame import classify_message

    if frame.kind in ("response", "error") and frame.rpc_id is not None:
        return [frame.rpc_id]
    if frame.kind == "batch":
        return [
            c.rpc_id
            for c in (classify_message(item) for item in frame.message or ())
            if c.kind in ("response", "error") and c.rpc_id is not None
        ]
    return []
