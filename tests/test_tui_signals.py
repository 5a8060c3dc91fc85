"""`mcptape tui` stopped by a signal quits as ctrl+q does: the server is stopped, the session closed."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.debug_script import wait_until_gone
from tests.helpers.paths import ROOT
from tests.helpers.signalling import InTerminal, child_pids

pytestmark = pytest.mark.slow  # an `mcptape tui` process on a terminal, and its server


def _handshake_recorded(db: Path) -> bool:
    if not db.exists():  # a connection would create it: mcptape makes it
        return False
    try:
        found = query(db, "select count(*) from frames where method = 'initialize' and kind = 'response'")
    except sqlite3.Error:  # not created yet
        return False
    return found == [(1,)]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_stops_the_server_closes_the_session_and_exits_128_plus_n(
    tmp_path: Path, signum: signal.Signals
) -> None:
    db, report = tmp_path / "t.db", tmp_path / "report.json"
    # tiny_mcp that outlives its stdin: left behind, it would run on for good.
    server = [sys.executable, "-m", "tests.servers.lingering_mcp", str(report)]
    tui = InTerminal("tui", "--db", str(db), "--", *server, cwd=ROOT)
    # Connected once the handshake's answer is recorded (the screen is no witness: redrawn in
    # place, "connecting" became "connected" by writing "ed" alone, under load).
    tui.wait_until(lambda: _handshake_recorded(db), "the handshake's answer in the recording")
    servers = child_pids(tui.pid)
    assert servers

    os.kill(tui.pid, signum)
    code = tui.finish()

    assert code == 128 + signum, bytes(tui.output[-2000:])
    assert b"Traceback" not in tui.output
    assert all(wait_until_gone(pid) for pid in servers)
    assert json.loads(report.read_text())["eof_to_sigterm_s"] is not None  # stopped in order
    assert query(db, "select mode, status from sessions") == [("client", "closed")]
