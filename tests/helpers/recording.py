"""Test helper: drive a real `mcptape record` process over pipes and read back its database."""

from __future__ import annotations

import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE, ROOT

RAW_ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py")]
# A 2025 client's first request and its notification, as tests send them by hand.
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Recording:
    """A running `mcptape record --db DB -- SERVER...` with its stdout lines in a queue.

    ``db`` is a SQLite file path or any database URL `--db` takes.
    """

    def __init__(
        self, db: Path | str, server: list[str], *extra: str, env: dict[str, str] | None = None
    ) -> None:
        self.db = db
        self.proc = subprocess.Popen(
            [*MCPTAPE, "record", "--db", str(db), *extra, "--", *server],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env or dict(os.environ),
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = bytearray()
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(65536):  # type: ignore[attr-defined]
            self.stderr += chunk

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self, timeout: float = 20) -> bytes | None:
        """The next line from mcptape's stdout (with its newline), None at EOF."""
        return self.lines.get(timeout=timeout)

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = 30) -> int:
        rc = self.proc.wait(timeout)
        for t in self._threads:
            t.join(5)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def record_one_ping(db: Path) -> Path:
    """``db`` holding one finished session: a ping through `mcptape record -- cat`."""
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db), "--", "cat"], input=ping, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return db


def wait_for_frames(db: Path, count: int, timeout: float = 20) -> None:
    """Wait until the recording holds at least ``count`` frames (the store opens in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if query(db, "select count(*) from frames")[0][0] >= count:
                return
        except sqlite3.Error:  # not created yet
            pass
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} frames recorded")


def frame_bytes(row_text: str, row_raw: bytes | None) -> bytes:
    """A frame's exact wire bytes from its `text` and `raw` columns."""
    return row_raw if row_raw is not None else row_text.encode()
