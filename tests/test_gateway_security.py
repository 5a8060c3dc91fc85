"""The gateway's protection: Host/Origin (403) first, the token (401), registry names only (404), redaction."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.gateway_http import DEMO_SERVERS, INIT, request
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.paths import MCPTAPE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


def start_gateway(folder: Path) -> GatewayProcess:
    env = {k: v for k, v in os.environ.items() if k != "MCPTAPE_PROXY_TOKEN"}
    token_file = folder / "token"
    g = GatewayProcess(folder / "g.db", DEMO_SERVERS, "--token-file", str(token_file), tmp=folder, env=env)
    os.environ.pop("MCPTAPE_PROXY_TOKEN", None)
    return g


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One gateway for the checks that leave it as it was (each request is refused or answered alone)."""
    g = start_gateway(tmp_path_factory.mktemp("gateway"))
    yield g
    g.stop()


def test_health_needs_no_token_and_says_nothing_more(gateway: GatewayProcess) -> None:
    status, _, body = request(gateway.base, "GET", "/health")
    assert (status, json.loads(body)["status"]) == (200, "ok")


def test_the_generated_token_is_printed_once_and_written_for_the_user_alone(gateway: GatewayProcess) -> None:
    token_file = gateway.db.parent / "token"
    assert gateway.token and token_file.read_text().strip() == gateway.token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert gateway.stderr.count(gateway.token) == 1


def test_call_without_the_gateway_token_says_so_and_runs_no_oauth_flow(gateway: GatewayProcess) -> None:
    argv = [*MCPTAPE, "call", "-m", "tools/list", "--no-record", "--url", gateway.url("demo")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "missing or wrong gateway token" in proc.stderr
    assert "register" not in proc.stderr and "OAuth" not in proc.stderr  # it used to try /register
    with_token = subprocess.run(
        [*argv, "--header", f"Authorization: Bearer {gateway.token}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert with_token.returncode == 0 and '"tools"' in with_token.stdout


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"X-Mcptape-Token": "wrong"}, {"Authorization": "Basic abc"}],
)
def test_a_missing_or_wrong_token_is_401(gateway: GatewayProcess, headers: dict[str, str]) -> None:
    status, got, _ = request(gateway.base, "POST", "/servers/demo/mcp", headers, INIT)
    assert status == 401 and got["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "headers",
    [{"Host": "evil.example:80"}, {"Origin": "http://evil.example"}, {"Origin": "null"}],
)
def test_a_foreign_host_or_origin_is_403_before_anything_else(
    gateway: GatewayProcess, headers: dict[str, str]
) -> None:
    # Even with the right token and even for /health: DNS rebinding is checked first.
    for path, method, body in (("/servers/demo/mcp", "POST", INIT), ("/health", "GET", None)):
        status, _, _ = request(
            gateway.base, method, path, {"Authorization": f"Bearer {gateway.token}", **headers}, body
        )
        assert status == 403


