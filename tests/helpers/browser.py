"""A real browser for tests: Debian's Chromium, headless, driven by Playwright (never a downloaded browser).

``.ci/run`` installs the ``chromium`` package; Playwright's Python package drives it through
``executable_path``, so no browser is fetched. Without the package a test skips, saying so.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _executable() -> str:
    if not CHROMIUM.exists():
        pytest.skip(
            f"Debian's chromium is not installed at {CHROMIUM} (apt-get install -y chromium; .ci/run does)"
        )
    return str(CHROMIUM)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A headless Chromium (Playwright's async ``Browser``), closed after the block."""
    from playwright.async_api import async_playwright

    executable = _executable()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            yield browser
        finally:
            await browser.close()


@contextlib.contextmanager
def chromium_sync() -> Iterator[Any]:
    """The same browser for blocking tests (Playwright's sync ``Browser``)."""
    from playwright.sync_api import sync_playwright

    executable = _executable()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium for a blocking test (import this fixture into the test module)."""
    with chromium_sync() as launched:
        yield launched
