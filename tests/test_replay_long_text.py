"""A replay of a 200-line file read through server-filesystem, with line 150 changed since.

What a user sees: the first line names the recording (a `call` session named `fs`), the
differing request names the file it read, and the text is shown as a diff of the lines
around line 150, not as both texts cut after their first 100 characters ("line 0: xxx…").
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE, NPM_DIR

pytestmark = pytest.mark.slow

ENTRY = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
LINE = "x" * 40


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, timeout=120)


def test_a_changed_line_of_a_long_file_is_shown_where_it_changed(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node and ENTRY.exists(), "tests/npm is not installed: run npm ci in tests/npm"
    root = tmp_path / "files"
    root.mkdir()
    big = root / "big.txt"
    lines = [f"line {i}: {LINE}" for i in range(200)]
    big.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "rec.db")
    server = [node, str(ENTRY), str(root)]
    read = ["call", "-m", "tools/call", "--tool-name", "read_text_file", "--tool-arg", f"path={big}"]
    recorded = run(*read, "--name", "fs", "--db", db, "--", *server)
    assert recorded.returncode == 0, recorded.stderr
    lines[150] = f"line 150: {LINE[:20]}CHANGED{LINE[:13]}"
    big.write_text("\n".join(lines) + "\n")
    proc = run("replay", "fs", "--db", db, "--", *server)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("session ") and " (fs, call, started " in out[0]
    assert ": 3/4 exchanges match (replay " in out[0]
    heading = out[1]  # names the file it read; a long path is cut in its middle
    assert heading.startswith('  ✗ #4 tools/call read_text_file {"path": "/tmp/')
    assert heading.endswith('long_0/files/big.txt"}: 2 difference(s)') and "…" in heading, heading
    assert (
        "      /result/content/0/text: the text differs from line 151 (200 lines recorded, 200 lines replayed):"
        in out
    )
    assert f"        -line 150: {LINE}" in out
    assert f"        +line 150: {LINE[:20]}CHANGED{LINE[:13]}" in out
    assert "      /result/structuredContent/content: the same difference as /result/content/0/text" in out
    assert not [line for line in out if line.lstrip(" -+").startswith("line 0:")]
