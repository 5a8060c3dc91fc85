"""Fixtures shared by the whole suite, and the guard that keeps the fast tier free of processes.

The tiers: a test that starts a process (a subprocess, a Node server, an `mcptape` CLI
run, PostgreSQL) is marked ``slow``; ``scripts/test --fast`` runs the rest
(``-m "not slow"``). :class:`ProcessGuard` enforces it: while a test without the mark
sets up, runs and tears down, starting a process raises :class:`ProcessInFastTier`, and
the test fails even where the code under test caught that error. Shared helpers live in
``tests/helpers/``; feature-specific fixtures live in their test modules.
"""

from __future__ import annotations

import _posixsubprocess
import os
import shutil
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

# Cached bytecode: with PYTHONDONTWRITEBYTECODE set (some shells and images set it) every
# collection rewrites and compiles every test module again, and every `mcptape` process a
# test starts compiles the package again; caching roughly halves both. The caches are
# __pycache__ folders git ignores.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


class ProcessInFastTier(RuntimeError):
    """A test without the ``slow`` mark tried to start a process."""


class ProcessGuard:
    """Refuses every way of starting a process while installed, and remembers what was tried."""

    # (owner, attribute): every route to a new process in the stdlib ends in one of these.
    ROUTES: tuple[tuple[Any, str], ...] = (
        (subprocess.Popen, "_execute_child"),  # subprocess.*, asyncio's subprocesses
        (_posixsubprocess, "fork_exec"),  # multiprocessing's spawn and forkserver
        (os, "fork"),
        (os, "forkpty"),
        (os, "posix_spawn"),
        (os, "posix_spawnp"),
        (os, "system"),
    )

    def __init__(self) -> None:
        self.tried: list[str] = []
        self.reported = 0
        self._saved: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        for owner, name in self.ROUTES:
            original = getattr(owner, name, None)
            if original is not None:
                self._saved.append((owner, name, original))
                setattr(owner, name, self._refuse(name))

    def uninstall(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()

    def _refuse(self, route: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            argv = next((a for a in args if isinstance(a, list | tuple | str | bytes)), "?")
            self.tried.append(f"{route}({argv!r})"[:300])
            raise ProcessInFastTier(f"a test without @pytest.mark.slow started a process: {route}")

        return refuse


_GUARD = pytest.StashKey[ProcessGuard]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    if item.get_closest_marker("slow") is not None:
        return (yield)
    guard = item.stash[_GUARD] = ProcessGuard()
    guard.install()
    try:
        return (yield)
    finally:
        guard.uninstall()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    guard = item.stash.get(_GUARD, None)
    if guard is not None and len(guard.tried) > guard.reported:
        # Fail the phase that tried, even if the code under test caught ProcessInFastTier.
        tried, guard.reported = guard.tried[guard.reported :], len(guard.tried)
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} starts a process but is not marked slow.\n"
            "Mark it @pytest.mark.slow (or its module: pytestmark = pytest.mark.slow), "
            "or test it in process (memory links, aiohttp.test_utils).\nTried:\n  " + "\n  ".join(tried)
        )
    return report


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


@pytest.fixture
def node() -> str:
    """The node executable; its absence fails the test with what to do (never a silent skip)."""
    found = shutil.which("node")
    if found is None:
        pytest.fail(
            "node is not on PATH: these tests run real Node.js scripts; install Node.js 18+ (.ci/run does)."
        )
    return found
