"""The web client in a real browser (Debian's Chromium, headless) driving the reference server-everything.

One person's session, step by step as a person would take it, in one page: call ``get-sum``
from the generated form, answer an elicitation in the page, answer sampling by hand and
then by a canned rule, watch a long operation's progress bar reach its end, cancel
another; then the recording of that session in the viewer. Screenshots of each step go to
tests/artifacts/screenshots/client-*.png (kept by CI).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import browser, screenshot  # noqa: F401 (a fixture)
from tests.helpers.paths import everything_server_cmd, require_everything
from tests.helpers.viewer_proc import ViewerProcess

pytestmark = pytest.mark.slow
EVERYTHING = everything_server_cmd()
# What waits for the server: generous, as other suites share these two cores (no timed assertion).
WAIT = 30_000


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ViewerProcess]:
    require_everything()
    where = tmp_path_factory.mktemp("client")
    config = where / "servers.json"
    config.write_text(
        json.dumps({"mcpServers": {"everything": {"command": EVERYTHING[0], "args": EVERYTHING[1:]}}})
    )
    with ViewerProcess(where / "rec.db", "--config", str(config)) as process:
        process.db = where / "rec.db"  # type: ignore[attr-defined]
        yield process


@pytest.fixture(scope="module")
def page(browser: Any, viewer: ViewerProcess) -> Iterator[Any]:  # noqa: F811
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    # The stable address of a registry entry: it logs in (the token in the fragment), connects
    # and lists the tools.
    opened.goto(f"{viewer.base}/client?server=everything#token={viewer.token}")
    opened.wait_for_selector("[data-tool=get-sum]", timeout=30_000)
    yield opened
    context.close()
    assert errors == [], f"the page raised: {errors}"


def _tool(page: Any, name: str) -> None:
    page.click("[data-tab=tools]")
    page.click(f"[data-tool='{name}']")
    expect(page.locator("[data-testid=tool-form]")).to_have_attribute("data-name", name, timeout=WAIT)


def _last_result(page: Any) -> Any:
    return page.locator("[data-testid=tool-output] [data-testid=result]").last


def test_the_address_of_an_entry_connects_and_lists_its_tools(page: Any, viewer: ViewerProcess) -> None:
    assert viewer.token not in page.url
    assert "connected" in page.inner_text("[data-testid=state]")
    info = page.inner_text("[data-testid=server-info]")
    assert "mcp-servers/everything" in info and "tools" in info
    assert "Everything Server" in page.inner_text("[data-testid=instructions]")
    # The page declared sampling and elicitation: the server offers the tools that need them.
    for name in ("trigger-sampling-request", "trigger-elicitation-request", "trigger-long-running-operation"):
        expect(page.locator(f"[data-tool='{name}']")).to_have_count(1, timeout=WAIT)


def test_get_sum_from_the_generated_form_is_5(page: Any) -> None:
    _tool(page, "get-sum")
    form = page.locator("[data-testid=tool-form]")
    assert "First number" in form.inner_text()  # the schema's description
    page.fill("[data-field=a]", "2")
    page.fill("[data-field=b]", "3")
    page.click("[data-testid=call]")
    result = _last_result(page)
    expect(result).to_have_attribute("data-status", "ok", timeout=WAIT)
    assert "The sum of 2 and 3 is 5." in result.inner_text()
    screenshot(page, "client-get-sum")
    # The same arguments as raw JSON: the form's values carried over, edited, sent.
    page.click("[data-testid=raw-toggle]")
    assert json.loads(page.input_value("[data-testid=raw-json]")) == {"a": 2, "b": 3}
    page.fill("[data-testid=raw-json]", '{"a": 40, "b": 2}')
    page.click("[data-testid=call]")
    expect(_last_result(page)).to_contain_text("The sum of 40 and 2 is 42.", timeout=WAIT)


def test_an_elicitation_is_answered_in_the_page(page: Any) -> None:
    _tool(page, "trigger-elicitation-request")
    page.click("[data-testid=call]")
    question = page.locator("[data-testid=question][data-method='elicitation/create']")
    expect(question).to_be_visible(timeout=WAIT)
    # The form comes from requestedSchema: required name, defaults filled, enums as choices.
    assert (
        page.input_value("[data-testid=question] [data-field=firstLine]") == "It was a dark and stormy night."
    )
    question.locator("[data-field=name]").fill("Ada Lovelace")
    question.locator("[data-field=check]").select_option("true")
    screenshot(page, "client-elicitation")
    question.locator("[data-testid=accept]").click()
    expect(question).to_have_count(0, timeout=WAIT)
    result = _last_result(page)
    expect(result).to_contain_text("User provided the requested information", timeout=WAIT)
    assert "Name: Ada Lovelace" in result.inner_text() and "Agreed to terms: true" in result.inner_text()


def test_sampling_answered_by_hand_then_by_a_canned_rule(page: Any) -> None:
    _tool(page, "trigger-sampling-request")
    page.fill("[data-field=prompt]", "say hello")
    page.click("[data-testid=call]")
    question = page.locator("[data-testid=question][data-method='sampling/createMessage']")
    expect(question).to_be_visible(timeout=WAIT)
    assert "say hello" in question.inner_text()  # the server's messages, shown to the person
    answer = {
        "role": "assistant",
        "content": {"type": "text", "text": "hello from a person"},
        "model": "by-hand",
    }
    question.locator("[data-testid=sampling-answer]").fill(json.dumps(answer))
    screenshot(page, "client-sampling")
    question.locator("[data-testid=send-answer]").click()
    expect(_last_result(page)).to_contain_text("hello from a person", timeout=WAIT)

    page.click("[data-tab=answers]")
    page.select_option("[data-testid=rule-sampling]", "auto")
    page.click("[data-testid=apply-rules]")
    expect(page.locator("[data-testid=rules-applied]")).to_be_visible(timeout=WAIT)
    _tool(page, "trigger-sampling-request")
    page.fill("[data-field=prompt]", "say hello again")
    page.click("[data-testid=call]")
    expect(_last_result(page)).to_contain_text("mcptape: automatic sampling response", timeout=WAIT)
    expect(page.locator("[data-testid=question]")).to_have_count(0, timeout=WAIT)  # nobody was asked
    page.click("[data-tab=answers]")
    by = [row.get_attribute("data-by") for row in page.locator("[data-testid=answered] tr").all()]
    assert by.count("person") >= 2 and "rule" in by  # elicitation and sampling by hand, sampling by rule


def test_a_long_operation_shows_its_progress_to_the_end(page: Any) -> None:
    _tool(page, "trigger-long-running-operation")
    page.fill("[data-field=duration]", "2")
    page.fill("[data-field=steps]", "4")
    page.click("[data-testid=call]")
    line = page.locator("[data-testid=tool-output] .progress").last
    expect(line).to_have_attribute("data-progress", re.compile(r"^[1-4]$"), timeout=WAIT)
    screenshot(page, "client-progress")
    expect(line).to_have_attribute("data-status", "done", timeout=WAIT)
    expect(line).to_have_attribute("data-progress", "4", timeout=WAIT)
    bar = line.locator("progress")
    assert bar.get_attribute("max") == "4" and bar.evaluate("b => b.value") == 4
    assert line.get_attribute("data-total") == "4"
    expect(_last_result(page)).to_contain_text("Long running operation completed", timeout=WAIT)


def test_a_running_request_is_cancelled(page: Any) -> None:
    _tool(page, "trigger-long-running-operation")
    page.fill("[data-field=duration]", "30")
    page.fill("[data-field=steps]", "30")
    page.click("[data-testid=call]")
    line = page.locator("[data-testid=tool-output] .progress").last
    expect(line).to_have_attribute("data-progress", re.compile(r"^\d+$"), timeout=WAIT)
    line.locator("[data-testid=cancel]").click()
    expect(line).to_have_attribute("data-status", "cancelled", timeout=WAIT)
    expect(_last_result(page)).to_have_attribute("data-status", "cancelled", timeout=WAIT)


def test_results_are_shown_by_content_type(page: Any) -> None:
    _tool(page, "get-tiny-image")
    page.click("[data-testid=call]")
    image = _last_result(page).locator("[data-testid=image]")
    expect(image).to_be_visible(timeout=WAIT)
    assert image.evaluate("img => img.naturalWidth") > 0  # a real PNG, decoded by the browser
    _tool(page, "get-resource-links")
    page.fill("[data-field=count]", "2")
    page.click("[data-testid=call]")
    expect(_last_result(page).locator("[data-testid=resource-link]")).to_have_count(2, timeout=WAIT)
    _tool(page, "get-resource-reference")
    page.click("[data-testid=call]")
    expect(_last_result(page).locator("[data-testid=embedded]")).to_have_count(1, timeout=WAIT)
    _tool(page, "get-structured-content")
    page.select_option("[data-field=location]", label="Chicago")
    page.click("[data-testid=call]")
    check = _last_result(page).locator("[data-testid=output-check]")
    expect(check).to_contain_text("structuredContent matches outputSchema", timeout=WAIT)
    expect(_last_result(page).locator("[data-testid=structured]")).to_contain_text("temperature")
    screenshot(page, "client-structured")


def test_a_subscription_shows_updates_live(page: Any) -> None:
    page.click("[data-tab=resources]")
    first = page.locator("[data-testid=resources-list] .item").first
    expect(first).to_be_visible(timeout=WAIT)
    first.click()
    page.click("[data-testid=subscribe]")
    expect(page.locator("[data-testid=subscribe]")).to_have_text("Unsubscribe", timeout=WAIT)
    _tool(page, "toggle-subscriber-updates")
    page.click("[data-testid=call]")
    expect(page.locator("[data-testid=resource-updated]").first).to_be_visible(timeout=WAIT)
    page.click("[data-testid=call]")  # the updates off again
    page.click("[data-tab=logs]")
    expect(page.locator("[data-testid=logs]")).to_contain_text(
        "Received Subscribe Resource request", timeout=WAIT
    )
    page.select_option("[data-testid=log-level]", "debug")
    expect(page.locator("[data-testid=pane] [data-testid=result]").last).to_have_attribute(
        "data-status", "ok", timeout=WAIT
    )


def test_a_url_elicitation_is_a_link_to_open(page: Any) -> None:
    _tool(page, "trigger-url-elicitation")
    page.fill("[data-field=url]", "https://auth.example/consent?state=1")
    page.click("[data-testid=call]")
    question = page.locator("[data-testid=question][data-method='elicitation/create']")
    expect(question).to_be_visible(timeout=WAIT)
    link = question.locator("[data-testid=elicitation-url]")
    assert link.get_attribute("href") == "https://auth.example/consent?state=1"
    assert link.get_attribute("rel") == "noopener noreferrer"
    question.locator("[data-testid=decline]").click()
    expect(question).to_have_count(0, timeout=WAIT)
    expect(_last_result(page)).to_contain_text("decline", timeout=WAIT)
    # A server handing the page a script as the address gets text, not a link.
    page.fill("[data-field=url]", "javascript:document.title='owned'")
    page.click("[data-testid=call]")
    expect(question.locator("[data-testid=elicitation-url-refused]")).to_be_visible(timeout=WAIT)
    assert question.locator("a").count() == 0
    question.locator("[data-testid=cancel-question]").click()
    expect(_last_result(page)).to_contain_text("cancel", timeout=WAIT)
    assert page.title() != "owned"


def test_the_recorded_session_shows_each_exchange_in_the_viewer(page: Any, viewer: ViewerProcess) -> None:
    page.click("[data-tab=traffic]")
    assert "tools/call" in page.inner_text("[data-testid=traffic]")
    screenshot(page, "client-traffic")
    page.click("[data-testid=disconnect]")
    link = page.locator("[data-testid=recorded-link]")
    expect(link).to_be_visible(timeout=WAIT)
    link.click()
    page.wait_for_selector("[data-testid=timeline]")
    latency = page.inner_text("[data-testid=latency]")
    for method in ("tools/call", "elicitation/create", "sampling/createMessage"):
        assert method in latency
    screenshot(page, "client-recorded-session")
    db = sqlite3.connect(viewer.db)  # type: ignore[attr-defined]
    try:
        mode, name = db.execute("select mode, name from sessions order by started_at desc limit 1").fetchone()
        methods = [
            row[0]
            for row in db.execute("select method from frames where kind in ('request', 'notification')")
        ]
        answers = [row[0] for row in db.execute("select answered_by from server_requests")]
    finally:
        db.close()
    assert (mode, name) == ("client", "everything")
    # Sampling by hand and by rule; elicitation in a form and as a URL (twice).
    assert methods.count("sampling/createMessage") == 2 and methods.count("elicitation/create") == 3
    assert "notifications/progress" in methods and "notifications/cancelled" in methods
    assert answers and set(answers) <= {"client"}  # the in-process client answered, in the person's place


def test_a_recorded_request_is_edited_resent_and_compared(page: Any, viewer: ViewerProcess) -> None:
    db = sqlite3.connect(viewer.db)  # type: ignore[attr-defined]
    try:
        session_id, seq = db.execute(
            "select session_id, seq from frames where kind = 'request' and method = 'tools/call' "
            "and text like '%get-sum%' order by seq limit 1"
        ).fetchone()
    finally:
        db.close()
    page.goto(f"{viewer.base}/#/s/{session_id}/f/{seq}")
    page.wait_for_selector("[data-testid=frame-detail]")
    page.click("[data-testid=resend]")
    page.wait_for_selector("[data-testid=resend-send]", timeout=WAIT)
    resend = page.locator("[data-testid=resend]")
    assert "get-sum" in resend.inner_text()
    assert page.input_value("[data-testid=resend] [data-field=a]") == "2"  # the recorded arguments
    page.click("[data-testid=resend-send]")
    expect(page.locator("[data-testid=compare-status]")).to_have_text("match", timeout=WAIT)
    page.fill("[data-testid=resend] [data-field=b]", "4")
    page.click("[data-testid=resend-send]")
    expect(page.locator("[data-testid=compare-status]")).to_have_text("differs", timeout=WAIT)
    differences = page.inner_text("[data-testid=differences]")
    assert "/result/content/0/text" in differences and "The sum of 2 and 4 is 6." in differences
    screenshot(page, "client-resend")
