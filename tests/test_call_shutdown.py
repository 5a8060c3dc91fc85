"""How `mcptape call` ends a server it started: stdin closed, a short wait, SIGTERM, the grace, SIGKILL.

A one-shot client has nothing to wait for once its answer came: a server that outlives
its stdin (timers, as server-everything has) gets SIGTERM after call's short EOF wait
(0.1 s), not after the 2 s grace, and the grace still protects its SIGTERM cleanup.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE, ROOT

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
