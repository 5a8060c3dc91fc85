"""`mcptape serve` over stdio signalled while it starts up: the session is recorded `interrupted`, exit 128+N."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.signalling import WAIT_S, Signalled, catching, echo_tape, serve_fifo

pytestmark = pytest.mark.slow  # an `mcptape serve` process


def test_a_signal_while_serve_reads_its_recording_stops_the_session_cleanly(tmp_path: Path) -> None:
    # serve reads --file before it serves: a FIFO holds it there, so the signal comes in that
    # window every time. It used to end serve by the default action: no session row.
    db, fifo = tmp_path / "s.db", tmp_path / "tape.jsonl"
    os.mkfifo(fifo)
    tape = echo_tape(tmp_path / "echo.jsonl", 2).read_bytes()
    serve = Signalled(
        "serve", "--file", str(fifo), "--db", str(db), stdout_file=tmp_path / "out.txt", stdin=subprocess.PIPE
    )
    assert serve.proc.stdin is not None
    deadline = time.monotonic() + WAIT_S  # a bound on a hang, not a timing assertion
    while not catching(serve.proc.pid, signal.SIGTERM):
        if time.monotonic() > deadline or serve.proc.poll() is not None:
            serve.proc.kill()  # the test fails: nothing it started may outlive it
            raise AssertionError("serve never took SIGTERM over while it started")
        time.sleep(0.002)
    serve.proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    serve.proc.stdin.flush()
    serve.proc.send_signal(signal.SIGTERM)
    feeder = threading.Thread(target=serve_fifo, args=(fifo, tape, serve.proc), daemon=True)
    feeder.start()
    code, stderr = serve.finish()
    feeder.join(5)

    assert code == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert query(db, "select mode, status from sessions") == [("serve", "interrupted")]
