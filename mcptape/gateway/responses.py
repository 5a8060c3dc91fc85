"""What the gateway answers on its own: HTTP errors with a JSON-RPC body, and the SSE response heads.

A client that speaks MCP over HTTP reads a refused request's body as a JSON-RPC error
(the SDKs surface its message): every refusal the gateway makes itself (a wrong token,
an unknown session, a body that is no message) says what happened in that form, with
``id`` null (the request, if there was one, could not be read or routed).
"""

from __future__ import annotations

import orjson
from aiohttp import web

from mcptape.proxy.http.headers import PROTOCOL_VERSION
from mcptape.wire.frame import Frame
from mcptape.wire.protocol import INITIALIZE, at_least

# A JSON-RPC batch is split and routed on the event loop, item by item: 100,000 small
# requests in one 5 MB POST held every other session up for 3.3 s. No client sends more
# than a few (the revisions since 2025-06-18 have no batches at all).
MAX_BATCH_ITEMS = 1000
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
PRIMING_FROM = "2025-11-25"  # SEP-1699: the first revision whose clients expect a priming event


def http_error(
    status: int, message: str, headers: dict[str, str] | None = None, code: int = -32000
) -> web.Response:
    """An HTTP error whose body is a JSON-RPC error saying ``mcptape: MESSAGE``."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": f"mcptape: {message}"}}
    return web.json_response(body, status=status, headers=headers)


def not_json_rpc(frame: Frame, headers: dict[str, str] | None = None) -> web.Response:
    """400 for a POSTed body that is no JSON-RPC message, as a streamable HTTP server answers it."""
    try:
        orjson.loads(frame.data)  # only for a body that is no message: never on the hot path
    except orjson.JSONDecodeError:
        return http_error(400, "Parse error: the body is not JSON", headers, code=-32700)
    return http_error(400, "Invalid Request: the body is not a JSON-RPC message", headers, code=-32600)


def batch_too_large(frame: Frame) -> web.Response | None:
    """413 for a batch of more than :data:`MAX_BATCH_ITEMS` messages (before it is delivered
    or recorded); None for anything else."""
    if frame.kind != "batch" or not isinstance(frame.message, list) or len(frame.message) <= MAX_BATCH_ITEMS:
        return None
    return http_error(
        413,
        f"a batch of {len(frame.message)} messages is more than the gateway takes in one POST "
        f"({MAX_BATCH_ITEMS}); send them in smaller batches",
        code=-32600,
    )


def primes(request: web.Request, frame: Frame) -> bool:
    """Whether a request's SSE answer starts with a priming event: clients of protocol
    2025-11-25 and later expect one (SEP-1699); older ones may not parse an empty event."""
    version = request.headers.get(PROTOCOL_VERSION)
    if version is None and frame.method == INITIALIZE and isinstance(frame.message, dict):
        params = frame.message.get("params")
        version = params.get("protocolVersion") if isinstance(params, dict) else None
    return isinstance(version, str) and at_least(version, PRIMING_FROM)
