"""Recording files a user may hand to replay, serve and diff that are not what export wrote:
empty or blank (a cut file must not pass CI as "everything matches"), lines that are JSON
but not objects, frames that are not text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import INITIALIZE

pytestmark = pytest.mark.slow

DEMO = [sys.executable, "-m", "mcptape.servers.demo"]
LINE = {"dir": "c2s", "t": 0.0, "frame": '{"jsonrpc":"2.0","id":1,"method":"ping"}'}


def run(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    argv = [*MCPTAPE, *args]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env={**os.environ, "MCPTAPE_DB": str(db)}
    )


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_an_empty_recording_file_is_an_error_for_replay_serve_and_diff(tmp_path: Path, text: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text(text)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(LINE) + "\n")
    db = tmp_path / "x.db"
    for args in (["replay", "--file", str(empty), "--", *DEMO], ["serve", "--file", str(empty)]):
        assert_one_line_error(run(*args, db=db), "empty.jsonl holds no frames")
    assert_one_line_error(run("diff", str(empty), str(good), "--fail-on-breaking", db=db), "holds no frames")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("[1, 2, 3]", "the line is not a JSON object"),
        (json.dumps({**LINE, "frame": 123}), "frame must be the frame's text (a string), not int"),
        (json.dumps({**LINE, "frame": None}), "not NoneType"),
    ],
)
def test_a_line_that_is_json_but_no_export_line_is_named(tmp_path: Path, line: str, says: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(LINE) + "\n" + line + "\n")
    db = tmp_path / "x.db"
    for args in (["replay", "--file", str(bad), "--", *DEMO], ["serve", "--file", str(bad)]):
        assert_one_line_error(run(*args, db=db), "bad.jsonl:2: not a line of `mcptape export`", says)


def test_report_paths_that_cannot_be_written_are_said_before_anything_is_replayed(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(LINE) + "\n")
    db = tmp_path / "x.db"
    # A server that would leave a mark if it were started.
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    cases = [
        (["--report", str(tmp_path)], "is a directory"),
        (["--junit", str(tmp_path / "missing" / "j.xml")], "does not exist"),
        (["--report", str(tmp_path / "r.json"), "--junit", str(tmp_path / "." / "r.json")], "the same file"),
    ]
    for flags, says in cases:
        assert_one_line_error(run("replay", "--file", str(good), *flags, "--", *server, db=db), says)
    assert not marker.exists()


def test_junit_xml_stays_well_formed_whatever_the_recording_holds(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    hostile = "evil\x1b[2J\x00\x07\ufffe\uffff\x0b"
    init = {**INITIALIZE, "id": 1}
    answer = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "serverInfo": {"name": hostile, "version": "1"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "w" + hostile, "arguments": {}},
    }
    reply = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": hostile}]}}
    lines = [("c2s", init), ("s2c", answer), ("c2s", call), ("s2c", reply)]
    tape = tmp_path / "hostile.jsonl"
    # ensure_ascii=False: the characters stand raw in the file, as a server could have sent them.
    tape.write_text(
        "".join(
            json.dumps({"dir": d, "t": 0.0, "frame": json.dumps(m, ensure_ascii=False)}, ensure_ascii=False)
            + "\n"
            for d, m in lines
        ),
        encoding="utf-8",
    )
    junit = tmp_path / "junit.xml"
    done = run(
        "replay", "--file", str(tape), "--no-record", "--junit", str(junit), "--", *DEMO, db=tmp_path / "x.db"
    )
    assert done.returncode == 1, done.stderr
    root = ET.parse(junit).getroot()
    failures = root.findall(".//failure")
    assert failures and any("\\u001b[2J" in (f.text or "") for f in failures)
    names = [case.get("name") or "" for case in root.iter("testcase")]
    assert any("\\ufffe" in name for name in names), names
