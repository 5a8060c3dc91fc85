"""`mcptape call` against a server whose strings are built to drive a terminal, and
arguments a user may legitimately pass that orjson cannot write."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptape.client.output import dumps
from tests.helpers.paths import MCPTAPE

# Clear screen, OSC 52 (write the clipboard), OSC 8 (a hidden link), CR, a bidi override,
# the C1 CSI (U+009B) and DEL.
HOSTILE = "\x1b[2J\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\r\u202eevil\u009b31m\x7f"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\u009b", "\x7f")

SERVER = r"""
import json, sys
H = sys.argv[1]
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "n" + H, "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
            {"name": "echo", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            {"name": "t" + H, "description": "d" + H, "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        args = msg["params"].get("arguments", {})
        # The raw line, so the test sees the integer exactly as it went out.
        text = line.strip() if msg["params"]["name"] == "echo" else "x" + H
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
"""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def _call(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    server = tmp_path / "hostile_strings.py"
    server.write_text(SERVER, encoding="utf-8")
    argv = [*MCPTAPE, "call", "--no-record", *args, "--", sys.executable, str(server), HOSTILE]
    return subprocess.run(argv, capture_output=True, text=True, encoding="utf-8", timeout=60)


def test_printed_json_escapes_del_c1_and_bidi_and_keeps_the_value() -> None:
    text = dumps({"k": HOSTILE})
    assert not any(ch in text for ch in RAW)
    assert "\\u009b" in text and "\\u202e" in text and "\\u007f" in text
    assert json.loads(text) == {"k": HOSTILE}
    line = dumps([HOSTILE, {"a": 1}], pretty=False)
    assert "\n" not in line and json.loads(line) == [HOSTILE, {"a": 1}]


@pytest.mark.slow
def test_server_names_descriptions_and_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    for args in (
        ["-m", "tools/list"],
        ["-m", "server/info"],
        ["-m", "tools/call", "--tool-name", "t" + HOSTILE],
        ["-m", "tools/list", "--structured"],
    ):
        done = _call(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert not any(ch in done.stdout + done.stderr for ch in RAW), (args, done.stdout)
        # Still JSON, carrying the server's strings whole.
        assert any(HOSTILE in text for text in _strings(json.loads(done.stdout)))


@pytest.mark.slow
def test_an_integer_beyond_64_bits_is_sent_as_written(tmp_path: Path) -> None:
    big = "99999999999999999999999"
    for args in (
        ["--tool-arg", f"n={big}"],
        ["--tool-args", f'{{"n": {big}}}'],
        ["--params", f'{{"x": -{big}}}'],
    ):
        done = _call(tmp_path, "-m", "tools/call", "--tool-name", "echo", *args)
        assert done.returncode == 0, done.stderr
        sent = json.loads(json.loads(done.stdout)["content"][0]["text"])
        assert big in json.dumps(sent["params"])


STRAY_SERVER = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}) + "\n")
    elif msg.get("method") == "ping":
        # A log line on stdout, then an answer to an id nobody asked: never the answer.
        sys.stdout.write("starting up \x1b[2J...\n")
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": "other", "result": {}}) + "\n")
    elif "id" in msg:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}) + "\n")
    sys.stdout.flush()
"""


@pytest.mark.slow
def test_a_timeout_names_what_the_server_sent_that_answered_nothing(tmp_path: Path) -> None:
    server = tmp_path / "stray.py"
    server.write_text(STRAY_SERVER, encoding="utf-8")
    argv = [
        *MCPTAPE,
        "call",
        "--no-record",
        "-m",
        "ping",
        "--timeout",
        "2",
        "--",
        sys.executable,
        str(server),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 124, done.stderr
    assert "meanwhile the server sent 2 message(s) that answer nothing" in done.stderr
    assert "a reply to id other, which was never asked" in done.stderr
    assert "\x1b" not in done.stderr


@pytest.mark.slow
def test_a_script_on_stdin_when_stdin_is_closed_is_a_one_line_error(tmp_path: Path) -> None:
    import os

    argv = [*MCPTAPE, "call", "--no-record", "--script", "-", "--", sys.executable, "-c", "pass"]
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(0),
    )
    assert done.returncode == 1, done.stderr
    assert (
        done.stderr
        == "mcptape: error: --script -: stdin is closed; give the steps on stdin or --script FILE\n"
    )
