"""A server that crashes is reported by the line that says why, not by the last line it printed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mcptape.proxy.link import LinkEnd, telling_line
from tests.helpers.paths import MCPTAPE, ROOT

# What Node 20 prints for an uncaught Error with a `code` property (tests/servers/node_crash.mjs).
NODE_CRASH = [
    "file:///srv/server.mjs:1",
    'process.stdin.on("data", () => { throw error; });',
    "                                 ^",
    "",
    "Error: ENOENT: no such file or directory, open '/srv/missing.json'",
    "    at Socket.<anonymous> (file:///srv/server.mjs:1:44)",
    "    at Socket.emit (node:events:524:28)",
    "    at Pipe.onStreamRead (node:internal/stream_base_commons:191:23) {",
    "  code: 'ENOENT'",
    "}",
    "",
    "Node.js v20.20.2",
]
PYTHON_CRASH = [
    "Traceback (most recent call last):",
    '  File "/srv/server.py", line 3, in <module>',
    "    open('/srv/missing.json')",
    "FileNotFoundError: [Errno 2] No such file or directory: '/srv/missing.json'",
]


def test_the_error_above_a_node_stack_is_the_telling_line_not_the_version_footer() -> None:
    assert telling_line(NODE_CRASH) == "Error: ENOENT: no such file or directory, open '/srv/missing.json'"
    end = LinkEnd("exited", 1, stderr_tail=tuple(NODE_CRASH))
    assert (
        end.stderr_words()
        == "; its stderr says: Error: ENOENT: no such file or directory, open '/srv/missing.json'"
    )


def test_a_python_traceback_ends_with_its_error_and_plain_logs_with_their_last_line() -> None:
    assert telling_line(PYTHON_CRASH) == PYTHON_CRASH[-1]
    assert LinkEnd("exited", 1, stderr_tail=tuple(PYTHON_CRASH)).stderr_words() == (
        f"; its last stderr line: {PYTHON_CRASH[-1]}"
    )
    assert telling_line(["starting", "listening on stdio", "", "Node.js v20.20.2"]) == "listening on stdio"
    assert telling_line(["", "Node.js v22.1.0"]) is None
    assert LinkEnd("exited", 1).stderr_words() == ""


@pytest.mark.slow
def test_a_crashing_node_server_is_reported_by_its_error(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "node is not installed"
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    proc = subprocess.Popen(
        [
            *MCPTAPE,
            "record",
            "--db",
            str(tmp_path / "rec.db"),
            "--",
            node,
            str(ROOT / "tests/servers/node_crash.mjs"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()  # and kept open, as a client waiting for its answer does
    answer = json.loads(proc.stdout.readline())
    proc.stdin.close()
    assert proc.wait(60) == 1
    assert answer["error"]["message"] == (
        "mcptape: the MCP server exited with status 1 before answering initialize; "
        "its stderr says: Error: ENOENT: no such file or directory, open '/srv/missing.json'"
    )
