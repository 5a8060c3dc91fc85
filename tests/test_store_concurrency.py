"""Several recording processes on one brand-new SQLite file: no "database is locked", no lost frame."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow

# A barrier: each process says it is ready (everything imported) and waits for the start
# file, which the test creates once all are ready; so all of them race to create and
# migrate the database.
WRITER_SCRIPT = """
import json, os, sys, time
from mcptape.wire.frame import Frame
from mcptape.store import open_store


db, start, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
open(f"{start}.ready.{os.getpid()}", "w").close()
while not os.path.exists(start):
    time.sleep(0.001)
store = open_store(db)
session_id = store.create_session(mode="record", name=f"process {os.getpid()}")
writer = store.writer(batch_size=25)  # small batches: many transactions competing for the lock
for seq in range(1, count + 1):
    if seq % 2:
        data = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}' % seq
        writer.add_frame(session_id, seq, Frame(data, "c2s"))
    else:
        data = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % (seq - 1)
        writer.add_frame(session_id, seq, Frame(data, "s2c"))
    if seq % 500 == 0:
        writer.add_event(session_id, "stderr", f"at {seq}")
writer.update_session(session_id, status="ok", ended_at=time.time())
writer.close()
store.close()
print(json.dumps({"session": session_id, "written": writer.frames_written, "errors": writer.errors}))
"""


@pytest.mark.parametrize("processes", [4, 8])
def test_processes_writing_one_new_file_at_once_lose_nothing(tmp_path: Path, processes: int) -> None:
    db = tmp_path / "new" / "shared.db"
    start = tmp_path / "start"
    count = 2000
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_SCRIPT, str(db), str(start), str(count)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("start.ready.*"))) < processes:
        assert time.monotonic() < deadline, "the writer processes did not start"
        assert all(child.poll() is None for child in children), "a writer process died before the start"
        time.sleep(0.01)
    start.touch()
    reports = []
    for child in children:
        out, err = child.communicate(timeout=110)
        assert child.returncode == 0, err
        assert "locked" not in err and "error" not in err, err
        reports.append(json.loads(out))
    assert all(report["errors"] == [] and report["written"] == count for report in reports)
    with sqlite3.connect(db) as conn:
        per_session = dict(
            conn.execute("SELECT session_id, count(*) FROM frames GROUP BY session_id").fetchall()
        )
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        statuses = {status for (status,) in conn.execute("SELECT status FROM sessions")}
        answered = conn.execute("SELECT count(*) FROM exchanges WHERE response_seq IS NOT NULL").fetchone()[0]
        revisions = conn.execute("SELECT count(*) FROM alembic_version").fetchone()[0]
    assert per_session == {report["session"]: count for report in reports}
    assert events == processes * (count // 500)
    assert statuses == {"ok"}
    assert answered == processes * count // 2
    assert revisions == 1