def test_unknown_names_are_404_and_a_request_never_starts_a_command(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    # tmp_path is this test's own: the marker cannot be there before it runs.
    marker = tmp_path / "pwned"
    auth = {"Authorization": f"Bearer {gateway.token}"}
    for path in (
        "/servers/nope/mcp",
        f"/servers/touch%20{marker}/mcp",
        f"/servers/demo/mcp?command=touch&args={marker}",
        f"/stdio?command=touch&args={marker}",
    ):
        status, _, _ = request(gateway.base, "POST", path, auth, INIT)
        assert status in (404, 200), path
        assert status == 404 or "?command" in path
    assert not marker.exists()
    con = sqlite3.connect(gateway.db)
    try:
        upstreams = {u for (u,) in con.execute("select upstream from sessions")}
    finally:
        con.close()
    assert all("touch" not in u for u in upstreams)


def test_token_via_own_header_lets_the_client_authorization_through_and_secrets_are_redacted(
    tmp_path: Path,
) -> None:
    gateway = start_gateway(tmp_path)  # its own: it is stopped to read what was recorded
    secret = "client-oauth-secret-123"
    headers = {
        "X-Mcptape-Token": gateway.token or "",
        "Authorization": f"Bearer {secret}",
        "Cookie": "sid=cookie-secret-456",
    }
    try:
        status, got, _ = request(gateway.base, "POST", "/servers/demo/mcp", headers, INIT)
        assert status == 200 and got["mcp-session-id"]
        request(
            gateway.base, "DELETE", "/servers/demo/mcp", {**headers, "Mcp-Session-Id": got["mcp-session-id"]}
        )
    finally:
        gateway.stop()
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        dump = json.dumps(
            [con.execute(f"select * from {t}").fetchall() for t in ("sessions", "frames", "events")],
            default=str,
        )
        meta = con.execute("select meta from frames where direction='c2s'").fetchone()[0]
    finally:
        con.close()
    for leaked in (secret, "cookie-secret-456", gateway.token or "-"):
        assert leaked not in dump
    assert "Bearer «redacted" in meta


def test_sessions_expire_when_idle_and_then_404(tmp_path: Path) -> None:
    g = GatewayProcess(tmp_path / "g.db", DEMO_SERVERS, "--no-auth", "--idle-timeout", "0.5", tmp=tmp_path)
    try:
        status, got, _ = request(
            g.base, "POST", "/servers/demo/mcp", {"Accept": "application/json, text/event-stream"}, INIT
        )
        assert status == 200
        sid = got["mcp-session-id"]
        import time

        note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        status, _, _ = request(g.base, "POST", "/servers/demo/mcp", {"Mcp-Session-Id": sid}, note)
        assert status == 202
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            time.sleep(1.0)  # longer than the idle timeout: each POST counts as activity
            status, _, _ = request(g.base, "POST", "/servers/demo/mcp", {"Mcp-Session-Id": sid}, note)
            if status == 404:
                break
        assert status == 404
        # The upstream is shut down after the session id is gone; let that finish before stopping.
        # The gateway opens its database in the background: on a loaded machine its tables may
        # not be there yet (read-only, so this loop never creates the file itself).
        while time.monotonic() < deadline:
            try:
                con = sqlite3.connect(f"file:{tmp_path / 'g.db'}?mode=ro", uri=True)
                try:
                    ended = con.execute(
                        "select count(*) from sessions where ended_at is not null"
                    ).fetchone()[0]
                finally:
                    con.close()
            except sqlite3.OperationalError:  # no file or no table yet
                ended = 0
            if ended:
                break
            time.sleep(0.2)
    finally:
        g.stop()
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        assert con.execute("select status from sessions").fetchall() == [("closed",)]
        texts = [t for (t,) in con.execute("select text from events where kind='http_session_closed'")]
    finally:
        con.close()
    assert texts and "idle" in texts[0]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--listen", "0.0.0.0:0"], "--allow-remote"),
        (["--listen", "0.0.0.0:0", "--allow-remote", "--no-auth"], "loopback only"),
        (["--listen", "nonsense"], "is not HOST:PORT"),
    ],
)
def test_unsafe_or_bad_listen_flags_are_one_line_errors(args: list[str], fragment: str) -> None:
    proc = subprocess.run([*MCPTAPE, "proxy", *args], capture_output=True, text=True, timeout=30)
    assert_one_line_error(proc, fragment)


def test_fifty_concurrent_sessions_get_their_own_answers_and_sessions(tmp_path: Path) -> None:
    # A stdio upstream per session: the gateway runs fifty relays, routers and event stores.
    tiny = {
        "demo": {"command": sys.executable, "args": [str(Path(__file__).parent / "servers" / "tiny_mcp.py")]}
    }
    g = GatewayProcess(tmp_path / "g.db", tiny, "--no-auth", tmp=tmp_path)
    n = 50
    results: dict[int, Any] = {}

    async def one(i: int) -> None:
        async with Client(g.url("demo"), mode="legacy") as client:
            got = await client.call_tool("add", {"a": i, "b": 1000})
            results[i] = got.structured_content or got.content[0].model_dump()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)

    try:
        anyio.run(main)
    finally:
        g.stop()
    assert len(results) == n
    for i, got in results.items():
        assert str(i + 1000) in json.dumps(got), (i, got)
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        assert con.execute("select count(*) from sessions").fetchone() == (n,)
        # Every session holds exactly its own call: the arguments and the answer it got.
        rows = con.execute(
            "select session_id, group_concat(text, '|') from frames where method='tools/call' or kind='response' group by 1"
        ).fetchall()
        assert len(rows) == n
        for _, texts in rows:
            a = json.loads(next(t for t in texts.split("|") if '"tools/call"' in t))["params"]["arguments"][
                "a"
            ]
            assert str(a + 1000) in texts
    finally:
        con.close()


