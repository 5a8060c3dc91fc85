"""`mcptape replay --url` against a 2026-07-28 stateless streamable HTTP server.

The server (tests/servers/modern_http.py) is the SDK's own streamable HTTP server: a
2026-07-28 request is a self-contained POST (no ``initialize``, no ``Mcp-Session-Id``),
``server/discover`` replaces the handshake, every request carries its ``_meta``, and
the ``Mcp-Method``/``Mcp-Name`` headers must agree with the body or the server answers
400. A real SDK client speaking 2026-07-28 is recorded through ``mcptape record --url``,
including an ``input_required`` round (``greet`` elicits a name); the recording is
replayed against a fresh server (a new ``requestState`` key) and against a build with a
regression. The recording is also served (`serve --listen`) to a stateless client.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.helpers.db import query
from tests.helpers.http_servers import everything_http, modern_http
from tests.helpers.paths import MCPTAPE
from tests.helpers.scenarios import DEMO, accept_ada, dump
from tests.helpers.served import Served, call_tools

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

FIELD = "/result/structuredContent/result"


def modern_scenario(params: Any) -> dict[str, Any]:
    """A 2026-07-28 client: a plain call, and a call the server answers with input_required first."""

    async def main() -> dict[str, Any]:
        async with Client(params, mode="auto", elicitation_callback=accept_ada) as client:
            return {
                "version": client.protocol_version,
                "add": dump(await client.call_tool("add", {"a": 2, "b": 40})),
                "greet": dump(await client.call_tool("greet", {"greeting": "Hello"})),
            }

    return anyio.run(main)


def mcptape(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, timeout=90)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A database holding `modern`, recorded over streamable HTTP from a 2026-07-28 server; the live results."""
    db = tmp_path_factory.mktemp("replay-modern") / "rec.db"
    with modern_http() as url:
        argv = [*MCPTAPE, "record", "--db", str(db), "--name", "modern", "--url", url, "--transport", "http"]
        live = modern_scenario(StdioServerParameters(command=argv[0], args=argv[1:]))
    return db, live


