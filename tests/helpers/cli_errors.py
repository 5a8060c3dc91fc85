"""The check every user-error test makes: one line on stderr, exit status 2, no traceback."""

from __future__ import annotations

import subprocess


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Assert ``proc`` failed as a user error saying each of ``fragments``; return the line."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mcptape: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]
