"""Statuses people can trust: `closed (server exit 5)`, `failed`, and `lost` for a dead recorder.

The label with plain values, the /proc reading with real processes, then real
`mcptape record` sessions read back with `mcptape sessions` and `mcptape show`.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcptape.cli.main import cli
from mcptape.store import open_store
from mcptape.store.status import process_ended, process_started_at, recorder_alive, status_label
from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import Recording

EXIT_5_AFTER_EOF = [
    sys.executable,
    "-c",
    "import sys\nfor line in sys.stdin: print(line, end='', flush=True)\nsys.exit(5)",
]
FAILS_AT_ONCE = [sys.executable, "-c", "import sys; sys.exit(1)"]


def test_labels_say_what_happened() -> None:
    assert status_label("ok", 0) == "ok"
    assert status_label("closed", 0) == "closed"
    assert status_label("closed", 5) == "closed (server exit 5)"
    assert status_label("ok", 5) == "closed (server exit 5)"  # recordings from before "closed"
    assert status_label("closed", -15) == "closed (server signal 15)"
    assert status_label("closed", 1, server_spoke=False) == "failed (server exit 1)"
    assert status_label("ok", 1, server_spoke=False) == "failed (server exit 1)"
    assert status_label("error", 3) == "error (server exit 3)"
    assert status_label("error", 127, server_spoke=False) == "failed (server exit 127)"
    assert status_label("error", None) == "error"
    assert status_label("interrupted", -15) == "interrupted (server signal 15)"
    # The gateway or record was stopped and stopped the server: its SIGTERM was mcptape's own.
    assert status_label("interrupted", -15, stopped_by_us=True) == "interrupted"
    assert status_label("interrupted", 0) == "interrupted"  # it exited when mcptape closed its stdin
    assert status_label("interrupted", 3) == "interrupted (server exit 3)"
    assert status_label("running", None) == "running"
    assert status_label("running", None, recorder_alive=True) == "running"
    assert status_label("running", None, recorder_alive=False) == "lost"


@pytest.mark.slow
def test_a_process_start_time_comes_from_proc() -> None:
    before = time.time()
    child = subprocess.Popen(["sleep", "30"])
    try:
        started = process_started_at(child.pid)
        assert started is not None and before - 1.5 <= started <= time.time() + 0.5
    finally:
        child.kill()
        child.wait()
    assert process_started_at(child.pid) is None


@pytest.mark.slow
def test_a_recorder_is_alive_only_if_its_pid_runs_and_started_before_the_session() -> None:
    assert recorder_alive(os.getpid(), time.time()) is True
    assert recorder_alive(None, time.time()) is None
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert recorder_alive(dead.pid, time.time()) is False
    # Killed but not reaped yet (its parent has not waited): a zombie is not a recorder.
    zombie = subprocess.Popen(["sleep", "30"])
    try:
        zombie.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not process_ended(zombie.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert recorder_alive(zombie.pid, time.time()) is False  # started before: only its state tells
    finally:
        zombie.wait()
    # A pid reused by a process that started after the session: not the recorder.
    reused = subprocess.Popen(["sleep", "30"])
    try:
        assert recorder_alive(reused.pid, time.time() - 3600) is False
    finally:
        reused.kill()
        reused.wait()


def mcptape(*args: str) -> Result:
    """A read command, in this process (fast), with room for whole lines."""
    return CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)


def statuses(db: Path) -> tuple[str, str, str]:
    """The status as `sessions` shows it, as `sessions --nl` gives it, and `show`'s first line."""
    table = mcptape("sessions", "--db", str(db)).stdout.splitlines()[2]
    data = json.loads(mcptape("sessions", "--nl", "--db", str(db)).stdout.splitlines()[0])
    header = mcptape("show", "last", "--db", str(db)).stdout.splitlines()[0]
    return table, data["status"], header


@pytest.mark.slow
def test_a_server_exiting_5_after_the_client_left_is_closed_not_ok(db_path: Path) -> None:
    rec = Recording(db_path, EXIT_5_AFTER_EOF)
    rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert rec.recv() == b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    rec.close_stdin()
    rec.wait()
    table, _, header = statuses(db_path)
    assert "closed (server exit 5)" in table and header.endswith(" · closed (server exit 5)")
    assert "ok" not in table.split()


@pytest.mark.slow
def test_a_server_that_failed_to_start_is_failed_not_ok(db_path: Path) -> None:
    # mcptape's own exit status is the relay's business; what this checks is the label.
    subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), "--", *FAILS_AT_ONCE],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    table, _, header = statuses(db_path)
    assert "failed (server exit 1)" in table and header.endswith(" · failed (server exit 1)")


@pytest.mark.slow
def test_a_session_whose_recorder_was_killed_shows_lost(db_path: Path) -> None:
    rec = Recording(db_path, EXIT_5_AFTER_EOF)
    rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert rec.recv() is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the store opens in the background: wait for both frames
        try:
            if query(db_path, "select count(*) from frames") == [(2,)]:
                break
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    rec.proc.send_signal(signal.SIGKILL)
    rec.wait()
    assert query(db_path, "select status from sessions") == [("running",)]
    table, status, header = statuses(db_path)
    assert " lost " in table and status == "lost" and header.endswith(" · lost")


def test_a_running_session_with_a_live_recorder_is_running(db_path: Path) -> None:
    store = open_store(str(db_path))
    store.create_session(mode="record", name="live")  # recorded by this (live) test process
    store.close()
    table, status, header = statuses(db_path)
    assert table.split()[3] == "running" and status == "running" and header.endswith(" · running")


@pytest.mark.parametrize("recorder", ["dead", "reused"])
@pytest.mark.slow
def test_a_running_session_whose_pid_is_gone_or_reused_is_lost(db_path: Path, recorder: str) -> None:
    store = open_store(str(db_path))
    sid = store.create_session(mode="record", name="gone")
    other = subprocess.Popen(["sleep", "30"])
    try:
        if recorder == "dead":
            other.kill()
            other.wait()
            store.update_session(sid, pid=other.pid)
        else:  # a pid now held by a process that started long after the session did
            store.update_session(sid, pid=other.pid, started_at=time.time() - 3600)
        store.close()
        _, status, header = statuses(db_path)
        assert status == "lost" and header.endswith(" · lost")
    finally:
        other.kill()
        other.wait()
