"""The gateway's routes, guard and sessions in process: the real app on loopback, the demo server on its loop.

The gateway is the one `mcptape proxy` runs (same app, guard, session manager, store),
started by :class:`tests.helpers.inprocess.GatewayThread`; its upstream is the built-in
demo server run by the mcp SDK on the gateway's loop over a memory link, so each test
sees a real MCP session without starting a process. The clients are the SDK's own
(streamable HTTP and legacy SSE) or raw HTTP requests with exactly the headers a test
names. The same checks against a real `mcptape proxy` process and real upstream
processes are in test_gateway_security.py and test_gateway.py (marked slow).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from mcptape.gateway.app import GatewayConfig
from tests.helpers.db import query
from tests.helpers.gateway_http import INIT, request
from tests.helpers.inprocess import GatewayThread, demo_server
from tests.helpers.scenarios import demo_scenario, dump

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

TOKEN = "in-process-test-token"
ACCEPT = {"Accept": "application/json, text/event-stream"}
AUTH = {"Authorization": f"Bearer {TOKEN}", **ACCEPT}
NOTE = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    g = GatewayThread(
        GatewayConfig(registry={}, db=str(tmp_path / "g.db"), token=TOKEN), {"demo": demo_server}
    )
    yield g
    g.stop()


@pytest.fixture
def open_gateway(tmp_path: Path) -> Iterator[GatewayThread]:
    """No token (`--no-auth`): for the SDK clients, which cannot add our header to every request."""
    g = GatewayThread(GatewayConfig(registry={}, db=str(tmp_path / "g.db")), {"demo": demo_server})
    yield g
    g.stop()


def _open_session(gateway: GatewayThread, headers: dict[str, str]) -> str:
    status, got, _ = request(gateway.base, "POST", "/servers/demo/mcp", headers, INIT)
    assert status == 200, status
    sid = got["mcp-session-id"]
    status, _, _ = request(
        gateway.base, "POST", "/servers/demo/mcp", {**headers, "Mcp-Session-Id": sid}, NOTE
    )
    assert status == 202
    return sid


def test_health_needs_no_token_and_says_nothing_more(gateway: GatewayThread) -> None:
    status, _, body = request(gateway.base, "GET", "/health")
    health = json.loads(body)
    # The store's state for a balancer's checks, and nothing that names the database or a session.
    assert (status, health["status"], set(health)) == (200, "ok", {"status", "replica", "sessions", "store"})
    assert set(health["store"]) <= {"recording", "writable", "opening", "failed", "lag_s", "backlog"}
    assert "db" not in body.decode().lower() and ".db" not in body.decode()


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"X-Mcptape-Token": "wrong"}, {"Authorization": "Basic abc"}],
)
def test_a_missing_or_wrong_token_is_401_and_opens_nothing(
    gateway: GatewayThread, headers: dict[str, str]
) -> None:
    status, got, _ = request(gateway.base, "POST", "/servers/demo/mcp", {**ACCEPT, **headers}, INIT)
    assert status == 401 and got["www-authenticate"].startswith("Bearer")
    assert gateway.upstreams.opened == []


@pytest.mark.parametrize(
    "headers",
    [{"Host": "evil.example:80"}, {"Origin": "http://evil.example"}, {"Origin": "null"}],
)
def test_a_foreign_host_or_origin_is_403_before_the_token_even_for_health(
    gateway: GatewayThread, headers: dict[str, str]
) -> None:
    for path, method, body in (("/servers/demo/mcp", "POST", INIT), ("/health", "GET", None)):
        status, _, data = request(gateway.base, method, path, {**AUTH, **headers}, body)
        assert status == 403 and b"mcptape:" in data
    assert gateway.upstreams.opened == []


def test_the_gateways_own_origin_is_allowed(gateway: GatewayThread) -> None:
    status, _, _ = request(gateway.base, "GET", "/health", {"Origin": gateway.base})
    assert status == 200


def test_unknown_names_and_paths_are_404_and_a_request_never_names_a_command(
    gateway: GatewayThread, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    for path in (
        "/servers/nope/mcp",
        f"/servers/touch%20{marker}/mcp",
        f"/stdio?command=touch&args={marker}",
        "/servers/demo",
    ):
        status, _, data = request(gateway.base, "POST", path, AUTH, INIT)
        assert status == 404, path
        assert json.loads(data)["error"]["message"].startswith("mcptape: ")
    # A query string is not a command either: the registered server answers.
    status, _, _ = request(gateway.base, "POST", f"/servers/demo/mcp?command=touch&args={marker}", AUTH, INIT)
    assert status == 200
    assert gateway.upstreams.opened == ["demo"] and not marker.exists()


def test_a_method_no_route_has_is_405_naming_the_allowed_ones(gateway: GatewayThread) -> None:
    status, got, _ = request(gateway.base, "PUT", "/servers/demo/mcp", AUTH, b"{}")
    assert status == 405 and set(got["allow"].split(", ")) >= {"GET", "POST", "DELETE"}


def test_token_in_its_own_header_lets_the_clients_authorization_through_redacted(
    gateway: GatewayThread, tmp_path: Path
) -> None:
    headers = {**ACCEPT, "X-Mcptape-Token": TOKEN, "Authorization": "Bearer client-secret-123"}
    _open_session(gateway, headers)
    gateway.stop()
    dump_ = json.dumps([query(tmp_path / "g.db", f"select * from {t}") for t in ("sessions", "frames")])
    assert "client-secret-123" not in dump_ and TOKEN not in dump_
    assert (
        "Bearer «redacted" in query(tmp_path / "g.db", "select meta from frames where direction='c2s'")[0][0]
    )


def test_a_session_id_the_gateway_never_gave_is_404(gateway: GatewayThread) -> None:
    ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
    for method, body in (("POST", ping), ("GET", None), ("DELETE", None)):
        status, _, _ = request(
            gateway.base, method, "/servers/demo/mcp", {**AUTH, "Mcp-Session-Id": "nope"}, body
        )
        assert status == 404, method


def test_delete_ends_the_session_its_id_is_404_after_and_it_is_recorded_closed(
    gateway: GatewayThread, tmp_path: Path
) -> None:
    sid = _open_session(gateway, AUTH)
    session = {**AUTH, "Mcp-Session-Id": sid}
    ping = b'{"jsonrpc":"2.0","id":"p","method":"ping"}'
    status, _, data = request(gateway.base, "POST", "/servers/demo/mcp", session, ping)
    assert status == 200 and b'"id":"p"' in data
    status, _, _ = request(gateway.base, "DELETE", "/servers/demo/mcp", session)
    assert status in (200, 204)
    status, _, _ = request(gateway.base, "POST", "/servers/demo/mcp", session, ping)
    assert status == 404
    gateway.stop()
    db = tmp_path / "g.db"
    assert query(db, "select mode, status from sessions") == [("proxy", "closed")]
    assert query(db, "select method from exchanges order by request_seq") == [("initialize",), ("ping",)]
    events = [text for (text,) in query(db, "select text from events where kind = 'http_session_closed'")]
    assert events == ["the client deleted the session"]


def test_an_idle_session_is_ended_and_its_id_is_404_after(tmp_path: Path) -> None:
    g = GatewayThread(
        GatewayConfig(registry={}, db=str(tmp_path / "g.db"), idle_timeout=0.3), {"demo": demo_server}
    )
    try:
        sid = _open_session(g, ACCEPT)
        status, deadline = 202, time.monotonic() + 10
        while status == 202 and time.monotonic() < deadline:
            time.sleep(0.6)  # longer than the idle timeout: each POST counts as activity
            status, _, _ = request(
                g.base, "POST", "/servers/demo/mcp", {**ACCEPT, "Mcp-Session-Id": sid}, NOTE
            )
        assert status == 404
    finally:
        g.stop()
    texts = [
        t for (t,) in query(tmp_path / "g.db", "select text from events where kind='http_session_closed'")
    ]
    assert texts and "idle" in texts[0]


def test_the_sdk_client_gets_through_the_gateway_what_it_gets_from_the_server_itself(
    open_gateway: GatewayThread, tmp_path: Path
) -> None:
    direct = demo_scenario(demo_server())
    through = demo_scenario(open_gateway.url("demo"))
    assert through == direct
    open_gateway.stop()
    db = tmp_path / "g.db"
    assert query(db, "select mode, transport, status, server_name from sessions") == [
        ("proxy", "http->stdio", "closed", "mcptape-demo")
    ]
    assert query(db, "select tool, is_error from tool_calls order by 1") == [
        ("add", 0),
        ("countdown", 0),
        ("weather", 0),
    ]
    assert query(db, "select count(*) from exchanges where response is null") == [(0,)]


def test_the_legacy_sse_client_gets_the_same_results(open_gateway: GatewayThread, tmp_path: Path) -> None:
    direct = demo_scenario(demo_server())
    through = demo_scenario(sse_client(open_gateway.url("demo", "sse")))
    assert through == direct
    open_gateway.stop()
    assert query(tmp_path / "g.db", "select transport from sessions") == [("sse->stdio",)]


def test_concurrent_sessions_each_get_their_own_answers(open_gateway: GatewayThread, tmp_path: Path) -> None:
    results: dict[int, Any] = {}

    def one(n: int) -> None:
        async def main() -> Any:
            async with Client(open_gateway.url("demo"), mode="legacy") as client:
                return dump(await client.call_tool("add", {"a": n, "b": 1000}))

        results[n] = anyio.run(main)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert {n: r["structuredContent"]["result"] for n, r in results.items()} == {
        n: n + 1000 for n in range(8)
    }
    open_gateway.stop()
    assert query(tmp_path / "g.db", "select count(*), count(distinct id) from sessions") == [(8, 8)]


def test_a_batch_of_more_messages_than_the_gateway_takes_is_413_and_the_session_goes_on(
    gateway: GatewayThread, tmp_path: Path
) -> None:
    from mcptape.gateway.responses import MAX_BATCH_ITEMS

    # 100,000 pings in one 5 MB POST were split and routed on the loop: 3.3 s every session waited.
    sid = _open_session(gateway, AUTH)
    session = {**AUTH, "Mcp-Session-Id": sid}
    many = (
        "["
        + ",".join(f'{{"jsonrpc":"2.0","id":{i},"method":"ping"}}' for i in range(MAX_BATCH_ITEMS + 1))
        + "]"
    )
    status, _, data = request(gateway.base, "POST", "/servers/demo/mcp", session, many.encode())
    assert status == 413, status
    assert f"a batch of {MAX_BATCH_ITEMS + 1} messages" in json.loads(data)["error"]["message"]
    ping = b'{"jsonrpc":"2.0","id":"after","method":"ping"}'
    status, _, data = request(gateway.base, "POST", "/servers/demo/mcp", session, ping)
    assert status == 200 and b'"id":"after"' in data
    gateway.stop()
    assert query(tmp_path / "g.db", "select count(*) from frames where kind = 'batch'") == [(0,)]
