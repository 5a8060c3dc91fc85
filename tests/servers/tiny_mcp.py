"""A minimal stdio MCP server without the SDK (starts in milliseconds): for tests that need many sessions.

Answers ``initialize``, ``tools/list`` and ``tools/call`` of one tool, ``add(a, b)``,
whose text result is the sum; ignores notifications; anything else is -32601.
"""

from __future__ import annotations

import json
import sys


def answer(message: dict[str, object]) -> dict[str, object] | None:
    if "id" not in message or "method" not in message:
        return None
    method, rid = message["method"], message["id"]
    params = message.get("params") or {}
    assert isinstance(params, dict)
    if method == "initialize":
        result: object = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tiny", "version": "1"},
        }
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
        result = {"tools": [{"name": "add", "inputSchema": schema}]}
    elif method == "tools/call":
        args = params.get("arguments") or {}
        assert isinstance(args, dict)
        result = {"content": [{"type": "text", "text": str(args["a"] + args["b"])}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            reply = answer(json.loads(line))
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
