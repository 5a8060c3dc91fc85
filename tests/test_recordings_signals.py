"""`mcptape mcp` and signals: Ctrl-C ends it, and a signal mid-replay stops the replayed server first."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.corpus import load_corpus
from tests.helpers.debug_script import wait_until_gone
from tests.helpers.paths import ROOT
from tests.helpers.recording import INITIALIZE, INITIALIZED
from tests.helpers.signalling import WAIT_S, Signalled, child_pids

pytestmark = pytest.mark.slow  # an `mcptape mcp` process and the server its replay starts

# Answers nothing (it echoes each request back) and outlives its stdin: a replay against it
# waits on every exchange, and left behind it would run for good.
STUBBORN = [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py"), "--ignore-stdin-eof"]


def _serving(tmp_path: Path) -> Signalled:
    db, config = tmp_path / "r.db", tmp_path / "mcp.json"
    load_corpus(db, "everything-py-client.jsonl", "py", 100.0)
    config.write_text(
        json.dumps({"mcpServers": {"stubborn": {"command": STUBBORN[0], "args": STUBBORN[1:]}}})
    )
    server = Signalled(
        "mcp",
        "--db",
        str(db),
        "--config",
        str(config),
        stdout_file=tmp_path / "out.txt",
        stdin=subprocess.PIPE,
    )
    assert server.proc.stdin is not None
    for message in (INITIALIZE, INITIALIZED):
        server.proc.stdin.write(json.dumps(message).encode() + b"\n")
    server.proc.stdin.flush()
    deadline = time.monotonic() + WAIT_S  # a bound on a hang, not a timing assertion
    while b'"id":0' not in (tmp_path / "out.txt").read_bytes().replace(b" ", b""):
        assert server.proc.poll() is None and time.monotonic() < deadline, "mcptape mcp did not answer"
        time.sleep(0.02)
    return server  # serving: initialize answered


def _wait_for_stubborn(pid: int) -> list[int]:
    """The replayed server, once it has echoed the replay's first request: from then on it
    writes nothing more (a write to a closed pipe would have ended it)."""
    deadline = time.monotonic() + WAIT_S  # a bound on a hang, not a timing assertion
    while time.monotonic() < deadline:
        found = [child for child in child_pids(pid) if b"raw_echo.py" in _proc(child, "cmdline")]
        if found and all(_written(child) for child in found):
            return found
        time.sleep(0.02)
    return []


def _proc(pid: int, name: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:
        return b""


def _written(pid: int) -> bool:
    """Whether ``pid`` has written anything (its ``wchar`` in /proc/PID/io)."""
    for line in _proc(pid, "io").splitlines():
        if line.startswith(b"wchar:"):
            return int(line.split()[1]) > 0
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_replay_stops_the_replayed_server_then_ends_mcptape_mcp(
    tmp_path: Path, signum: signal.Signals
) -> None:
    server = _serving(tmp_path)
    assert server.proc.stdin is not None
    call = {"name": "replay", "arguments": {"session": "py", "server": "stubborn", "timeout": 60}}
    server.proc.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}).encode()
    )
    server.proc.stdin.write(b"\n")
    server.proc.stdin.flush()
    replayed = _wait_for_stubborn(server.proc.pid)
    assert replayed, "the replay did not start its server"

    server.proc.send_signal(signum)
    code, stderr = server.finish()

    assert code == -signum, stderr  # it ends by the signal, as a server without handlers would
    assert "Traceback" not in stderr
    assert all(wait_until_gone(pid) for pid in replayed)


def test_ctrl_c_ends_an_idle_mcptape_mcp(tmp_path: Path) -> None:
    server = _serving(tmp_path)
    server.proc.send_signal(signal.SIGINT)  # its stdin still open: a KeyboardInterrupt waited on it
    code, stderr = server.finish()
    assert code == -signal.SIGINT, stderr
    assert "Traceback" not in stderr
