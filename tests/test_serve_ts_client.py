"""A recording served to the reference TypeScript client gives it what the live server gave it.

The client (`@modelcontextprotocol/sdk` in tests/npm, tests/clients/ts_client.mjs) answers
the server's sampling and elicitation requests with handlers of its own. It is recorded
against server-everything through `mcptape record`, then served the recording by
`mcptape serve` over stdio and over streamable HTTP (`--listen`): the results, and the
server requests its handlers were asked, are the live ones.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import MCPTAPE, ROOT, everything_server_cmd
from tests.helpers.served import Served

pytestmark = pytest.mark.slow

CLIENT = ROOT / "tests" / "clients" / "ts_client.mjs"


def ts_client(*target: str) -> dict[str, Any]:
    node = shutil.which("node")
    assert node, "node is not installed"
    proc = subprocess.run([node, str(CLIENT), *target], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The TypeScript client's results against server-everything, recorded as the session `ts`."""
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    db = tmp_path_factory.mktemp("ts") / "rec.db"
    results = ts_client("stdio", *MCPTAPE, "record", "--db", str(db), "--name", "ts", "--", *server)
    return db, results


def test_the_live_scenario_exercises_sampling_and_elicitation(live: tuple[Path, dict[str, Any]]) -> None:
    _, results = live
    assert results["asked"] == ["sampling/createMessage", "elicitation/create"]
    assert "canned from typescript" in json.dumps(results["sampling"])
    assert "green" in json.dumps(results["elicitation"])


def test_serve_over_stdio_gives_the_typescript_client_the_live_results(
    live: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    recorded, results = live
    db = tmp_path / "rec.db"
    db.write_bytes(recorded.read_bytes())
    assert ts_client("stdio", *MCPTAPE, "serve", "ts", "--db", str(db), "--strict") == results
    con = sqlite3.connect(db)
    try:
        asked = con.execute(
            "select method, answered_by from server_requests where session_id="
            "(select id from sessions where mode='serve') order by requested_at"
        ).fetchall()
    finally:
        con.close()
    # The recorded server requests went to this client again, and its handlers answered them.
    assert asked == [("sampling/createMessage", "client"), ("elicitation/create", "client")]


def test_serve_listen_gives_the_typescript_http_client_the_live_results(
    live: tuple[Path, dict[str, Any]],
) -> None:
    db, results = live
    served = Served("ts", "--db", str(db), "--no-record")
    try:
        assert ts_client("http", served.url, served.token or "") == results
    finally:
        assert served.stop() == 0, served.stderr
