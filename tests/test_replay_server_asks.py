"""A replay answers the server's own requests before the client step that followed them.

In the recording the server asked for the client's roots (0.3 s after `initialized`)
and the client answered before its next request, whose result depends on them. The
replay must keep that order, not send the next request the moment it may.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE, ROOT
from tests.helpers.recording import INITIALIZE, INITIALIZED

pytestmark = pytest.mark.slow

SERVER = [sys.executable, str(ROOT / "tests" / "servers" / "asks_roots.py")]
ROOTS = {"roots": [{"uri": "file:///srv/project", "name": "project"}]}


def _recording(path: Path, *, asked: bool) -> None:
    """What a client that answered roots/list before calling the tool recorded (or one never asked)."""
    init_result = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "asks"},
    }
    known = ["file:///srv/project"] if asked else []
    frames = [
        ("c2s", INITIALIZE),
        ("s2c", {"jsonrpc": "2.0", "id": 0, "result": init_result}),
        ("c2s", INITIALIZED),
    ]
    if asked:
        frames += [
            ("s2c", {"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"}),
            ("c2s", {"jsonrpc": "2.0", "id": "roots-1", "result": ROOTS}),
        ]
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "roots", "arguments": {}}}
    answer = {"content": [{"type": "text", "text": json.dumps(known)}]}
    frames += [("c2s", call), ("s2c", {"jsonrpc": "2.0", "id": 1, "result": answer})]
    with open(path, "w", encoding="utf-8") as out:
        for t, (direction, message) in enumerate(frames):
            out.write(json.dumps({"dir": direction, "t": t * 0.1, "frame": json.dumps(message)}) + "\n")


def _replay(path: Path, tmp_path: Path, *server_flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *MCPTAPE,
            "replay",
            "--db",
            str(tmp_path / "r.db"),
            "--file",
            str(path),
            "--",
            *SERVER,
            *server_flags,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_next_request_waits_for_the_answer_to_the_servers_request(tmp_path: Path) -> None:
    path = tmp_path / "asked.jsonl"
    _recording(path, asked=True)
    done = _replay(path, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_server_that_stopped_asking_is_waited_for_briefly_then_reported(tmp_path: Path) -> None:
    path = tmp_path / "asked.jsonl"
    _recording(path, asked=True)
    done = _replay(path, tmp_path, "--never-asks")
    # Not a hang: the call goes after a short wait, and its answer (no roots) differs.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "file:///srv/project" in done.stdout


def test_a_recording_without_the_question_waits_for_nothing(tmp_path: Path) -> None:
    path = tmp_path / "not-asked.jsonl"
    _recording(path, asked=False)
    done = _replay(path, tmp_path)
    # The live server asks after the call was sent: the call's answer has no roots, as recorded.
    assert done.returncode == 0, done.stdout + done.stderr
