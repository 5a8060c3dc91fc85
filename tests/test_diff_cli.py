"""`mcptape diff` end to end: two recordings of two versions of a real server, through record."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.paths import MCPTAPE, ROOT

pytestmark = pytest.mark.slow

VERSIONED = [sys.executable, str(ROOT / "tests" / "servers" / "versioned.py")]


def record_version(db: Path, version: str) -> None:
    argv = [*MCPTAPE, "record", "--db", str(db), "--name", f"v{version}", "--", *VERSIONED, version]

    async def main() -> None:
        async with Client(
            StdioServerParameters(command=argv[0], args=argv[1:]), read_timeout_seconds=30
        ) as client:
            await client.list_tools()
            await client.list_prompts()
            await client.list_resources()
            await client.call_tool("echo", {"message": "hi"})
            await client.call_tool("add", {"a": 1, "b": 2})
            await client.get_prompt("greet", {"name": "Ada"})
            await client.read_resource("config://app")

    asyncio.run(main())


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("diff") / "versions.db"
    record_version(db, "1")
    record_version(db, "2")
    return db


def mcptape(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCPTAPE_DB": str(db)}
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, env=env, timeout=60)


def test_diff_of_two_server_versions_names_breaking_and_compatible_changes(two_versions: Path) -> None:
    proc = mcptape("diff", "v1", "v2", db=two_versions)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "server versioned 1.0.0" in out and "server versioned 2.0.0" in out
    for line in [
        "- BREAKING   tool shout removed",
        "+ COMPATIBLE tool multiply added",
        "~ BREAKING   tool add: new required argument 'c'",
        "~ COMPATIBLE tool echo: new optional argument 'upper'",
        "- BREAKING   prompt farewell removed",
        "~ COMPATIBLE prompt greet: description changed",
        '~ BREAKING   response tools/call add {"a": 1, "b": 2}: now fails',
        '/result/content/0/text: "Echo: hi" -> "ECHO: hi"',
        '/result/structuredContent: {"result": 3} -> (absent)',
    ]:
        assert line in out, out
    assert out.rstrip().endswith("4 breaking, 3 compatible; 4 answers compared, 3 differ")
    # The same recording twice: nothing changed.
    same = mcptape("diff", "v1", "v1", db=two_versions)
    assert "0 breaking, 0 compatible; 4 answers compared, 0 differ" in same.stdout


def test_fail_on_breaking_and_json(two_versions: Path) -> None:
    failing = mcptape("diff", "v1", "v2", "--fail-on-breaking", "--json", db=two_versions)
    assert failing.returncode == 1
    report = json.loads(failing.stdout)
    assert report["breaking"] == 4
    assert report["a"]["server"] == {"name": "versioned", "version": "1.0.0"}
    assert {
        "severity": "breaking",
        "category": "tool",
        "name": "add",
        "action": "changed",
        "what": "new required argument 'c'",
    } in report["changes"]
    assert report["responses"] == {"compared": 4, "only_in_a": 0, "only_in_b": 0}
    [fails] = [c for c in report["changes"] if c["what"] == "now fails"]
    assert {"pointer": "/result/structuredContent", "a": {"result": 3}} in fails["pointers"]
    unchanged = mcptape("diff", "v2", "v2", "--fail-on-breaking", db=two_versions)
    assert unchanged.returncode == 0


def test_an_exported_file_diffs_like_its_session(two_versions: Path, tmp_path: Path) -> None:
    exported = tmp_path / "release.jsonl"
    assert mcptape("export", "v1", "-o", str(exported), db=two_versions).returncode == 0
    from_file = mcptape("diff", str(exported), "v2", db=two_versions)
    from_db = mcptape("diff", "v1", "v2", db=two_versions)
    assert from_file.returncode == 0, from_file.stderr
    assert from_file.stdout.splitlines()[1:] == from_db.stdout.splitlines()[1:]


def test_unreadable_recordings_are_one_line_errors(two_versions: Path, tmp_path: Path) -> None:
    assert_one_line_error(mcptape("diff", "v1", "nope", db=two_versions), "no session 'nope'")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"dir": "c2s", "frame": "{}"}\nnot json\n')
    assert_one_line_error(mcptape("diff", str(bad), "v1", db=two_versions), "bad.jsonl:2")
    assert_one_line_error(
        mcptape("diff", str(tmp_path / "missing.jsonl"), "v1", db=two_versions), "cannot read"
    )


def test_names_from_a_hostile_recording_cannot_drive_the_terminal(two_versions: Path, tmp_path: Path) -> None:
    exported = tmp_path / "v2.jsonl"
    assert mcptape("export", "v2", "-o", str(exported), db=two_versions).returncode == 0
    # A tool renamed with an OSC title sequence and a bidi override, as JSON escapes in the frames.
    text = exported.read_text(encoding="utf-8")
    hostile = text.replace(
        '\\"name\\":\\"echo\\"', '\\"name\\":\\"echo\\\\u001b]0;owned\\\\u0007\\\\u202e\\"'
    )
    assert hostile != text
    exported.write_text(hostile, encoding="utf-8")
    done = mcptape("diff", "v1", str(exported), db=two_versions)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "echo\\u001b]0;owned\\u0007\\u202e" in done.stdout


def test_json_output_of_a_hostile_recording_is_valid_json_with_no_raw_controls(
    two_versions: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "v2.jsonl"
    assert mcptape("export", "v2", "-o", str(exported), db=two_versions).returncode == 0
    # DEL, the C1 CSI and a bidi override: orjson writes them raw unless told otherwise.
    text = exported.read_text(encoding="utf-8")
    hostile = text.replace('\\"name\\":\\"echo\\"', '\\"name\\":\\"echo\\\\u009b2J\\\\u007f\\\\u202e\\"')
    assert hostile != text
    exported.write_text(hostile, encoding="utf-8")
    done = mcptape("diff", "v1", str(exported), "--json", db=two_versions)
    assert done.returncode == 0, done.stderr
    assert not any(ch in done.stdout for ch in ("\u009b", "\x7f", "\u202e"))
    assert "echo\u009b2J\u007f\u202e" in json.dumps(json.loads(done.stdout), ensure_ascii=False)


def test_two_recordings_differing_only_by_the_clock_do_not_differ(tmp_path: Path) -> None:
    def recording(name: str, when: str) -> Path:
        lines = [
            ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stat", "arguments": {}}}),
            ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": f"modified: {when}"}]}}),
        ]  # fmt: skip
        path = tmp_path / name
        path.write_text(
            "".join(json.dumps({"dir": d, "t": 1.0, "frame": json.dumps(m)}) + "\n" for d, m in lines)
        )
        return path

    a = recording("a.jsonl", "2026-11-26T15:30:01Z")
    b = recording("b.jsonl", "Thu, 26 Nov 2026 16:00:00 GMT")
    same = mcptape("diff", str(a), str(b), db=tmp_path / "none.db")
    assert same.returncode == 0 and same.stdout.splitlines()[-1].endswith("1 answers compared, 0 differ"), (
        same.stdout
    )
    kept = mcptape("diff", str(a), str(b), "--keep", "timestamps", db=tmp_path / "none.db")
    assert kept.stdout.splitlines()[-1].endswith("1 answers compared, 1 differ"), kept.stdout
    masked = mcptape(
        "diff",
        str(a),
        str(b),
        "--keep",
        "timestamps",
        "--ignore-text",
        "modified: .*",
        db=tmp_path / "none.db",
    )
    assert masked.stdout.splitlines()[-1].endswith("1 answers compared, 0 differ"), masked.stdout
    bad = mcptape("diff", str(a), str(b), "--ignore", "result", db=tmp_path / "none.db")
    assert_one_line_error(bad, "--ignore 'result': expected a JSON Pointer")
