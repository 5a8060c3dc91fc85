"""`mcptape serve --listen --on-miss forward`: what the recording does not hold is asked of a real server.

The recording is the demo server's session (tests/test_replay.py's scenario). Over
streamable HTTP, the SDK client's requests that are on the tape are answered from it;
the others go to the real server named after ``--``, by ``--upstream`` (a command or a
remote entry) or by ``--url``, one per client session, and its answers reach the client
and the served session's recording. A real server that dies or cannot be reached turns
each forwarded request into a JSON-RPC error saying so, never a client left waiting.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcptape.proxy.link import LinkEnd
from mcptape.replay.forwarding import gone
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.db import query
from tests.helpers.http_servers import free_port, modern_http
from tests.helpers.paths import MCPTAPE
from tests.helpers.scenarios import DEMO, record
from tests.helpers.served import Served, call_tools

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("serve-forward") / "rec.db"
    record(db, "demo", DEMO)
    return db


@pytest.fixture
def db(demo_db: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "rec.db"
    copy.write_bytes(demo_db.read_bytes())
    return copy


def served_tool_calls(db: Path) -> list[Any]:
    """The structured results the served session answered to tools/call, in order."""
    ((session,),) = query(db, "select id from sessions where mode='serve'")
    texts = query(
        db,
        "select text from frames where session_id = ? and method = 'tools/call' and direction = 's2c' "
        "order by seq",
        session,
    )
    return [json.loads(text)["result"]["structuredContent"] for (text,) in texts]


@pytest.mark.parametrize("how", ["command", "upstream"])
@pytest.mark.slow
def test_serve_listen_on_miss_forward_asks_the_real_server_and_records_it(
    db: Path, tmp_path: Path, how: str
) -> None:
    forward = ["--on-miss", "forward"]
    if how == "command":
        served = Served("demo", "--db", str(db), "--no-auth", *forward, server=DEMO)
    else:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"real": {"command": DEMO[0], "args": DEMO[1:]}}}))
        served = Served(
            "demo", "--db", str(db), "--no-auth", *forward, "--upstream", "real", "--config", str(config)
        )
    try:
        on_tape, missed = call_tools(served, ("add", {"a": 2, "b": 40}), ("add", {"a": 1, "b": 1}))
    finally:
        code = served.stop()
    assert code == 0, served.stderr
    assert on_tape["structuredContent"] == {"result": 42}
    assert missed["structuredContent"] == {"result": 2}  # no recording holds 1 + 1: the demo server said it
    assert "1 request(s) not on the tape were forwarded" in served.stderr  # 2 + 40 came from the tape
    assert served_tool_calls(db) == [{"result": 42}, {"result": 2}]
    ((session,),) = query(db, "select id from sessions where mode='serve'")
    assert (
        query(db, "select tool, is_error from tool_calls where session_id = ?", session) == [("add", 0)] * 2
    )


@pytest.mark.parametrize("how", ["url", "upstream"])
@pytest.mark.slow
def test_serve_listen_on_miss_forward_reaches_a_remote_server(db: Path, tmp_path: Path, how: str) -> None:
    # The remote server is a build whose add is off by one: only it can answer 1 + 1 = 3.
    with modern_http("--changed") as url:
        if how == "url":
            target = ["--url", url, "--transport", "http"]
        else:
            config = tmp_path / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"remote": {"type": "http", "url": url}}}))
            target = ["--upstream", "remote", "--config", str(config)]
        served = Served("demo", "--db", str(db), "--no-auth", "--on-miss", "forward", *target)
        try:
            on_tape, missed = call_tools(served, ("add", {"a": 2, "b": 40}), ("add", {"a": 1, "b": 1}))
        finally:
            code = served.stop()
    assert code == 0, served.stderr
    assert (on_tape["structuredContent"], missed["structuredContent"]) == ({"result": 42}, {"result": 3})
    assert f"1 request(s) not on the tape were forwarded to {url}" in served.stderr
    assert served_tool_calls(db) == [{"result": 42}, {"result": 3}]


@pytest.mark.slow
def test_serve_listen_forwarded_requests_get_an_error_when_the_real_server_dies(db: Path) -> None:
    # A server that exits (status 3) on the first tools/call it is given.
    dies = [
        sys.executable,
        "-c",
        "import sys\nfor line in sys.stdin:\n    'tools/call' in line and sys.exit(3)",
    ]
    served = Served("demo", "--db", str(db), "--no-record", "--no-auth", "--on-miss", "forward", server=dies)
    try:
        first, second, on_tape = call_tools(
            served, ("add", {"a": 1, "b": 1}), ("add", {"a": 5, "b": 5}), ("add", {"a": 2, "b": 40})
        )
    finally:
        assert served.stop() == 0, served.stderr
    # Neither miss waits for the client's timeout: each says how the real server ended.
    said = "the server for --on-miss forward exited with status 3 before answering tools/call"
    assert said in first and said in second
    assert on_tape["structuredContent"] == {"result": 42}  # the tape plays on


@pytest.mark.parametrize("transport", ["http", "auto"])
@pytest.mark.slow
def test_serve_listen_forwarding_to_a_url_nobody_answers_says_so(db: Path, transport: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    served = Served(
        "demo", "--db", str(db), "--no-record", "--no-auth",
        "--on-miss", "forward", "--url", dead, "--transport", transport,
    )  # fmt: skip
    try:
        on_tape, first, second = call_tools(
            served, ("add", {"a": 2, "b": 40}), ("add", {"a": 1, "b": 1}), ("add", {"a": 5, "b": 5})
        )
    finally:
        assert served.stop() == 0, served.stderr
    assert on_tape["structuredContent"] == {"result": 42}
    assert f"cannot reach the MCP server at {dead}" in first
    assert f"cannot reach the MCP server at {dead}" in second


def test_the_error_for_a_forward_server_that_is_gone_says_how_it_ended() -> None:
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}
    exited = gone(request, LinkEnd("exited", 3, None, ("first", "boom")))
    assert exited == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32000,
            "message": "mcptape serve: the server for --on-miss forward exited with status 3 before "
            "answering tools/call; its last stderr line: boom",
        },
    }
    unreachable = gone(
        request, LinkEnd("error", None, "mcptape: cannot reach the MCP server at http://h/mcp")
    )
    assert (
        "forward failed (cannot reach the MCP server at http://h/mcp) before"
        in unreachable["error"]["message"]
    )
    assert "forward closed the connection before" in gone(request, LinkEnd("closed"))["error"]["message"]
    assert "killed by SIGKILL" in gone(request, LinkEnd("exited", -9))["error"]["message"]


@pytest.mark.slow
def test_serve_listen_with_a_forward_command_that_cannot_start_is_an_error_at_start_up(
    demo_db: Path, tmp_path: Path
) -> None:
    def serve(*server: str) -> subprocess.CompletedProcess[str]:
        argv = ["serve", "demo", "--db", str(demo_db), "--no-record", "--no-auth", "--listen", "127.0.0.1:0"]
        return subprocess.run(
            [*MCPTAPE, *argv, "--on-miss", "forward", "--", *server],
            capture_output=True,
            text=True,
            timeout=30,
        )

    assert_one_line_error(
        serve(str(tmp_path / "no-such-server")), "--on-miss forward cannot be started", "not found"
    )
    assert_one_line_error(serve("no-such-command-h15"), "'no-such-command-h15' not found")
    (tmp_path / "plain.txt").write_text("not a program")
    assert_one_line_error(serve(str(tmp_path / "plain.txt")), "not executable")
