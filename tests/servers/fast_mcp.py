"""A minimal, fast MCP server over stdio for benchmarks and replay tests: raw JSON-RPC, no SDK.

Answers ``initialize``, ``ping``, ``tools/list`` and ``tools/call`` of its one tool
``echo`` (the arguments back as text and structured content); anything else gets a
method-not-found error. Notifications are read and ignored. Deterministic, so a
recording of it replays identically. Run: ``python tests/servers/fast_mcp.py``.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

TOOLS = [{"name": "echo", "description": "Echo the arguments.", "inputSchema": {"type": "object"}}]


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one message (None for a notification)."""
    if "id" not in message:
        return None
    method, params = message.get("method"), message.get("params") or {}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        reply["result"] = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fast-mcp", "version": "1.0.0"},
        }
    elif method == "ping":
        reply["result"] = {}
    elif method == "tools/list":
        reply["result"] = {"tools": TOOLS}
    elif method == "tools/call" and params.get("name") == "echo":
        args = params.get("arguments") or {}
        reply["result"] = {
            "content": [{"type": "text", "text": orjson.dumps(args).decode()}],
            "structuredContent": args,
        }
    else:
        reply["error"] = {"code": -32601, "message": f"unknown method {method}"}
    return reply


def main() -> int:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        reply = answer(orjson.loads(line))
        if reply is not None:
            out.write(orjson.dumps(reply) + b"\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
