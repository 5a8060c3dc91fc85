"""Scenarios of the server's own features: the handshake at each revision, ping, tools, prompts,
completion and resources (read, subscribe, list_changed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcptape.client.errors import ApplicationError, HttpError, ProtocolError
from mcptape.client.methods import list_all, missing_capability
from mcptape.probe.context import Failed, NotOffered, Probe, short, text_of
from mcptape.wire import protocol as p

Check = Callable[[Probe], Awaitable[str]]


def handshake(version: str) -> Check:
    """Open a session at ``version`` (initialize, or server/discover from 2026-07-28) and use it."""

    async def check(probe: Probe) -> str:
        try:
            hello = await probe.open(version)
        except (ApplicationError, ProtocolError, HttpError) as exc:
            # A server that does not speak the revision refuses the handshake in its own words.
            if p.is_modern(version) and (exc.code is not None or isinstance(exc, HttpError)):
                raise NotOffered(f"{p.DISCOVER} refused: {short(exc.message, 60)}") from None
            raise
        if hello.protocol_version != version:
            raise NotOffered(f"answers {hello.protocol_version}")
        via = "discover" if hello.via == p.DISCOVER else p.INITIALIZE
        if missing_capability(p.TOOLS_LIST, hello.capabilities) is None:
            tools = await probe.tools()
            return f"{via} -> {version}; {len(tools)} tool{'s' * (len(tools) != 1)}"
        await probe.request(p.PING)
        return f"{via} -> {version}; ping answered"

    return check


async def ping(probe: Probe) -> str:
    result = await probe.request(p.PING)
    if result != {} and not (isinstance(result, dict) and set(result) <= {"_meta", "resultType"}):
        raise Failed(f"ping answered {short(repr(result), 60)}, not {{}}")
    return "answered {}"


async def tools_list(probe: Probe) -> str:
    """Every page of tools/list, each page well formed, no cursor twice."""
    probe.need_capability(p.TOOLS_LIST)
    pages, tools, cursors = 0, 0, set()
    params: dict[str, Any] | None = None
    while True:
        page = await probe.request(p.TOOLS_LIST, params)
        pages += 1
        if not isinstance(page, dict) or not isinstance(page.get("tools"), list):
            raise Failed(f"page {pages} has no tools list")
        bad = [t for t in page["tools"] if not isinstance(t, dict) or not isinstance(t.get("name"), str)]
        if bad:
            raise Failed(f"page {pages}: a tool without a name: {short(repr(bad[0]), 50)}")
        tools += len(page["tools"])
        cursor = page.get("nextCursor")
        if not cursor:
            return f"{tools} tools in {pages} page{'s' * (pages != 1)}"
        if cursor in cursors:
            raise Failed(f"cursor {short(str(cursor), 30)} came twice")
        cursors.add(cursor)
        params = {"cursor": cursor}


async def tool_call(probe: Probe) -> str:
    """get-sum(2, 3) is 5."""
    await probe.tool("get-sum", takes=("a", "b"))
    result = await probe.call_tool("get-sum", {"a": 2, "b": 3})
    if "5" not in text_of(result):
        raise Failed(f"get-sum(2, 3) answered {short(text_of(result), 50)!r}")
    return "get-sum(2, 3) = 5"


async def prompts(probe: Probe) -> str:
    """prompts/list, then prompts/get of the first prompt (required arguments filled in)."""
    probe.need_capability(p.PROMPTS_LIST)
    assert probe.session is not None
    listed = (await list_all(probe.session, p.PROMPTS_LIST, None))["prompts"]
    if not listed:
        raise NotOffered("the server lists no prompts")
    prompt = next((x for x in listed if not _required(x)), listed[0])
    arguments = {a["name"]: "1" for a in _required(prompt)}
    got = await probe.request(p.PROMPTS_GET, {"name": prompt["name"], "arguments": arguments})
    messages = got.get("messages") if isinstance(got, dict) else None
    if not isinstance(messages, list) or not messages:
        raise Failed(f"prompts/get {prompt['name']} answered no messages")
    return f"{len(listed)} prompts; got {prompt['name']}"


def _required(prompt: dict[str, Any]) -> list[dict[str, Any]]:
    arguments = prompt.get("arguments") or []
    return [a for a in arguments if isinstance(a, dict) and a.get("required") and "name" in a]


async def completion(probe: Probe) -> str:
    """completion/complete for the first argument of each prompt that has one, until values come."""
    probe.need_capability(p.COMPLETE)
    assert probe.session is not None
    listed = (await list_all(probe.session, p.PROMPTS_LIST, None))["prompts"] if _has_prompts(probe) else []
    targets = [x for x in listed if isinstance(x, dict) and x.get("arguments")]
    if not targets:
        raise NotOffered("no prompt with arguments to complete")
    values: list[Any] = []
    for target in targets:
        argument = target["arguments"][0]["name"]
        result = await probe.request(
            p.COMPLETE,
            {
                "ref": {"type": "ref/prompt", "name": target["name"]},
                "argument": {"name": argument, "value": ""},
            },
        )
        got = (result.get("completion") or {}).get("values") if isinstance(result, dict) else None
        if not isinstance(got, list):
            raise Failed(f"completion/complete answered no values: {short(repr(result), 50)}")
        values = got
        if values:
            break
    return f"{target['name']}.{argument}: {len(values)} value(s)"


def _has_prompts(probe: Probe) -> bool:
    return isinstance(probe.hello.capabilities.get("prompts"), dict)


async def _first_resource(probe: Probe) -> dict[str, Any]:
    probe.need_capability(p.RESOURCES_LIST)
    assert probe.session is not None
    listed = (await list_all(probe.session, p.RESOURCES_LIST, None))["resources"]
    found = next((r for r in listed if isinstance(r, dict) and isinstance(r.get("uri"), str)), None)
    if found is None:
        raise NotOffered("the server lists no resources")
    return found


async def resources_read(probe: Probe) -> str:
    resource = await _first_resource(probe)
    read = await probe.request(p.RESOURCES_READ, {"uri": resource["uri"]})
    contents = read.get("contents") if isinstance(read, dict) else None
    if not isinstance(contents, list) or not contents:
        raise Failed(f"resources/read {resource['uri']} answered no contents")
    return f"read {resource['uri']}"


async def resources_subscribe(probe: Probe) -> str:
    """Subscribe; an update comes (toggle-subscriber-updates makes one); unsubscribe; none comes."""
    probe.need_capability(p.RESOURCES_SUBSCRIBE)
    resource = await _first_resource(probe)
    uri = resource["uri"]
    await probe.request(p.RESOURCES_SUBSCRIBE, {"uri": uri})
    toggle = "toggle-subscriber-updates"
    try:
        await probe.tool(toggle)
    except NotOffered:
        await probe.request(p.RESOURCES_UNSUBSCRIBE, {"uri": uri})
        return "subscribed and unsubscribed (no toggle-subscriber-updates tool to make an update)"
    mark = len(probe.seen)
    await probe.call_tool(toggle, {})
    try:
        came = await probe.wait_for(lambda s: _updated(s.body, uri), min(6.0, probe.limit / 3), mark)
        if came is None:
            raise Failed(f"subscribed to {uri}: no notifications/resources/updated came")
        await probe.request(p.RESOURCES_UNSUBSCRIBE, {"uri": uri})
    finally:
        await probe.call_tool(toggle, {})
    return "an update came; unsubscribed"


def _updated(body: dict[str, Any], uri: str) -> bool:
    params = body.get("params") or {}
    return body.get("method") == "notifications/resources/updated" and params.get("uri") == uri


async def resources_list_changed(probe: Probe) -> str:
    """gzip-file-as-resource adds a resource: notifications/resources/list_changed, and it is listed."""
    probe.need_capability(p.RESOURCES_LIST)
    if not (probe.hello.capabilities.get("resources") or {}).get("listChanged"):
        raise NotOffered("no resources.listChanged capability")
    tool = "gzip-file-as-resource"
    await probe.tool(tool, takes=("name", "data"))
    mark = len(probe.seen)
    name = "mcptape-probe.txt.gz"
    await probe.call_tool(tool, {"name": name, "data": "data:text/plain;base64,bWNwdGFwZSBwcm9iZQ=="})
    came = await probe.wait_for(
        lambda s: s.body.get("method") == "notifications/resources/list_changed", 5.0, mark
    )
    if came is None:
        raise Failed(f"{tool} added a resource: no notifications/resources/list_changed came")
    assert probe.session is not None
    listed = (await list_all(probe.session, p.RESOURCES_LIST, None))["resources"]
    if not any(isinstance(r, dict) and str(r.get("uri", "")).endswith(name) for r in listed):
        raise Failed("list_changed came, but the new resource is not listed")
    return "list_changed came; the new resource listed"
