"""A conversation's page and a long session's page in a real browser (Debian's Chromium, headless).

A conversation recorded by two gateway replicas is one timeline with a lane per
replica's session; each frame opens from the session that recorded it. A 2026-07-28
pool session links the conversations it serves. A long session paints from its first
frames and reads the rest in chunks. Screenshots go to tests/artifacts/screenshots/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from playwright.sync_api import expect

from mcptape.store import open_store
from mcptape.wire.frame import Frame
from tests.helpers.browser import browser, screenshot, viewer_page  # noqa: F401 (a fixture)
from tests.helpers.conversations import SHARED, Conversations, build_conversations
from tests.helpers.viewer_proc import ViewerProcess

pytestmark = pytest.mark.slow
LONG = 5000  # frames: the first 2,000 paint the page, the rest come in one more chunk


def write_long_session(db: Path) -> str:
    store = open_store(str(db))
    writer = store.writer()
    session = writer.create_session(mode="record", name="long", started_at=1_800_000_100.0)
    for n in range(1, LONG + 1, 2):
        ask = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "echo"}}
        writer.add_frame(session, n, Frame(orjson.dumps(ask), "c2s", None, 1_800_000_100.0 + n / 1000))
        answer = {"jsonrpc": "2.0", "id": n, "result": {"content": []}}
        writer.add_frame(
            session, n + 1, Frame(orjson.dumps(answer), "s2c", None, 1_800_000_100.0005 + n / 1000)
        )
    writer.update_session(session, status="closed", ended_at=1_800_000_106.0)
    writer.close()
    store.close()
    return session


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Conversations]:
    db = tmp_path_factory.mktemp("conversations") / "rec.db"
    found = build_conversations(db)
    write_long_session(db)
    return db, found


@pytest.fixture(scope="module")
def viewer(recorded: tuple[Path, Conversations]) -> Iterator[ViewerProcess]:
    with ViewerProcess(recorded[0]) as process:
        yield process


@pytest.fixture
def page(browser: Any, viewer: ViewerProcess) -> Iterator[Any]:  # noqa: F811
    with viewer_page(browser, viewer.url) as opened:
        yield opened


def test_a_conversation_is_one_timeline_with_a_lane_per_replica(
    page: Any, recorded: tuple[Path, Conversations]
) -> None:
    _, c = recorded
    page.goto(page.url.split("#")[0] + f"#/s/{SHARED}")
    sessions = page.locator("[data-testid=conversation-sessions] tbody tr")
    expect(sessions).to_have_count(2)
    assert [sessions.nth(i).locator("td").nth(2).inner_text() for i in range(2)] == ["a", "b"]
    assert page.inner_text("[data-testid=frame-count]") == "8 of 8 frames"
    # Operations, one lane per session, notifications, events: five lanes of 30 px and the axis.
    assert page.locator("[data-testid=timeline]").bounding_box()["height"] == 8 + 5 * 30 + 22
    tags = page.locator("[data-testid=frames] .vrow .tag").all_inner_texts()
    assert tags == [c.shared_a[:6]] * 2 + [c.shared_b[:6]] * 2 + [c.shared_a[:6]] * 2 + [c.shared_b[:6]] * 2
    page.click(".vrow[data-seq='8']")  # replica b's error reply, its seq 4 there
    page.wait_for_selector("[data-testid=frame-detail]")
    assert page.inner_text("[data-testid=frame-session]") == f"session {c.shared_b[:12]}"
    assert "path is required" in page.inner_text("[data-testid=json-tree]")
    assert page.inner_text("[data-testid=pair]") == "answers #3"  # its request: seq 3 of replica b
    screenshot(page, "conversation")
    page.click("[data-testid=pair]")
    expect(page.locator(".vrow.sel")).to_have_attribute("data-seq", "7")
    expect(page.locator("[data-testid=json-tree]")).to_contain_text("write_file")  # read once selected


def test_a_pool_session_links_the_trace_it_served_across_replicas(
    page: Any, recorded: tuple[Path, Conversations]
) -> None:
    _, c = recorded
    page.goto(page.url.split("#")[0] + f"#/s/{c.pool_b}")
    links = page.locator("[data-testid=conversations] a")
    expect(links).to_have_count(2)
    assert links.all_inner_texts() == [c.client, c.trace]
    links.nth(0).click()  # client-<session>-cli/2: a "/" in the id, kept in the address
    expect(page.locator("[data-testid=frame-count]")).to_have_text("2 of 2 frames")
    page.go_back()
    links.nth(1).click()
    page.wait_for_selector("[data-testid=conversation-sessions]")
    assert page.inner_text("[data-testid=frame-count]") == "6 of 6 frames"
    groups = page.locator("[data-testid=groups] tbody tr")
    expect(groups).to_have_count(2)
    first = groups.nth(0).inner_text()
    assert "input_required" in first and f"{c.pool_a[:6]}#1 {c.pool_b[:6]}#3" in first
    assert "pool b: booking" in page.inner_text("[data-testid=events]")
    screenshot(page, "conversation-trace")


def test_a_long_session_paints_from_its_first_frames_then_reads_the_rest(page: Any) -> None:
    chunks: list[str] = []
    page.on("request", lambda r: chunks.append(r.url) if "/frames?after=" in r.url else None)
    page.goto(page.url.split("#")[0] + "#/s/long")
    expect(page.locator("[data-testid=frame-count]")).to_have_text(f"{LONG:,} of {LONG:,} frames")
    assert [url.split("/frames")[1] for url in chunks] == ["?after=2000&limit=25000"]
    facts = page.inner_text("[data-testid=session-facts]")
    assert f"frames {LONG}" in facts
    page.locator("[data-testid=frames]").evaluate("box => { box.scrollTop = box.scrollHeight; }")
    page.click(f".vrow[data-seq='{LONG}']")
    page.wait_for_selector("[data-testid=frame-detail]")
    assert page.inner_text("[data-testid=pair]") == f"answers #{LONG - 1}"
    painted, loaded = page.evaluate("[window.__mcptapePainted, window.__mcptapeLoaded]")
    assert painted < loaded
