"""The gateway passes a streamable HTTP upstream's answers through whole, whatever their size,
and its recording says so honestly when one is past what it copies (in-process, with the
bound made small)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway import passthrough
from mcptape.gateway.app import GatewayConfig
from tests.helpers.inprocess import running_gateway

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}


async def _upstream(request: web.Request) -> web.Response:
    body = await request.json()
    text = "z" * 300_000 if body.get("method") == "tools/call" else "small"
    result = {"protocolVersion": "2025-06-18", "capabilities": {}, "t": text}
    return web.json_response(
        {"jsonrpc": "2.0", "id": body["id"], "result": result}, headers={"Mcp-Session-Id": "u1"}
    )


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


def test_an_answer_past_the_copy_bound_is_forwarded_whole_and_recorded_as_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(passthrough, "MAX_JSON_COPY", 100_000)
    db = tmp_path / "g.db"

    async def main() -> list[int]:
        upstream_app = web.Application()
        upstream_app.router.add_post("/mcp", _upstream)
        upstream, up_port = await _serve(upstream_app)
        spec = UpstreamSpec(name="r", transport="http", url=f"http://127.0.0.1:{up_port}/mcp")
        config = GatewayConfig(registry={"r": spec}, db=str(db))
        async with running_gateway(config) as running:
            sizes = await ask(running.port)
        await upstream.cleanup()
        return sizes

    async def ask(port: int) -> list[int]:
        sizes = []
        headers = {"Accept": "application/json, text/event-stream"}
        async with aiohttp.ClientSession() as http:
            for message in (
                INIT,
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}},
            ):
                url = f"http://127.0.0.1:{port}/servers/r/mcp"
                async with http.post(url, json=message, headers=headers) as response:
                    answer = await response.json()
                    sizes.append(len(answer["result"]["t"]))
                    headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
        return sizes

    assert asyncio.run(main()) == [5, 300_000]
    con = sqlite3.connect(db)
    kinds = [row[0] for row in con.execute("select kind from frames where direction = 's2c' order by seq")]
    events = [row[0] for row in con.execute("select text from events")]
    con.close()
    assert kinds == ["response"]  # the small one; no cut copy recorded as "malformed"
    assert any(
        "larger than 100000 bytes was forwarded whole but not recorded" in (e or "") for e in events
    ), events


def test_protected_resource_metadata_past_the_copy_bound_is_a_502_not_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The document is held whole to have its `resource` rewritten: an upstream whose body
    # never ends must not have the gateway hold all it sends.
    monkeypatch.setattr(passthrough, "MAX_JSON_COPY", 100_000)

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(b'{"resource": "x", "pad": "')
        for _ in range(1000):  # 1 MB, as long as the gateway reads
            await response.write(b"q" * 1000)
        return response

    async def main() -> tuple[int, str]:
        upstream_app = web.Application()
        upstream_app.router.add_get(passthrough.WELL_KNOWN + "/mcp", endless)
        upstream, up_port = await _serve(upstream_app)
        spec = UpstreamSpec(name="r", transport="http", url=f"http://127.0.0.1:{up_port}/mcp")
        config = GatewayConfig(registry={"r": spec}, db=str(tmp_path / "g.db"))
        async with running_gateway(config) as running, aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{running.port}{passthrough.WELL_KNOWN}/servers/r/mcp"
            async with http.get(url) as response:
                status, body = response.status, await response.read()
        await upstream.cleanup()
        return status, body.decode()

    status, body = asyncio.run(main())
    assert status == 502, (status, len(body))
    assert "protected-resource metadata is larger than 100000 bytes" in json.loads(body)["error"]["message"]
