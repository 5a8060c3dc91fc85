"""A small stdio MCP server without the SDK, with a strict order of what it writes: the fault matrix's target.

Tools: ``echo(text)`` (the text back; so does any tool whose name starts with ``echo_``:
one gateway serves a fault per tool), ``add(a, b)`` (the sum as text) and
``count(n)``, which sends ``n`` progress notifications for the call's progress token,
each written before the result, then the result ``"counted n"`` (250 ms apart: the
TypeScript SDK handles a notification a turn after it reads it, and a progress read in
one chunk with its result would find its handler gone). Answers ``initialize``,
``ping`` and ``tools/list``; ignores notifications; anything else is -32601. Starts in
milliseconds (no SDK import), so a matrix of client runs stays short.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

NUMBER = {"type": "integer"}
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}
FAULTED = ("delay", "drop", "duplicate", "error", "timeout", "cut", "malformed")
TOOLS = [
    {"name": "echo", "inputSchema": TEXT},
    *({"name": f"echo_{fault}", "inputSchema": TEXT} for fault in FAULTED),
    {"name": "add", "inputSchema": {"type": "object", "properties": {"a": NUMBER, "b": NUMBER}}},
    {"name": "count", "inputSchema": {"type": "object", "properties": {"n": NUMBER}}},
]


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(params: dict[str, Any]) -> str:
    args = params.get("arguments") or {}
    name = params.get("name")
    if name == "echo" or str(name).startswith("echo_"):
        return str(args.get("text", ""))
    if name == "add":
        return str(int(args.get("a", 0)) + int(args.get("b", 0)))
    if name == "count":
        n = int(args.get("n", 1))
        token = (params.get("_meta") or {}).get("progressToken")
        for step in range(1, n + 1):
            if token is not None:
                progress = {"progressToken": token, "progress": step, "total": n}
                write({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
                time.sleep(0.25)
        return f"counted {n}"
    raise LookupError(f"no tool {name!r}")


def answer(message: dict[str, Any]) -> None:
    if "id" not in message or "method" not in message:
        return
    method, rid = message["method"], message["id"]
    params = message.get("params") or {}
    result: Any
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fault-target", "version": "1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        try:
            result = {"content": [{"type": "text", "text": call(params)}], "isError": False}
        except LookupError as exc:
            result = {"content": [{"type": "text", "text": str(exc)}], "isError": True}
    else:
        write({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no method {method}"}})
        return
    write({"jsonrpc": "2.0", "id": rid, "result": result})


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            answer(json.loads(line))


if __name__ == "__main__":
    main()
