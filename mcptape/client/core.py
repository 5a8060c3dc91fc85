"""The client core: a JSON-RPC peer that speaks MCP to a server through the relay.

:class:`ClientCore` knows nothing of links, processes or the store: it writes frames
with the ``send`` coroutine it is given (in ``call``, the :class:`ClientLink` that
puts them into the relay, so they are recorded) and reads what the server sends with
:meth:`ClientCore.on_frame`. It keeps

- the connection state: disconnected → connecting → connected → disconnecting, or
  error, each change reported to ``on_state`` (``call --verbose`` prints them);
- its requests in flight, each waiting at most ``Timeouts.request`` since the last
  sign of life (a progress notification for it resets the clock) and never longer
  than ``Timeouts.request_max`` in all; a request that times out is cancelled with
  ``notifications/cancelled``;
- what the server said besides replies: log messages, other notifications and the
  requests it sent (answered by the ``handler``: injection rules or a decline, or, in
  the interactive clients, a person, so a handler may return an awaitable), for the
  output.

A request whose caller is cancelled (a person pressing "cancel", Ctrl-C) tells the
server with ``notifications/cancelled``, as a timeout does.

Negotiation (``initialize`` or ``server/discover``) is in :mod:`mcptape.client.negotiate`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from mcptape.client.errors import (
    ClientError,
    ConnectionLost,
    HttpError,
    ProtocolError,
    RequestTimeout,
    server_error,
)
from mcptape.wire.frame import Frame
from mcptape.wire.protocol import CANCELLED, PROGRESS

State = Literal["disconnected", "connecting", "connected", "disconnecting", "error"]
CONNECTION_CLOSED = -32000  # what the relay answers a request with when the server is gone
LOG_METHOD = "notifications/message"
PROGRESS_METHOD = PROGRESS


def encode_message(message: Any) -> bytes:
    """``message`` as compact JSON bytes.

    orjson refuses integers beyond 64 bits, which JSON allows and a user can pass in
    ``--params`` or ``--tool-arg``: those messages go out through ``json`` instead.
    """
    try:
        return orjson.dumps(message)
    except TypeError:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class Timeouts:
    """How long to wait: for the handshake, for a reply since the last progress, for a reply at all."""

    connect: float = 30.0
    request: float = 60.0
    request_max: float = 300.0


@dataclass
class Reply:
    """The answer to a server's request: a result or a JSON-RPC error, and who decided it."""

    result: Any = None
    error: dict[str, Any] | None = None
    by: str = "default"


ServerRequestHandler = Callable[[str, Any, "str | None"], "Reply | Awaitable[Reply]"]
"""(method, params, name of the tool call in flight) -> the reply to send, or an awaitable of it
(a person answers in the interactive clients)."""


def _failed(exc: Exception) -> Reply:
    # A broken rule or dialog must not end the session: the server gets an internal error.
    return Reply(error={"code": -32603, "message": f"mcptape: {exc}"}, by="error")


async def _settled(pending: Awaitable[Reply]) -> Reply:
    try:
        return await pending
    except Exception as exc:
        return _failed(exc)


async def handler_reply(handler: ServerRequestHandler, method: str, params: Any, tool: str | None) -> Reply:
    """What ``handler`` answers, awaited if it must be; a handler's failure is an internal error reply."""
    try:
        reply = handler(method, params, tool)
    except Exception as exc:
        return _failed(exc)
    return reply if isinstance(reply, Reply) else await _settled(reply)


@dataclass
class ServerRequest:
    """A request the server sent to the client, and what it was answered."""

    method: str
    params: Any
    answered_by: str
    result: Any = None
    error: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "params": self.params, "answeredBy": self.answered_by}
        if self.error is not None:
            out["error"] = self.error
        else:
            out["result"] = self.result
        return out


@dataclass
class _Pending:
    method: str
    future: asyncio.Future[Any]
    started: float
    last_activity: float
    progress_token: Any = None


def _decline_all(method: str, params: Any, tool: str | None) -> Reply:
    return Reply(error={"code": -32601, "message": f"mcptape call does not handle {method}"})


