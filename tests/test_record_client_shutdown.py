"""A client's own shutdown sequence (close stdin, then SIGTERM 2 s later) reads as the client closing.

The TypeScript and Python SDK clients end a stdio server by closing its stdin, waiting
2 s, then sending SIGTERM. Through `mcptape record` in front of a server that outlives
its stdin, that SIGTERM reaches mcptape while it is still shutting the server down: the
session is the client's doing ("closed"), with the signal recorded as an event, not an
interruption; and mcptape passes the SIGTERM on at once rather than after its grace.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.recording import INITIALIZE, Recording

pytestmark = pytest.mark.slow


def test_sigterm_after_the_client_closed_its_input_leaves_the_session_closed(tmp_path: Path) -> None:
    import json
    import time

    db = tmp_path / "t.db"
    server = [sys.executable, "-m", "tests.servers.lingering_mcp", str(tmp_path / "report.json")]
    rec = Recording(db, server, "--grace", "5")
    try:
        rec.send(json.dumps(INITIALIZE).encode() + b"\n")
        assert rec.recv() is not None
        rec.close_stdin()
        time.sleep(0.5)  # the server outlives its stdin; mcptape waits out its grace
        assert rec.proc.poll() is None
        rec.proc.send_signal(signal.SIGTERM)  # what the SDK client does next
        assert rec.wait(timeout=20) == 128 + signal.SIGTERM
    finally:
        rec.kill()
    # mcptape did not wait out its 5 s grace before passing SIGTERM on: a client sends
    # SIGKILL 2 s after its SIGTERM, and a server mcptape had not stopped would outlive it.
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["eof_to_sigterm_s"] < 4.0
    assert query(db, "select status, error from sessions") == [("closed", None)]
    assert query(db, "select text from events where kind = 'signal'") == [("SIGTERM",)]
    assert query(db, "select count(*) from events where kind = 'client_closed'") == [(1,)]
