"""HTTP upstream behind the gateway: requests and responses pass through as they are.

Status codes (401 with WWW-Authenticate, 404 for an unknown session), the upstream's
session ids and the body pass through unchanged; the client's Authorization reaches
the upstream only when the gateway token came in mcptape's own header; the OAuth
protected-resource document and the 401's resource_metadata are pointed at the gateway.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from mcptape.gateway.passthrough import metadata_url, rewrite_resource, rewrite_www_authenticate
from tests.helpers.gateway_http import INIT, request
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.http_servers import everything_http

GOOD = "Bearer upstream-oauth-token"


def test_metadata_urls_and_the_two_rewrites() -> None:
    assert (
        metadata_url("https://up.example/mcp")
        == "https://up.example/.well-known/oauth-protected-resource/mcp"
    )
    header = (
        'Bearer resource_metadata="https://up.example/.well-known/oauth-protected-resource/mcp", scope="x"'
    )
    rewritten = rewrite_www_authenticate(header, "https://up.example/mcp", "http://127.0.0.1:9/servers/a/mcp")
    assert rewritten == (
        'Bearer resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/servers/a/mcp", scope="x"'
    )
    doc = json.loads(
        rewrite_resource(b'{"resource":"https://up.example/mcp","scopes_supported":["x"]}', "G") or b""
    )
    assert doc == {"resource": "G", "scopes_supported": ["x"]}
    assert rewrite_resource(b"not json", "G") is None and rewrite_resource(b"[1]", "G") is None


@pytest.fixture
def oauth_upstream() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A protected MCP endpoint: 401 without the right token, else a JSON answer; and its metadata."""
    seen: list[dict[str, str]] = []
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def mcp(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        base = f"http://{request.host}"
        if request.headers.get("Authorization") != GOOD:
            challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
            return web.Response(status=401, headers={"WWW-Authenticate": challenge})
        body = await request.json()
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"ok": True}}
        return web.json_response(answer, headers={"Mcp-Session-Id": "upstream-session-1"})

    async def metadata(request: web.Request) -> web.Response:
        return web.json_response(
            {"resource": f"http://{request.host}/mcp", "authorization_servers": ["https://as.example"]}
        )

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/mcp", mcp)
        app.router.add_get("/.well-known/oauth-protected-resource/mcp", metadata)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        holder["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        holder["stop"] = asyncio.Event()
        ready.set()
        await holder["stop"].wait()
        await runner.cleanup()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    yield f"http://127.0.0.1:{holder['port']}/mcp", seen
    loop.call_soon_threadsafe(holder["stop"].set)
    thread.join(10)


@pytest.mark.slow
def test_oauth_401_metadata_and_the_clients_authorization_pass_through(
    oauth_upstream: tuple[str, list[dict[str, str]]], tmp_path: Path
) -> None:
    url, seen = oauth_upstream
    g = GatewayProcess(tmp_path / "g.db", {"prot": {"url": url, "type": "http"}}, tmp=tmp_path)
    try:
        own = {"X-Mcptape-Token": g.token or ""}
        status, headers, _ = request(
            g.base, "POST", "/servers/prot/mcp", {**own, "Accept-Encoding": "gzip"}, INIT
        )
        assert status == 401
        assert headers["www-authenticate"] == (
            f'Bearer resource_metadata="{g.base}/.well-known/oauth-protected-resource/servers/prot/mcp"'
        )
        status, _, body = request(
            g.base, "GET", "/.well-known/oauth-protected-resource/servers/prot/mcp", own
        )
        assert status == 200
        assert json.loads(body) == {
            "resource": f"{g.base}/servers/prot/mcp",
            "authorization_servers": ["https://as.example"],
        }
        status, headers, body = request(
            g.base, "POST", "/servers/prot/mcp", {**own, "Authorization": GOOD}, INIT
        )
        assert status == 200 and headers["mcp-session-id"] == "upstream-session-1"
        assert json.loads(body)["result"] == {"ok": True}
        # Our token as the bearer: consumed, never forwarded.
        status, _, _ = request(
            g.base, "POST", "/servers/prot/mcp", {"Authorization": f"Bearer {g.token}"}, INIT
        )
        assert status == 401
    finally:
        g.stop()
    assert all("X-Mcptape-Token" not in h and g.token not in json.dumps(h) for h in seen)
    assert [h.get("Authorization") for h in seen] == [None, GOOD, None]
    assert all(h["Host"] == urlsplit_netloc(url) for h in seen)
    # Nothing of the gateway's own is added: no compression asked for (the recorder parses a
    # copy of the body), no client library's User-Agent or Accept.
    assert all(not {"Accept-Encoding", "User-Agent", "Accept"} & set(h) for h in seen)
    assert [h.get("Content-Type") for h in seen] == ["application/json"] * 3
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        dump = json.dumps(
            [con.execute(f"select * from {t}").fetchall() for t in ("frames", "events")], default=str
        )
        edits = con.execute("select text, data from events where kind='proxy_edit' order by id").fetchall()
    finally:
        con.close()
    assert "upstream-oauth-token" not in dump and (g.token or "-") not in dump
    # One per 401 that crossed, and the protected-resource document's resource field.
    assert [text for text, _ in edits].count("WWW-Authenticate resource_metadata") == 2
    (resource,) = [json.loads(data) for text, data in edits if text == "protected-resource resource"]
    assert resource == {"from": url, "to": f"{g.base}/servers/prot/mcp"}


def urlsplit_netloc(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).netloc


@pytest.mark.slow
def test_session_ids_and_an_expired_session_404_pass_through_unchanged(tmp_path: Path) -> None:
    with everything_http("streamableHttp") as url:
        g = GatewayProcess(tmp_path / "g.db", {"ev": {"url": url, "type": "http"}}, "--no-auth", tmp=tmp_path)
        try:
            accept = {"Accept": "application/json, text/event-stream"}
            status, headers, _ = request(g.base, "POST", "/servers/ev/mcp", accept, INIT)
            assert status == 200
            sid = headers["mcp-session-id"]
            direct, dheaders, _ = request(url.rsplit("/mcp", 1)[0], "POST", "/mcp", accept, INIT)
            assert direct == 200 and len(dheaders["mcp-session-id"]) == len(sid)  # the server's own ids
            status, _, _ = request(g.base, "DELETE", "/servers/ev/mcp", {"Mcp-Session-Id": sid})
            assert status == 200
            note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
            status, _, body = request(
                g.base, "POST", "/servers/ev/mcp", {**accept, "Mcp-Session-Id": sid}, note
            )
            d_status, _, d_body = request(
                url.rsplit("/mcp", 1)[0], "POST", "/mcp", {**accept, "Mcp-Session-Id": sid}, note
            )
            assert (status, body) == (d_status, d_body)  # whatever the server says, unchanged
            status, _, _ = request(g.base, "POST", "/servers/ev/mcp", accept, INIT)  # left open
            assert status == 200
        finally:
            assert g.stop() == 0
    # The session passed through is counted (it said "closing 0 session(s)", then closed it).
    # The session left open is counted (it said "closing 0 session(s)", then closed it); the
    # POST naming the deleted session, which the server refused, ended its session at once.
    assert "stopping (SIGTERM): closing 1 session(s)" in g.stderr, g.stderr
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        rows = con.execute("select transport, status from sessions").fetchall()
    finally:
        con.close()
    assert sorted(rows) == [("http->http", "closed")] * 2 + [("http->http", "interrupted")], rows
