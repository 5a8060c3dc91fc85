"""Message summaries: what an MCP request, notification or result carries, in a few words.

Pure functions over parsed JSON-RPC values, used by `mcptape show` for its timeline
lines: ``summarize_request`` for requests and notifications, ``summarize_result`` for
results (knowing the method of the request answered), and the helpers they share.
"""

from __future__ import annotations

from typing import Any, Final

from mcptape.wire.protocol import CANCELLED, DISCOVER, ELICITATION, INITIALIZE, PROGRESS, ROOTS_LIST, SAMPLING

_MAX_PIECE: Final = 400  # a summary is one line; no need to render megabytes to cut them
_LISTS: Final = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    ROOTS_LIST: "roots",
    "tasks/list": "tasks",
}
# What a list result holds, in words: (one, several).
_NOUNS: Final = {
    "tools": ("tool", "tools"),
    "prompts": ("prompt", "prompts"),
    "resources": ("resource", "resources"),
    "resourceTemplates": ("resource template", "resource templates"),
    "roots": ("root", "roots"),
    "tasks": ("task", "tasks"),
}


def count_of(n: int, one: str, several: str | None = None) -> str:
    """``1 tool``, ``2 tools``, ``0 tools``: a count with its noun in the right number."""
    return f"{n} {one if n == 1 else (several or one + 's')}"


def compact(value: Any, limit: int = _MAX_PIECE) -> str:
    """Compact JSON of ``value`` (strings as they are), at most about ``limit`` characters."""
    import orjson

    if isinstance(value, str):
        return value[:limit]
    return orjson.dumps(value, default=str).decode()[:limit]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def without_meta(params: Any) -> Any:
    """``params`` without ``_meta``, which in 2026-07-28 repeats the handshake in every request."""
    if isinstance(params, dict) and "_meta" in params:
        return {k: v for k, v in params.items() if k != "_meta"}
    return params


def content_text(content: Any) -> str:
    """The first readable part of MCP content: text, or the type of the first block."""
    blocks = content if isinstance(content, list) else [content]
    for block in blocks:
        block = _dict(block)
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return block["text"][:_MAX_PIECE]
    if blocks and isinstance(blocks[0], dict):
        return f"<{blocks[0].get('type', '?')}>"
    return ""


def summarize_request(method: str | None, params: Any) -> str:
    """What a request or notification asks for or tells, in a few words."""
    p = _dict(params)
    if method == "tools/call":
        return f"{p.get('name')} {compact(p.get('arguments', {}))}"
    if method == INITIALIZE:
        info = _dict(p.get("clientInfo"))
        return f"{p.get('protocolVersion')} client {info.get('name')} {info.get('version', '')}".rstrip()
    if method == "notifications/message":
        logger = f" {p['logger']}:" if p.get("logger") else ""
        return f"{p.get('level')}{logger} {compact(p.get('data'))}"
    if method == PROGRESS:
        total = f"/{p['total']}" if "total" in p else ""
        message = f" {p['message']}" if p.get("message") else ""
        return f"{p.get('progress')}{total}{message} (token {compact(p.get('progressToken'))})"
    if method == CANCELLED:
        return f"request {compact(p.get('requestId'))} {p.get('reason', '')}".rstrip()
    if method in ("resources/read", "resources/subscribe", "notifications/resources/updated"):
        return str(p.get("uri"))
    if method == "prompts/get":
        return f"{p.get('name')} {compact(p.get('arguments', {}))}"
    if method == ELICITATION:
        return str(p.get("message", ""))[:_MAX_PIECE]
    if method == SAMPLING:
        messages = p.get("messages") or [{}]
        return (
            f"{count_of(len(messages), 'message')}, last: {content_text(_dict(messages[-1]).get('content'))}"
        )
    rest = without_meta(params)
    return compact(rest) if rest else ""


def summarize_result(method: str | None, detail: str | None, result: Any) -> str:
    """What a result says, knowing the method (and tool name) of the request it answers."""
    r = _dict(result)
    if method == "tools/call":
        prefix = f"{detail}: " if detail else ""
        if r.get("isError"):
            return f"{prefix}isError: {content_text(r.get('content'))}"
        if "structuredContent" in r:
            return f"{prefix}{compact(r['structuredContent'])}"
        return f"{prefix}{content_text(r.get('content'))}"
    if method in (INITIALIZE, DISCOVER):
        info = _dict(r.get("serverInfo") or _dict(r.get("_meta")).get("io.modelcontextprotocol/serverInfo"))
        version = r.get("protocolVersion") or ",".join(r.get("supportedVersions") or [])
        return f"server {info.get('name')} {info.get('version', '')} ({version})"
    if method in _LISTS and isinstance(r.get(_LISTS[method]), list):
        items = r[_LISTS[method]]
        key = "uri" if method == ROOTS_LIST else "name"
        names = ", ".join(str(_dict(i).get(key) or _dict(i).get("uri")) for i in items[:8])
        more = ", ..." if len(items) > 8 else ""
        return f"{count_of(len(items), *_NOUNS[_LISTS[method]])}: {names}{more}"
    if method == "resources/read":
        contents = [_dict(c) for c in r.get("contents") or []]
        return ", ".join(f"{c.get('uri')} ({c.get('mimeType', '?')})" for c in contents[:3])
    if method == SAMPLING:
        return f"{r.get('model')}: {content_text(r.get('content'))}"
    if method == ELICITATION:
        return f"{r.get('action')} {compact(r.get('content', ''))}".rstrip()
    rest = without_meta(result)
    return compact(rest) if rest else "ok"
