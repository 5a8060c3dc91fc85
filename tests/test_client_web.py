"""The web client's server in process: its API and event stream, driving a real SDK server on the loop.

The server (tests/servers/asks_person.py) runs in this process (no process is started),
through the same relay, recorder and client core as `mcptape ui` runs them; the database is
a real SQLite file that the viewer's own routes then read.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from mcptape.client.session import Target
from mcptape.config.registry import UpstreamSpec
from mcptape.proxy.link import Link
from mcptape.store import open_store
from mcptape.view.app import Viewer
from mcptape.view.client_api import client_app
from mcptape.view.clients import ClientHub
from tests.helpers.inprocess import SdkServerLink
from tests.servers.ask_name import server as ask_name
from tests.servers.asks_person import build as asks_person

pytestmark = pytest.mark.anyio
TOKEN = "t0ken-for-tests"
AUTH = {"X-Mcptape-Token": TOKEN}
JSON = {**AUTH, "Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Opened:
    """The in-process opener: what the hub asked to start, in order."""

    def __init__(self) -> None:
        self.targets: list[Target] = []

    async def __call__(self, target: Target) -> Link:
        self.targets.append(target)
        return SdkServerLink(ask_name if target.name == "asker" else asks_person(), str(target.name))


@pytest.fixture
def opened() -> Opened:
    return Opened()


def _registry(marker: Path) -> dict[str, UpstreamSpec]:
    # The entry's command would leave a file behind if it ever ran.
    return {
        "person": UpstreamSpec("person", "stdio", command=["touch", str(marker)]),
        "asker": UpstreamSpec("asker", "stdio", command=["touch", str(marker)]),
    }


@pytest.fixture
async def web(db_path: Path, tmp_path: Path, opened: Opened) -> AsyncIterator[tuple[TestClient, ClientHub]]:
    store = open_store(str(db_path), create=True)
    hub = ClientHub(_registry(tmp_path / "started"), db=str(db_path), opener=opened, max_connections=2)
    viewer = Viewer(store, TOKEN)
    server = TestServer(client_app(viewer, hub), host="127.0.0.1")
    async with TestClient(server) as client:
        viewer.bound(server.port)  # type: ignore[arg-type]
        yield client, hub
        await hub.close_all()
    viewer.executor.shutdown(wait=False)
    store.close()


class Events:
    """A page's event stream, read in the background."""

    def __init__(self, client: TestClient, conn: str) -> None:
        self.items: list[tuple[str, Any]] = []
        self._new = asyncio.Event()
        self._task = asyncio.ensure_future(self._read(client, conn))

    async def _read(self, client: TestClient, conn: str) -> None:
        async with client.get("/api/client/events", params={"conn": conn}, headers=AUTH) as response:
            assert response.status == 200
            name = None
            async for line in response.content:
                text = line.decode().rstrip("\n")
                if text.startswith("event: "):
                    name = text[7:]
                elif text.startswith("data: ") and name is not None:
                    self.items.append((name, orjson.loads(text[6:])))
                    self._new.set()

    async def wait(self, name: str, where: Any = lambda data: True) -> Any:
        async with asyncio.timeout(20):
            while True:
                for event, data in self.items:
                    if event == name and where(data):
                        return data
                if self._task.done():
                    self._task.result()  # the stream failed: say why
                    raise AssertionError(f"the event stream ended before a {name!r} event")
                self._new.clear()
                await asyncio.wait(
                    [asyncio.ensure_future(self._new.wait()), self._task], return_when=asyncio.FIRST_COMPLETED
                )

    def named(self, name: str) -> list[Any]:
        return [data for event, data in self.items if event == name]

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def _post(client: TestClient, name: str, body: dict[str, Any], status: int = 200) -> Any:
    response = await client.post(f"/api/client/{name}", data=orjson.dumps(body), headers=JSON)
    answer = await response.json()
    assert response.status == status, answer
    return answer


async def _connect(client: TestClient, **body: Any) -> tuple[str, Events]:
    # 2025-11-25: the SDK server sends its requests mid-call (on 2026-07-28 it asks in results).
    answer = await _post(client, "connect", {"server": "person", "protocolVersion": "2025-11-25", **body})
    assert answer["hello"]["serverInfo"]["name"] == "asks-person"
    return answer["conn"], Events(client, answer["conn"])


