"""`mcptape record` against peers that misbehave: it always ends, in bounded time, and says why.

Every test here ran into a hang, a traceback or a loss before the relay core was reworked.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE, ROOT
from tests.helpers.recording import RAW_ECHO, Recording, wait_for_frames

pytestmark = pytest.mark.slow

HOSTILE = [sys.executable, str(ROOT / "tests" / "servers" / "hostile.py")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose: it only waits for its parent to reap it.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _server_pid(db: Path) -> int:
    data = query(db, "select data from events where kind = 'process_start'")[0][0]
    return int(orjson.loads(data)["pid"])


def _fill(rec: Recording, total: int) -> threading.Thread:
    """Write ``total`` bytes of frames to mcptape on a thread (it may block for good)."""
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"y" * 1000 + b'"}}\n'

    def write() -> None:
        try:
            for _ in range(total // len(line)):
                rec.send(line)
        except (BrokenPipeError, ValueError, OSError):
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_sigterm_ends_record_when_the_server_stops_reading_and_every_pipe_is_full(db_path: Path) -> None:
    rec = Recording(db_path, [*HOSTILE, "deaf"], "--grace", "0.5")
    try:
        _fill(rec, 8 << 20)
        # Started up (a loaded machine takes seconds): a signal before that ends it as any
        # program in its first instants, before it has a session to close.
        wait_for_frames(db_path, 1)
        time.sleep(1.0)  # long enough for the pipes to the deaf server to fill up
        rec.proc.send_signal(signal.SIGTERM)
        assert rec.wait(timeout=15) == 128 + signal.SIGTERM
    finally:
        rec.kill()
    pid = _server_pid(db_path)
    assert not _alive(pid)
    assert query(db_path, "select status from sessions") == [("interrupted",)]
    assert b"Traceback" not in rec.stderr


def test_client_eof_ends_record_when_the_server_ignores_stdin_and_sigterm(db_path: Path) -> None:
    rec = Recording(db_path, [*HOSTILE, "deaf"], "--grace", "0.3", "--answer-wait", "0.3")
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        rec.close_stdin()
        assert rec.wait(timeout=15) == 0  # mcptape had to stop the server itself: see record --help
    finally:
        rec.kill()
    assert not _alive(_server_pid(db_path))
    assert query(db_path, "select status, exit_code from sessions") == [("closed", -signal.SIGKILL)]


def test_a_grandchild_holding_the_servers_stdout_does_not_keep_record_running(
    db_path: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    rec = Recording(db_path, [*HOSTILE, "grandchild", "--pidfile", str(pidfile)], "--grace", "0.3")
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert rec.recv() == b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
        rec.close_stdin()
        assert rec.wait(timeout=15) == 0
    finally:
        rec.kill()
    assert not _alive(int(pidfile.read_text()))
    assert query(db_path, "select status, exit_code from sessions") == [("closed", 0)]


def test_a_server_that_exits_while_a_grandchild_holds_its_stdout_ends_the_session(
    db_path: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    server = [*HOSTILE, "grandchild", "--pidfile", str(pidfile)]
    rec = Recording(db_path, [*RAW_ECHO, "--crash-on", "never"][:0] + server, "--grace", "0.3")
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert rec.recv() is not None
        os.kill(_wait_for_server_pid(rec, db_path), signal.SIGKILL)
        assert rec.wait(timeout=15) == 128 + signal.SIGKILL
    finally:
        rec.kill()
    assert not _alive(int(pidfile.read_text()))
    assert query(db_path, "select status, exit_code from sessions") == [("error", -signal.SIGKILL)]


def _wait_for_server_pid(rec: Recording, db: Path) -> int:
    """The server's pid, from the process list: its parent is mcptape."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(rec.proc.pid)], capture_output=True, text=True
        )
        pids = [int(p) for p in out.stdout.split()]
        if pids:
            return pids[0]
        time.sleep(0.05)
    raise AssertionError("no server process found")


