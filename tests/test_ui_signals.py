"""`mcptape ui` stopped by SIGHUP (its terminal closed) stops the servers its page started, as Ctrl-C does."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.gateway_http import request
from tests.helpers.paths import ROOT
from tests.helpers.viewer_proc import ViewerProcess

pytestmark = pytest.mark.slow  # an `mcptape ui` process and the server its page starts


def test_sighup_closes_the_page_s_connections_and_stops_their_servers(tmp_path: Path) -> None:
    db, report = tmp_path / "u.db", tmp_path / "report.json"
    # tiny_mcp that outlives its stdin: left behind, it would run on for good.
    server = {
        "command": sys.executable,
        "args": ["-m", "tests.servers.lingering_mcp", str(report)],
        "cwd": str(ROOT),
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"lingering": server}}))
    with ViewerProcess(db, "--config", str(config)) as viewer:
        headers = {"X-Mcptape-Token": viewer.token, "Content-Type": "application/json"}
        status, _, body = request(
            viewer.base, "POST", "/api/client/connect", headers, b'{"server": "lingering"}'
        )
        assert status == 200 and json.loads(body)["hello"]["serverInfo"]["name"] == "tiny"

        viewer.proc.send_signal(signal.SIGHUP)
        code = viewer.proc.wait(timeout=30)

        assert code == 0, viewer.stderr_text()  # as after Ctrl-C
        assert "Traceback" not in viewer.stderr_text()
    # The server got its SIGTERM and cleaned up; its session is closed.
    assert json.loads(report.read_text())["eof_to_sigterm_s"] is not None
    assert query(db, "select mode, status from sessions") == [("client", "closed")]
