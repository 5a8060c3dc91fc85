"""A gateway session is bound to the credential that opened it: another client presenting its
id is answered as for an unknown session, each request reaches the upstream with its own
credential, and session ids are recorded redacted like tokens."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import aiohttp

from mcptape.config.registry import UpstreamSpec
from mcptape.gateway.app import GatewayConfig
from mcptape.rules.rules import Rules
from tests.helpers.inprocess import running_gateway
from tests.helpers.recording import INITIALIZE
from tests.helpers.upstreams import HeaderLog, echo_app, serving

TOKEN = "gateway-token-0123456789abcdef"
ACCEPT = {"Accept": "application/json, text/event-stream", "X-Mcptape-Token": TOKEN}
USER_A = {**ACCEPT, "Authorization": "Bearer USER-A-TOKEN"}
USER_B = {**ACCEPT, "Authorization": "Bearer USER-B-TOKEN"}


def call(rid: int, modern: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "x", "arguments": {"call": rid}}
    if modern:  # a 2026-07-28 request: no session, the protocol version in _meta
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def _post(
    http: aiohttp.ClientSession, url: str, message: Any, headers: dict[str, str]
) -> tuple[int, str]:
    async with http.post(url, json=message, headers=headers) as response:
        await response.read()
        return response.status, response.headers.get("Mcp-Session-Id", "")


def test_another_credential_on_a_relayed_sessions_id_is_a_404_and_never_rides_the_creators(
    tmp_path: Path,
) -> None:
    db = tmp_path / "g.db"
    log = HeaderLog()

    async def main() -> dict[str, Any]:
        async with serving(echo_app(log, session_id="upstream-sid-secret")) as url:
            spec = UpstreamSpec(name="u", transport="http", url=url)
            rules = Rules.from_options(handle_sampling="auto")  # relayed, not passed through
            config = GatewayConfig(registry={"u": spec}, token=TOKEN, db=str(db), rules=rules)
            async with running_gateway(config) as g, aiohttp.ClientSession() as http:
                status, sid = await _post(http, g.url("u"), INITIALIZE, USER_A)
                assert status == 200 and sid
                a = {**USER_A, "Mcp-Session-Id": sid}
                seen = {"a": (await _post(http, g.url("u"), call(1), a))[0]}
                for who, headers in (("b", USER_B), ("none", ACCEPT)):
                    b = {**headers, "Mcp-Session-Id": sid}
                    seen[who] = (await _post(http, g.url("u"), call(2), b))[0]
                    async with http.get(g.url("u"), headers=b) as response:
                        seen[f"{who}-get"] = response.status
                    async with http.delete(g.url("u"), headers=b) as response:
                        seen[f"{who}-delete"] = response.status
                seen["a-again"] = (await _post(http, g.url("u"), call(3), a))[0]
                async with http.delete(g.url("u"), headers=a) as response:
                    seen["a-delete"] = response.status
                seen["sid"] = sid
                return seen

    seen = asyncio.run(asyncio.wait_for(main(), 30))
    sid = seen.pop("sid")
    assert seen == {
        "a": 200,
        "b": 404,
        "b-get": 404,
        "b-delete": 404,
        "none": 404,
        "none-get": 404,
        "none-delete": 404,
        "a-again": 200,  # the refusals did not end A's session
        "a-delete": 200,
    }
    calls = [(h.get("Authorization"), body["id"]) for h, body in log.requests if body and "id" in body]
    assert [auth for auth, _ in calls] == ["Bearer USER-A-TOKEN"] * len(calls)
    assert [rid for _, rid in calls if rid != 0] == [1, 3]  # B's call never reached the upstream
    # Session ids, the gateway's and the upstream's, are recorded redacted like tokens.
    con = sqlite3.connect(db)
    recorded = " ".join(
        str(v)
        for row in con.execute(
            "select meta from frames union all select text || coalesce(data, '') from events"
        )
        for v in row
    )
    con.close()
    assert sid not in recorded and "upstream-sid-secret" not in recorded
    assert "«redacted:" in recorded


def test_stateless_requests_with_different_credentials_use_upstreams_of_their_own() -> None:
    log = HeaderLog()

    async def main() -> list[int]:
        async with serving(echo_app(log)) as url:
            spec = UpstreamSpec(name="u", transport="http", url=url)
            rules = Rules.from_options(handle_sampling="auto")
            config = GatewayConfig(registry={"u": spec}, token=TOKEN, rules=rules)
            async with running_gateway(config) as g, aiohttp.ClientSession() as http:
                statuses = []
                for rid, headers in ((1, USER_A), (2, USER_B), (3, USER_A), (4, USER_B)):
                    statuses.append((await _post(http, g.url("u"), call(rid, modern=True), headers))[0])
                return statuses

    assert asyncio.run(asyncio.wait_for(main(), 30)) == [200] * 4
    calls = [body for _, body in log.requests if body and body.get("method") == "tools/call"]
    by_id = {
        body["params"]["arguments"]["call"]: h.get("Authorization")
        for h, body in log.requests
        if body and body.get("method") == "tools/call"
    }
    assert len(calls) == 4 and by_id == {
        1: "Bearer USER-A-TOKEN",
        2: "Bearer USER-B-TOKEN",
        3: "Bearer USER-A-TOKEN",
        4: "Bearer USER-B-TOKEN",
    }
