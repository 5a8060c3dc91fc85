"""A stdio MCP server that asks the client for its roots a moment after `initialized`.

Like server-filesystem: what its tool answers depends on the roots the client gave.
``tools/call roots`` returns the root URIs it knows (none until the client answered).
With ``--never-asks`` it does not ask (a new build that stopped asking).
"""

from __future__ import annotations

import json
import sys
import threading
import time

roots: list[str] = []
lock = threading.Lock()


def send(message: dict[str, object]) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def ask_later() -> None:
    time.sleep(0.3)
    send({"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"})


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "asks"},
        }
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    elif method == "notifications/initialized" and "--never-asks" not in sys.argv:
        threading.Thread(target=ask_later, daemon=True).start()
    elif method == "tools/call":
        content = [{"type": "text", "text": json.dumps(sorted(roots))}]
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"content": content}})
    elif message.get("id") == "roots-1" and "result" in message:
        roots[:] = [root["uri"] for root in message["result"]["roots"]]