@pytest.fixture
def db(recorded: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    copy = tmp_path / "rec.db"
    shutil.copy(recorded[0], copy)
    return copy


def frames(db: Path, mode: str) -> list[dict[str, Any]]:
    texts = query(
        db,
        "select f.text from frames f join sessions s on s.id = f.session_id "
        "where s.mode = ? and f.direction in ('c2s', 's2c') order by f.seq",
        mode,
    )
    return [json.loads(t) for (t,) in texts]


def test_the_recording_is_a_stateless_2026_07_28_session_with_an_input_required_round(
    recorded: tuple[Path, dict[str, Any]],
) -> None:
    db, live = recorded
    assert live["version"] == "2026-07-28"
    assert live["add"]["structuredContent"] == {"result": 42}
    assert live["greet"]["structuredContent"] == {"result": "Hello, Ada!"}
    assert query(db, "select mode, transport, protocol_version from sessions") == [
        ("record", "stdio->http", "2026-07-28")
    ]
    sent = frames(db, "record")
    assert sent[0]["method"] == "server/discover" and not any(m.get("method") == "initialize" for m in sent)
    assert any(m.get("result", {}).get("resultType") == "input_required" for m in sent)
    assert query(db, "select count(*) from events where kind = 'http_session'") == [(0,)]  # no session id


def test_the_server_rejects_a_2026_07_28_request_without_its_routing_headers() -> None:
    # The control for the replays below: a replay that passes sent Mcp-Method and Mcp-Name.
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    with modern_http() as url:
        request = urllib.request.Request(
            url,
            json.dumps(body).encode(),
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400


@pytest.mark.parametrize("transport", ["http", "auto"])
def test_replay_url_redrives_a_2026_07_28_server_with_the_state_it_mints(db: Path, transport: str) -> None:
    with modern_http() as url:
        proc = mcptape("replay", "modern", "--db", str(db), "--url", url, "--transport", transport)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "replayed 1 recording(s), 5 exchanges: 5 match, 0 differ"
    ((original,),) = query(db, "select id from sessions where mode = 'record'")
    assert query(
        db, "select transport, protocol_version, replay_of, status from sessions where mode='replay'"
    ) == [("tape->http", "2026-07-28", original, "closed")]
    replayed = frames(db, "replay")
    assert replayed[0]["method"] == "server/discover"
    assert not any(m.get("method") == "initialize" for m in replayed)
    # The retry carries the requestState this server minted in this run, never the recorded one.
    minted = [m["result"]["requestState"] for m in replayed if "requestState" in (m.get("result") or {})]
    retries = [m for m in replayed if "inputResponses" in (m.get("params") or {})]
    [recorded_state] = [
        m["result"]["requestState"] for m in frames(db, "record") if "requestState" in m.get("result", {})
    ]
    assert len(minted) == len(retries) == 1
    assert retries[0]["params"]["requestState"] == minted[0] != recorded_state
    assert retries[0]["params"]["inputResponses"] == {
        key: {"action": "accept", "content": {"name": "Ada"}}
        for key in retries[0]["params"]["inputResponses"]
    }
    final = next(m for m in replayed if m.get("id") == retries[0]["id"] and "result" in m)
    assert final["result"]["structuredContent"] == {"result": "Hello, Ada!"}
    # Every request went out with the protocol version in its _meta: no session was ever minted.
    assert all(
        m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        for m in replayed
        if "method" in m
    )
    assert query(db, "select count(*) from events where kind = 'http_session'") == [(0,)]


def test_replay_url_against_a_changed_2026_07_28_server_names_the_field(db: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    with modern_http("--changed") as url:
        proc = mcptape("replay", "modern", "--db", str(db), "--url", url, "--report", str(report))
        ignored = mcptape(
            "replay", "modern", "--db", str(db), "--url", url,
            "--ignore", f"tools/call:add={FIELD}", "--ignore", "tools/call:add=/result/content/0/text",
        )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "✗ #2 tools/call add" in proc.stdout
    assert f"{FIELD}: recorded 42, replayed 43" in proc.stdout
    assert "replayed 1 recording(s), 5 exchanges: 4 match, 1 differ" in proc.stdout
    [differs] = [
        e for e in json.loads(report.read_text())["recordings"][0]["exchanges"] if e["status"] != "match"
    ]
    assert FIELD in [d["pointer"] for d in differs["differences"]]
    assert ignored.returncode == 0, ignored.stdout + ignored.stderr


@pytest.mark.parametrize("forward_to", ["command", "url"])
def test_serve_listen_plays_a_2026_07_28_recording_to_a_stateless_client_and_forwards_its_misses(
    recorded: tuple[Path, dict[str, Any]], db: Path, forward_to: str
) -> None:
    with contextlib.ExitStack() as stack:
        if forward_to == "command":
            served = Served("modern", "--db", str(db), "--no-auth", "--on-miss", "forward", server=DEMO)
            expected = 2  # the demo server's sum
        else:
            # A remote 2026-07-28 server whose add is off by one: only it answers 1 + 1 = 3.
            url = stack.enter_context(modern_http("--changed"))
            served = Served("modern", "--db", str(db), "--no-auth", "--on-miss", "forward", "--url", url)
            expected = 3
        try:
            http = create_mcp_http_client(headers=served.headers())
            played = modern_scenario(streamable_http_client(served.url, http_client=http))
            missed = call_tools(served, ("add", {"a": 1, "b": 1}), mode="auto")
        finally:
            code = served.stop()
    assert code == 0, served.stderr
    # server/discover, the plain call and the input_required round come from the recording.
    assert played == recorded[1]
    [answer] = missed
    assert answer["structuredContent"] == {"result": expected}
    assert "1 request(s) not on the tape were forwarded" in served.stderr
    served_frames = frames(db, "serve")
    assert not any(m.get("method") == "initialize" for m in served_frames)
    assert query(db, "select distinct protocol_version from sessions where mode = 'serve'") == [
        ("2026-07-28",)
    ]


def test_replay_url_of_a_2026_07_28_recording_against_a_2025_server_says_why_it_cannot_run(db: Path) -> None:
    # server-everything speaks 2025 revisions only: without a session it refuses every request.
    with everything_http("streamableHttp") as url:
        proc = mcptape("replay", "modern", "--db", str(db), "--url", url)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        "could not replay: the MCP server answered HTTP 400 Bad Request: Server not initialized"
        in proc.stdout
    )
    assert "the recording speaks 2026-07-28" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_session_of_mcptape_call_against_a_2026_07_28_server_replays_against_it(tmp_path: Path) -> None:
    db = tmp_path / "call.db"
    answer = json.dumps({"action": "accept", "content": {"name": "Bo"}})
    with modern_http() as url:
        called = mcptape(
            "call", "--db", str(db), "--name", "called", "--url", url, "-m", "tools/call",
            "--tool-name", "greet", "--tool-arg", "greeting=Hi", "--handle-elicitation", answer,
        )  # fmt: skip
        replayed = mcptape("replay", "called", "--db", str(db), "--url", url)
    assert called.returncode == 0, called.stdout + called.stderr
    assert json.loads(called.stdout)["structuredContent"] == {"result": "Hi, Bo!"}
    sent = frames(db, "call")
    assert sent[0]["method"] == "server/discover"
    assert any(m.get("result", {}).get("resultType") == "input_required" for m in sent)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "exchanges: 4 match, 0 differ" in replayed.stdout
