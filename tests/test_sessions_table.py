"""`sessions` at 80 columns: what made each session, a status that reads as it happened, replays named.

`call` and the gateway stop every stdio server they started once its client is done (it
would not exit on its own after its stdin closed): such a session is `closed`, and the
signal mcptape sent is a detail of its exit event, not "closed (server signal 15)".
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptape.cli.main import cli
from mcptape.store import Store, open_store
from mcptape.store.status import status_label
from mcptape.wire.frame import Frame
from tests.helpers.paths import MCPTAPE

T0 = 1_800_000_000.0
UPSTREAM = "/home/someone/project/.venv/bin/python3 -m weather_server --verbose"
FS = "node /home/someone/app/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js /srv/data/files"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(str(tmp_path / "rec.db"))
    yield opened
    opened.close()


def ended(store: Store, start: float, *, code: int, stopped: bool, **fields: str | None) -> str:
    session_id = store.create_session(**fields)  # type: ignore[arg-type]
    store.update_session(
        session_id, started_at=T0 + start, ended_at=T0 + start + 1, status="closed", exit_code=code
    )
    writer = store.writer()
    writer.add_frame(session_id, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "c2s", ts=T0 + start))
    writer.add_event(
        session_id,
        "process_exit",
        "killed by SIGTERM",
        {"returncode": code, "stopped": stopped},
        T0 + start + 1,
    )
    writer.close()
    return session_id


def test_a_server_mcptape_stopped_after_its_client_left_is_closed() -> None:
    assert status_label("closed", -15, stopped_by_us=True) == "closed"
    assert status_label("closed", 143, stopped_by_us=True) == "closed"  # its own exit after our SIGTERM
    assert status_label("closed", -15) == "closed (server signal 15)"  # someone else killed it
    assert status_label("error", -9, stopped_by_us=True) == "error (server signal 9)"


def test_sessions_at_80_columns_show_mode_and_whole_statuses_and_name_replays(
    store: Store, tmp_path: Path
) -> None:
    called = ended(store, 1, code=-15, stopped=True, mode="call", name="weather", upstream=UPSTREAM)
    files = ended(store, 2, code=0, stopped=False, mode="record", name="files", upstream=FS)
    replay = ended(store, 3, code=0, stopped=False, mode="replay", upstream=UPSTREAM, replay_of=called)
    result = CliRunner().invoke(cli, ["sessions", "--db", str(tmp_path / "rec.db")], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].split() == ["id", "name", "mode", "status", "started", "took", "frames", "server"]
    rows = {line[:12]: line.split() for line in lines[2:]}
    assert rows[replay[:12]][1:4] == ["(weather)", "replay", "closed"]  # the recording it replayed
    assert rows[called[:12]][1:4] == ["weather", "call", "closed"]
    assert " ".join(rows[called[:12]][7:]).startswith("python3 -m")  # the program, not its directory
    assert rows[files[:12]][1:4] == ["files", "record", "closed"]
    assert " ".join(rows[files[:12]][7:]).startswith("node ser")  # the npm package it runs, first
    data = CliRunner().invoke(cli, ["sessions", "--db", str(tmp_path / "rec.db"), "--json"]).stdout
    assert f'"replay_of": "{called}"' in data.replace('":"', '": "')


def test_show_says_mcptape_stopped_the_server(store: Store, tmp_path: Path) -> None:
    ended(store, 1, code=-15, stopped=True, mode="call", name="weather", upstream=UPSTREAM)
    # Wide enough for the whole event line (show cuts lines to the terminal's width).
    args = ["show", "weather", "--events", "--db", str(tmp_path / "rec.db")]
    out = CliRunner().invoke(cli, args, env={"COLUMNS": "200"}).stdout
    assert out.splitlines()[0].endswith(" · weather · closed")
    assert "killed by SIGTERM (by mcptape: the server did not exit after its client left)" in out


@pytest.mark.slow
def test_a_call_session_reads_closed(tmp_path: Path) -> None:
    import subprocess

    db = str(tmp_path / "rec.db")
    env = {**os.environ, "COLUMNS": "80"}
    call = subprocess.run(
        [*MCPTAPE, "call", "-m", "tools/list", "--upstream", "demo", "--db", db],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert call.returncode == 0, call.stderr
    listed = subprocess.run(
        [*MCPTAPE, "sessions", "--db", db], capture_output=True, text=True, timeout=60, env=env
    )
    assert listed.stdout.splitlines()[2].split()[1:4] == ["demo", "call", "closed"], listed.stdout


def test_a_command_npm_installed_is_shown_by_its_name_not_as_bin() -> None:
    from mcptape.cli.sessions import short_upstream

    # `npm i` then `mcptape record -- node_modules/.bin/mcp-server-memory`: the table said ".bin".
    assert short_upstream("/srv/app/node_modules/.bin/mcp-server-memory --x") == "mcp-server-memory --x"
    assert short_upstream("/srv/app/node_modules/@modelcontextprotocol/server-memory/dist/index.js") == (
        "server-memory"
    )
    assert short_upstream("node /srv/app/node_modules/left-pad/index.js") == "node left-pad"
