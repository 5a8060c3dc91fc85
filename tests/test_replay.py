"""`mcptape replay` end to end: a real mcp SDK client recorded against a real server, then replayed.

The recording is made once per module through `mcptape record`; each test replays it
against the demo server (it matches), against a build with a regression
(tests/servers/demo_changed.py: it differs, and the diff names the field) and with that
field ignored (it matches again).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.paths import MCPTAPE, ROOT
from tests.helpers.scenarios import (
    ASK_NAME,
    DEMO,
    SAMPLE,
    TRIP_PLANNER,
    ask_name_scenario,
    record,
    record_params,
    server_asks_scenario,
    text_of,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

CHANGED = [sys.executable, str(ROOT / "tests" / "servers" / "demo_changed.py")]
FIELD = "/result/structuredContent/humidity_percent"


def mcptape(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding one recorded demo session named `demo`."""
    db = tmp_path_factory.mktemp("replay") / "rec.db"
    record(db, "demo", DEMO)
    return db


@pytest.fixture
def db(recorded: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded database (replays add sessions to it)."""
    copy = tmp_path / "rec.db"
    shutil.copy(recorded, copy)
    return copy


def test_replay_against_the_same_server_matches_and_is_recorded(db: Path, tmp_path: Path) -> None:
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    proc = mcptape(
        "replay", "demo", "--db", str(db), "--report", str(report), "--junit", str(junit), "--", *DEMO
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("replayed 1 recording(s), 7 exchanges: 7 match, 0 differ")
    doc = json.loads(report.read_text())
    assert doc["ok"] is True
    methods = [e["method"] for e in doc["recordings"][0]["exchanges"]]
    assert methods == [
        "initialize", "tools/list", "tools/call", "tools/call", "tools/call", "resources/read", "prompts/get"
    ]  # fmt: skip
    cases = ET.parse(junit).getroot().findall("./testsuite/testcase")
    assert len(cases) == 7 and all(c.find("failure") is None for c in cases)
    con = sqlite3.connect(db)
    try:
        original, replay_of, mode, status = con.execute(
            "select (select id from sessions where name='demo'), replay_of, mode, status "
            "from sessions where mode='replay'"
        ).fetchone()
        assert (replay_of, mode, status) == (original, "replay", "closed")
        # The replay is a session like any other: the views correlate its exchanges.
        tools = con.execute(
            "select tool from tool_calls where session_id=(select id from sessions where mode='replay') order by 1"
        ).fetchall()
        assert tools == [("add",), ("countdown",), ("weather",)]
    finally:
        con.close()


def test_replay_against_a_changed_server_fails_naming_the_field(db: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = mcptape("replay", "demo", "--db", str(db), "--report", str(report), "--", *CHANGED)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "✗ #4 tools/call weather" in proc.stdout
    assert f"{FIELD}: recorded " in proc.stdout
    doc = json.loads(report.read_text())
    [weather] = [e for e in doc["recordings"][0]["exchanges"] if e["status"] != "match"]
    pointers = [d["pointer"] for d in weather["differences"]]
    assert FIELD in pointers
    d = weather["differences"][pointers.index(FIELD)]
    assert d["replayed"] == d["recorded"] + 1


def test_replay_with_the_changed_path_ignored_matches(db: Path) -> None:
    proc = mcptape(
        "replay", "demo", "--db", str(db),
        "--ignore", f"tools/call:weather={FIELD}",
        "--ignore", "tools/call:weather=/result/content/*/text",
        "--", *CHANGED,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_update_moves_the_name_to_the_replay(db: Path) -> None:
    proc = mcptape("replay", "demo", "--db", str(db), "--update", "--", *CHANGED)
    assert proc.returncode == 0, proc.stderr  # the differences were reported, and made the reference
    assert "1 differ" in proc.stdout
    assert "now refers to the replay" in proc.stderr
    again = mcptape("replay", "demo", "--db", str(db), "--", *CHANGED)
    assert again.returncode == 0, again.stdout + again.stderr


def test_replay_of_an_exported_file_needs_no_database(db: Path, tmp_path: Path) -> None:
    exported = tmp_path / "demo.jsonl"
    assert mcptape("export", "demo", "--db", str(db), "-o", str(exported)).returncode == 0
    proc = subprocess.run(
        [*MCPTAPE, "replay", "--file", str(exported), "--", *DEMO],
        capture_output=True,
        text=True,
        timeout=90,
        env={k: v for k, v in __import__("os").environ.items() if k != "MCPTAPE_DB"},
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (tmp_path / "rec.db-wal").exists()
    # --update rewrites the file from the replay (a success: exit 0), keeping its mode and the
    # symlink that names it; it then replays against the changed server.
    exported.chmod(0o600)
    link = tmp_path / "link.jsonl"
    link.symlink_to(exported)
    updated = mcptape("replay", "--file", str(link), "--update", "--", *CHANGED)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert f"updated {link}" in updated.stderr
    assert link.is_symlink() and stat.S_IMODE(exported.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []
    assert mcptape("replay", "--file", str(exported), "--", *CHANGED).returncode == 0


def test_several_recordings_by_pattern_give_one_report(db: Path) -> None:
    record(db, "demo-two", DEMO)
    proc = mcptape("replay", "demo*", "--db", str(db), "--", *CHANGED)
    assert proc.returncode == 1
    assert proc.stdout.count("✗ #4 tools/call weather") == 2
    assert "replayed 2 recording(s), 14 exchanges: 12 match, 2 differ" in proc.stdout


def test_replay_errors_are_one_line_with_exit_2(db: Path, tmp_path: Path) -> None:
    assert_one_line_error(mcptape("replay", "nope", "--db", str(db), "--", *DEMO), "no session 'nope'")
    assert_one_line_error(mcptape("replay", "demo", "--db", str(db)), "no server to replay against")
    assert_one_line_error(
        mcptape("replay", "--file", str(tmp_path / "x.jsonl"), "--", *DEMO), "does not exist"
    )
    assert_one_line_error(
        mcptape("replay", "demo", "--db", str(db), "--ignore", "result.x", "--", *DEMO),
        "expected a JSON Pointer",
    )
    proc = mcptape("replay", "demo", "--db", str(db), "--", str(tmp_path / "no-such-server"))
    assert proc.returncode == 2 and "could not replay" in proc.stdout
    crashing = mcptape(
        "replay", "demo", "--db", str(db), "--", sys.executable, "-c", "import sys; sys.exit(3)"
    )
    assert crashing.returncode == 2 and "exited with status 3" in crashing.stdout, crashing.stdout


def test_server_requests_are_answered_from_the_recording(tmp_path: Path) -> None:
    from tests.helpers.paths import everything_server_cmd

    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    db = tmp_path / "rec.db"
    live = record(db, "everything", server, server_asks_scenario)
    assert "canned hello" in json.dumps(live["sampling"])
    proc = mcptape("replay", "everything", "--db", str(db), "--", *server)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    con = sqlite3.connect(db)
    try:
        # The replay answered the live server's sampling and roots requests with the recorded answers.
        answers = con.execute(
            "select f.text from frames f join sessions s on s.id = f.session_id "
            "where s.mode = 'replay' and f.direction = 'c2s' and f.kind = 'response' order by f.seq"
        ).fetchall()
        assert any("canned hello" in a[0] for a in answers)
        assert any("file:///tmp/project" in a[0] for a in answers)
        assert any('"decline"' in a[0] for a in answers)
    finally:
        con.close()
    # A rule the user gives answers instead of the recording: the tool's result changes with it.
    report = tmp_path / "ruled.json"
    ruled = mcptape(
        "replay", "everything", "--db", str(db), "--report", str(report), "--handle-sampling",
        '{"role": "assistant", "content": {"type": "text", "text": "ruled"}, "model": "m"}', "--", *server,
    )  # fmt: skip
    assert ruled.returncode == 1, ruled.stdout + ruled.stderr
    failed = [
        e for e in json.loads(report.read_text())["recordings"][0]["exchanges"] if e["status"] != "match"
    ]
    [differs] = [e for e in failed if e["subject"] == "trigger-sampling-request"]
    # server-everything may ask roots/list again on a timer of its own (and log that it did):
    # under load that can land in a replay and not in the recording. Nothing else may differ.
    timers = ("server request roots/list", "notification notifications/message")
    assert all(d["pointer"].startswith(timers) for e in failed if e is not differs for d in e["differences"])
    assert differs["subject"] == "trigger-sampling-request"
    assert "ruled" in json.dumps(differs["differences"]) and "canned hello" in json.dumps(
        differs["differences"]
    )
    assert_one_line_error(
        mcptape("replay", "everything", "--db", str(db), "--handle-sampling", '{"role": "x"}', "--", *server),
        "--handle-sampling",
    )


def test_2026_07_28_input_required_rounds_are_redriven_with_the_new_request_state(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    live = record(db, "ask", ASK_NAME, ask_name_scenario)
    assert live["version"] == "2026-07-28" and "Hello, Ada!" in json.dumps(live["greet"])
    proc = mcptape("replay", "ask", "--db", str(db), "--", *ASK_NAME)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    def rounds(mode: str) -> tuple[str, dict[str, Any]]:
        con = sqlite3.connect(db)
        try:
            texts = [
                json.loads(t)
                for (t,) in con.execute(
                    "select f.text from frames f join sessions s on s.id = f.session_id "
                    "where s.mode = ? and (f.method = 'tools/call' or f.kind = 'response') order by f.seq",
                    (mode,),
                )
            ]
        finally:
            con.close()
        minted = next(m["result"]["requestState"] for m in texts if "requestState" in m.get("result", {}))
        retry = [m for m in texts if m.get("method") == "tools/call"][-1]["params"]
        return minted, retry

    recorded_state, recorded_retry = rounds("record")
    replay_state, replay_retry = rounds("replay")
    assert recorded_retry["requestState"] == recorded_state
    assert replay_state != recorded_state  # the server seals a fresh state every run
    # The retry echoed the state the live server minted in this run, not the recorded one.
    assert replay_retry["requestState"] == replay_state
    assert replay_retry["inputResponses"] == recorded_retry["inputResponses"]


def test_a_server_that_never_answers_is_reported_per_exchange(db: Path) -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]
    proc = mcptape("replay", "demo", "--db", str(db), "--timeout", "0.3", "--grace", "0.2", "--", *silent)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "✗ #1 initialize: no response from the replayed server" in proc.stdout
    assert "7 exchanges: 0 match, 7 differ" in proc.stdout


def test_secrets_in_the_server_command_are_not_stored(db: Path) -> None:
    proc = mcptape("replay", "demo", "--db", str(db), "--", *DEMO, "--api-key=hunter2secret")
    con = sqlite3.connect(db)
    try:
        upstream = con.execute("select upstream from sessions where mode = 'replay'").fetchone()[0]
    finally:
        con.close()
    assert "hunter2secret" not in upstream and "«redacted:" in upstream, (upstream, proc.stderr)


def test_rounds_mcptape_retried_when_recording_are_redriven_with_the_live_request_states(
    tmp_path: Path,
) -> None:
    # Recorded with rules: mcptape answered the 2026-07-28 input_required rounds and retried
    # the call itself (ids "mcptape-N"), declaring the capabilities the client lacked.

    db = tmp_path / "rec.db"
    params = record_params(
        db,
        TRIP_PLANNER,
        "--name",
        "trip",
        "--handle-sampling",
        json.dumps(SAMPLE),
        "--handle-elicitation",
        '{"action": "accept", "content": {"name": "Ada"}}',
        "--roots",
        "file:///trips",
        "--declare-capabilities",
    )

    async def main() -> str:
        async with Client(params, read_timeout_seconds=30) as client:
            return text_of(await client.call_tool("plan_trip", {"city": "Oslo"}))

    assert "Ada goes to Oslo" in anyio.run(main)
    report = tmp_path / "report.json"
    proc = mcptape("replay", "trip", "--db", str(db), "--report", str(report), "--", *TRIP_PLANNER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    exchanges = json.loads(report.read_text())["recordings"][0]["exchanges"]
    calls = [e for e in exchanges if e["method"] == "tools/call"]
    assert len(calls) >= 2 and all(e["status"] == "match" for e in exchanges)  # the call and its retries

    def frames(mode: str) -> list[dict[str, Any]]:
        con = sqlite3.connect(db)
        try:
            return [
                json.loads(t)
                for (t,) in con.execute(
                    "select f.text from frames f join sessions s on s.id = f.session_id "
                    "where s.mode = ? and f.direction in ('c2s', 's2c') order by f.seq",
                    (mode,),
                )
            ]
        finally:
            con.close()

    replayed = frames("replay")
    retries = [
        m for m in replayed if m.get("method") == "tools/call" and "inputResponses" in m.get("params", {})
    ]
    assert len(retries) == len(calls) - 1
    # Each retry echoes the state the live server minted in the round before it, in this run.
    minted = [m["result"]["requestState"] for m in replayed if "requestState" in (m.get("result") or {})]
    assert [r["params"]["requestState"] for r in retries] == minted
    recorded_states = {
        m["result"]["requestState"] for m in frames("record") if "requestState" in (m.get("result") or {})
    }
    assert not recorded_states & set(minted)
    # The last round's answer is the final result, compared with the recorded one.
    final = next(m for m in reversed(replayed) if m.get("id") == retries[-1]["id"] and "result" in m)
    assert "Ada goes to Oslo" in json.dumps(final["result"])


def test_the_diff_report_escapes_what_could_drive_the_terminal(db: Path, tmp_path: Path) -> None:
    exported = tmp_path / "demo.jsonl"
    assert mcptape("export", "demo", "--db", str(db), "-o", str(exported)).returncode == 0
    # The recorded weather answer names the city with a bidi override and a C1 CSI (JSON
    # escapes inside the frame text, itself a JSON string in the export).
    text = exported.read_text(encoding="utf-8")
    hostile = text.replace("Lisbon", "Lis\\\\u202e\\\\u009b2Jbon")
    assert hostile != text
    exported.write_text(hostile, encoding="utf-8")
    proc = mcptape("replay", "--file", str(exported), "--", *DEMO)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "\u202e" not in proc.stdout and "\x9b" not in proc.stdout
    assert "\\u202e" in proc.stdout
