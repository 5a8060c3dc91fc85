"""The reference TypeScript client through the gateway, against servers nobody here wrote.

server-everything sends ``notifications/tools/list_changed`` right after the client's
``notifications/initialized``, before the TypeScript client has opened its GET stream:
the gateway keeps what it could not deliver yet and sends it when the stream opens.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.interop import ts_steps
from tests.helpers.paths import everything_server_cmd

pytestmark = pytest.mark.slow

# A ping after a pause: what the server sends on initialized (and its roots/list, which
# server-everything sends a moment later) has arrived by then.
STEPS = [{"m": "listTools"}, {"m": "ping", "sleepMs": 1500}, {"m": "ping"}]


def test_what_the_server_sends_before_the_get_stream_opens_reaches_the_typescript_client(
    tmp_path: Path,
) -> None:
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    direct = ts_steps(STEPS, "stdio", *server)
    early = Counter(direct["notifications"])
    assert early["notifications/tools/list_changed"] >= 1, direct  # what this test is about
    gateway = GatewayProcess(
        tmp_path / "rec.db",
        {"everything": {"command": server[0], "args": server[1:]}},
        "--no-auth",
        tmp=tmp_path,
    )
    try:
        through = ts_steps(STEPS, "http", gateway.url("everything"))
    finally:
        gateway.stop()
    assert Counter(through["notifications"]) == early
    assert through["asked"] == direct["asked"]
    assert [r.get("error") for r in through["results"]] == [None, None, None]
