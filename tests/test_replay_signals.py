"""`mcptape replay` stopped by a signal mid-run: exit 128+N, one line, an honest report, no orphan."""

from __future__ import annotations

import json
import signal
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.debug_script import wait_until_gone
from tests.helpers.paths import ROOT, require_everything
from tests.helpers.signalling import Signalled, child_pids, echo_tape

pytestmark = pytest.mark.slow

EXCHANGES = 2000  # the tape's echo calls: far more than are replayed before the signal


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_replay_reports_what_was_not_replayed_and_exits_128_plus_n(
    tmp_path: Path, signum: signal.Signals
) -> None:
    db, report, junit = tmp_path / "r.db", tmp_path / "report.json", tmp_path / "junit.xml"
    tape = echo_tape(tmp_path / "echo.jsonl", EXCHANGES)
    replay = Signalled(
        "replay", "--file", str(tape), "--db", str(db), "--report", str(report), "--junit", str(junit),
        "--", *require_everything(),
        stdout_file=tmp_path / "out.txt",
    )  # fmt: skip
    replay.wait_for(f"250/{EXCHANGES + 1} exchanges sent")
    servers = child_pids(replay.proc.pid)
    replay.proc.send_signal(signum)
    code, stderr = replay.finish()

    assert code == 128 + signum, stderr
    assert "Traceback" not in stderr
    assert f"mcptape: stopped by {signum.name}: the replay is incomplete (" in stderr
    # The exchanges it never got to are not replayed, not "no response from the replayed server".
    assert "no response" not in replay.stdout()
    assert f"not replayed (interrupted by {signum.name})" in replay.stdout()
    written = json.loads(report.read_text())
    assert written["ok"] is False
    [recording] = written["recordings"]
    assert recording["interrupted"] == signum.name
    statuses = [e["status"] for e in recording["exchanges"]]
    assert set(statuses) <= {"match", "differs", "not replayed"}
    assert statuses.count("match") >= 200 and statuses.count("not replayed") > 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("skipped", "0")) == statuses.count("not replayed")
    [(status, ended)] = query(db, "select status, ended_at from sessions")
    assert status == "interrupted" and ended is not None
    # Every answer compared as a match was recorded.
    [(answers,)] = query(db, "select count(*) from frames where direction = 's2c'")
    assert answers >= statuses.count("match")
    assert servers and all(wait_until_gone(pid) for pid in servers)


def test_a_signal_while_replay_starts_its_server_stops_it_and_records_the_replay_interrupted(
    tmp_path: Path,
) -> None:
    db = tmp_path / "r.db"
    tape = echo_tape(tmp_path / "echo.jsonl", 5)
    # A server that outlives its stdin: left behind, it would run on forever.
    server = [
        sys.executable,
        str(ROOT / "tests" / "servers" / "raw_echo.py"),
        "--stderr",
        "1",
        "--ignore-stdin-eof",
    ]
    replay = Signalled(
        "replay", "--file", str(tape), "--db", str(db), "--echo-stderr", "--", *server,
        stdout_file=tmp_path / "out.txt",
    )  # fmt: skip
    replay.wait_for("log line 0")  # the server runs; the replay may not have begun
    servers = child_pids(replay.proc.pid)
    replay.proc.send_signal(signal.SIGHUP)
    code, stderr = replay.finish()

    assert code == 128 + signal.SIGHUP, stderr
    assert "Traceback" not in stderr
    assert "mcptape: stopped by SIGHUP" in stderr
    assert query(db, "select status from sessions") == [("interrupted",)]
    assert servers and all(wait_until_gone(pid) for pid in servers)
