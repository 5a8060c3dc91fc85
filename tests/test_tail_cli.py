"""`mcptape tail` as a process: it follows what another process records, and Ctrl-C ends it with 0."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from pathlib import Path

import orjson
import pytest

from mcptape.store import open_store
from mcptape.wire.frame import Frame
from tests.helpers.paths import MCPTAPE

pytestmark = pytest.mark.slow


class Tail:
    def __init__(self, db: Path, *args: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="80")
        self.proc = subprocess.Popen(
            [*MCPTAPE, "tail", "--db", str(db), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.proc.stderr is not None
        assert "following" in self.proc.stderr.readline()  # ready: its reader starts after this

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def next(self, timeout: float = 10.0) -> str:
        return self.lines.get(timeout=timeout)

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=10)


def write_exchanges(db: Path, name: str, count: int, *, fail: bool = False) -> str:
    store = open_store(str(db))
    writer = store.writer()
    s = writer.create_session(mode="record", name=name, upstream="server --flag")
    for i in range(1, count + 1):
        ask = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": f"tool{i}"}}
        writer.add_frame(s, 2 * i - 1, Frame(orjson.dumps(ask), "c2s"))
        body = {"error": {"code": -32000, "message": "it broke"}} if fail else {"result": {"content": []}}
        writer.add_frame(s, 2 * i, Frame(orjson.dumps({"jsonrpc": "2.0", "id": i, **body}), "s2c"))
    writer.add_event(s, "stderr", "a line on stderr")
    writer.close()
    store.close()
    return s


def test_tail_prints_each_exchange_of_another_process_and_ctrl_c_exits_0(db_path: Path) -> None:
    open_store(str(db_path)).close()
    tail = Tail(db_path)
    write_exchanges(db_path, "weather", 2)
    lines = [tail.next() for _ in range(4)]
    assert "▸ session" in lines[0] and "weather" in lines[0]
    assert "→ tools/call tool1" in lines[1] and lines[1].endswith(" ok")
    assert "→ tools/call tool2" in lines[2] and "#2" in lines[2]
    assert "· stderr a line on stderr" in lines[3]
    assert all(len(line) <= 80 for line in lines)
    assert tail.interrupt() == 0


def test_tail_json_with_filters_prints_only_failed_exchanges_of_the_named_sessions(db_path: Path) -> None:
    open_store(str(db_path)).close()
    tail = Tail(db_path, "--json", "--errors", "--name", "bad*")
    write_exchanges(db_path, "good", 1)
    bad = write_exchanges(db_path, "bad-one", 1, fail=True)
    item = orjson.loads(tail.next())
    assert (item["session_id"], item["session_name"], item["type"]) == (bad, "bad-one", "exchange")
    assert (item["status"], item["detail"], item["subject"]) == ("error -32000", "it broke", "tool1")
    with pytest.raises(queue.Empty):
        tail.next(timeout=1.0)
    assert tail.interrupt() == 0


def test_tail_of_an_unknown_session_is_a_one_line_error(db_path: Path) -> None:
    open_store(str(db_path)).close()
    done = subprocess.run([*MCPTAPE, "tail", "--db", str(db_path), "--session", "nope"],
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no session or conversation 'nope'" in done.stderr
