"""One MCP operation and the span and metric attributes the OpenTelemetry MCP conventions give it.

Followed: the semantic conventions for Model Context Protocol of OpenTelemetry
(open-telemetry/semantic-conventions, ``docs/gen-ai/mcp.md``, status Development):

- span name ``{mcp.method.name} {target}``, the target being ``gen_ai.tool.name`` or
  ``gen_ai.prompt.name`` when there is one, else ``{mcp.method.name}``;
- span kind ``CLIENT`` for the side that sends a request and waits for its answer,
  ``SERVER`` for the side that answers. mcptape forwards a request and waits for its
  answer: ``CLIENT`` in ``record``, ``proxy``, ``call`` and ``replay``; ``SERVER`` where
  mcptape answers itself (``serve`` answering the client from a tape; ``call``,
  ``replay`` and the injector answering a server's sampling, elicitation or roots
  request);
- attributes ``mcp.method.name``, ``jsonrpc.request.id``, ``mcp.session.id``,
  ``mcp.protocol.version``, ``network.transport`` (``pipe`` for stdio, ``tcp`` for
  HTTP), ``network.protocol.name`` (``http``), ``gen_ai.tool.name`` with
  ``gen_ai.operation.name = execute_tool``, ``gen_ai.prompt.name``, ``mcp.resource.uri``,
  ``error.type`` with ``rpc.response.status_code`` and an ``ERROR`` status whose
  description is the JSON-RPC error message, ``jsonrpc.protocol.version`` when not
  ``2.0``, ``server.address``/``server.port`` for an HTTP upstream;
- histograms ``mcp.client.operation.duration`` / ``mcp.server.operation.duration`` and
  ``mcp.client.session.duration`` / ``mcp.server.session.duration`` in seconds, with the
  advised bucket boundaries, and without the per-request attributes (ids, session ids,
  URIs) that would make their cardinality unbounded.

``error.type`` values mcptape reports (the conventions ask instrumentations to list them):
the JSON-RPC error code as text (``-32601``); ``tool_error`` for a tool result with
``isError``; ``cancelled`` for a request cancelled by ``notifications/cancelled``;
``no_response`` for a request the session ended without answering; ``_OTHER`` for an
error without an integer code. A session's ``error.type`` is its status when it ended
``error`` or ``interrupted``.

``mcp.session.id`` is the HTTP session's ``Mcp-Session-Id`` as the frames' metadata
holds it (a placeholder: a session id is a credential, see :mod:`mcptape.redact`), else
the recording's id.

mcptape's own attributes: ``mcptape.session.id`` (the recording: ``mcptape show ID``),
``mcptape.mode``, ``mcptape.answered_by`` (``server``, ``client`` or ``proxy``).

Notifications are spans too (start and end at the frame), but not in the duration
histograms: nothing acknowledges them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from mcptape.telemetry.facts import RequestFacts, id_attribute

BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
OPERATION_METRICS: Final = {
    "client": "mcp.client.operation.duration",
    "server": "mcp.server.operation.duration",
}
SESSION_METRICS: Final = {"client": "mcp.client.session.duration", "server": "mcp.server.session.duration"}
# A side of a session's transport (``stdio->http``) as ``network.transport``: a tape or an
# in-process client is no network at all.
_NETWORK: Final = {"stdio": "pipe", "http": "tcp", "sse": "tcp", "auto": "tcp"}


@dataclass(slots=True)
class Operation:
    """A request with its answer (``end`` at the answer), or a notification (``end == start``).

    Times are seconds since the epoch, as frames carry them. ``role`` is mcptape's
    side of it: ``client`` (it sent the request on and waited) or ``server`` (it answered).
    """

    method: str
    direction: str
    start: float
    end: float
    role: str = "client"
    rpc_id: str | None = None
    notification: bool = False
    tool: str | None = None
    prompt: str | None = None
    uri: str | None = None
    traceparent: str | None = None
    tracestate: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    answered_by: str | None = None
    jsonrpc: str | None = None
    session: SessionFacts | None = None


@dataclass(slots=True)
class SessionFacts:
    """What is known of the session an operation belongs to (filled in as it is learnt)."""

    mode: str
    transport: str  # DOWNSTREAM->UPSTREAM, as sessions record it
    upstream: str = ""
    recording_id: str | None = None
    mcp_session_id: str | None = None
    protocol_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def begin(
    method: str,
    direction: str,
    ts: float,
    facts: RequestFacts,
    session: SessionFacts,
    *,
    rpc_id: str | None = None,
    notification: bool = False,
    answered_by: str | None = None,
) -> Operation:
    """The operation a request (or notification) sent at ``ts`` begins, with what it says."""
    return Operation(
        method,
        direction,
        ts,
        ts,
        role=role_of(session.mode, direction, answered_by),
        rpc_id=rpc_id,
        notification=notification,
        tool=facts.tool,
        prompt=facts.prompt,
        uri=facts.uri,
        traceparent=facts.traceparent,
        tracestate=facts.tracestate,
        jsonrpc=facts.jsonrpc,
        answered_by=answered_by,
        session=session,
    )


def role_of(mode: str, direction: str, answered_by: str | None = None) -> str:
    """mcptape's side of an operation travelling ``direction`` (see the module docstring)."""
    if mode == "serve":
        return "server" if direction == "c2s" else "client"
    if direction == "s2c" and (mode in ("call", "client", "replay") or answered_by == "proxy"):
        return "server"
    return "client"