async def test_a_page_connects_lists_tools_with_forms_and_calls_one(
    web: tuple[TestClient, ClientHub],
) -> None:
    client, _ = web
    conn, events = await _connect(client)
    listed = await _post(client, "list", {"conn": conn, "kind": "tools"})
    names = [tool["name"] for tool in listed["items"]]
    assert names == ["add", "ask", "sample", "slow"]
    add_form = listed["forms"][0]
    assert [(f["name"], f["kind"], f["required"]) for f in add_form] == [
        ("a", "integer", True),
        ("b", "integer", True),
    ]
    outcome = await _post(client, "run", {"conn": conn, "op": "op1", "method": "tools/call",
                                          "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})  # fmt: skip
    assert outcome["status"] == "ok" and outcome["result"]["structuredContent"] == {"sum": 5}
    assert outcome["outputCheck"]["ok"] is True  # checked against the tool's outputSchema
    await events.wait("traffic", lambda d: d["dir"] == "s2c" and '"sum":5' in d["text"])
    assert await events.wait("state", lambda d: d["state"] == "connected")
    # Not something to send by hand: the session negotiated itself.
    refused = await _post(client, "run", {"conn": conn, "op": "op2", "method": "initialize"}, status=400)
    assert "negotiates" in refused["error"]
    await events.close()


async def test_an_elicitation_waits_for_the_person_and_takes_their_answer(
    web: tuple[TestClient, ClientHub],
) -> None:
    client, _ = web
    conn, events = await _connect(client)
    call = asyncio.ensure_future(_post(client, "run", {"conn": conn, "op": "q", "method": "tools/call",
                                                       "params": {"name": "ask", "arguments": {"question": "Who?"}}}))  # fmt: skip
    question = await events.wait("question")
    assert (
        question["method"] == "elicitation/create"
        and question["mode"] == "form"
        and question["tool"] == "ask"
    )
    assert [(f["name"], f["kind"], f["required"]) for f in question["form"]] == [
        ("name", "string", True),
        ("age", "integer", False),
    ]
    # An answer the form's method does not accept is refused, and the question still waits.
    bad = await _post(
        client, "answer", {"conn": conn, "question": question["id"], "result": {"content": {}}}, status=400
    )
    assert "action" in bad["error"]
    await _post(client, "answer", {"conn": conn, "question": question["id"],
                                   "result": {"action": "accept", "content": {"name": "Ada", "age": 36}}})  # fmt: skip
    outcome = await call
    assert outcome["result"]["content"][0]["text"] == 'accept: {"age": 36, "name": "Ada"}'
    assert (await events.wait("answered"))["by"] in ("person", "rule")
    assert [a["by"] for a in events.named("answered") if a["method"] == "elicitation/create"] == ["person"]
    gone = await _post(client, "answer", {"conn": conn, "question": question["id"], "result": {"action": "decline"}},
                       status=400)  # fmt: skip
    assert "no question" in gone["error"]
    await events.close()


async def test_input_required_rounds_of_2026_07_28_are_answered_in_the_page(
    web: tuple[TestClient, ClientHub],
) -> None:
    client, _ = web
    answer = await _post(client, "connect", {"server": "asker"})
    assert (
        answer["hello"]["protocolVersion"] == "2026-07-28"
        and answer["hello"]["negotiatedWith"] == "server/discover"
    )
    conn = answer["conn"]
    events = Events(client, conn)
    call = asyncio.ensure_future(_post(client, "run", {"conn": conn, "op": "g", "method": "tools/call",
                                                       "params": {"name": "greet", "arguments": {"greeting": "Hi"}}}))  # fmt: skip
    question = await events.wait("question")
    assert question["method"] == "elicitation/create" and [f["name"] for f in question["form"]] == ["name"]
    await _post(client, "answer", {"conn": conn, "question": question["id"],
                                   "result": {"action": "accept", "content": {"name": "Grace"}}})  # fmt: skip
    outcome = await call
    assert outcome["status"] == "ok" and "Hi, Grace!" in str(outcome["result"])
    retry = await events.wait("traffic", lambda d: d["dir"] == "c2s" and "inputResponses" in d["text"])
    assert "requestState" in retry["text"] or "Grace" in retry["text"]
    await events.close()


async def test_sampling_by_a_rule_asks_nobody_and_without_a_person_is_declined(
    web: tuple[TestClient, ClientHub],
) -> None:
    client, _ = web
    conn, events = await _connect(client, sampling="auto")
    params = {"name": "sample", "arguments": {"prompt": "hi"}}
    outcome = await _post(client, "run", {"conn": conn, "op": "s1", "method": "tools/call", "params": params})
    assert outcome["result"]["content"][0]["text"] == "model said: mcptape: automatic sampling response"
    assert events.named("question") == []
    await _post(client, "rules", {"conn": conn, "sampling": None, "ask": False})
    declined = await _post(
        client, "run", {"conn": conn, "op": "s2", "method": "tools/call", "params": params}
    )
    assert declined["status"] in ("error", "tool-error")  # the server gave up on the refusal
    assert [a["by"] for a in events.named("answered") if a["method"] == "sampling/createMessage"] == [
        "rule",
        "default",
    ]
    bad = await _post(client, "rules", {"conn": conn, "sampling": "{not json"}, status=400)
    assert "--handle-sampling" in bad["error"]
    await events.close()


async def test_cancel_stops_waiting_and_tells_the_server(web: tuple[TestClient, ClientHub]) -> None:
    client, _ = web
    conn, events = await _connect(client)
    call = asyncio.ensure_future(_post(client, "run", {"conn": conn, "op": "long", "method": "tools/call",
                                                       "params": {"name": "slow", "arguments": {"steps": 400}}}))  # fmt: skip
    progress = await events.wait("progress", lambda d: d["op"] == "long")
    assert progress["total"] == 400 and progress["progress"] >= 1
    assert (await _post(client, "cancel", {"conn": conn, "op": "long"}))["cancelled"] is True
    outcome = await call
    assert outcome["status"] == "cancelled"
    sent = await events.wait(
        "traffic", lambda d: d["dir"] == "c2s" and "notifications/cancelled" in d["text"]
    )
    assert '"reason":"cancelled by the client"' in sent["text"]
    assert (await _post(client, "cancel", {"conn": conn, "op": "long"}))["cancelled"] is False
    await events.close()


async def test_roots_are_the_persons_list_and_the_server_is_told(web: tuple[TestClient, ClientHub]) -> None:
    client, _ = web
    conn, events = await _connect(client)
    answer = await _post(
        client, "roots", {"conn": conn, "roots": ["/srv/project=project", {"uri": "file:///tmp"}]}
    )
    assert answer["roots"] == [{"uri": "file:///srv/project", "name": "project"}, {"uri": "file:///tmp"}]
    await events.wait(
        "traffic", lambda d: d["dir"] == "c2s" and "notifications/roots/list_changed" in d["text"]
    )
    bad = await _post(client, "roots", {"conn": conn, "roots": ["not a uri"]}, status=400)
    assert "not a URI" in bad["error"]
    await events.close()


async def test_closing_writes_the_recording_that_edit_and_resend_compares_with(
    web: tuple[TestClient, ClientHub],
) -> None:
    client, _ = web
    conn, events = await _connect(client)
    await _post(client, "run", {"conn": conn, "op": "a", "method": "tools/call",
                                "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})  # fmt: skip
    closed = await _post(client, "close", {"conn": conn})
    session_id = closed["sessionId"]
    assert session_id and (await events.wait("closed"))["sessionId"] == session_id
    sessions = await (await client.get("/api/sessions", headers=AUTH)).json()
    mine = next(s for s in sessions["sessions"] if s["id"] == session_id)
    assert mine["mode"] == "client" and mine["name"] == "person"
    timeline = await (await client.get(f"/api/sessions/{session_id}/timeline", headers=AUTH)).json()
    assert "tools/call" in str(timeline)
    seq = await _request_seq(client, session_id)
    recorded = await (await client.get("/api/client/recorded", params={"session": session_id, "seq": str(seq)},
                                       headers=AUTH)).json()  # fmt: skip
    assert recorded["method"] == "tools/call" and recorded["server"] == "person"
    assert recorded["params"] == {"name": "add", "arguments": {"a": 2, "b": 3}}  # progress token left out
    same = await _post(client, "compare", {"session": session_id, "seq": seq, "answer": recorded["recorded"]})
    assert same == {"status": "match", "differences": []}
    # A server that answers 6: its text is the JSON of its structuredContent, as recorded
    # (replay compares such a text once, as that content).
    text = recorded["recorded"]["result"]["content"][0]["text"].replace("5", "6")
    result = recorded["recorded"]["result"]
    changed = {
        "result": {
            **result,
            "content": [{**result["content"][0], "text": text}],
            "structuredContent": {"sum": 6},
        }
    }
    differs = await _post(client, "compare", {"session": session_id, "seq": seq, "answer": changed})
    assert differs["status"] == "differs"
    assert differs["differences"] == [{"pointer": "/result/structuredContent/sum", "recorded": 5, "now": 6}]
    await events.close()


async def _request_seq(client: TestClient, session_id: str) -> int:
    where = f"session_id = '{session_id}' and kind = 'request' and method = 'tools/call'"
    query = f"select seq from frames where {where}"
    rows = await (await client.post("/api/sql", data=orjson.dumps({"query": query}), headers=JSON)).json()
    return int(rows["rows"][0][0])


async def test_an_event_stream_outlives_its_quiet_spells() -> None:
    from mcptape.client.interactive import Interactive
    from mcptape.view.clients import PageClient

    page = PageClient("p", Interactive(Target("nothing"), lambda name, data: None))
    page.push("a", 1)
    stream = page.follow(0, heartbeat=0.01)
    assert await anext(stream) == (1, "a", 1)
    assert await anext(stream) is None  # quiet: a heartbeat, and the stream goes on
    page.push("b", 2)
    seen = [event async for event in _until(stream, "b")]
    assert seen[-1] == (2, "b", 2) and page.listeners == 1
    page.closed = True
    page.push("closed", {})
    assert [event async for event in stream][-1] == (3, "closed", {})
    assert page.listeners == 0


async def _until(stream: Any, name: str) -> AsyncIterator[Any]:
    async for event in stream:
        yield event
        if event is not None and event[1] == name:
            return


# -- what a page may not do ----------------------------------------------------------------------


async def test_a_page_can_never_name_a_command_nor_an_unknown_entry_and_nothing_starts(
    web: tuple[TestClient, ClientHub], opened: Opened, tmp_path: Path
) -> None:
    client, hub = web
    for body in (
        {"command": "touch /tmp/owned"},
        {"server": "person", "command": ["sh", "-c", "touch owned"]},
        {"server": "person", "args": ["x"]},
        {"server": "person", "env": {"LD_PRELOAD": "x"}},
        {"server": "person", "cwd": "/"},
        {"server": "person", "headers": {"Authorization": "x"}},
    ):
        refused = await _post(client, "connect", body, status=400)
        assert "registry" in refused["error"]
    unknown = await _post(client, "connect", {"server": "rm -rf /"}, status=404)
    assert "no registry entry" in unknown["error"] and "person" in unknown["error"]
    assert (await _post(client, "connect", {"server": ["person"]}, status=404))["error"]
    assert (await _post(client, "connect", {}, status=400))["error"]
    no_url = await _post(client, "connect", {"url": "http://127.0.0.1:9/mcp"}, status=403)
    assert "--allow-url" in no_url["error"]
    assert opened.targets == [] and hub.connections == {}
    assert not (tmp_path / "started").exists()


async def test_client_routes_need_the_token_a_json_body_and_this_origin(
    web: tuple[TestClient, ClientHub],
) -> None:
    client, hub = web
    assert (await client.get("/api/client")).status == 401
    body = orjson.dumps({"server": "person"})
    assert (
        await client.post("/api/client/connect", data=body, headers={"Content-Type": "application/json"})
    ).status == 401
    # A page of another site: refused before the token is even looked at.
    foreign = await client.post(
        "/api/client/connect", data=body, headers={**JSON, "Origin": "http://evil.example"}
    )
    assert foreign.status == 403
    # A form or text post (what another site can send without a preflight) is not read.
    form = await client.post("/api/client/connect", data=body, headers={**AUTH, "Content-Type": "text/plain"})
    assert form.status == 415
    assert (await client.get("/api/client/events", params={"conn": "guess"}, headers=AUTH)).status == 404
    assert (await client.put("/api/client/connect", data=body, headers=JSON)).status == 405
    assert hub.connections == {}
    page = await client.get("/client?server=person")
    assert page.status == 200 and "/static/client.js" in await page.text()  # the page, without data
    assert "media-src 'self' data:" in page.headers["Content-Security-Policy"]
    about = await (await client.get("/api/client", headers=AUTH)).json()
    marker = hub.registry["person"].command[1]  # type: ignore[index]
    assert about["servers"][0] == {"name": "person", "transport": "stdio", "description": f"touch {marker}"}


async def test_at_most_so_many_sessions_at_once(web: tuple[TestClient, ClientHub], opened: Opened) -> None:
    client, _ = web
    await _connect(client)
    await _connect(client)
    full = await _post(client, "connect", {"server": "person"}, status=503)
    assert "at most 2" in full["error"] and len(opened.targets) == 2
