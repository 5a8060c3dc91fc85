"""Scenarios where the server asks the client: sampling, elicitation (form and URL), roots, and
2026-07-28's multi-round-trip requests (``input_required``, retried with ``inputResponses``)."""

from __future__ import annotations

from typing import Any

from mcptape.client.errors import ApplicationError, ClientError, HttpError, ProtocolError
from mcptape.probe.answers import CHANGED_ROOT_URI, FORM_NAME, ROOT_URI, SAMPLED
from mcptape.probe.context import Failed, NotOffered, Probe, failure_of, short, text_of
from mcptape.wire import protocol as p

URL = "https://example.com/mcptape-probe"


async def _asking(probe: Probe, tool: str, arguments: dict[str, Any], method: str, mode: str | None) -> Any:
    """Call a tool that asks the client ``method``; a failure says whether the question ever came."""
    before = probe.answers.count(method, mode)
    try:
        result = await probe.call_tool(tool, arguments)
    except (ClientError, Failed) as exc:
        if probe.answers.count(method, mode) == before:
            detail = failure_of(exc) if isinstance(exc, ClientError) else str(exc)
            raise Failed(f"no {method} reached the client; {detail}") from None
        raise
    if probe.answers.count(method, mode) == before:
        raise Failed(f"{tool} answered, but no {method} reached the client")
    return result


def _how(probe: Probe) -> str:
    return "as input_required" if p.is_modern(probe.revision) else "as a request"


async def sampling(probe: Probe) -> str:
    tool = "trigger-sampling-request"
    await probe.tool(tool, "listed to clients that declare sampling", takes=("prompt",))
    result = await _asking(probe, tool, {"prompt": "mcptape probe", "maxTokens": 16}, p.SAMPLING, None)
    if SAMPLED not in text_of(result):
        raise Failed(f"the client's answer did not reach the server: {short(text_of(result), 50)!r}")
    return f"asked {_how(probe)}; the answer went back"


async def elicitation_form(probe: Probe) -> str:
    probe.need_revision("2025-06-18")
    tool = "trigger-elicitation-request"
    await probe.tool(tool, "listed to clients that declare elicitation")
    result = await _asking(probe, tool, {}, p.ELICITATION, "form")
    if FORM_NAME not in text_of(result):
        raise Failed(f"the filled-in form did not reach the server: {short(text_of(result), 50)!r}")
    return f"form asked {_how(probe)}; answers went back"


async def elicitation_url(probe: Probe) -> str:
    probe.need_revision("2025-11-25")
    tool = "trigger-url-elicitation"
    await probe.tool(tool, "listed to clients that declare elicitation.url", takes=("url",))
    result = await _asking(probe, tool, {"url": URL}, p.ELICITATION, "url")
    if URL not in text_of(result):
        raise Failed(f"the acceptance did not reach the server: {short(text_of(result), 50)!r}")
    return f"URL asked {_how(probe)}; accepted"


async def roots(probe: Probe) -> str:
    """get-roots-list shows the client's root; after roots/list_changed it shows the new one."""
    tool = "get-roots-list"
    await probe.tool(tool, "listed to clients that declare roots")
    result = await _asking_roots(probe, tool)
    if ROOT_URI not in text_of(result):
        raise Failed(f"{tool} does not show the client's root: {short(text_of(result), 50)!r}")
    probe.answers.roots = [{"uri": CHANGED_ROOT_URI, "name": "changed"}]
    asked = probe.answers.count(p.ROOTS_LIST)
    mark = len(probe.seen)
    assert probe.session is not None
    await probe.session.core.notify("notifications/roots/list_changed")
    came = await probe.wait_for(
        lambda s: s.kind == "serverRequest" and s.body.get("method") == p.ROOTS_LIST, 5.0, mark
    )
    if came is None or probe.answers.count(p.ROOTS_LIST) == asked:
        raise Failed("after notifications/roots/list_changed the server did not ask roots/list again")
    result = await probe.call_tool(tool, {})
    if CHANGED_ROOT_URI not in text_of(result):
        raise Failed(f"{tool} does not show the changed root: {short(text_of(result), 50)!r}")
    return "the root, then the changed root"


async def _asking_roots(probe: Probe, tool: str) -> Any:
    # server-everything asks roots/list by itself just after the handshake, or when the tool runs.
    result = await probe.call_tool(tool, {})
    if probe.answers.count(p.ROOTS_LIST) == 0:
        raise Failed(f"{tool} answered, but no roots/list reached the client")
    return result


ASKING_TOOLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("trigger-elicitation-request", {}),
    ("trigger-sampling-request", {"prompt": "mcptape probe", "maxTokens": 16}),
)


async def input_required(probe: Probe) -> str:
    """2026-07-28: a tool that needs input answers input_required; the retry with inputResponses completes."""
    version = p.MODERN_REVISIONS[0]
    try:
        hello = await probe.open(version)
    except (ApplicationError, ProtocolError, HttpError) as exc:
        if exc.code is not None or isinstance(exc, HttpError):
            raise NotOffered(f"no {version}: {short(exc.message, 50)}") from None
        raise
    if hello.protocol_version != version:
        raise NotOffered(f"answers {hello.protocol_version}")
    names = {t.get("name") for t in await probe.tools()}
    chosen = next(((tool, args) for tool, args in ASKING_TOOLS if tool in names), None)
    if chosen is None:
        raise NotOffered("no tool that asks for input (" + ", ".join(t for t, _ in ASKING_TOOLS) + ")")
    tool, arguments = chosen
    ids: list[int] = []
    result = await probe.call_tool(tool, arguments, sent=ids.append)
    if len(ids) < 2:
        raise Failed(f"{tool} answered without asking for input: {short(text_of(result), 50)!r}")
    return f"{tool}: input_required, {len(ids) - 1} retry"
