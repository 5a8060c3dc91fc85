"""Test helper: Debian's Chromium, headless, driven by Playwright's Python package.

Playwright never downloads a browser here (`playwright install` is not used): it drives
the system's ``/usr/bin/chromium`` (`apt-get install -y chromium`; `.ci/run` installs it).
Without it the browser tests are skipped, saying why, except under CI (``CI=true``),
where a missing browser fails them. Screenshots go to :data:`SCREENSHOTS`, which CI keeps
(ignored by git).

    from tests.helpers.browser import browser, screenshot  # noqa: F401 (a fixture)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
CHROMIUM: Final = Path("/usr/bin/chromium")
LAUNCH_ARGS: Final = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SCREENSHOTS: Final = ROOT / "tests" / "artifacts" / "screenshots"


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must have it (.ci/run installs chromium and the dev extras)")
    pytest.skip(reason)


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


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a PNG of ``page`` as ``SCREENSHOTS/name.png`` and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
