"""The terminal client driving the reference server-everything, through Textual's headless driver.

What the browser test does in the web client, done here with keys at 80×24: ``get-sum`` from
its form, an elicitation answered in the dialog, sampling answered once by hand and once by
a rule, a long operation's progress bar to its end, another cancelled; then the recording.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mcptape.client.interactive import Interactive
from mcptape.client.session import Target
from tests.helpers.paths import everything_server_cmd, require_everything
from tests.helpers.tui import choose, driving, outcome, save, type_into, until

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
EVERYTHING = everything_server_cmd()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_person_drives_server_everything_from_the_terminal(db_path: Path) -> None:
    from textual.widgets import ProgressBar

    from mcptape.tui.dialogs import QuestionScreen

    require_everything()
    interactive = Interactive(
        Target("everything", argv=EVERYTHING, name="everything"), lambda n, d: None, db=str(db_path)
    )
    async with driving(interactive) as (app, pilot):
        await choose(app, pilot, "tools", "get-sum")
        await type_into(pilot, "#f-a", "2")
        await type_into(pilot, "#f-b", "3")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "The sum of 2 and 3 is 5." in outcome(app, "tools"))
        names = [tool["name"] for tool in app._pane("tools").items]
        assert (
            len(names) == len(set(names)) and "trigger-sampling-request" in names
        )  # reloads never interleave
        save(app, "tui-everything-get-sum")

        await choose(app, pilot, "tools", "trigger-elicitation-request")
        await pilot.press("ctrl+r")
        dialog = await until(pilot, lambda: isinstance(app.screen, QuestionScreen) and app.screen)
        assert dialog.question["method"] == "elicitation/create"
        await type_into(pilot, "#f-name", "Ada Lovelace")
        save(app, "tui-everything-elicitation")
        await pilot.click("#accept")
        await until(pilot, lambda: "Name: Ada Lovelace" in outcome(app, "tools"))

        await choose(app, pilot, "tools", "trigger-sampling-request")
        await type_into(pilot, "#f-prompt", "say hello")
        await pilot.press("ctrl+r")
        dialog = await until(pilot, lambda: isinstance(app.screen, QuestionScreen) and app.screen)
        assert dialog.question["method"] == "sampling/createMessage"
        dialog.query_one(
            "#answer"
        ).text = '{"role": "assistant", "content": {"type": "text", "text": "hello from the terminal"}, "model": "hand"}'
        await pilot.click("#send")
        await until(pilot, lambda: "hello from the terminal" in outcome(app, "tools"))

        app.action_pane("server")
        await pilot.pause()
        app.query_one("#rule-sampling").value = "auto"
        await pilot.click("#apply")
        await choose(app, pilot, "tools", "get-sum")
        await choose(app, pilot, "tools", "trigger-sampling-request")
        await type_into(pilot, "#f-prompt", "again")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "automatic sampling response" in outcome(app, "tools"))
        assert not isinstance(app.screen, QuestionScreen)

        await choose(app, pilot, "tools", "trigger-long-running-operation")
        await type_into(pilot, "#f-duration", "2")
        await type_into(pilot, "#f-steps", "4")
        await pilot.press("ctrl+r")
        bar = app.query_one("#detail-tools ProgressBar", ProgressBar)
        await until(pilot, lambda: "Long running operation completed" in outcome(app, "tools"))
        await until(pilot, lambda: bar.total == 4 and bar.progress == 4)
        save(app, "tui-everything-progress")

        await type_into(pilot, "#f-duration", "30")
        await type_into(pilot, "#f-steps", "30")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: bar.total == 30 and bar.progress >= 1)
        await pilot.press("escape")
        await until(pilot, lambda: outcome(app, "tools").startswith("cancelled"))
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("select mode, name from sessions").fetchall() == [("client", "everything")]
        methods = [
            row[0]
            for row in conn.execute("select method from frames where kind in ('request', 'notification')")
        ]
        answers = conn.execute("select method, answered_by from server_requests").fetchall()
    assert methods.count("sampling/createMessage") == 2 and methods.count("elicitation/create") == 1
    assert "notifications/progress" in methods and "notifications/cancelled" in methods
    assert answers