def _side(transport: str, role: str, direction: str) -> str:
    """The transport of the hop an operation is seen on: toward the server for a forwarded
    client request, toward the client otherwise."""
    downstream, _, upstream = transport.partition("->")
    toward_server = (direction == "c2s") == (role == "client")
    return (upstream or downstream) if toward_server else downstream


def network_attributes(session: SessionFacts, role: str, direction: str) -> dict[str, Any]:
    """``network.transport`` and, over HTTP, ``network.protocol.name`` and the server's address."""
    side = _side(session.transport, role, direction)
    out: dict[str, Any] = {}
    transport = _NETWORK.get(side)
    if transport is not None:
        out["network.transport"] = transport
    if transport == "tcp":
        out["network.protocol.name"] = "http"
        if role == "client" and direction == "c2s" and session.upstream.startswith(("http://", "https://")):
            try:
                url = urlsplit(session.upstream)
                if url.hostname:
                    out["server.address"] = url.hostname
                    out["server.port"] = url.port or (443 if url.scheme == "https" else 80)
            except ValueError:  # a description that only looks like a URL
                pass
    return out


def span_name(op: Operation) -> str:
    """``{mcp.method.name} {target}`` (target: the tool or prompt), else the method."""
    target = op.tool or op.prompt
    return f"{op.method} {target}" if target else op.method


def _shared(op: Operation) -> dict[str, Any]:
    """The attributes a span and its histogram point have in common."""
    attrs: dict[str, Any] = {"mcp.method.name": op.method}
    if op.tool is not None:
        attrs["gen_ai.tool.name"] = op.tool
        attrs["gen_ai.operation.name"] = "execute_tool"
    if op.prompt is not None:
        attrs["gen_ai.prompt.name"] = op.prompt
    if op.error_type is not None:
        attrs["error.type"] = op.error_type
    if op.error_code is not None:
        attrs["rpc.response.status_code"] = op.error_code
    if op.jsonrpc is not None and op.jsonrpc != "2.0":
        attrs["jsonrpc.protocol.version"] = op.jsonrpc
    session = op.session
    if session is not None:
        if session.protocol_version:
            attrs["mcp.protocol.version"] = session.protocol_version
        attrs.update(network_attributes(session, op.role, op.direction))
    return attrs


def span_attributes(op: Operation) -> dict[str, Any]:
    """Every attribute of the operation's span."""
    return attributes(op)[0]


def attributes(op: Operation) -> tuple[dict[str, Any], dict[str, Any]]:
    """The attributes of the operation's span, and of its histogram point (a part of them)."""
    shared = _shared(op)
    attrs = dict(shared)
    request_id = id_attribute(op.rpc_id)
    if request_id is not None:
        attrs["jsonrpc.request.id"] = request_id
    if op.uri is not None:
        attrs["mcp.resource.uri"] = op.uri
    session = op.session
    if session is not None:
        session_id = session.mcp_session_id or session.recording_id
        if session_id:
            attrs["mcp.session.id"] = session_id
        if session.recording_id:
            attrs["mcptape.session.id"] = session.recording_id
        attrs["mcptape.mode"] = session.mode
    if op.answered_by is not None:
        attrs["mcptape.answered_by"] = op.answered_by
    return attrs, shared


def metric_attributes(op: Operation) -> dict[str, Any]:
    """The attributes of the operation's histogram point (low cardinality only)."""
    return _shared(op)


def session_metric_attributes(session: SessionFacts, status: str | None) -> dict[str, Any]:
    """The attributes of a session-duration point."""
    role = "server" if session.mode == "serve" else "client"
    attrs: dict[str, Any] = {}
    if status in ("error", "interrupted"):
        attrs["error.type"] = status
    if session.protocol_version:
        attrs["mcp.protocol.version"] = session.protocol_version
    attrs.update(network_attributes(session, role, "c2s"))
    return attrs
