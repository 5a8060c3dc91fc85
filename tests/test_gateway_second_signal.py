"""A second signal while the gateway shuts down gives up waiting for upstreams slow to exit: every
upstream process group is killed, and what was received is written and every session row closed."""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from mcptape.store.procinfo import process_ended
from tests.helpers.gateway_http import request
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.paths import ROOT
from tests.helpers.recording import INITIALIZE

pytestmark = pytest.mark.slow  # a gateway process and its upstream processes

# An upstream that ignores the end of its input and SIGTERM: only SIGKILL ends it.
STUBBORN = [
    sys.executable,
    str(ROOT / "tests" / "servers" / "raw_echo.py"),
    "--ignore-stdin-eof",
    "--ignore-sigterm",
]


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists() or process_ended(pid)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_second_signal_kills_the_upstreams_and_still_closes_every_session(tmp_path: Path, sig: int) -> None:
    db = tmp_path / "g.db"
    config = {"stubborn": {"command": STUBBORN[0], "args": STUBBORN[1:]}}
    gateway = GatewayProcess(db, config, "--no-auth", "--grace", "5", tmp=tmp_path)
    accept = {"Accept": "application/json, text/event-stream"}
    for _ in range(3):
        status, _, body = request(
            gateway.base, "POST", "/servers/stubborn/mcp", accept, json.dumps(INITIALIZE).encode()
        )
        assert status == 200 and b"initialize" in body  # echoed back: the upstream has it
    upstreams = _children(gateway.proc.pid)
    assert len(upstreams) == 3
    gateway.proc.send_signal(sig)
    time.sleep(0.5)
    gateway.proc.send_signal(sig)
    assert gateway.proc.wait(30) == 0
    gateway.stop()  # it has exited: this only collects its stderr
    assert "again: not waiting for the upstreams" in gateway.stderr
    deadline = time.monotonic() + 5
    while not all(_gone(pid) for pid in upstreams) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in upstreams if not _gone(pid)] == []
    con = sqlite3.connect(db)
    rows = con.execute(
        "select status, (select count(*) from frames f where f.session_id = s.id) from sessions s"
    )
    sessions = rows.fetchall()
    con.close()
    assert len(sessions) == 3
    assert all(status == "interrupted" and frames >= 2 for status, frames in sessions), sessions
