"""Credentials through the gateway: its own token never leaves it, whichever header carries it."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import GatewayConfig
from mcptape.rules.rules import Rules
from tests.helpers.inprocess import running_gateway
from tests.helpers.recording import INITIALIZE
from tests.helpers.upstreams import HeaderLog, echo_app, serving

TOKEN = "gateway-token-0123456789abcdef"
ACCEPT = {"Accept": "application/json, text/event-stream"}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}


async def _exchange(rules: Rules | None, headers: dict[str, str]) -> HeaderLog:
    log = HeaderLog()
    async with serving(echo_app(log)) as url:
        spec = UpstreamSpec(name="u", transport="http", url=url)
        config = GatewayConfig(registry={"u": spec}, token=TOKEN, rules=rules)
        async with running_gateway(config) as g, aiohttp.ClientSession() as http:
            sent = {**ACCEPT, **headers}
            async with http.post(g.url("u"), json=INITIALIZE, headers=sent) as response:
                assert response.status == 200, await response.text()
                await response.read()
                sent["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
            async with http.post(g.url("u"), json=CALL, headers=sent) as response:
                assert response.status == 200, await response.text()
                await response.read()
    return log


@pytest.mark.parametrize("mode", ["pass-through", "relay"])
@pytest.mark.parametrize(
    "headers",
    [
        {"X-Mcptape-Token": TOKEN, "Authorization": f"Bearer {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}", "Cookie": f"a=1; gw={TOKEN}"},
        {"X-Mcptape-Token": TOKEN, "X-Api-Key": TOKEN},
    ],
    ids=["token-in-both", "bearer-and-cookie", "own-header-and-api-key"],
)
def test_the_gateway_token_is_never_forwarded_whichever_header_carries_it(
    mode: str, headers: dict[str, str]
) -> None:
    rules = Rules.from_options(handle_sampling="auto") if mode == "relay" else None
    log = asyncio.run(asyncio.wait_for(_exchange(rules, headers), 30))
    assert len([body for _, body in log.requests if body is not None]) >= 2
    assert not [value for value in log.values() if TOKEN in value]
    assert not [name for headers, _ in log.requests for name in headers if name.lower() == "x-mcptape-token"]


@pytest.mark.parametrize("mode", ["pass-through", "relay"])
def test_the_clients_own_authorization_reaches_the_upstream_beside_the_gateway_token(mode: str) -> None:
    rules: Any = Rules.from_options(handle_sampling="auto") if mode == "relay" else None
    headers = {"X-Mcptape-Token": TOKEN, "Authorization": "Bearer users-own-token"}
    log = asyncio.run(asyncio.wait_for(_exchange(rules, headers), 30))
    posted = [h for h, body in log.requests if body is not None]
    assert posted and all(h.get("Authorization") == "Bearer users-own-token" for h in posted)
