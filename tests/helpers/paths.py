"""Where the suite's files are, and how a test starts `mcptape` and the reference server."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
NPM_DIR = ROOT / "tests" / "npm"
MCPTAPE = [sys.executable, "-m", "mcptape"]
# The Node 22 that tests/npm installs (the `node` package) and the official conformance suite it runs.
NODE22 = NPM_DIR / "node_modules" / "node" / "bin" / "node"
CONFORMANCE_SUITE = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def everything_server_cmd() -> list[str] | None:
    """The command starting @modelcontextprotocol/server-everything (stdio), if installed by .ci/run."""
    entry = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    node = shutil.which("node")
    if node and entry.exists():
        return [node, str(entry), "stdio"]
    return None


def require_everything() -> list[str]:
    """:func:`everything_server_cmd`, or the test skipped when it is not installed (failed under
    CI, where scripts/test installs it: nothing may be skipped there)."""
    cmd = everything_server_cmd()
    if cmd is not None:
        return cmd
    missing("server-everything is not installed (cd tests/npm && npm ci)", "scripts/test installs tests/npm")


def missing(reason: str, installed_by: str) -> NoReturn:
    """Something a test needs is not on this machine: skipped on a developer's machine (the
    reason says how to get it), failed under CI (``CI`` set by .ci/run), where
    ``installed_by`` puts it: nothing may be skipped there."""
    import os

    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must have it ({installed_by})")
    pytest.skip(reason)
