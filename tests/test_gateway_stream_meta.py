"""A stdio upstream behind the gateway: each recorded server frame says which HTTP stream it went out on.

The keys are the ones an HTTP upstream link records (``http_method``, ``path``,
``stream``, ``status``, ``headers``, ``event_id``), so one view covers both.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from mcptape.proxy.http.downstream import HttpSessionLink
from mcptape.redact import placeholder
from mcptape.wire.frame import Frame
from tests.helpers.gateway_http import DEMO_SERVERS, INIT, request
from tests.helpers.gateway_proc import GatewayProcess

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}'
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
LATER = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'


def test_frames_placed_from_a_thread_carry_their_stream_and_go_out_once() -> None:
    async def main() -> tuple[list[dict[str, Any]], bytes, bytes]:
        link = HttpSessionLink("s", path="/servers/x/mcp")
        link.start(lambda frame: None, lambda why: None, lambda kind, text, data: None)
        stream = await link.post(Frame(CALL, "c2s"), {"Mcp-Session-Id": "s"})
        assert stream is not None
        frames = [Frame(data, "s2c") for data in (PROGRESS, ANSWER, LATER)]

        def upstream_reader() -> None:  # a stdio upstream's reader thread: placed, then sent
            for frame in frames:
                frame.meta = link.prepare(frame)
                link.send(frame)

        thread = threading.Thread(target=upstream_reader)
        thread.start()
        await asyncio.to_thread(thread.join)
        post_body, get_body = bytearray(), bytearray()

        async def collect(into: bytearray) -> Any:
            return lambda data: asyncio.sleep(0, into.extend(data))

        await asyncio.wait_for(stream.pump(await collect(post_body)), 5)
        link.close_send()
        await asyncio.sleep(0.05)
        await asyncio.wait_for(link.get_stream.pump(await collect(get_body)), 5)
        return [f.meta or {} for f in frames], bytes(post_body), bytes(get_body)

    metas, post_body, get_body = asyncio.run(main())
    assert [m["stream"] for m in metas] == ["post", "post", "get"]
    assert [m["event_id"] for m in metas] == ["p1-1", "p1-2", "g-1"]
    assert metas[0]["http_method"] == "POST" and metas[2]["http_method"] == "GET"
    assert all(m["path"] == "/servers/x/mcp" and m["status"] == 200 for m in metas)
    assert metas[0]["headers"] == {"content-type": "text/event-stream", "mcp-session-id": placeholder("s")}
    # Each frame went out exactly once, on the stream its metadata names.
    assert post_body.count(b"data: ") == 2 and b"id: p1-1\n" in post_body and b"id: p1-2\n" in post_body
    assert get_body.count(b"data: ") == 1 and b"id: g-1\n" in get_body and LATER in get_body


@pytest.mark.slow
def test_a_stdio_upstreams_frames_are_recorded_with_the_streams_they_went_out_on(tmp_path: Path) -> None:
    g = GatewayProcess(tmp_path / "g.db", DEMO_SERVERS, "--no-auth", tmp=tmp_path)
    try:
        accept = {"Accept": "application/json, text/event-stream"}
        status, headers, body = request(g.base, "POST", "/servers/demo/mcp", accept, INIT)
        assert status == 200
        sid = headers["mcp-session-id"]
        wire_id = next(line[4:] for line in body.decode().splitlines() if line.startswith("id: "))
        request(g.base, "DELETE", "/servers/demo/mcp", {"Mcp-Session-Id": sid})

        async def legacy() -> None:
            async with Client(sse_client(g.url("demo", "sse"))) as client:
                await client.call_tool("countdown", {"start": 2})

        anyio.run(legacy)
    finally:
        g.stop()
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        rows = con.execute(
            "select s.transport, f.meta from frames f join sessions s on s.id = f.session_id "
            "where f.direction = 's2c' order by f.id"
        ).fetchall()
    finally:
        con.close()
    by_transport: dict[str, list[dict[str, Any]]] = {}
    for transport, meta in rows:
        by_transport.setdefault(transport, []).append(json.loads(meta))
    (answer,) = by_transport["http->stdio"]
    assert answer["stream"] == "post" and answer["event_id"] == wire_id
    assert (answer["http_method"], answer["path"], answer["status"]) == ("POST", "/servers/demo/mcp", 200)
    # The session id mcptape minted is a credential: recorded as a placeholder, never as it is.
    assert answer["headers"]["mcp-session-id"].startswith("«redacted:") and sid not in json.dumps(answer)
    legacy_frames = by_transport["sse->stdio"]
    assert len(legacy_frames) >= 3  # initialize, what the tool says while it runs, its answer
    assert {m["stream"] for m in legacy_frames} == {"sse"}
    assert all(m["http_method"] == "GET" and m["path"] == "/servers/demo/sse" for m in legacy_frames)
    assert len({m["event_id"] for m in legacy_frames}) == len(legacy_frames)