def test_an_upstream_that_cannot_start_is_a_502_saying_why_and_is_recorded(tmp_path: Path) -> None:
    broken = {"broken": {"command": str(tmp_path / "no-such-server")}}
    g = GatewayProcess(tmp_path / "g.db", broken, "--no-auth", tmp=tmp_path)
    try:
        status, _, body = request(g.base, "POST", "/servers/broken/mcp", {}, INIT)
        sse_status, _, _ = request(g.base, "GET", "/servers/broken/sse", {"Accept": "text/event-stream"})
        health, _, _ = request(g.base, "GET", "/health")
    finally:
        assert g.stop() == 0
    assert (status, sse_status, health) == (502, 502, 200)
    assert "cannot be started" in json.loads(body)["error"]["message"]
    assert "Traceback" not in g.stderr
    con = sqlite3.connect(tmp_path / "g.db")
    try:
        assert con.execute("select distinct status from sessions").fetchall() == [("error",)]
    finally:
        con.close()


def test_a_missing_config_or_a_busy_port_is_a_one_line_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "proxy", "--no-auth", "--config", str(tmp_path / "nope.json")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert_one_line_error(proc, "does not exist")
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [*MCPTAPE, "proxy", "--no-auth", "--listen", f"127.0.0.1:{port}", "--db", str(tmp_path / "g.db")],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert_one_line_error(proc, f"cannot listen on 127.0.0.1:{port}")


def test_a_malformed_config_entry_is_named_in_a_warning_and_the_others_are_served(tmp_path: Path) -> None:
    config = {
        "broken\x1b[2J": {"command": 5},
        "demo2": {"command": sys.executable, "args": ["-m", "mcptape.servers.demo"]},
    }
    g = GatewayProcess(tmp_path / "g.db", config, "--no-auth", tmp=tmp_path)
    try:
        status, _, body = request(g.base, "POST", "/servers/demo2/mcp", {}, INIT)
        assert status == 200, body
        assert request(g.base, "POST", "/servers/broken%1B%5B2J/mcp", {}, INIT)[0] == 404
    finally:
        assert g.stop() == 0
    assert "warning: not served:" in g.stderr and "command must be a non-empty string" in g.stderr
    assert "\x1b" not in g.stderr


def test_a_remote_entry_with_an_unset_env_header_or_no_server_is_a_502_saying_why(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens there
    config = {
        "needs-env": {
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": {"X-Key": "${MCPTAPE_TEST_UNSET_VAR}"},
        },
        "nobody": {"url": f"http://127.0.0.1:{port}/mcp"},
    }
    env = {k: v for k, v in os.environ.items() if k != "MCPTAPE_TEST_UNSET_VAR"}
    g = GatewayProcess(tmp_path / "g.db", config, "--no-auth", env=env, tmp=tmp_path)
    try:
        unset = request(g.base, "POST", "/servers/needs-env/mcp", {}, INIT)
        nobody = request(g.base, "POST", "/servers/nobody/mcp", {}, INIT)
        metadata = request(g.base, "GET", "/.well-known/oauth-protected-resource/servers/nobody/mcp")
    finally:
        assert g.stop() == 0
    assert unset[0] == 502 and "MCPTAPE_TEST_UNSET_VAR" in json.loads(unset[2])["error"]["message"]
    assert nobody[0] == 502 and "cannot be reached" in json.loads(nobody[2])["error"]["message"]
    assert metadata[0] == 502
    assert "Traceback" not in g.stderr
