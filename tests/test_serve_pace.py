"""`serve` paces what a server sent while answering, so the TypeScript SDK client sees every progress
notification: recorded through `mcptape record` from server-everything, then served at each pace.

The SDK handles a notification a microtask after reading it and a response at once: given a
request's last progress notification and its answer in one read, it drops the progress handler
first ("Received a progress notification for an unknown token"). The tape server spaces them
as recorded, and at any pace leaves a real pause between a notification and the answer after it.
(server-everything itself writes its last progress notification and the answer in the same
tick: the live client loses that one about half the time, directly or through `record`, so the
live run is checked by what the recording holds, not by what the client happened to see.)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.interop import ts_steps
from tests.helpers.paths import MCPTAPE, everything_server_cmd

pytestmark = pytest.mark.slow

STEPS = 4
LONG_CALL = [
    {
        "m": "callTool",
        "p": {"name": "trigger-long-running-operation", "arguments": {"duration": 0.4, "steps": STEPS}},
        "progress": True,
    },
    {"m": "listTools", "p": {}},
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    db = tmp_path_factory.mktemp("pace") / "rec.db"
    live = ts_steps(LONG_CALL, "stdio", *MCPTAPE, "record", "--db", str(db), "--name", "long", "--", *server)
    return db, live


def progress_seen(result: dict[str, Any]) -> list[Any]:
    return list(result["results"][0]["progress"])


def test_the_recording_holds_every_progress_notification_of_the_long_call(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    db, live = recorded
    assert live["results"][0]["result"]["content"], live
    con = sqlite3.connect(db)
    try:
        sent = con.execute(
            "select count(*) from frames where method = 'notifications/progress' and direction = 's2c'"
        ).fetchone()[0]
    finally:
        con.close()
    assert sent == STEPS


@pytest.mark.parametrize("pace", ["recorded", "fast", "3"])
def test_serve_gives_the_typescript_client_every_progress_notification_at_any_pace(
    recorded: tuple[Path, dict[str, Any]], pace: str
) -> None:
    db, live = recorded
    served = ts_steps(
        LONG_CALL, "stdio", *MCPTAPE, "serve", "long", "--db", str(db), "--no-record", "--pace", pace
    )
    assert progress_seen(served) == list(range(1, STEPS + 1))
    assert served["results"][0]["result"] == live["results"][0]["result"]
