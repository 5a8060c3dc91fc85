"""The injector addon: mcptape answers the server's requests to the client from injection rules.

- A server request (``sampling/createMessage``, ``elicitation/create``, ``roots/list``,
  or any method a rules file names) that a rule answers gets ``flow.respond(...)`` or
  ``flow.respond_error(...)``: the answer goes back to the server (recorded with origin
  ``proxy``), and the request never reaches the client. No rule: it passes as before.
- 2026-07-28 has no server requests: a ``tools/call``, ``prompts/get`` or
  ``resources/read`` result with ``resultType: "input_required"`` asks for input
  instead. When the rules answer every input request, the injector holds that result,
  retries the call itself (:meth:`Relay.request`: a new id, ``requestState`` echoed
  verbatim, ``inputResponses`` filled) as many rounds as the server asks, and sends
  the client only the final answer under its own id. A round the rules cannot answer
  fully goes to the client (under its id) without the requests the rules answer; when
  the client retries (recognised by the round's ``requestState``), mcptape adds its
  answers to the retry's ``inputResponses``, an edit recorded beside the client's frame.
- ``declare``: when the client did not declare a capability the rules serve
  (sampling, elicitation, roots), the handshake forwarded to the server declares it
  (``initialize``'s ``capabilities``; 2026-07-28's per-request ``_meta``), a proxy
  edit recorded beside the original.

Put the injector AFTER the recorder in the addon list: it decides in ``frame`` (the
recorder has no such hook) and starts a retry in ``frame_done``, once the recorder has
recorded the result that the retry answers.

Rules see the tool name of the client's ``tools/call`` in flight when there is exactly
one (stdio carries no link between a server request and the call that caused it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import threading
from typing import TYPE_CHECKING, Any

import orjson

from mcptape.proxy.addonmanager import Flow, Outcome, SessionContext
from mcptape.proxy.link import LinkClosed
from mcptape.rules.rules import Answer, RuleContext, Rules
from mcptape.wire.frame import Frame, id_key
from mcptape.wire.jsonrpc import error_response, result_response
from mcptape.wire.protocol import INITIALIZE

if TYPE_CHECKING:
    from mcptape.proxy.relay import Relay

# Client methods whose results may be input_required (2026-07-28).
INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
CAPS_META = "io.modelcontextprotocol/clientCapabilities"
MAX_ROUNDS = 16  # a server that never stops asking is handed to the client


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class Injector:
    """Answers server requests (and 2026-07-28 input requests) from :class:`Rules`."""

    def __init__(self, rules: Rules, *, declare: bool = False) -> None:
        self.rules = rules
        self.declare = declare
        self.relay: Relay | None = None
        self._caps = rules.capabilities() if declare else {}
        self._lock = threading.Lock()
        self._calls: dict[str, Frame] = {}  # client requests in flight that may ask for input
        self._tools: dict[str, str | None] = {}  # the tools/call among them: id key -> tool name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[concurrent.futures.Future[None]] = set()
        # input_required results held by the frame hook, retried from frame_done
        self._held: dict[int, tuple[Frame, dict[str, Any], dict[str, Any], RuleContext]] = {}
        # rounds the client completes: requestState -> the answers mcptape adds to its retry
        self._partial: dict[str, dict[str, Any]] = {}

    def use_relay(self, relay: Relay) -> None:
        """Give the relay that carries the session (needed to retry input_required calls)."""
        self.relay = relay

    # -- hooks ---------------------------------------------------------------------

    async def session_start(self, session: SessionContext) -> None:
        self._loop = asyncio.get_running_loop()

    async def session_end(self, session: SessionContext, outcome: Outcome) -> None:
        for task in list(self._tasks):
            task.cancel()

    def frame(self, flow: Flow) -> None:
        if not self.rules:
            return
        frame = flow.frame
        kind = frame.kind
        if frame.direction == "c2s":
            if kind == "request":
                self._client_request(flow)
        elif kind == "request":
            self._server_request(flow, frame.method or "", frame.message, frame.text())
        elif kind == "batch":
            for i, item in enumerate(frame.message or ()):
                if isinstance(item, dict) and isinstance(item.get("method"), str) and "id" in item:
                    self._server_request(flow, item["method"], item, _dumps(item).decode(), i)
        elif kind in ("response", "error") and frame.rpc_id is not None:
            self._client_answered(flow)

    # -- server requests ----------------------------------------------------------------

    def _server_request(
        self, flow: Flow, method: str, message: Any, text: str, item: int | None = None
    ) -> None:
        params = message.get("params") if isinstance(message, dict) else None
        answer = self.rules.answer(method, params, RuleContext(self._tool_in_flight(), text))
        if answer is not None:
            _apply(flow, answer, item)

    def _tool_in_flight(self) -> str | None:
        with self._lock:
            if len(self._tools) != 1:
                return None
            return next(iter(self._tools.values()))

    # -- client requests ----------------------------------------------------------------

    def _client_request(self, flow: Flow) -> None:
        frame = flow.frame
        if frame.method in INPUT_METHODS and frame.rpc_id is not None:
            key = id_key(frame.rpc_id)
            with self._lock:
                self._calls[key] = frame
                if frame.method == "tools/call":
                    self._tools[key] = _tool_name(frame)
        edited = declare_capabilities(frame.message, self._caps) if self._caps else None
        if self._partial and frame.method in INPUT_METHODS:
            edited = self._complete_retry(edited or frame.message) or edited
        if edited is not None:
            flow.replace(_dumps(edited))
            if frame.method in INPUT_METHODS and frame.rpc_id is not None:
                with self._lock:  # retries are built from what the server saw
                    self._calls[id_key(frame.rpc_id)] = Frame(_dumps(edited), "c2s", "proxy")

    def _complete_retry(self, message: Any) -> dict[str, Any] | None:
        """The client's retry of a round mcptape answered in part, with mcptape's answers added."""
        params = message.get("params") if isinstance(message, dict) else None
        state = params.get("requestState") if isinstance(params, dict) else None
        if not isinstance(state, str):
            return None
        with self._lock:
            ours = self._partial.pop(state, None)
        if ours is None:
            return None
        assert isinstance(params, dict)
        theirs = params.get("inputResponses")
        merged = {**ours, **(theirs if isinstance(theirs, dict) else {})}
        return {**message, "params": {**params, "inputResponses": merged}}

    def _for_client(self, result: dict[str, Any], context: RuleContext) -> dict[str, Any] | None:
        """An input_required round for the client without the requests the rules answer.

        None when the rules answer none of them, or the round has no ``requestState`` to
        recognise the client's retry by. Called on the thread delivering the result.
        """
        state = result.get("requestState")
        requests = result.get("inputRequests")
        if not isinstance(state, str) or not isinstance(requests, dict):
            return None
        ours = self.rules.answer_some_input_requests(requests, context)
        if not ours:
            return None
        with self._lock:
            self._partial[state] = ours
        return {**result, "inputRequests": {k: v for k, v in requests.items() if k not in ours}}

    def _client_answered(self, flow: Flow) -> None:
        frame = flow.frame
        with self._lock:
            key = id_key(frame.rpc_id or "")
            call = self._calls.pop(key, None)
            self._tools.pop(key, None)
        if call is None or frame.kind != "response" or b"input_required" not in frame.data:
            return
        result = (frame.message or {}).get("result")
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            return
        context = RuleContext(_tool_name(call) if call.method == "tools/call" else None)
        responses = self.rules.answer_input_requests(result.get("inputRequests") or {}, context)
        if responses is None or self.relay is None or self._loop is None:
            trimmed = self._for_client(result, context)
            if trimmed is not None:  # the client answers the rest, mcptape adds its answers to the retry
                flow.replace(_dumps({**frame.message, "result": trimmed}))
            return
        flow.hold()
        with self._lock:
            self._held[id(flow)] = (call, result, responses, context)

    def frame_done(self, flow: Flow) -> None:
        if not self._held or not flow.held:
            return
        with self._lock:
            retry = self._held.pop(id(flow), None)
        if retry is None or self._loop is None:
            return
        # Started once the held result is recorded (the recorder's frame_done ran before
        # ours), so the retry follows it in the recording.
        future = asyncio.run_coroutine_threadsafe(self._retry(*retry), self._loop)
        self._tasks.add(future)
        future.add_done_callback(self._tasks.discard)

    async def _retry(
        self, call: Frame, result: dict[str, Any], responses: dict[str, Any], context: RuleContext
    ) -> None:
        """Retry ``call`` with the rules' answers until the server gives a final answer.

        Whatever goes wrong, the client is not left waiting: it gets the last round
        the server gave (it can answer that itself), or the relay's error when the
        server is gone.
        """
        assert self.relay is not None and call.rpc_id is not None
        try:
            await self._rounds(call, result, responses, context)
        except (LinkClosed, ConnectionError):
            return  # the relay answers the client's pending request when the server is gone
        except Exception as exc:
            self.relay.emit("error", f"injector: retrying {call.method} failed: {type(exc).__name__}: {exc}")
            data = result_response(call.rpc_id, result)
            with contextlib.suppress(LinkClosed):
                await self.relay.send(Frame(data, "s2c", "proxy"))

    async def _rounds(
        self, call: Frame, result: dict[str, Any], responses: dict[str, Any], context: RuleContext
    ) -> None:
        assert self.relay is not None and call.rpc_id is not None
        message = call.message
        method = call.method or ""
        params = dict(message.get("params") or {}) if isinstance(message, dict) else {}
        reply: Frame | None = None
        for _ in range(MAX_ROUNDS):
            params["inputResponses"] = responses
            if "requestState" in result:
                params["requestState"] = result["requestState"]
            else:
                params.pop("requestState", None)
            reply = await self.relay.request("c2s", method, params)
            reply_message = reply.message if isinstance(reply.message, dict) else {}
            result = reply_message.get("result")  # type: ignore[assignment]
            if not isinstance(result, dict) or result.get("resultType") != "input_required":
                break
            answered = self.rules.answer_input_requests(result.get("inputRequests") or {}, context)
            if answered is None:
                break  # the client answers this round and retries itself
            responses = answered
        if reply is None:
            return
        final = reply.message if isinstance(reply.message, dict) else {}
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            # a round the rules cannot complete: the client answers it, mcptape adds its part
            data = result_response(call.rpc_id, self._for_client(result, context) or result)
        elif "result" in final:
            data = result_response(call.rpc_id, final["result"])
        else:
            got = final.get("error")
            error: dict[str, Any] = got if isinstance(got, dict) else {}
            data = error_response(
                call.rpc_id, error.get("code", -32603), error.get("message", ""), error.get("data")
            )
        with contextlib.suppress(LinkClosed):
            await self.relay.send(Frame(data, "s2c", "proxy"))


def _apply(flow: Flow, answer: Answer, item: int | None) -> None:
    if answer.kind == "result":
        flow.respond(answer.result, item=item)
    else:
        error = answer.error or {}
        flow.respond_error(
            int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"), item=item
        )


def _tool_name(frame: Frame) -> str | None:
    message = frame.message
    params = message.get("params") if isinstance(message, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


def declare_capabilities(message: Any, caps: dict[str, Any]) -> dict[str, Any] | None:
    """``message`` with ``caps`` added where the client declares its capabilities; None if nothing is missing.

    ``initialize`` declares them in ``params.capabilities``; 2026-07-28 requests in
    ``params._meta["io.modelcontextprotocol/clientCapabilities"]``.
    """
    if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
        return None
    params = message["params"]
    if message.get("method") == INITIALIZE and isinstance(params.get("capabilities"), dict):
        added = _missing(params["capabilities"], caps)
        if added:
            return {**message, "params": {**params, "capabilities": {**params["capabilities"], **added}}}
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get(CAPS_META), dict):
        added = _missing(meta[CAPS_META], caps)
        if added:
            new_meta = {**meta, CAPS_META: {**meta[CAPS_META], **added}}
            return {**message, "params": {**params, "_meta": new_meta}}
    return None


def _missing(declared: dict[str, Any], caps: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in caps.items() if name not in declared}
