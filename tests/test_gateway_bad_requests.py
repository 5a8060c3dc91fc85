"""What the gateway answers a client that POSTs no JSON-RPC message, or uses a method no route has.

A stdio upstream behind the gateway cannot answer at the HTTP level, so the gateway does
what a streamable HTTP server does: 400 with a JSON-RPC error (-32700 for a body that is no
JSON, -32600 for JSON that is no message). Without a session id nothing is started for
such a body; inside a session it is recorded and passed on like every frame.

The gateway runs in process (:class:`tests.helpers.inprocess.GatewayThread`: the same app,
guard and sessions as `mcptape proxy`, on a loopback port) in front of the demo server
run by the mcp SDK on the gateway's loop: these are HTTP answers, whatever the upstream.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcptape.gateway.app import GatewayConfig
from tests.helpers.db import query
from tests.helpers.gateway_http import INIT, request
from tests.helpers.inprocess import GatewayThread, demo_server

ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def gateway(tmp_path: Path) -> Any:
    g = GatewayThread(GatewayConfig(registry={}, db=str(tmp_path / "g.db")), {"demo": demo_server})
    yield g
    g.stop()


def _error(body: bytes) -> tuple[Any, int]:
    answer = json.loads(body)
    return answer["id"], answer["error"]["code"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{nope", -32700),
        (b"", -32700),
        (b"[" * 5000 + b"]" * 5000, -32700),
        (b"\xff\xfe garbage", -32700),
        (b"null", -32600),
        (b'"a string"', -32600),
        (b'{"no": "jsonrpc"}', -32600),
        (b"[]", -32600),
    ],
)
def test_a_body_that_is_no_message_is_400_and_starts_no_server(
    gateway: GatewayThread, tmp_path: Path, body: bytes, code: int
) -> None:
    status, _, data = request(gateway.base, "POST", "/servers/demo/mcp", ACCEPT, body)
    assert status == 400
    assert _error(data) == (None, code)
    assert gateway.upstreams.opened == []
    gateway.stop()
    db = tmp_path / "g.db"
    # The store opens with the first session: no file at all means none was started.
    assert not db.exists() or query(db, "select count(*) from sessions")[0][0] == 0


def test_inside_a_session_a_bad_body_is_400_recorded_and_the_session_goes_on(
    gateway: GatewayThread, tmp_path: Path
) -> None:
    status, headers, _ = request(gateway.base, "POST", "/servers/demo/mcp", ACCEPT, INIT)
    assert status == 200
    session = {**ACCEPT, "Mcp-Session-Id": headers["mcp-session-id"]}
    status, headers, data = request(gateway.base, "POST", "/servers/demo/mcp", session, b"{oops")
    assert status == 400 and _error(data) == (None, -32700)
    ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    status, _, data = request(gateway.base, "POST", "/servers/demo/mcp", session, ping)
    assert status == 200 and b'"id":2' in data
    gateway.stop()
    rows = query(tmp_path / "g.db", "select kind, text from frames where direction = 'c2s' order by seq")
    assert ("malformed", "{oops") in rows


def test_a_method_no_route_takes_is_405_naming_the_allowed_ones(gateway: GatewayThread) -> None:
    status, headers, data = request(gateway.base, "PATCH", "/servers/demo/mcp", ACCEPT, b"{}")
    assert status == 405
    assert set(headers["allow"].split(", ")) >= {"GET", "POST", "DELETE"}
    assert b"PATCH is not allowed" in data


def test_a_path_nothing_serves_is_404(gateway: GatewayThread) -> None:
    status, _, data = request(gateway.base, "GET", "/nothing/here", ACCEPT)
    assert status == 404 and b"nothing is served at" in data


def test_a_legacy_sse_message_that_is_no_json_is_400(gateway: GatewayThread) -> None:
    import asyncio

    import aiohttp

    async def scenario() -> tuple[int, Any]:
        async with (
            aiohttp.ClientSession() as http,
            http.get(gateway.url("demo", "sse"), headers={"Accept": "text/event-stream"}) as stream,
        ):
            endpoint = None
            async for line in stream.content:
                if line.startswith(b"data:"):
                    endpoint = line[5:].strip().decode()
                    break
            assert endpoint is not None
            async with http.post(gateway.base + endpoint, data=b"{oops") as r:
                return r.status, _error(await r.read())

    assert asyncio.run(scenario()) == (400, (None, -32700))


def _events(data: bytes) -> list[dict[str, str]]:
    events = []
    for block in data.decode().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = fields.get(name, "") + value.removeprefix(" ")
        if fields:
            events.append(fields)
    return events


def _post_whole(base: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """A POST whose answer stream is read to its end (it ends after the answer)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    try:
        conn.request("POST", "/servers/demo/mcp", body, {"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def _init(version: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ).encode()


def test_a_2025_11_25_client_gets_a_priming_event_it_can_resume_from_and_older_ones_do_not(
    gateway: GatewayThread,
) -> None:
    # SEP-1699: an id and empty data first, so a stream lost before the answer can be resumed.
    status, headers, data = _post_whole(gateway.base, ACCEPT, _init("2025-11-25"))
    assert status == 200
    first, answer = _events(data)[:2]
    assert first == {"id": first["id"], "data": ""} and first["id"].endswith("-1")
    assert json.loads(answer["data"])["id"] == 1
    session = {**ACCEPT, "Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    status, _, data = request(
        gateway.base, "GET", "/servers/demo/mcp", {**session, "Last-Event-ID": first["id"]}
    )
    assert (
        status == 200 and json.loads(_events(data)[0]["data"])["id"] == 1
    )  # resumed after the priming event

    status, _, data = _post_whole(gateway.base, ACCEPT, _init("2025-06-18"))
    assert status == 200
    assert json.loads(_events(data)[0]["data"])["id"] == 1  # no priming event for an older client


@pytest.mark.parametrize(
    "last",
    [
        "g-\u00b2".encode().decode("latin-1"),  # '²' in UTF-8: str.isdigit() says yes, int() no
        "g-" + "9" * 5000,  # past what int() converts from text
        "g-99999999999999999999",  # no event the gateway ever gave
        "g-",
        "nothing",
    ],
)
def test_a_last_event_id_naming_no_event_it_was_given_is_404_and_the_session_goes_on(
    gateway: GatewayThread, last: str
) -> None:
    status, headers, _ = _post_whole(gateway.base, ACCEPT, _init("2025-11-25"))
    session = {**ACCEPT, "Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    status, _, data = request(gateway.base, "GET", "/servers/demo/mcp", {**session, "Last-Event-ID": last})
    assert status == 404 and "no stream has event" in json.loads(data)["error"]["message"]
    status, _, data = _post_whole(gateway.base, session, b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
    assert status == 200 and json.loads(_events(data)[-1]["data"]) == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {},
    }
