"""``--allow-origin``: a page served at an allowed origin can use the gateway from a real browser
(CORS preflights answered without the token, every answer readable, ``Mcp-Session-Id`` exposed);
a page anywhere else cannot."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from mcptape.gateway.app import GatewayConfig
from tests.helpers.browser import chromium
from tests.helpers.inprocess import demo_server, running_gateway
from tests.helpers.upstreams import serving

TOKEN = "cors-test-token-0123456789"


def page_site() -> Any:
    """An empty page on a loopback port of its own (its origin is not the gateway's); yields the origin."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<!doctype html><title>client</title>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    return serving(app, path="")


def test_a_preflight_from_an_allowed_origin_is_answered_without_the_token_and_answers_are_readable() -> None:
    origin = "http://localhost:6274"

    async def main() -> tuple[Any, ...]:
        config = GatewayConfig(registry={}, token=TOKEN, extra_origins=(origin,))
        async with (
            running_gateway(config, servers={"demo": demo_server}) as g,
            aiohttp.ClientSession() as http,
        ):
            preflight = {
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type, mcp-session-id, x-mcptape-token",
            }
            async with http.options(g.url("demo"), headers=preflight) as response:
                first = (response.status, dict(response.headers))
            async with http.post(g.url("demo"), json={}, headers={"Origin": origin}) as response:
                refused = (response.status, dict(response.headers))  # no token: 401, readable
            async with http.options(
                g.url("demo"), headers={**preflight, "Origin": "http://evil.test"}
            ) as response:
                other = (response.status, dict(response.headers))
        return first, refused, other

    (status, headers), (refused, refused_headers), (other, other_headers) = asyncio.run(main())
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == "http://localhost:6274"
    assert (
        "POST" in headers["Access-Control-Allow-Methods"]
        and "DELETE" in headers["Access-Control-Allow-Methods"]
    )
    assert headers["Access-Control-Allow-Headers"] == "content-type, mcp-session-id, x-mcptape-token"
    assert refused == 401 and refused_headers["Access-Control-Allow-Origin"] == "http://localhost:6274"
    assert "Mcp-Session-Id" in refused_headers["Access-Control-Expose-Headers"]
    assert other == 403 and not any(h.startswith("Access-Control") for h in other_headers)


BROWSER_CLIENT = """
async ({url, token}) => {
  const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "X-Mcptape-Token": token};
  const post = (message) => fetch(url, {method: "POST", headers, body: JSON.stringify(message)});
  let r = await post({jsonrpc: "2.0", id: 1, method: "initialize",
                      params: {protocolVersion: "2025-06-18", capabilities: {},
                               clientInfo: {name: "browser", version: "1"}}});
  const sid = r.headers.get("Mcp-Session-Id");
  const init = await r.text();
  headers["Mcp-Session-Id"] = sid;
  headers["MCP-Protocol-Version"] = "2025-06-18";
  const initialized = (await post({jsonrpc: "2.0", method: "notifications/initialized"})).status;
  r = await post({jsonrpc: "2.0", id: 2, method: "tools/call",
                  params: {name: "add", arguments: {a: 2, b: 40}}});
  const answer = await r.text();
  const deleted = (await fetch(url, {method: "DELETE", headers})).status;
  return {sid, init, initialized, answer, deleted};
}
"""

TRY_FETCH = """
async ({url, token}) => {
  try {
    const r = await fetch(url, {method: "POST", body: "{}",
                                headers: {"Content-Type": "application/json", "X-Mcptape-Token": token}});
    return "status " + r.status;
  } catch (e) { return "refused: " + e.name; }
}
"""


def _data(sse: str) -> list[Any]:
    return [json.loads(line[6:]) for line in sse.splitlines() if line.startswith("data: ") and line[6:]]


@pytest.mark.slow  # a browser
def test_a_page_at_an_allowed_origin_talks_mcp_through_the_gateway_in_a_real_browser() -> None:
    async def main() -> tuple[dict[str, Any], str]:
        async with page_site() as allowed, page_site() as elsewhere:
            config = GatewayConfig(registry={}, token=TOKEN, extra_origins=(allowed,))
            async with running_gateway(config, servers={"demo": demo_server}) as g, chromium() as browser:
                page = await browser.new_page()
                await page.goto(allowed)
                got = await page.evaluate(BROWSER_CLIENT, {"url": g.url("demo"), "token": TOKEN})
                await page.goto(elsewhere)
                refused = await page.evaluate(TRY_FETCH, {"url": g.url("demo"), "token": TOKEN})
                return got, refused

    got, refused = asyncio.run(asyncio.wait_for(main(), 90))
    assert got["sid"]  # exposed to the page: it can go on with the session
    assert _data(got["init"])[-1]["result"]["serverInfo"]["name"] == "mcptape-demo"
    assert got["initialized"] == 202
    assert _data(got["answer"])[-1]["result"]["structuredContent"] == {"result": 42}
    assert got["deleted"] == 200
    assert refused == "refused: TypeError"  # a page at another origin can do nothing
