"""An HTTP server that is not MCP, for `call`'s errors: a text page, a JSON document, a redirect
loop, an HTML 404 and an SSE stream that ends without an ``endpoint`` event.

Run: ``python tests/servers/not_mcp.py PORT`` (127.0.0.1).
"""

from __future__ import annotations

import sys

from aiohttp import web


async def text(request: web.Request) -> web.StreamResponse:
    return web.Response(text="hello, not MCP")


async def document(request: web.Request) -> web.StreamResponse:
    return web.json_response({"ok": True})


async def loop(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound("/loop")


async def missing(request: web.Request) -> web.StreamResponse:
    return web.Response(
        status=404, text="<html><body><h1>404 Not Found</h1></body></html>", content_type="text/html"
    )


async def short_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(b": nothing to say\n\n")
    await response.write_eof()
    return response


def main() -> None:
    app = web.Application()
    for path, handler in [("/text", text), ("/json", document), ("/loop", loop), ("/404", missing),
                          ("/short", short_stream)]:  # fmt: skip
        app.router.add_route("*", path, handler)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)


if __name__ == "__main__":
    main()
