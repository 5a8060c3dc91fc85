"""@modelcontextprotocol/server-filesystem (tests/npm), a server nobody here wrote, end to end.

The reference TypeScript client is recorded through `mcptape record` reading a file and its
times; the file's times then change. The server prints them as JavaScript dates
(``Thu Nov 26 2026 15:30:01 GMT+0000 (Coordinated Universal Time)``), which the default
normalisation leaves out: the replay matches. `mcptape serve` gives the client what the
live server gave it, its roots/list request included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.interop import ts_steps
from tests.helpers.paths import MCPTAPE, NPM_DIR

pytestmark = pytest.mark.slow

ENTRY = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"


def filesystem_server(root: Path) -> list[str]:
    node = shutil.which("node")
    assert node and ENTRY.exists(), "tests/npm is not installed: run npm ci in tests/npm"
    return [node, str(ENTRY), str(root)]


def steps(root: Path) -> list[dict[str, Any]]:
    notes = str(root / "notes.txt")
    return [
        {"m": "callTool", "p": {"name": "list_allowed_directories", "arguments": {}}},
        {"m": "callTool", "p": {"name": "read_text_file", "arguments": {"path": notes}}},
        {"m": "callTool", "p": {"name": "get_file_info", "arguments": {"path": notes}}},
        {"m": "callTool", "p": {"name": "list_directory_with_sizes", "arguments": {"path": str(root)}}},
        {"m": "callTool", "p": {"name": "read_text_file", "arguments": {"path": "/etc/hostname"}}},
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """A database with the session `fs`, the served directory, and what the client got live."""
    base = tmp_path_factory.mktemp("fs")
    root = base / "root"
    root.mkdir()
    (root / "notes.txt").write_text("hello from a file\n")
    os.utime(root / "notes.txt", (1_600_000_000, 1_600_000_000))  # 2020-09-13
    db = base / "rec.db"
    os.environ["TS_STEPS_ROOTS"] = root.as_uri()
    try:
        live = ts_steps(
            steps(root), "stdio", *MCPTAPE, "record", "--db", str(db), "--name", "fs", "--",
            *filesystem_server(root),
        )  # fmt: skip
    finally:
        del os.environ["TS_STEPS_ROOTS"]
    return db, root, live


def test_the_live_session_read_the_file_and_was_refused_outside_the_root(
    recorded: tuple[Path, Path, dict[str, Any]],
) -> None:
    _, _, live = recorded
    assert live["asked"] == ["roots/list"]
    info = live["results"][2]["result"]["content"][0]["text"]
    assert "modified: Sun Sep 13 2020" in info
    assert live["results"][4]["result"]["isError"] is True


def test_replay_matches_after_the_file_times_changed(
    recorded: tuple[Path, Path, dict[str, Any]], tmp_path: Path
) -> None:
    db, root, _ = recorded
    copy = tmp_path / "rec.db"
    shutil.copy(db, copy)
    os.utime(root / "notes.txt", (1_700_000_000, 1_700_000_000))  # 2023-11-14
    proc = subprocess.run(
        [*MCPTAPE, "replay", "fs", "--db", str(copy), "--", *filesystem_server(root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].endswith(": 6 match, 0 differ")
    kept = subprocess.run(
        [*MCPTAPE, "replay", "fs", "--db", str(copy), "--keep", "timestamps", "--", *filesystem_server(root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert kept.returncode == 1 and "✗ #4 tools/call get_file_info" in kept.stdout, kept.stdout
    # What the defaults did, a regular expression does too: only the dates go, the rest is compared.
    masked = subprocess.run(
        [*MCPTAPE, "replay", "fs", "--db", str(copy), "--keep", "timestamps",
         "--ignore-text", r"(modified|accessed): [^\n]+", "--", *filesystem_server(root)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert masked.returncode == 0, masked.stdout


def test_serve_gives_the_typescript_client_the_live_results(
    recorded: tuple[Path, Path, dict[str, Any]],
) -> None:
    db, root, live = recorded
    served = ts_steps(steps(root), "stdio", *MCPTAPE, "serve", "fs", "--db", str(db))
    assert served == live
