"""Fixtures shared by the whole suite. Feature-specific fixtures live in their test modules."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "corpus"
NPM_DIR = ROOT / "tests" / "npm"
MCPTAPE = [sys.executable, "-m", "mcptape"]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh SQLite recording database path (not yet created)."""
    return tmp_path / "rec.db"


@pytest.fixture
def cli_env(db_path: Path) -> dict[str, str]:
    """An environment for running `mcptape` as a subprocess against ``db_path``."""
    env = dict(os.environ)
    env["MCPTAPE_DB"] = str(db_path)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def everything_server_cmd() -> list[str] | None:
    """The command starting @modelcontextprotocol/server-everything (stdio), if installed by .ci/run."""
    entry = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    node = shutil.which("node")
    if node and entry.exists():
        return [node, str(entry), "stdio"]
    return None