def test_sigterm_ends_record_when_the_client_stops_reading_its_stdout(db_path: Path) -> None:
    proc = subprocess.Popen(
        [*MCPTAPE, "record", "--db", str(db_path), "--grace", "0.3", "--", *HOSTILE, "flood-stdout"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,  # never read
        stderr=subprocess.PIPE,
    )
    try:
        # The session runs and the flood flows: a fixed 1.5 s was not always enough under load
        # (-n 3 beside other work, the session ended 'closed').
        wait_for_frames(db_path, 100, timeout=60)
        time.sleep(1.0)  # long enough for our stdout's pipe to fill up
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
        assert proc.returncode == 128 + signal.SIGTERM
        assert b"Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
    assert query(db_path, "select status from sessions") == [("interrupted",)]
    assert query(db_path, "select count(*) from frames")[0][0] > 0


@pytest.mark.parametrize(("stream", "closed"), [("0", "standard input"), ("1", "standard output")])
def test_a_closed_stdin_or_stdout_at_start_is_a_one_line_error(
    db_path: Path, stream: str, closed: str
) -> None:
    argv = " ".join([*MCPTAPE, "record", "--db", str(db_path), "--", *RAW_ECHO])
    proc = subprocess.run(["bash", "-c", f"exec {argv} {stream}<&-"], capture_output=True, timeout=30)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith(f"mcptape: error: {closed} is closed"), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_stderr_flood_in_short_lines_does_not_stall_frames(db_path: Path, tmp_path: Path) -> None:
    # The server floods stderr with 10-byte lines from before its first echo until the
    # client's end: every ping below crosses mcptape while it reads a flood (which mcptape
    # reads far slower than the server writes), and what was written is counted.
    count = tmp_path / "stderr-lines"
    server = [*HOSTILE, "flood-stderr", "--until-eof", "--count-file", str(count)]
    rec = Recording(db_path, server, "--no-echo-stderr", "--grace", "60")
    n = 100
    try:
        for i in range(n):
            rec.send(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i)
            assert rec.recv() == b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i
        rec.close_stdin()
        assert rec.wait(timeout=60) == 0
    finally:
        rec.kill()
    written = int(count.read_text())
    assert written >= 10_000  # one block (100 kB, more than a pipe holds) before the first echo
    # The server echoes each ping as a request of its own, so the client's pings stay
    # unanswered: when the server is still flooding after the client's end, mcptape
    # answers them itself (origin proxy), as it would a server that went silent.
    assert query(db_path, "select count(*) from frames where origin != 'proxy'")[0][0] == 2 * n
    assert query(db_path, "select count(*) from frames where origin = 'proxy' and kind != 'error'") == [(0,)]
    rows = query(db_path, "select data from events where kind = 'stderr'")
    assert len(rows) < written // 30  # the lines were coalesced, not one event each
    recorded = sum(orjson.loads(d)["lines"] if d else 1 for (d,) in rows)
    cut = query(db_path, "select data from events where kind = 'stderr_cut'")
    lost = sum(orjson.loads(d)["lines"] for (d,) in cut)
    assert recorded + lost == written  # every line is either recorded or counted as cut


def test_record_exits_with_the_servers_status_when_the_client_leaves_first(db_path: Path) -> None:
    rec = Recording(db_path, [*HOSTILE, "exit-after-eof", "--code", "5"])
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert rec.recv() is not None
        rec.close_stdin()
        assert rec.wait() == 5
    finally:
        rec.kill()
    assert query(db_path, "select status, exit_code from sessions") == [("closed", 5)]


def test_a_corrupted_database_is_said_once_and_the_frames_still_flow(tmp_path: Path) -> None:
    db = tmp_path / "broken.db"
    db.write_bytes(b"this is not a database" * 100)
    rec = Recording(db, RAW_ECHO, "--on-store-error", "forward")
    try:
        for i in range(3):
            rec.send(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i)
            assert rec.recv() is not None
        rec.close_stdin()
        assert rec.wait() == 1
    finally:
        rec.kill()
    err = rec.stderr.decode()
    assert err.count("mcptape: error:") == 2, err  # the failure, then the summary at the end
    assert "not being recorded" in err and "Traceback" not in err


def test_a_corrupted_database_stops_the_session_by_default(tmp_path: Path) -> None:
    db = tmp_path / "broken.db"
    db.write_bytes(b"this is not a database" * 100)
    rec = Recording(db, RAW_ECHO)
    try:
        assert rec.wait(timeout=20) == 2
    finally:
        rec.kill()
    err = rec.stderr.decode()
    assert "Traceback" not in err
    # It says what it does: it stops (it said "frames are still forwarded", then stopped).
    assert "stopping" in err and "still forwarded" not in err, err


def test_a_database_locked_at_start_does_not_keep_the_server_from_answering(db_path: Path) -> None:
    # Create the database, then hold its write lock from another connection.
    first = Recording(db_path, RAW_ECHO)
    first.close_stdin()
    assert first.wait() == 0
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("begin immediate")
    try:
        rec = Recording(db_path, RAW_ECHO)
        try:
            rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            assert rec.recv(timeout=10) == b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
        finally:
            holder.execute("rollback")
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        holder.close()
        rec.kill()
    assert query(db_path, "select count(*) from frames")[0][0] == 2


def test_sigterm_while_another_process_holds_the_database_lock_loses_nothing(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO)
    holder = sqlite3.connect(db_path, isolation_level=None, timeout=30)
    n = 500
    try:
        rec.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        assert rec.recv() is not None
        wait_for_frames(db_path, 2)  # the store is open and recording
        holder.execute("begin immediate")  # the recorder can no longer write
        for i in range(n):
            rec.send(b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}\n' % i)
            assert rec.recv() is not None
        rec.proc.send_signal(signal.SIGTERM)
        time.sleep(1.5)
        assert rec.proc.poll() is None  # still writing: it waits for the lock, it does not drop
        holder.execute("rollback")
        assert rec.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        holder.close()
        rec.kill()
    assert query(db_path, "select count(*) from frames")[0][0] == 2 * (n + 1)
    assert "waiting for the database" in rec.stderr.decode()


def test_secret_looking_values_on_the_servers_command_line_never_reach_the_database(db_path: Path) -> None:
    server = [
        "sh",
        "-c",
        'exec "$0" "$1"',
        *RAW_ECHO,
        "--api-key",
        "sk-live-SECRET123",
        "GITHUB_TOKEN=ghp_SECRET456",
    ]
    rec = Recording(db_path, server)
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert rec.recv() is not None
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        rec.kill()
    con = sqlite3.connect(db_path)
    try:
        dump = "\n".join(con.iterdump())
    finally:
        con.close()
    assert "raw_echo.py" in dump
    assert "SECRET123" not in dump and "SECRET456" not in dump


def test_started_by_hand_in_a_terminal_record_says_what_it_is_on_stderr(db_path: Path) -> None:
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [*MCPTAPE, "record", "--db", str(db_path), "--", *RAW_ECHO],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(secondary)
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 60)  # a bounded wait, not a timing assertion
        assert ready, "nothing on stderr: a person at the terminal is not told what this is"
        line = proc.stderr.readline().decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 128 + signal.SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
    assert line.startswith("mcptape: recording ") and str(db_path) in line
    assert "meant to be started by an MCP client (see `mcptape wrap`)" in line and "Ctrl-C stops it" in line


def test_started_by_a_client_record_prints_nothing_of_its_own(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO, "--no-echo-stderr")
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert rec.recv() is not None
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        rec.kill()
    assert rec.stderr == b""
