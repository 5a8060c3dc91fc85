"""The viewer in a real browser (Debian's Chromium, headless): click through every page and check it.

Each page is saved as a screenshot under tests/artifacts/screenshots/ (kept by CI).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import browser, screenshot, viewer_page  # noqa: F401 (a fixture)
from tests.helpers.viewer_data import Sample, build_sample
from tests.helpers.viewer_proc import ViewerProcess

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Sample]:
    db = tmp_path_factory.mktemp("viewer") / "rec.db"
    return db, build_sample(db)


@pytest.fixture(scope="module")
def viewer(sample_db: tuple[Path, Sample]) -> Iterator[ViewerProcess]:
    with ViewerProcess(sample_db[0]) as process:
        yield process


@pytest.fixture
def page(browser: Any, viewer: ViewerProcess) -> Iterator[Any]:  # noqa: F811
    with viewer_page(browser, viewer.url) as opened:
        yield opened


def test_the_sessions_list_logs_in_from_the_url_and_searches(
    page: Any, viewer: ViewerProcess, sample_db: tuple[Path, Sample]
) -> None:
    _, sample = sample_db
    assert viewer.token not in page.url  # the token left the address bar at once
    rows = page.locator("[data-testid=sessions] tbody tr")
    assert rows.count() == 3
    first = page.locator(f"tr[data-session='{sample.original}']")
    assert "inspector 0.9" in first.inner_text() and "weather-server 2.1" in first.inner_text()
    assert "2025-06-18" in first.inner_text()
    screenshot(page, "sessions")
    page.fill("[data-testid=search]", "booking")
    expect(rows).to_have_count(1)
    assert "modern" in rows.first.inner_text()


def test_a_timeline_a_brush_and_a_frame(page: Any, sample_db: tuple[Path, Sample]) -> None:
    _, sample = sample_db
    page.click(f"tr[data-session='{sample.original}']")
    page.wait_for_selector("[data-testid=timeline]")
    assert page.inner_text("[data-testid=frame-count]") == "13 of 13 frames"
    latency = page.inner_text("[data-testid=latency]")
    assert "tools/call" in latency and "sampling/createMessage" in latency
    assert "weather" in page.inner_text("[data-testid=tool-bytes]")
    events = page.inner_text("[data-testid=events]")
    assert "fetching the forecast" in events
    assert '<img src=x onerror="document.title' in events  # shown as text, never markup
    assert page.locator("img").count() == 0 and page.title() != "owned"
    screenshot(page, "session")
    canvas = page.locator("[data-testid=timeline]").bounding_box()
    y = canvas["y"] + 60
    page.mouse.move(canvas["x"] + canvas["width"] * 0.7, y)
    page.mouse.down()
    page.mouse.move(canvas["x"] + canvas["width"] * 0.99, y, steps=5)
    page.mouse.up()
    brushed = page.inner_text("[data-testid=frame-count]")
    assert re.fullmatch(r"\d+ of 13 frames", brushed) and not brushed.startswith("13 ")
    assert "selected" in page.inner_text("[data-testid=brush]")
    page.click("[data-testid=brush] button")
    assert page.inner_text("[data-testid=frame-count]") == "13 of 13 frames"
    page.click(".vrow[data-seq='6']")
    detail = page.locator("[data-testid=frame-detail]")
    detail.wait_for()
    assert '"Lisbon"' in page.inner_text("[data-testid=json-tree]")
    assert page.inner_text("[data-testid=call-command]") == (
        'mcptape call -m tools/call --tool-name weather --tool-args \'{"city":"Lisbon"}\' -- weather-server --port 0'
    )
    assert page.inner_text("[data-testid=pair]") == "answered by #10"
    screenshot(page, "frame")
    page.click("[data-testid=pair]")
    page.wait_for_selector("[data-testid=http-meta]")
    assert "abc123" in page.inner_text("[data-testid=http-meta]")
    page.click(".vrow[data-seq='13']")
    page.wait_for_selector("[data-testid=hex]")
    assert "ff fe" in page.inner_text("[data-testid=hex]")


def test_rounds_and_task_polls_are_grouped(page: Any, sample_db: tuple[Path, Sample]) -> None:
    _, sample = sample_db
    page.click(f"tr[data-session='{sample.modern}']")
    page.wait_for_selector("[data-testid=groups]")
    groups = page.locator("[data-testid=groups] tbody tr")
    assert groups.count() == 2
    assert "tools/call book" in groups.nth(0).inner_text() and "input_required" in groups.nth(0).inner_text()
    assert "task polls" in groups.nth(1).inner_text() and "#13" in groups.nth(1).inner_text()
    facts = page.inner_text("[data-testid=session-facts]")
    assert "2026-07-28" in facts and "booking" in facts
    screenshot(page, "session-grouped")


def test_compare_a_replay_with_its_original(page: Any, sample_db: tuple[Path, Sample]) -> None:
    _, sample = sample_db
    page.click(f"tr[data-session='{sample.replay}']")
    page.click("[data-testid=compare-original]")
    page.wait_for_selector("[data-testid=compare-summary]")
    assert "3/4 exchanges match" in page.inner_text("[data-testid=compare-summary]")
    differs = page.locator("tr[data-status=differs]")
    assert differs.count() == 1
    assert "/result/structuredContent/humidity" in differs.inner_text() and "45" in differs.inner_text()
    screenshot(page, "compare")


def test_sql_page_lists_views_runs_a_query_and_downloads_csv(page: Any) -> None:
    page.click("[data-nav=sql]")
    page.wait_for_selector("[data-relation=tool_calls]")
    assert (
        "latency_ms" in page.locator("details", has=page.locator("[data-relation=tool_calls]")).inner_text()
    )
    page.fill("[data-testid=query]", "select tool, count(*) as calls from tool_calls group by 1 order by 1")
    page.click("[data-testid=run]")
    page.wait_for_selector("[data-testid=sql-result]")
    assert page.inner_text("[data-testid=sql-result] tbody").split("\n")[0].split("\t") == [
        "book",
        "1",
    ]  # the round that asked for input is not a call of its own
    screenshot(page, "sql")
    with page.expect_download() as download:
        page.click("[data-testid=csv]")
    path = download.value.path()
    assert Path(path).read_text().splitlines()[0] == "tool,calls"
    page.fill("[data-testid=query]", "drop table frames")
    page.click("[data-testid=run]")
    assert "only reads" in page.locator("[data-testid=error]").inner_text()


def test_a_recording_session_updates_live(page: Any, sample_db: tuple[Path, Sample]) -> None:
    from mcptape.store import open_store
    from mcptape.wire.frame import Frame

    store = open_store(str(sample_db[0]))
    writer = store.writer()
    session = writer.create_session(mode="record", name="live-now")
    writer.add_frame(session, 1, Frame(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', "c2s"))
    writer.flush()
    try:
        page.goto(page.url.split("#")[0] + f"#/s/{session}")
        page.wait_for_selector("[data-testid=timeline]")
        assert page.inner_text("[data-testid=frame-count]") == "1 of 1 frames"
        page.wait_for_selector("#live.on")
        writer.add_frame(session, 2, Frame(b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}', "s2c"))
        writer.flush()
        expect(page.locator("[data-testid=frame-count]")).to_have_text("2 of 2 frames")
        screenshot(page, "session-live")
    finally:
        writer.close()
        store.close()


def test_the_token_is_printed_once_and_ctrl_c_stops_the_viewer(sample_db: tuple[Path, Sample]) -> None:
    viewer = ViewerProcess(sample_db[0])
    import urllib.request

    request = urllib.request.Request(viewer.base + "/api/sessions", headers={"X-Mcptape-Token": viewer.token})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    assert viewer.stop() == 0
    assert viewer.token not in viewer.stderr_text()
    assert "Ctrl-C" in viewer.stderr_text()
