"""Answers to the server's requests (sampling, elicitation, roots) from the injection rules.

The rules are the proxy's (:mod:`mcptape.rules.rules`, one implementation for both). What no
rule answers is declined, captured for the output and said on stderr: an elicitation
gets ``{"action": "decline"}``, sampling the error the spec's examples use for a
refusal, anything else "method not found". ``ping`` is answered by the core itself.
The interactive clients (web and terminal) put a person between the rules and the
decline: :func:`asking_handler`.

2026-07-28 servers ask inside results instead (``resultType: "input_required"``):
:func:`request_with_input` answers each input request the same way and retries the
original request with ``inputResponses`` and the echoed ``requestState``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcptape.client.core import ClientCore, Reply, ServerRequest, ServerRequestHandler, handler_reply
from mcptape.client.errors import ApplicationError, ProtocolError
from mcptape.wire.protocol import ELICITATION, ROOTS_LIST, SAMPLING

if TYPE_CHECKING:
    from mcptape.rules.rules import Rules

ROOTS = ROOTS_LIST
MAX_INPUT_ROUNDS = 8
FLAG_FOR = {SAMPLING: "--handle-sampling", ELICITATION: "--handle-elicitation", ROOTS: "--roots"}


def decline(method: str) -> Reply:
    """What ``call`` answers a server request no rule answers."""
    if method == ELICITATION:
        return Reply(result={"action": "decline"}, by="default")
    if method == SAMPLING:
        return Reply(error={"code": -1, "message": "User rejected sampling request"}, by="default")
    return Reply(error={"code": -32601, "message": f"Method not found: {method}"}, by="default")


def rules_answer(rules: Rules | None, method: str, params: Any, tool: str | None) -> Reply | None:
    """What the first matching rule answers, or None when no rule does."""
    if not rules:
        return None
    from mcptape.rules.rules import RuleContext

    answer = rules.answer(method, params, RuleContext(tool_name=tool))
    if answer is None:
        return None
    if answer.kind == "error":
        return Reply(error=answer.error, by="rule")
    return Reply(result=answer.result, by="rule")


def _declined(method: str, warn: Callable[[str], None]) -> Reply:
    flag = FLAG_FOR.get(method)
    hint = f" (give {flag} to answer it)" if flag else ""
    warn(f"warning: the server sent {method}; declined{hint}")
    return decline(method)


def rules_handler(rules: Rules | None, warn: Callable[[str], None]) -> ServerRequestHandler:
    """A handler answering from ``rules`` first, declining (with a warning) what they leave."""

    def handle(method: str, params: Any, tool: str | None) -> Reply:
        return rules_answer(rules, method, params, tool) or _declined(method, warn)

    return handle


Ask = Callable[[str, Any, "str | None"], "Awaitable[Reply] | None"]
"""(method, params, tool in flight) -> a person's answer to come, or None when nobody can answer."""


def asking_handler(
    rules: Callable[[], Rules | None], ask: Ask, warn: Callable[[str], None]
) -> ServerRequestHandler:
    """The interactive clients' handler: the rules (as they are now: a person may change them)
    first, then a person (``ask``), then the decline ``call`` gives."""

    def handle(method: str, params: Any, tool: str | None) -> Reply | Awaitable[Reply]:
        by_rule = rules_answer(rules(), method, params, tool)
        if by_rule is not None:
            return by_rule
        asked = ask(method, params, tool)
        return asked if asked is not None else _declined(method, warn)

    return handle


async def request_with_input(
    core: ClientCore,
    method: str,
    params: Any,
    *,
    progress: bool = False,
    progress_token: str | int | None = None,
    sent: Callable[[int], None] | None = None,
) -> Any:
    """``core.request`` that answers 2026-07-28 ``input_required`` results and retries.

    ``sent`` learns the id of each request sent (the first and every retry).
    """
    current = params
    for _ in range(MAX_INPUT_ROUNDS):
        result = await core.request(
            method, current, progress=progress, progress_token=progress_token, sent=sent
        )
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            return result
        requests = result.get("inputRequests") or {}
        if not isinstance(requests, dict):
            raise ProtocolError(f"{method}: inputRequests is not an object: {requests!r}")
        responses: dict[str, Any] = {}
        for key, request in requests.items():
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise ProtocolError(f"{method}: input request {key!r} has no method")
            asked = request["method"]
            reply = await handler_reply(core.handler, asked, request.get("params"), core.tool_in_flight)
            core.server_requests.append(
                ServerRequest(asked, request.get("params"), reply.by, reply.result, reply.error)
            )
            if reply.error is not None:
                raise ApplicationError(
                    f"the server needs {asked} input that mcptape declined: {reply.error.get('message')}",
                    data={"inputRequest": request},
                )
            responses[key] = reply.result
        current = dict(current) if isinstance(current, dict) else {}
        current["inputResponses"] = responses
        if "requestState" in result:
            current["requestState"] = result["requestState"]
        else:
            current.pop("requestState", None)
    raise ProtocolError(f"{method}: the server still asked for input after {MAX_INPUT_ROUNDS} rounds")
