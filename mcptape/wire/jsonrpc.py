"""JSON-RPC answers mcptape writes itself, with the request's id written back exactly as it came.

Answers to a peer's request (an injected result, the error for a request a dead server
left unanswered) must carry the request's id as the peer wrote it: re-parsing the id
turns ``1.50`` into ``1.5``, ``1E2`` into ``100.0`` and ``-0`` into ``0``, and a client
that compares ids by their text never matches the answer. These builders take the id's
wire text (:attr:`mcptape.wire.frame.Frame.rpc_id`) and splice it in unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """A message mcptape writes as JSON: integers beyond 64 bits whole, a lone surrogate escaped."""
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, or a lone surrogate
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        # A lone surrogate (a header's bytes that are no UTF-8, as aiohttp reads them): no
        # UTF-8 holds it, JSON's \u escape does.
        return json.dumps(value, separators=(",", ":")).encode()


def result_response(rpc_id: str, result: Any) -> bytes:
    """A JSON-RPC result for the request whose id has the wire text ``rpc_id``."""
    return b'{"jsonrpc":"2.0","id":' + rpc_id.encode() + b',"result":' + dumps(result) + b"}"


def error_response(rpc_id: str, code: int, message: str, data: Any = None) -> bytes:
    """A JSON-RPC error for the request whose id has the wire text ``rpc_id`` (``null`` when
    the request could not be read)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return b'{"jsonrpc":"2.0","id":' + rpc_id.encode() + b',"error":' + dumps(error) + b"}"
