"""`mcptape serve --listen`: a recording served over streamable HTTP and legacy SSE to the real mcp SDK client.

The recording is the demo server's session driven by the SDK client over stdio; served
over HTTP (the gateway's listener and security), the SDK's streamable HTTP and SSE
clients get the live results, each client session is played the recording from its
start and recorded as a session of mode serve.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE
from tests.helpers.scenarios import DEMO, demo_scenario, record
from tests.helpers.served import Served, call_tools

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    db = tmp_path_factory.mktemp("serve-http") / "rec.db"
    return db, record(db, "demo", DEMO)


def wait_for(probe: Callable[[], Any], wanted: Any, timeout: float = 20) -> None:
    """Poll ``probe`` until it returns ``wanted`` (a database another process writes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.OperationalError):
            if probe() == wanted:
                return
        time.sleep(0.05)
    raise AssertionError(f"still not {wanted!r} after {timeout} s: {probe()!r}")


def test_serve_listen_gives_the_sdk_http_client_the_live_results_in_every_session(
    demo_db: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    recorded, live = demo_db
    db = tmp_path / "rec.db"
    db.write_bytes(recorded.read_bytes())
    served = Served("demo", "--db", str(db), "--token-file", str(tmp_path / "token"))
    try:
        assert served.token is not None and (tmp_path / "token").read_text().strip() == served.token
        for _ in range(2):  # each session is played the recording from its start
            http = create_mcp_http_client(headers=served.headers())
            assert demo_scenario(streamable_http_client(served.url, http_client=http)) == live  # type: ignore[arg-type]
        # The client's DELETE is answered before its session has finished closing; a SIGTERM in
        # that window records it as interrupted (the relay's rule for a signal during an ending).
        wait_for(
            lambda: query(db, "select count(*) from sessions where mode='serve' and ended_at is not null"),
            [(2,)],
        )
    finally:
        code = served.stop()
    assert code == 0, served.stderr
    ((original,),) = query(db, "select id from sessions where mode='record'")
    got = query(db, "select transport, replay_of, status from sessions where mode='serve'")
    assert got == [("http->tape", original, "closed")] * 2
    tools = query(
        db,
        "select tool from tool_calls where session_id in (select id from sessions where mode='serve') order by 1",
    )
    assert tools == [("add",), ("add",), ("countdown",), ("countdown",), ("weather",), ("weather",)]


def test_serve_listen_plays_the_recording_over_legacy_sse(demo_db: tuple[Path, dict[str, Any]]) -> None:
    db, live = demo_db
    served = Served("demo", "--db", str(db), "--no-record", "--no-auth")
    try:
        assert "no token required" in served.stderr
        assert demo_scenario(sse_client(served.url.removesuffix("/mcp") + "/sse")) == live  # type: ignore[arg-type]
    finally:
        assert served.stop() == 0, served.stderr
    # Stopped as the gateway is, and saying so as it does (serve said nothing). The client's
    # session may or may not have closed yet when the signal comes.
    assert re.search(r"stopping \(SIGTERM\): closing [01] session\(s\)", served.stderr), served.stderr


def test_serve_listen_checks_the_token_and_the_host(demo_db: tuple[Path, dict[str, Any]]) -> None:
    db, _ = demo_db
    served = Served("demo", "--db", str(db), "--no-record", env={"MCPTAPE_PROXY_TOKEN": "sesame", "PATH": ""})
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode()

    def post(headers: dict[str, str]) -> int:
        request = urllib.request.Request(
            served.url,
            body,
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        assert served.token is None  # taken from the environment: never printed
        assert post({}) == 401
        assert post({"Authorization": "Bearer wrong"}) == 401
        assert post({"Authorization": "Bearer sesame", "Host": "evil.example:80"}) == 403
        assert post({"Authorization": "Bearer sesame"}) == 200
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--no-auth"], "go with --listen"),
        (["--listen", "0.0.0.0:0"], "--allow-remote"),
        (["--listen", "0.0.0.0:0", "--allow-remote", "--no-auth"], "loopback only"),
        (["--listen", "nonsense"], "is not HOST:PORT"),
        (["--url", "http://127.0.0.1:9/mcp"], "only used with --on-miss forward"),
        (["--on-miss", "forward", "--url", "ftp://example.com/mcp"], "is not an http"),
        (["--on-miss", "forward", "--url", "http://127.0.0.1:9/mcp", "--", "true"], "give one server"),
    ],
)
def test_serve_listen_flag_errors_are_one_line(
    demo_db: tuple[Path, dict[str, Any]], args: list[str], fragment: str
) -> None:
    db, _ = demo_db
    proc = subprocess.run(
        [*MCPTAPE, "serve", "demo", "--db", str(db), *args], capture_output=True, text=True, timeout=30
    )
    assert_one_line_error(proc, fragment)


def test_serve_listen_miss_names_the_nearest_recorded_requests(demo_db: tuple[Path, dict[str, Any]]) -> None:
    db, _ = demo_db
    served = Served("demo", "--db", str(db), "--no-record", "--no-auth", "--strict")
    try:
        (message,) = call_tools(served, ("weather", {"city": "Paris"}))
    finally:
        code = served.stop()
    assert "no recorded response matches this tools/call request" in message
    assert "#4 tools/call (differs at /params/arguments/city)" in message
    assert message.count("#") == 3
    assert code == 1  # --strict: a request matched nothing
    assert "1 request(s) matched nothing on the tape" in served.stderr
