"""`mcptape serve` end to end: a recording played to the real mcp SDK client gives the live results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.helpers.paths import MCPTAPE, everything_server_cmd
from tests.helpers.scenarios import (
    ASK_NAME,
    DEMO,
    ask_name_scenario,
    demo_scenario,
    record,
    server_asks_scenario,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


def served(db: Path, *args: str) -> StdioServerParameters:
    argv = [*MCPTAPE, "serve", "--db", str(db), *args]
    return StdioServerParameters(command=argv[0], args=argv[1:])


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    db = tmp_path_factory.mktemp("serve") / "rec.db"
    return db, record(db, "demo", DEMO)


def test_serving_a_recording_gives_the_client_the_live_results(demo_db: tuple[Path, dict[str, Any]]) -> None:
    db, live = demo_db
    assert demo_scenario(served(db, "demo")) == live


def test_serving_sampling_elicitation_and_roots_asks_the_client_again(tmp_path: Path) -> None:
    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    db = tmp_path / "rec.db"
    live = record(db, "everything", server, server_asks_scenario)
    replayed = server_asks_scenario(served(db, "everything"))
    assert replayed == live
    con = __import__("sqlite3").connect(db)
    try:
        # The served session sent the recorded sampling and roots requests to the client and recorded its answers.
        rows = con.execute(
            "select method, answered_by from server_requests where session_id = "
            "(select id from sessions where mode = 'serve') order by requested_at"
        ).fetchall()
    finally:
        con.close()
    assert ("sampling/createMessage", "client") in rows and ("roots/list", "client") in rows
    assert ("elicitation/create", "client") in rows


def test_a_miss_names_the_nearest_recorded_requests(demo_db: tuple[Path, dict[str, Any]]) -> None:
    db, _ = demo_db

    async def main() -> str:
        async with Client(served(db, "demo"), mode="legacy") as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("weather", {"city": "Paris"})
            return str(caught.value)

    message = anyio.run(main)
    assert "no recorded response matches this tools/call request" in message
    assert "#4 tools/call (differs at /params/arguments/city)" in message
    assert message.count("#") == 3


def raw_session(db: Path, lines: list[dict[str, Any]], *args: str) -> tuple[int, list[Any], str]:
    """Run `mcptape serve` with JSON lines on stdin; its exit status, replies and stderr."""
    proc = subprocess.run(
        [*MCPTAPE, "serve", "--db", str(db), *args],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


INIT = {
    "jsonrpc": "2.0",
    "id": "a",
    "method": "initialize",
    "params": {
        "protocolVersion": "2024-11-05",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_initialize_is_answered_from_the_recording_and_strict_names_unasked_requests(
    demo_db: tuple[Path, dict[str, Any]],
) -> None:
    db, _ = demo_db
    code, replies, stderr = raw_session(db, [INIT, INITIALIZED], "demo", "--strict")
    assert replies[0]["id"] == "a"
    assert replies[0]["result"]["serverInfo"]["name"] == "mcptape-demo"
    assert replies[0]["result"]["protocolVersion"] != "2024-11-05"  # the recorded answer, whatever was asked
    assert code == 1
    assert "--strict: 6 recorded request(s) were never asked for: #2 tools/list, #3 tools/call" in stderr


def test_identical_requests_are_answered_in_recorded_order_with_the_live_id(
    demo_db: tuple[Path, dict[str, Any]],
) -> None:
    db, _ = demo_db
    call = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"b": 40, "a": 2}},
    }
    code, replies, _ = raw_session(db, [INIT, INITIALIZED, {**call, "id": 77}, {**call, "id": 78}], "demo")
    assert code == 0
    answers = {r["id"]: r for r in replies}
    assert answers[77]["result"]["structuredContent"] == {"result": 42}
    assert answers[78]["result"] == answers[77]["result"]  # used up: the last one is given again


def test_on_miss_forward_asks_the_real_server_and_records_it(
    demo_db: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db = tmp_path / "copy.db"
    db.write_bytes(demo_db[0].read_bytes())
    miss = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
    }
    lines = [INIT, INITIALIZED, miss]
    proc = subprocess.Popen(
        [*MCPTAPE, "serve", "--db", str(db), "demo", "--on-miss", "forward", "--", *DEMO],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for line in lines:
        proc.stdin.write(json.dumps(line) + "\n")
        proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    proc.stdin.close()
    assert proc.wait(60) == 0
    assert replies[1] == {"jsonrpc": "2.0", "id": 9, "result": replies[1]["result"]}
    assert replies[1]["result"]["structuredContent"] == {"result": 2}
    con = __import__("sqlite3").connect(db)
    try:
        forwarded = con.execute(
            "select count(*) from frames where session_id = "
            "(select id from sessions where mode='serve' order by started_at desc limit 1) "
            "and direction = 's2c' and text like '%\"result\":2%'"
        ).fetchone()
    finally:
        con.close()
    assert forwarded == (1,)


def test_on_miss_forward_answers_an_error_when_the_real_server_dies(
    demo_db: tuple[Path, dict[str, Any]],
) -> None:
    dies = [
        sys.executable,
        "-c",
        "import sys\nfor line in sys.stdin:\n    'tools/call' in line and sys.exit(3)",
    ]
    miss = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
    }
    proc = subprocess.Popen(
        [
            *MCPTAPE,
            "serve",
            "--db",
            str(demo_db[0]),
            "--no-record",
            "demo",
            "--on-miss",
            "forward",
            "--",
            *dies,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies = []
    for line in [INIT, INITIALIZED, {**miss, "id": 9}, {**miss, "id": 10}]:
        proc.stdin.write(json.dumps(line) + "\n")
        proc.stdin.flush()
        if "id" in line:
            replies.append(json.loads(proc.stdout.readline()))  # never a client left waiting
    proc.stdin.close()
    assert proc.wait(60) == 0
    said = "the server for --on-miss forward exited with status 3 before answering tools/call"
    assert [r["id"] for r in replies] == ["a", 9, 10]
    assert all(r["error"]["code"] == -32000 and said in r["error"]["message"] for r in replies[1:])


def test_serve_usage_errors_are_one_line(demo_db: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    from tests.helpers.cli_errors import assert_one_line_error

    db, _ = demo_db

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MCPTAPE, "serve", *args], capture_output=True, text=True, timeout=30, input=""
        )

    assert_one_line_error(run("--db", str(db)), "give one recording")
    assert_one_line_error(run("--db", str(db), "nope"), "no session 'nope'")
    assert_one_line_error(run("--file", str(tmp_path / "x.jsonl")), "does not exist")
    assert_one_line_error(run("--db", str(db), "demo", "--on-miss", "forward"), "no server to replay against")


def test_a_2026_07_28_recording_is_served_with_its_input_required_rounds(tmp_path: Path) -> None:

    db = tmp_path / "rec.db"
    live = record(db, "ask", ASK_NAME, ask_name_scenario)
    assert live["version"] == "2026-07-28"
    # server/discover comes from the recording; the retry's requestState is matched as a minted value.
    assert ask_name_scenario(served(db, "ask")) == live
