"""Test helper: many wrapped servers started at once, each driven by a client in a burst.

A desktop client starts every server of its config when it opens: with every entry
wrapped by `mcptape wrap`, that is as many `mcptape record` processes racing for one
SQLite file. :func:`wrapped_entries` wraps a config of ``n`` copies of a server with the
real `mcptape wrap`; :class:`BurstClient` plays the client of one entry on its pipes: the
MCP handshake, then ``calls`` pipelined ``tools/call echo`` requests, counting every line
each way so the recording can be checked frame for frame.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import INITIALIZE, INITIALIZED


def wrapped_entries(tmp_path: Path, db: Path, server: list[str], n: int) -> dict[str, dict[str, Any]]:
    """The entries of a config of ``n`` copies of ``server`` after `mcptape wrap --db DB`."""
    config = tmp_path / "claude_desktop_config.json"
    servers = {f"everything-{i}": {"command": server[0], "args": server[1:]} for i in range(n)}
    config.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    proc = subprocess.run(
        [*MCPTAPE, "wrap", str(config), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    entries: dict[str, dict[str, Any]] = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]
    assert all(entry["args"][0] == "record" for entry in entries.values())
    return entries


def _request(rpc_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}).encode() + b"\n"


INITIALIZE_LINE = json.dumps(INITIALIZE).encode() + b"\n"
INITIALIZED_LINE = json.dumps(INITIALIZED).encode() + b"\n"


class BurstClient:
    """One client on the pipes of a wrapped entry: handshake at start, a burst when told.

    ``sent`` and ``received`` count the lines written to and read from the entry;
    ``answered`` the burst's requests that got their response; ``worst_gap`` the longest
    time between two answers during the burst (for the attack's report, never asserted).
    """

    def __init__(self, entry: dict[str, Any], calls: int, env: dict[str, str] | None = None) -> None:
        self.calls = calls
        self.sent = 0
        self.received = 0
        self.answered = 0
        self.worst_gap = 0.0
        self.burst_s = 0.0
        self.ready = threading.Event()
        self.done = threading.Event()
        self.stderr = b""
        self.proc = subprocess.Popen(
            [entry["command"], *entry["args"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env or dict(os.environ),
        )
        self._go = threading.Event()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._errors = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        self._errors.start()
        self._send(INITIALIZE_LINE)

    def _send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            self.sent += 1

    def _read(self) -> None:
        assert self.proc.stdout is not None
        last = 0.0
        for line in self.proc.stdout:
            self.received += 1
            message = json.loads(line)
            if message.get("id") == 0 and "result" in message:
                self._send(INITIALIZED_LINE)
                self.ready.set()
            elif isinstance(message.get("id"), int) and message["id"] > 0 and "result" in message:
                now = time.monotonic()
                if last:
                    self.worst_gap = max(self.worst_gap, now - last)
                last = now
                self.answered += 1
                if self.answered == self.calls:
                    self.burst_s = now - self._started
                    self.done.set()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def burst(self) -> None:
        """Send every request of the burst at once (pipelined), from a thread of its own."""

        def send_all() -> None:
            self._started = time.monotonic()
            for i in range(1, self.calls + 1):
                self._send(_request(i, "tools/call", {"name": "echo", "arguments": {"message": f"m{i}"}}))

        threading.Thread(target=send_all, daemon=True).start()

    def finish(self, timeout: float = 60) -> int:
        """Close the entry's stdin (the client quits) and wait for `mcptape record` to exit."""
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        self._reader.join(10)
        self._errors.join(10)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
