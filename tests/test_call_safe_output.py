"""`mcptape call` never lets a server drive the terminal through what it prints on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE

pytestmark = pytest.mark.slow

# A raw stdio server whose log messages, logger name and error messages carry escape
# sequences (window title, clear screen) and a bidi override.
SERVER = r"""
import json, sys
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202eevil"
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": "h", "version": "1"}}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "warning", "logger": HOSTILE, "data": HOSTILE}})
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "bad " + HOSTILE}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no " + HOSTILE}})
"""


def test_server_logs_and_errors_on_stderr_are_escaped(tmp_path: Path) -> None:
    server = tmp_path / "hostile_logs.py"
    server.write_text(SERVER, encoding="utf-8")
    argv = [*MCPTAPE, "call", "--no-record", "-m", "tools/call", "--tool-name", "x"]
    target = ["--", sys.executable, str(server)]
    done = subprocess.run([*argv, *target], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr and "\u202e" not in done.stderr
    assert "\\u001b]0;pwned\\u0007" in done.stderr
    assert "log warning" in done.stderr and "bad " in done.stderr
    # The machine-readable output keeps the values whole.
    structured = subprocess.run([*argv, "--structured", *target], capture_output=True, text=True, timeout=60)
    envelope = json.loads(structured.stdout)
    assert envelope["logs"][0]["data"] == "\x1b]0;pwned\x07\x1b[2J\u202eevil"