@dataclass
class ClientCore:
    """One MCP client connection's JSON-RPC state; see the module docstring."""

    send: Callable[[bytes], Awaitable[None]]
    handler: ServerRequestHandler = _decline_all
    timeouts: Timeouts = field(default_factory=Timeouts)
    on_state: Callable[[State, str], None] | None = None
    on_message: Callable[[str, Any], None] | None = None
    logs: list[Any] = field(default_factory=list)
    notifications: list[Any] = field(default_factory=list)
    server_requests: list[ServerRequest] = field(default_factory=list)
    state: State = "disconnected"
    meta: dict[str, Any] | None = None  # 2026-07-28: stamped into every request's params._meta
    tool_in_flight: str | None = None
    # Called when a request was refused at the HTTP level (401/403): True means "authorized
    # now, send it again" (OAuth on 401, mcptape.client.authflow).
    reauthorize: Callable[[HttpError], Awaitable[bool]] | None = None

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._last_id = 0
        self._pending: dict[str, _Pending] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.lost: str | None = None
        # What the server sent that answers nothing (not JSON-RPC, an id never asked):
        # said when a request then times out, since it is often why.
        self.strays = 0
        self.last_stray = ""

    # -- state ------------------------------------------------------------------------

    def set_state(self, state: State, detail: str = "") -> None:
        """Move to ``state`` and tell ``on_state``."""
        if state != self.state:
            self.state = state
            if self.on_state is not None:
                self.on_state(state, detail)

    # -- sending ----------------------------------------------------------------------

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(encode_message(message))

    def _params(self, params: Any, progress_token: Any) -> Any:
        if self.meta is None and progress_token is None:
            return params
        out = dict(params) if isinstance(params, dict) else {}
        meta = dict(out.get("_meta") or {})
        if self.meta is not None:
            meta = {**self.meta, **meta}
        if progress_token is not None:
            meta["progressToken"] = progress_token
        out["_meta"] = meta
        return out

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        progress: bool = False,
        limit: float | None = None,
        progress_token: str | int | None = None,
        sent: Callable[[int], None] | None = None,
    ) -> Any:
        """Send a request and return its result; raises a :class:`ClientError` on anything else.

        ``progress`` asks for progress notifications under the request's id as token, or
        under ``progress_token`` when given (a front end names its operation so).
        ``limit`` replaces both request timeouts (the handshake is bounded by the connect timeout).
        A request refused with an HTTP status is sent again (with a new id) while
        ``reauthorize`` says it got new credentials. ``sent`` learns each id used, once
        its request is out (``probe`` cancels a request by its id).
        """
        while True:
            try:
                return await self._request_once(method, params, progress, limit, progress_token, sent)
            except HttpError as exc:
                if self.reauthorize is None or not await self.reauthorize(exc):
                    raise

    def _enter(
        self, method: str, params: Any, progress: bool, progress_token: str | int | None = None
    ) -> tuple[int, _Pending, dict[str, Any]]:
        """A new request: its id, its entry among those in flight, its message."""
        rid = self._last_id = next(self._ids)
        token = progress_token if progress_token is not None else (rid if progress else None)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        params_sent = self._params(params, token)
        if params_sent is not None:
            message["params"] = params_sent
        now = time.monotonic()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        entry = self._pending[str(rid)] = _Pending(method, future, now, now, token)
        return rid, entry, message

    async def _request_once(
        self,
        method: str,
        params: Any,
        progress: bool,
        limit: float | None,
        progress_token: str | int | None,
        sent: Callable[[int], None] | None,
    ) -> Any:
        if self.lost is not None:
            raise ConnectionLost(self.lost)
        rid, entry, message = self._enter(method, params, progress, progress_token)
        limits = self.timeouts if limit is None else Timeouts(self.timeouts.connect, limit, limit)
        sent_it = False
        try:
            await self.send(encode_message(message))
            sent_it = True
            if sent is not None:
                sent(rid)
            return await self._wait(entry, rid, limits)
        except asyncio.CancelledError:
            if sent_it and self.lost is None:
                # The caller gave up (a person's "cancel"): the server may stop working on it.
                self._spawn(self._tell_cancelled(rid))
            raise
        finally:
            self._pending.pop(str(rid), None)

    async def request_batch(
        self, calls: list[tuple[str, Any]], *, limit: float | None = None
    ) -> list[Any | ClientError]:
        """Send ``calls`` (method, params) as one JSON-RPC batch (2025-03-26 only); each result or error.

        The answers may come as one batch or one by one; each request waits on its own.
        """
        if self.lost is not None:
            raise ConnectionLost(self.lost)
        entered = [self._enter(method, params, False) for method, params in calls]
        limits = self.timeouts if limit is None else Timeouts(self.timeouts.connect, limit, limit)
        try:
            await self.send(encode_message([message for _, _, message in entered]))
            waits = [self._wait(entry, rid, limits) for rid, entry, _ in entered]
            outcomes = await asyncio.gather(*waits, return_exceptions=True)
        finally:
            for rid, _, _ in entered:
                self._pending.pop(str(rid), None)
        out: list[Any | ClientError] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, ClientError):
                raise outcome
            out.append(outcome)
        return out

    async def _wait(self, entry: _Pending, rid: int, limits: Timeouts) -> Any:
        while True:
            now = time.monotonic()
            wait = min(entry.last_activity + limits.request, entry.started + limits.request_max) - now
            if wait <= 0:
                break
            try:
                return await asyncio.wait_for(asyncio.shield(entry.future), wait)
            except TimeoutError:
                continue
        waited = time.monotonic() - entry.started
        reason = f"no reply to {entry.method} after {waited:.1f} s"
        # Tell the server to stop working on it; the session goes on.
        with contextlib.suppress(Exception):  # the link may be gone: the timeout is what matters
            await self.notify(CANCELLED, {"requestId": rid, "reason": reason})
        raise RequestTimeout(reason + self.stray_note())

    async def _tell_cancelled(self, rid: int) -> None:
        # Often sent as the session ends (Ctrl-C): a closed link is no news then.
        with contextlib.suppress(Exception):
            await self.notify(CANCELLED, {"requestId": rid, "reason": "cancelled by the client"})

    # -- receiving --------------------------------------------------------------------

    def on_frame(self, frame: Frame) -> None:
        """Take one frame the server (or the relay) sent to the client. On the loop."""
        message = frame.message
        kind = frame.kind
        if kind == "malformed":
            self._stray(frame.data.decode("utf-8", "replace"))
        if kind == "batch" and isinstance(message, list):
            for item in message:
                self._one(item, frame.origin == "proxy")
        else:
            self._one(message, frame.origin == "proxy")

    def _one(self, message: Any, from_relay: bool) -> None:
        if not isinstance(message, dict):
            self.notifications.append({"malformed": message})
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._server_request(message["id"], method, message.get("params"))
            else:
                self._notification(method, message.get("params"))
            return
        key = _id_text(message.get("id"))
        entry = self._pending.get(key) if key is not None else None
        if entry is None or entry.future.done():
            if key is None or not key.isdigit() or int(key) > self._last_id:
                self._stray(f"a reply to id {key}, which was never asked")
            return  # else a late reply to a request that timed out
        if "error" in message:
            error = message["error"]
            if from_relay and isinstance(error, dict) and error.get("code") == CONNECTION_CLOSED:
                data = error.get("data")
                # An HTTP link answers a request the server refused at the HTTP level this way too.
                http = isinstance(data, dict) and isinstance(data.get("status"), int)
                cls = HttpError if http else ConnectionLost
                entry.future.set_exception(cls(str(error.get("message")), data=data))
            else:
                entry.future.set_exception(server_error(error))
        elif "result" in message:
            entry.future.set_result(message["result"])
        else:
            entry.future.set_exception(
                ProtocolError(f"a reply to {entry.method} with neither result nor error")
            )

    def _stray(self, text: str) -> None:
        self.strays += 1
        self.last_stray = text[:120] + ("..." if len(text) > 120 else "")

    def stray_note(self) -> str:
        """``; meanwhile the server sent N message(s) that answer nothing (the last: ...)``, or ``""``."""
        if not self.strays:
            return ""
        return f"; meanwhile the server sent {self.strays} message(s) that answer nothing (the last: {self.last_stray})"

    def _notification(self, method: str, params: Any) -> None:
        if method == PROGRESS_METHOD:
            token = params.get("progressToken") if isinstance(params, dict) else None
            now = time.monotonic()
            for entry in self._pending.values():
                if token is None or entry.progress_token == token or len(self._pending) == 1:
                    entry.last_activity = now
        note: dict[str, Any] = {"method": method, "params": params}
        if method == LOG_METHOD:
            self.logs.append(params)
        else:
            self.notifications.append(note)
        if self.on_message is not None:
            self.on_message("notification", note)

    def _server_request(self, rpc_id: Any, method: str, params: Any) -> None:
        if method == "ping":
            self._answer(rpc_id, method, params, Reply(result={}, by="mcptape"))
            return
        try:
            reply = self.handler(method, params, self.tool_in_flight)
        except Exception as exc:
            reply = _failed(exc)
        if isinstance(reply, Reply):
            self._answer(rpc_id, method, params, reply)
        else:  # someone is asked: the answer comes later, and other frames go on meanwhile
            self._spawn(self._answer_later(rpc_id, method, params, reply))

    async def _answer_later(self, rpc_id: Any, method: str, params: Any, pending: Awaitable[Reply]) -> None:
        self._answer(rpc_id, method, params, await _settled(pending))

    def _answer(self, rpc_id: Any, method: str, params: Any, reply: Reply) -> None:
        record = ServerRequest(method, params, reply.by, reply.result, reply.error)
        self.server_requests.append(record)
        if self.on_message is not None:
            self.on_message("serverRequest", record.as_dict())
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": rpc_id}
        if reply.error is not None:
            answer["error"] = reply.error
        else:
            answer["result"] = reply.result
        self._spawn(self._reply(encode_message(answer)))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reply(self, data: bytes) -> None:
        try:
            await self.send(data)
        except Exception as exc:  # the server is gone; its requests die with it
            self.lost = self.lost or f"cannot answer the server: {exc}"

    def connection_lost(self, why: str) -> None:
        """The server is gone: every request in flight fails with :class:`ConnectionLost`."""
        self.lost = self.lost or why
        for entry in list(self._pending.values()):
            if not entry.future.done():
                entry.future.set_exception(ConnectionLost(why))

    @property
    def in_flight(self) -> int:
        return len(self._pending)


def _id_text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def error_of(exc: BaseException) -> ClientError:
    """Any exception from an operation as a :class:`ClientError` (unexpected ones as protocol errors)."""
    if isinstance(exc, ClientError):
        return exc
    return ProtocolError(f"{type(exc).__name__}: {exc}")
