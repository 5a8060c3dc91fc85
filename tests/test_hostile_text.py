"""Text no UTF-8 can hold: lone surrogates and command lines that are not UTF-8.

A Linux path is bytes, so a server's command line may not be UTF-8 (Python hands it to us
with surrogateescape), and a server may send ``"\\ud800"`` in any JSON string. Both once
stopped mcptape: the first kept `record` from recording anything, the second made every
`sql` query over ``log_messages`` fail.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mcptape.cli.output import json_with_surrogates
from mcptape.store.rows import json_text, without_nul
from mcptape.store.sql_sandbox import sqlite_text
from mcptape.terminal import safe
from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
LONE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a\\ud800b"}}\n'


def _run(*args: str | bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MCPTAPE, *args], input=stdin, capture_output=True, timeout=60)


def test_lone_surrogates_and_nul_become_replacement_characters_in_stored_text() -> None:
    assert without_nul("n\udcff\x00\ud800x") == "n\ufffd\ufffd\ufffdx"
    assert without_nul(3) == 3
    text = json_text({"argv": ["echo", "\udcff"]})
    assert json.loads(text) == {"argv": ["echo", "\udcff"]}
    text.encode()  # valid UTF-8: the surrogate is an escape


def test_surrogates_are_escaped_for_terminals_and_kept_exact_in_json() -> None:
    assert safe("a\ud800b\udcff") == "a\\ud800b\\udcff"
    line = json_with_surrogates({"x": "a\ud800\u2028", "n": 1})
    line.encode()
    assert json.loads(line) == {"x": "a\ud800\u2028", "n": 1}
    assert "\u2028" not in line


def test_sqlite_text_gives_cesu_surrogates_back_and_other_bytes_as_bytes() -> None:
    assert sqlite_text("é".encode()) == "é"
    assert sqlite_text(b"a\xed\xa0\x80") == "a\ud800"
    assert sqlite_text(b"\xff") == b"\xff"


@pytest.mark.slow
def test_a_server_command_and_name_that_are_not_utf8_are_still_recorded(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    proc = _run(
        "record",
        "--db",
        str(db),
        "--name",
        b"n\xff",
        "--",
        sys.executable,
        "-c",
        # Answers the ping and exits when its stdin closes, as servers do: the session ends
        # from the client's side (closed). A server that only echoed the ping, or exited at
        # once, would race the client's end (mcptape answering the ping itself; status ok).
        'import sys; sys.stdin.readline(); print(\'{"jsonrpc":"2.0","id":1,"result":{}}\', flush=True);'
        " sys.stdin.read()",
        b"\xff\x1b[2J",
        stdin=PING,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    assert b"error" not in proc.stderr
    [(name, upstream, status)] = query(db, "select name, upstream, status from sessions")
    assert name == "n\ufffd"
    assert "\ufffd\x1b[2J" in upstream
    assert status == "closed"
    [(frames,)] = query(db, "select count(*) from frames")
    assert frames == 2
    argv = json.loads(query(db, "select data from events where kind = 'process_start'")[0][0])["argv"]
    assert os.fsencode(argv[-1]) == b"\xff\x1b[2J"
    listed = _run("sessions", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    assert b"n\xef\xbf\xbd" in listed.stdout and b"\x1b" not in listed.stdout


@pytest.mark.slow
def test_a_lone_surrogate_from_the_server_leaves_every_sql_format_working(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    server = f"import sys; sys.stdout.buffer.write({LONE!r}); sys.stdout.flush(); sys.stdin.read()"
    proc = _run("record", "--db", str(db), "--", sys.executable, "-c", server, stdin=PING)
    assert proc.stdout == LONE, proc.stderr
    before = db.read_bytes()
    sql = "select level, data, char(55296) as c from log_messages"
    table = _run("sql", "--db", str(db), sql)
    assert table.returncode == 0, table.stderr
    assert b'"a\\ud800b"' in table.stdout
    assert b"\\ud800" in table.stdout.splitlines()[-1]
    for fmt in ("--json", "--nl"):
        out = _run("sql", "--db", str(db), fmt, sql)
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout) if fmt == "--json" else [json.loads(out.stdout)]
        assert rows == [{"level": "info", "data": '"a\ud800b"', "c": "\ud800"}]
    csv = _run("sql", "--db", str(db), "--csv", sql)
    assert csv.returncode == 0, csv.stderr
    assert csv.stdout.decode().splitlines()[1] == 'info,"""a\ufffdb""",\ufffd'
    assert db.read_bytes() == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma integrity_check").fetchone() == ("ok",)


@pytest.mark.slow
def test_wrap_escapes_the_names_commands_and_comments_it_prints(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_bytes(
        b'{"mcpServers": {"e\\u001b[2Jx": {"command": "cat\\u001b]52;c;QUFB\\u0007"}, '
        b'// \x1b]52;c;QkJC\x07 \xe2\x80\xae\n "b": {"command": "cat"}}}'
    )
    for dry_run in (("--dry-run",), ()):
        proc = _run("wrap", str(config), "--db", str(tmp_path / "t.db"), *dry_run)
        assert proc.returncode == 0, proc.stderr
        printed = (proc.stdout + proc.stderr).decode()
        assert "e\\u001b[2Jx" in printed and "cat\\u001b]52;c;QUFB\\u0007" in printed
        assert not any(c in printed for c in "\x1b\x07\u202e"), printed
    assert "\\u001b]52;c;QkJC\\u0007 \\u202e" in _run("unwrap", str(config), "--dry-run").stdout.decode()
