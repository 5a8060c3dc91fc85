"""Test helper: Debian's Chromium, headless, driven by Playwright's Python package.

Playwright never downloads a browser here (`playwright install` is not used): it drives
the system's ``/usr/bin/chromium`` (`apt-get install -y chromium`; `.ci/run` installs it).
Without it the browser tests are skipped, saying why, except under CI (``CI=true``),
where a missing browser fails them. Screenshots go to :data:`SCREENSHOTS`, which CI keeps
(ignored by git).

    from tests.helpers.browser import browser, screenshot  # noqa: F401 (a fixture)

An asyncio test (a page beside an in-process gateway on the same loop) uses
``async with chromium() as browser`` instead. :func:`viewer_page` opens a page of
`mcptape ui` logged in from its URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from tests.helpers.paths import missing

ROOT: Final = Path(__file__).resolve().parents[2]
CHROMIUM: Final = Path("/usr/bin/chromium")
LAUNCH_ARGS: Final = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SCREENSHOTS: Final = ROOT / "tests" / "artifacts" / "screenshots"


def _missing(reason: str) -> None:
    missing(reason, ".ci/run installs chromium and the dev extras")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium for the test module.

    Not for the whole session: Playwright's sync API keeps an event loop running in the
    main thread while it is open, and asyncio tests of later modules could not start theirs."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[dev]')")
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A headless Chromium through Playwright's async API (a ``Browser``), closed after the block."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[dev]')")
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a PNG of ``page`` as ``SCREENSHOTS/name.png`` and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


@contextlib.contextmanager
def viewer_page(browser: Any, url: str) -> Iterator[Any]:
    """A page that opened the viewer's ``url`` (the token in its fragment logs it in) and shows
    the sessions list; what the page raised fails the test when the page closes."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.goto(url)
    opened.wait_for_selector("[data-testid=sessions]")
    yield opened
    context.close()
    assert errors == [], f"the page raised: {errors}"
