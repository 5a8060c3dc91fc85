"""SIGHUP (the gateway's terminal closed) stops the gateway as SIGINT and SIGTERM do."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.debug_script import wait_until_gone
from tests.helpers.gateway_http import request
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.paths import ROOT
from tests.helpers.recording import INITIALIZE
from tests.helpers.signalling import child_pids

pytestmark = pytest.mark.slow  # a gateway process and its upstream process

# An upstream that runs on after its input ends: left behind, it would never exit.
LINGERING = [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py"), "--ignore-stdin-eof"]


def test_sighup_closes_every_session_and_stops_every_upstream(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    config = {"lingering": {"command": LINGERING[0], "args": LINGERING[1:]}}
    gateway = GatewayProcess(db, config, "--no-auth", "--grace", "0.5", tmp=tmp_path)
    accept = {"Accept": "application/json, text/event-stream"}
    status, _, body = request(
        gateway.base, "POST", "/servers/lingering/mcp", accept, json.dumps(INITIALIZE).encode()
    )
    assert status == 200 and b"initialize" in body  # echoed back: the upstream has it
    upstreams = child_pids(gateway.proc.pid)
    assert upstreams

    code = gateway.stop(signal.SIGHUP)

    assert code == 0, gateway.stderr  # a clean shutdown, as after SIGINT or SIGTERM
    assert "stopping (SIGHUP)" in gateway.stderr
    assert "Traceback" not in gateway.stderr
    assert all(wait_until_gone(pid) for pid in upstreams)
    rows = query(db, "select status, ended_at from sessions")
    assert rows and all(status != "running" and ended is not None for status, ended in rows), rows
