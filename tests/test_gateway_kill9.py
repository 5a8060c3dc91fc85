"""`mcptape proxy` killed with SIGKILL in the middle of eight sessions' bursts: the database is
consistent, what was recorded before the kill is readable as whole prefixes of each session,
and the sessions read as lost (their process is gone) afterwards."""

from __future__ import annotations

import http.client
import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.gateway_http import BIG, fetch
from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import INITIALIZE as INIT

pytestmark = pytest.mark.slow


def test_sigkill_mid_burst_leaves_a_consistent_database_and_lost_sessions(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    config = {"big": {"command": sys.executable, "args": [str(BIG), "--size", "200"]}}
    gateway = GatewayProcess(db, config, "--no-auth", tmp=tmp_path)
    acked: dict[str, int] = {}
    enough = threading.Barrier(9)
    accept = {"Accept": "application/json, text/event-stream"}

    def burst() -> None:
        try:
            status, sid, _ = fetch(gateway.base, "POST", accept, json.dumps(INIT).encode())
            assert status == 200
            acked[sid] = 0
            n = 0
            while True:
                n += 1
                call = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "x"}}
                headers = {**accept, "Mcp-Session-Id": sid}
                if fetch(gateway.base, "POST", headers, json.dumps(call).encode())[0] != 200:
                    return
                acked[sid] = n
                if n == 50:
                    enough.wait(30)
        except (OSError, http.client.HTTPException, threading.BrokenBarrierError):
            return  # the gateway is gone

    threads = [threading.Thread(target=burst, daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    enough.wait(60)  # every session is 50 calls in, and still going
    gateway.stop(signal.SIGKILL)
    for thread in threads:
        thread.join(30)
    assert len(acked) == 8

    con = sqlite3.connect(db)
    assert con.execute("pragma integrity_check").fetchone() == ("ok",)
    sessions = [row[0] for row in con.execute("select id from sessions")]
    assert len(sessions) == 8
    for sid in sessions:
        seqs = [
            row[0] for row in con.execute("select seq from frames where session_id = ? order by seq", (sid,))
        ]
        assert seqs == list(range(1, len(seqs) + 1)), "a gap in what was recorded"
        answered = con.execute(
            "select count(*) from frames where session_id = ? and direction = 's2c' and kind = 'response'",
            (sid,),
        ).fetchone()[0]
        assert answered >= 25, "most of what was answered before the kill is recorded"
    con.close()
    listed = subprocess.run(
        [*MCPTAPE, "sessions", "--db", str(db), "--json"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert sorted(s["status"] for s in json.loads(listed.stdout)) == ["lost"] * 8

    # The next gateway on that database closes them: their process is gone.
    after = GatewayProcess(db, config, "--no-auth", tmp=tmp_path)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _statuses(db) != ["interrupted"] * 8:
            time.sleep(0.1)
    finally:
        assert after.stop() == 0, after.stderr
    assert _statuses(db) == ["interrupted"] * 8


def _statuses(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return sorted(row[0] for row in con.execute("select status from sessions"))
    finally:
        con.close()
