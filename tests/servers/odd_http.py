"""A streamable HTTP MCP server whose answers are valid but written the way few servers write them.

Every answer is pretty-printed JSON (line breaks and indentation between tokens). A
``tools/call`` is answered on an SSE stream whose event carries that JSON over several
``data:`` lines (a progress notification first, when the call asks for progress); every
other request gets an ``application/json`` body. ``--odd-case`` writes the media types
as ``Application/JSON`` and ``Text/Event-Stream`` (media types are case-insensitive).

Tools: ``echo`` (its ``text`` back) and ``add`` (``a`` + ``b``).
Run: ``python tests/servers/odd_http.py PORT [--odd-case]``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from aiohttp import web

ODD = web.AppKey("odd_case", bool)
TOOLS = [
    {
        "name": "echo",
        "description": "Says the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "add",
        "description": "Adds two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
]


def pretty(message: Any) -> bytes:
    return json.dumps(message, indent=2).encode()


def result(message: dict[str, Any]) -> Any:
    method = message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "odd-http", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        args = params.get("arguments") or {}
        text = args["text"] if params["name"] == "echo" else str(args["a"] + args["b"])
        return {"content": [{"type": "text", "text": text}], "isError": False}
    return {}


async def mcp(request: web.Request) -> web.StreamResponse:
    odd = request.app[ODD]
    json_type = "Application/JSON" if odd else "application/json"
    sse_type = "Text/Event-Stream" if odd else "text/event-stream"
    message = json.loads(await request.read())
    if "id" not in message:
        return web.Response(status=202)
    answer = pretty({"jsonrpc": "2.0", "id": message["id"], "result": result(message)})
    headers = {"Mcp-Session-Id": "odd-session"}
    if message["method"] != "tools/call":
        return web.Response(body=answer, headers={**headers, "Content-Type": json_type})
    response = web.StreamResponse(headers={**headers, "Content-Type": sse_type})
    await response.prepare(request)
    events = []
    token = ((message.get("params") or {}).get("_meta") or {}).get("progressToken")
    if token is not None:
        progress = {"progressToken": token, "progress": 1, "total": 1}
        events.append(pretty({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}))
    events.append(answer)
    for event in events:
        lines = b"".join(b"data: " + line + b"\n" for line in event.split(b"\n"))
        await response.write(b"event: message\n" + lines + b"\n")
    await response.write_eof()
    return response


async def other(request: web.Request) -> web.Response:
    return web.Response(status=405 if request.method == "GET" else 200)


def make_app(odd_case: bool = False) -> web.Application:
    """The server as an aiohttp application (tests may serve it in-process)."""
    app = web.Application()
    app[ODD] = odd_case
    app.router.add_post("/mcp", mcp)
    app.router.add_route("*", "/mcp", other)
    return app


def main() -> None:
    web.run_app(make_app("--odd-case" in sys.argv[2:]), host="127.0.0.1", port=int(sys.argv[1]), print=None)


if __name__ == "__main__":
    main()
