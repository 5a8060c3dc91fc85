"""Fixtures shared by the whole suite, and the guard that keeps the fast tier free of processes.

The tiers: a test that starts a process (a subprocess, a Node server, an `mcptape` CLI
run, PostgreSQL) is marked ``slow``; ``scripts/test --fast`` runs the rest
(``-m "not slow"``). :class:`ProcessGuard` enforces it: while a test without the mark
sets up and runs, starting a process raises :class:`ProcessInFastTier`, and
the test fails even where the code under test caught that error. Shared helpers live in
``tests/helpers/``; feature-specific fixtures live in their test modules.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers.process_guard import ProcessGuard

if TYPE_CHECKING:
    from mcptape.store import Store
    from tests.helpers.conversations import Conversations

# Cached bytecode: with PYTHONDONTWRITEBYTECODE set (some shells and images set it) every
# collection rewrites and compiles every test module again, and every `mcptape` process a
# test starts compiles the package again; caching roughly halves both. The caches are
# __pycache__ folders git ignores.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


_GUARD = pytest.StashKey[ProcessGuard]()


def _guarded(item: pytest.Item) -> Generator[None, Any, Any]:
    """Run a phase of ``item`` with starting a process refused, unless it is marked slow."""
    if item.get_closest_marker("slow") is not None:
        return (yield)
    guard = item.stash.setdefault(_GUARD, ProcessGuard())
    guard.install()
    try:
        return (yield)
    finally:
        guard.uninstall()


# Setup and call are guarded, not teardown: the teardown of a test's last phase also tears
# down the module's and session's fixtures it never asked for (a module's PostgreSQL server,
# stopped by a process): those would be blamed on whichever test happened to run last.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guarded(item))


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


@pytest.fixture
def conversations(db_path: Path) -> Conversations:
    """Conversations across sessions and replicas (tests/helpers/conversations.py), in ``db_path``."""
    from tests.helpers.conversations import build_conversations

    return build_conversations(db_path)


@pytest.fixture
def conversations_store(db_path: Path, conversations: Conversations) -> Iterator[Store]:
    """The store holding :func:`conversations`, opened for the test."""
    from mcptape.store import open_store

    opened = open_store(str(db_path), create=False)
    yield opened
    opened.close()
