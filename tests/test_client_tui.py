"""The terminal client under Textual's headless driver, at 80×24, driving a real SDK server in process.

The same functions as the web client: a tool called from its form, an elicitation and a
sampling request answered in a dialog, sampling answered by a rule set in the Server
pane, progress and cancel, logs and traffic; the session recorded (mode client).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mcptape.client.interactive import Interactive
from mcptape.client.session import Target
from mcptape.proxy.link import Link
from tests.helpers.inprocess import SdkServerLink
from tests.helpers.tui import SIZE, choose, driving, outcome, save, status, text_of, type_into, until
from tests.servers.asks_person import build

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _interactive(db: Path) -> Interactive:
    async def opener(target: Target) -> Link:
        return SdkServerLink(build(), "asks-person")

    return Interactive(Target("asks-person (in process)", name="person"), lambda n, d: None, db=str(db),
                       protocol_version="2025-11-25", upstream_opener=opener)  # fmt: skip


async def test_a_tool_from_its_form_with_the_keys_on_screen(db_path: Path) -> None:
    async with driving(_interactive(db_path)) as (app, pilot):
        assert app.size == SIZE
        assert "connected" in status(app) and "2025-11-25" in status(app)
        footer = " ".join(b.binding.description for b in app.active_bindings.values() if b.binding.show)
        for key in ("Run", "Cancel", "JSON", "More", "Quit", "F1-F7 panes"):
            assert key in footer
        await choose(app, pilot, "tools", "add")
        await type_into(pilot, "#f-a", "2")
        await type_into(pilot, "#f-b", "3")
        await pilot.press("ctrl+r")
        shown = await until(
            pilot, lambda: "structuredContent" in outcome(app, "tools") and outcome(app, "tools")
        )
        assert '"sum": 5' in shown and "outputSchema: structuredContent matches outputSchema" in shown
        save(app, "tui-tool")
        # The same arguments as JSON (ctrl+j), edited, sent again.
        await pilot.press("ctrl+j")
        area = app.query_one("#detail-tools TextArea.raw")
        assert '"a": 2' in area.text
        area.text = '{"a": 40, "b": 2}'
        await pilot.press("ctrl+r")
        await until(pilot, lambda: '"sum": 42' in outcome(app, "tools"))
        # A required field left empty is said, and nothing is sent.
        await pilot.press("ctrl+j")
        await type_into(pilot, "#f-a", "")
        sent = text_of(app, "#traffic").count("tools/call")
        await pilot.press("ctrl+r")
        await pilot.pause(0.2)
        assert text_of(app, "#traffic").count("tools/call") == sent
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("select mode, name from sessions").fetchall() == [("client", "person")]


async def test_elicitation_and_sampling_in_a_dialog_and_sampling_by_a_rule(db_path: Path) -> None:
    from mcptape.tui.dialogs import QuestionScreen

    async with driving(_interactive(db_path)) as (app, pilot):
        await choose(app, pilot, "tools", "ask")
        await type_into(pilot, "#f-question", "Who?")
        await pilot.press("ctrl+r")
        dialog = await until(pilot, lambda: isinstance(app.screen, QuestionScreen) and app.screen)
        assert dialog.question["method"] == "elicitation/create"
        save(app, "tui-elicitation")
        await pilot.press("tab")  # nothing typed yet: accepting says what is missing
        await pilot.click("#accept")
        assert "required: name" in str(dialog.query_one("#problem").render())
        await type_into(pilot, "#f-name", "Ada")
        await type_into(pilot, "#f-age", "36")
        await pilot.click("#accept")
        await until(pilot, lambda: not isinstance(app.screen, QuestionScreen))
        await until(pilot, lambda: 'accept: {"age": 36, "name": "Ada"}' in outcome(app, "tools"))

        await choose(app, pilot, "tools", "sample")
        await type_into(pilot, "#f-prompt", "hello?")
        await pilot.press("ctrl+r")
        dialog = await until(pilot, lambda: isinstance(app.screen, QuestionScreen) and app.screen)
        dialog.query_one(
            "#answer"
        ).text = (
            '{"role": "assistant", "content": {"type": "text", "text": "typed by a person"}, "model": "hand"}'
        )
        await pilot.click("#send")
        await until(pilot, lambda: "model said: typed by a person" in outcome(app, "tools"))

        app.action_pane("server")
        await pilot.pause()
        app.query_one("#rule-sampling").value = "auto"
        await pilot.click("#apply")
        await choose(app, pilot, "tools", "add")  # away and back: a fresh form
        await choose(app, pilot, "tools", "sample")
        await type_into(pilot, "#f-prompt", "again")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "automatic sampling response" in outcome(app, "tools"))
        assert not isinstance(app.screen, QuestionScreen)
        assert [a["by"] for a in app.answers if a["method"] != "roots/list"] == ["person", "person", "rule"]


async def test_progress_then_cancel_and_the_traffic_pane(db_path: Path) -> None:
    from textual.widgets import ProgressBar

    async with driving(_interactive(db_path)) as (app, pilot):
        await choose(app, pilot, "tools", "slow")
        await type_into(pilot, "#f-steps", "4")
        await pilot.press("ctrl+r")
        bar = app.query_one("#detail-tools ProgressBar", ProgressBar)
        await until(pilot, lambda: outcome(app, "tools").startswith("ok"))
        await until(pilot, lambda: bar.total == 4 and bar.progress == 4)
        await type_into(pilot, "#f-steps", "400")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: bar.total == 400 and bar.progress >= 1)
        save(app, "tui-progress")
        await pilot.press("escape")
        await until(pilot, lambda: outcome(app, "tools").startswith("cancelled"))
        app.action_pane("traffic")
        await pilot.pause()
        traffic = text_of(app, "#traffic")
        assert "notifications/cancelled" in traffic and "→" in traffic and "←" in traffic
        save(app, "tui-traffic")
    with sqlite3.connect(db_path) as conn:
        methods = [row[0] for row in conn.execute("select method from frames where kind = 'notification'")]
    assert "notifications/cancelled" in methods and "notifications/progress" in methods
