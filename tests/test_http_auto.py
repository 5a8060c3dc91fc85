"""`auto` upstream transport: fall back to legacy SSE only the way the specification says.

A 4xx whose body is a JSON-RPC error is a streamable HTTP server speaking (a 2025
server refusing a 2026-07-28 ``server/discover``): the client gets the error and the
link stays streamable HTTP. A 4xx without one, then a GET giving an SSE stream with an
``endpoint`` event, is a legacy server. Either way the transport actually used is
reported once known.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

from mcptape.proxy.http.upstream import AutoLink
from mcptape.wire.frame import Frame

DISCOVER = b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}'
INIT = b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
REFUSAL = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32000, "message": "Bad Request: No valid session ID"},
}
INIT_RESULT = b'{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'


async def serve(legacy: bool) -> tuple[web.AppRunner, str, list[str]]:
    """A 2025 streamable server (legacy=False) or a legacy HTTP+SSE one (legacy=True)."""
    seen: list[str] = []

    async def post(request: web.Request) -> web.StreamResponse:
        seen.append("POST " + request.path)
        body = await request.read()
        if legacy:
            if request.path == "/messages":
                queue.put_nowait(INIT_RESULT)
                return web.Response(status=202)
            return web.Response(status=405, text="Method Not Allowed")
        if b'"initialize"' in body:
            return web.Response(
                body=INIT_RESULT, content_type="application/json", headers={"Mcp-Session-Id": "s1"}
            )
        return web.json_response(REFUSAL, status=400)

    queue: asyncio.Queue[bytes] = asyncio.Queue()

    async def get(request: web.Request) -> web.StreamResponse:
        seen.append("GET " + request.path)
        if not legacy:
            return web.Response(status=405)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"event: endpoint\ndata: /messages\n\n")
        data = await queue.get()
        await response.write(b"event: message\ndata: " + data + b"\n\n")
        await asyncio.sleep(0.5)
        return response

    app = web.Application()
    app.router.add_post("/mcp", post)
    app.router.add_post("/messages", post)
    app.router.add_get("/mcp", get)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/mcp", seen


async def drive(legacy: bool, frames: list[bytes], want: int) -> dict[str, Any]:
    runner, url, seen = await serve(legacy)
    got: list[Frame] = []
    events: list[str] = []
    settled: list[str] = []
    link = AutoLink(url, None)
    link.on_settled = settled.append
    link.start(lambda f: got.append(f), lambda why: None, lambda kind, text, data: events.append(kind))
    try:
        for i, data in enumerate(frames, 1):
            link.send(Frame(data, "c2s"))
            for _ in range(250):  # each answer before the next request, as a client does
                if len(got) >= min(i, want):
                    break
                await asyncio.sleep(0.02)
    finally:
        await link.aclose(0.1)
        await runner.cleanup()
    return {"got": [json.loads(f.data) for f in got], "events": events, "settled": settled, "seen": seen}


def test_a_json_rpc_error_to_the_first_post_is_a_streamable_server_speaking() -> None:
    out = asyncio.run(drive(False, [DISCOVER, INIT], 2))
    assert "transport_fallback" not in out["events"]
    assert out["settled"] == ["http"]
    refused, initialized = out["got"]
    assert refused["id"] == 1 and "error" in refused  # the client's request is answered, not retried over SSE
    assert initialized["id"] == 2 and initialized["result"]["serverInfo"]["name"] == "s"
    assert out["seen"] == ["POST /mcp", "POST /mcp"]  # no GET looking for a legacy stream


def test_a_4xx_without_json_rpc_then_an_endpoint_event_is_a_legacy_server() -> None:
    out = asyncio.run(drive(True, [INIT], 1))
    assert "transport_fallback" in out["events"]
    assert out["settled"] == ["sse"]
    assert out["got"][0]["id"] == 2 and "result" in out["got"][0]
    assert out["seen"][:3] == ["POST /mcp", "GET /mcp", "POST /messages"]


@pytest.mark.slow
def test_an_unreachable_auto_upstream_says_so_and_leaves_no_session_open(tmp_path: Any) -> None:
    import socket
    import subprocess

    from tests.helpers.paths import MCPTAPE

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/mcp"  # nobody listens there
    argv = [*MCPTAPE, "record", "--db", str(tmp_path / "rec.db"), "--url", dead]
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    # A client that waits for its answer is told why there is none.
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(ping)
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    proc.stdin.close()
    assert proc.wait(60) is not None and proc.stderr is not None
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert "cannot reach the MCP server" in answer["error"]["message"]
    assert b"Unclosed client session" not in err and b"Traceback" not in err, err
    # A client that leaves at once: the close races the probe's fall-back to SSE.
    for _ in range(3):
        done = subprocess.run(argv, input=ping, capture_output=True, timeout=60)
        assert b"Unclosed client session" not in done.stderr, done.stderr
        assert b"Traceback" not in done.stderr
