"""Test helper: the terminal client under Textual's own headless driver (``App.run_test`` and its Pilot).

async with driving(interactive) as (app, pilot):
    await choose(app, pilot, "tools", "add")
    await type_into(pilot, "#f-a", "2")
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from mcptape.client.interactive import Interactive
from tests.helpers.browser import SCREENSHOTS

SIZE = (80, 24)  # what the client must fit
WAIT_S = 30.0  # generous: other suites share the machine (no timed assertion)


@contextlib.asynccontextmanager
async def driving(interactive: Interactive) -> AsyncIterator[tuple[Any, Any]]:
    """The app at 80×24, connected and its tools listed; quit (server stopped, recording written) after."""
    from mcptape.tui.app import ClientApp

    app = ClientApp(interactive)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app._pane("tools").items) or "could not" in status(app))
        try:
            yield app, pilot
        finally:
            if not app.closing:
                await app.action_quit()


async def until(pilot: Any, condition: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    """Let the app run until ``condition()`` is true; its value (AssertionError after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout} s: {condition}")
        await pilot.pause(0.05)


def status(app: Any) -> str:
    return str(app.query_one("#status").render())


def text_of(app: Any, selector: str) -> str:
    """The text a widget shows (a Static's content, a RichLog's lines)."""
    widget = app.query_one(selector)
    lines = getattr(widget, "lines", None)
    if lines is not None:
        return "\n".join(line.text for line in lines)
    return str(widget.render())


async def choose(app: Any, pilot: Any, kind: str, name: str) -> None:
    """Open pane ``kind`` and highlight item ``name`` in its list, as ↑/↓ would (the list may reload)."""
    app.action_pane(kind)
    await pilot.pause()
    pane = app._pane(kind)

    def names() -> list[Any]:
        return [item.get("name") or item.get("uri") for item in pane.items]

    def shown() -> bool:
        if name not in names():
            return False
        index = names().index(name)
        listing = app.query_one(f"#list-{kind}")
        if listing.index != index:
            listing.focus()
            listing.index = index
            return False
        forms = app.query(f"#detail-{kind} ArgumentsForm")
        return bool(forms) and forms.first().fields is pane.forms[index] and forms.first().is_mounted

    await until(pilot, shown)
    await pilot.pause()


async def type_into(pilot: Any, selector: str, text: str) -> None:
    """Focus the input (as tab or a click would) and type ``text`` into it, key by key."""
    app = pilot.app
    widget = await until(pilot, lambda: app.screen.query(selector) and app.screen.query_one(selector))
    widget.focus()
    widget.value = ""
    await until(pilot, lambda: app.focused is widget)
    await pilot.press(*text)


def outcome(app: Any, kind: str) -> str:
    return str(app.query_one(f"#detail-{kind} .outcome").render())


def save(app: Any, name: str) -> Path:
    """The screen as SVG, where the browser tests save their screenshots."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.svg"
    app.save_screenshot(str(path))
    return path
