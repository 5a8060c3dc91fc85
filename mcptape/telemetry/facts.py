"""What a span needs from one JSON-RPC message: tool, prompt, resource, trace context, error.

Pure functions over parsed messages. A frame larger than
:data:`mcptape.wire.frame.KEEP_PARSED_BYTES` is never built whole (a 64 MiB tool result
parsed to learn whether ``isError`` is set would cost twice its size): :func:`slim`
reads only the members these functions look at, with :func:`mcptape.wire.scan.scan_members`.
Whatever a peer wrote, nothing here raises; a value of the wrong type is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from mcptape.wire.frame import parse
from mcptape.wire.handshake import META_PREFIX
from mcptape.wire.protocol import CANCELLED, INITIALIZE
from mcptape.wire.scan import TooComplex, scan_members

SMALL: Final = 64 << 10  # a member of a large frame is parsed only below this size
_TRACE_TEXT: Final = 512  # a traceparent or tracestate longer than this is no trace context
_WANTED: Final = frozenset(
    {"name", "uri", "_meta", "protocolVersion", "isError", "requestId", "code", "message"}
)
_TOP: Final = frozenset({"jsonrpc", "id", "method"})

# The methods whose request names a resource (conventions: mcp.resource.uri).
RESOURCE_METHODS: Final = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"}
)


@dataclass(slots=True)
class RequestFacts:
    """What a request or notification says that a span records."""

    tool: str | None = None
    prompt: str | None = None
    uri: str | None = None
    traceparent: str | None = None
    tracestate: str | None = None
    protocol_version: str | None = None
    jsonrpc: str | None = None
    cancels: Any = None  # notifications/cancelled: the requestId it cancels (parsed)


@dataclass(slots=True)
class ReplyFacts:
    """What an answer says: ``error_type`` (conventions: ``error.type``) and the JSON-RPC error."""

    error_type: str | None = None
    code: str | None = None
    message: str | None = None
    protocol_version: str | None = None


def _name(key: bytes) -> str | None:
    try:
        name = (
            json.loads(key.decode("utf-8", "replace"))
            if b"\\" in key
            else key[1:-1].decode("utf-8", "replace")
        )
    except ValueError:
        return None
    return name if isinstance(name, str) else None


def _small(value: bytes) -> Any:
    if len(value) > SMALL:
        return None
    parsed = parse(value)
    return None if parsed is None or type(parsed) is object else parsed


def _members(data: bytes) -> list[tuple[str | None, bytes]] | None:
    """The top-level members of a JSON object (name, value bytes); None when it is not one."""
    try:
        members = scan_members(data)
    except TooComplex:
        return None
    return None if members is None else [(_name(key), data[start:end]) for key, start, end in members]


def _slim_object(data: bytes) -> dict[str, Any] | None:
    """The members of a JSON object that the facts look at, each parsed if small."""
    members = _members(data)
    if members is None:
        return None
    return {name: _small(value) for name, value in members if name in _WANTED}


def slim(data: bytes) -> dict[str, Any] | None:
    """A large JSON-RPC message with only what the facts read: ``jsonrpc``, ``id``,
    ``method``, and the looked-at members of ``params``, ``result`` and ``error``."""
    members = _members(data)
    if members is None:
        return None
    out: dict[str, Any] = {}
    for name, value in members:
        if name in _TOP:
            out[name] = _small(value)
        elif name in ("params", "result", "error"):
            out[name] = _small(value) if len(value) <= SMALL else _slim_object(value)
    return out


def _text(value: Any, limit: int = _TRACE_TEXT) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


def request_facts(msg: Any) -> RequestFacts:
    """What a request or notification (a parsed, or slimmed, message) says."""
    facts = RequestFacts()
    if not isinstance(msg, dict):
        return facts
    if isinstance(msg.get("jsonrpc"), str):
        facts.jsonrpc = msg["jsonrpc"]
    method = msg.get("method")
    params = msg.get("params")
    if not isinstance(params, dict):
        return facts
    if method == "tools/call":
        facts.tool = _text(params.get("name"), 1024)
    elif method == "prompts/get":
        facts.prompt = _text(params.get("name"), 1024)
    elif method in RESOURCE_METHODS:
        facts.uri = _text(params.get("uri"), 8192)
    elif method == INITIALIZE:
        facts.protocol_version = _text(params.get("protocolVersion"), 64)
    elif method == CANCELLED:
        facts.cancels = params.get("requestId")
    meta = params.get("_meta")
    if isinstance(meta, dict):
        facts.traceparent = _text(meta.get("traceparent"))
        facts.tracestate = _text(meta.get("tracestate"))
        facts.protocol_version = facts.protocol_version or _text(
            meta.get(META_PREFIX + "protocolVersion"), 64
        )
    return facts


def reply_facts(msg: Any, method: str | None) -> ReplyFacts:
    """What an answer to a ``method`` request says: its error (``error.type`` is the JSON-RPC
    error code as text, ``tool_error`` for a tool result with ``isError``), the protocol
    version an ``initialize`` result settled on."""
    facts = ReplyFacts()
    if not isinstance(msg, dict):
        return facts
    error = msg.get("error")
    if "error" in msg:
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, int) and not isinstance(code, bool):
            facts.code = str(code)
        facts.error_type = facts.code or "_OTHER"
        message = error.get("message") if isinstance(error, dict) else None
        facts.message = _text(message, 1024)
        return facts
    result = msg.get("result")
    if not isinstance(result, dict):
        return facts
    if method == "tools/call" and result.get("isError") is True:
        facts.error_type = "tool_error"
    elif method == INITIALIZE:
        facts.protocol_version = _text(result.get("protocolVersion"), 64)
    return facts


def id_attribute(rpc_id: str | None) -> str | None:
    """``jsonrpc.request.id``: a string id as its value, any other as its JSON text; None for a null id."""
    if rpc_id is None or rpc_id == "null":
        return None
    if rpc_id.startswith('"'):
        try:
            value = json.loads(rpc_id)
        except ValueError:
            return rpc_id
        return value if isinstance(value, str) else rpc_id
    return rpc_id
