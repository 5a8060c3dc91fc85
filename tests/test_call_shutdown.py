"""How `mcptape call` ends a server it started: stdin closed, a short wait, SIGTERM, the grace, SIGKILL.

A one-shot client has nothing to wait for once its answer came: a server that outlives
its stdin (timers, as server-everything has) gets SIGTERM after call's short EOF wait
(0.1 s), not after the 2 s grace, and the grace still protects its SIGTERM cleanup.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.debug_script import wait_until_gone
from tests.helpers.paths import MCPTAPE, ROOT
from tests.helpers.signalling import child_pids

pytestmark = pytest.mark.slow


def test_a_server_that_ignores_stdin_eof_gets_sigterm_soon_and_its_cleanup_is_not_killed(
    tmp_path: Path,
) -> None:
    report, db = tmp_path / "report.json", tmp_path / "rec.db"
    server = [sys.executable, "-m", "tests.servers.lingering_mcp", str(report)]
    proc = subprocess.run(
        [*MCPTAPE, "call", "-m", "tools/list", "--db", str(db), "--", *server],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tools"][0]["name"] == "add"
    # The cleanup (0.3 s, longer than the EOF wait) ran to its end: SIGTERM, then the grace.
    waited = json.loads(report.read_text())["eof_to_sigterm_s"]
    assert waited is not None and waited < 1.5  # call's EOF wait, well under the 2 s grace
    con = sqlite3.connect(db)
    try:
        assert con.execute("select mode, status, exit_code from sessions").fetchall() == [
            ("call", "closed", 0)
        ]
    finally:
        con.close()


def test_sighup_ends_a_follow_and_shuts_down_a_server_that_outlives_its_stdin(tmp_path: Path) -> None:
    report, db = tmp_path / "report.json", tmp_path / "rec.db"
    server = [sys.executable, "-m", "tests.servers.lingering_mcp", str(report)]
    argv = [
        *MCPTAPE,
        "call",
        "-m",
        "tools/list",
        "--follow",
        "--timeout",
        "60",
        "--db",
        str(db),
        "--",
        *server,
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the result: following from here on
    proc.send_signal(signal.SIGHUP)  # the terminal closed
    _, err_text = proc.communicate(timeout=60)

    assert proc.returncode == 0, err_text  # a signal ends a follow, as SIGINT and SIGTERM do
    assert "Traceback" not in err_text
    assert json.loads(first)["result"]["tools"][0]["name"] == "add"
    # The server got its SIGTERM and cleaned up: it is not left running.
    assert json.loads(report.read_text())["eof_to_sigterm_s"] is not None
    con = sqlite3.connect(db)
    try:
        assert con.execute("select mode, status from sessions").fetchall() == [("call", "closed")]
    finally:
        con.close()


def test_a_signal_while_call_shuts_its_server_down_still_ends_that_server(tmp_path: Path) -> None:
    # Ignores SIGTERM, says when its stdin closed: the signal lands within call's shutdown.
    server = [sys.executable, "-m", "tests.servers.lingering_mcp", str(tmp_path / "r.json"), "--stubborn"]
    argv = [*MCPTAPE, "call", "-m", "tools/list", "-v", "--no-record", "--", *server]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stderr is not None
    seen, servers = [], []
    for line in proc.stderr:
        seen.append(line)
        servers = servers or child_pids(proc.pid)
        if "stdin closed" in line:
            break
    assert servers, "".join(seen)
    proc.send_signal(signal.SIGTERM)  # after stdin closed, before the SIGKILL the grace ends in
    _, rest = proc.communicate(timeout=60)
    err_text = "".join(seen) + rest

    assert proc.returncode == 128 + signal.SIGTERM, err_text
    assert "Traceback" not in err_text and "stopped by SIGTERM" in err_text
    assert all(wait_until_gone(pid) for pid in servers)  # not left running for good
