"""Output a recording controls never drives the terminal: one escaping function, used everywhere.

Plain values first (mcptape.terminal.safe), then every human-readable output that
prints recorded text: `show` (lines, header, --full), `sessions`, `sql` tables and the
one-line errors that quote session names.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mcptape.store import open_store
from mcptape.terminal import safe, safe_lines
from mcptape.wire.frame import Frame
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.paths import MCPTAPE

ESC = "\x1b"
TITLE = f"{ESC}]0;pwned{ESC}\\"  # OSC: set the window title
CLEAR = f"{ESC}[2J"  # clear the screen
RLO = "\u202e"  # right-to-left override
# Every character a terminal could act on, and none it should.
UNSAFE = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))] + [
    chr(c) for c in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
]


def test_every_control_character_and_bidi_override_is_escaped() -> None:
    for ch in UNSAFE:
        escaped = safe(f"a{ch}b")
        assert ch not in escaped and escaped.startswith("a\\") and escaped.endswith("b"), repr(ch)


def test_escapes_read_like_json_and_plain_text_is_left_alone() -> None:
    assert safe(TITLE) == "\\u001b]0;pwned\\u001b\\"
    assert safe("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert safe(f"{RLO}txt.exe") == "\\u202etxt.exe"
    assert safe("\x9b31m") == "\\u009b31m"  # C1 CSI, one byte in 8-bit terminals
    assert safe("tools/call héllo ✓ 日本 🎉") == "tools/call héllo ✓ 日本 🎉"


def test_safe_lines_keeps_line_feeds_only() -> None:
    assert safe_lines(f"a\n{CLEAR}b\r\n") == "a\n\\u001b[2Jb\\r\n"


def hostile_session(db: Path) -> str:
    """A finished session whose name, server, methods, stderr and frames carry escape sequences."""
    store = open_store(str(db))
    sid = store.create_session(mode="record", name=f"evil{CLEAR}{RLO}", upstream=f"srv {TITLE}")
    store.update_session(
        sid,
        started_at=1_700_000_000.0,
        ended_at=1_700_000_001.0,
        status="ok",
        exit_code=0,
        protocol_version=f"2025-06-18{ESC}[1m",
        client_name=f"cli{ESC}[31m",
        server_name=f"server{TITLE}",
    )
    writer = store.writer()
    t0 = 1_700_000_000.0
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": f"tools/list{TITLE}"})
    writer.add_frame(sid, 1, Frame(request.encode(), "c2s", ts=t0 + 0.1))
    writer.add_frame(sid, 2, Frame(f"not json {CLEAR} \x9b2J {RLO}".encode(), "s2c", ts=t0 + 0.2))
    text = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x\\u001b[2J\u202e\u0085"}]}}'
    writer.add_frame(sid, 3, Frame(text.encode(), "s2c", ts=t0 + 0.3))
    writer.add_event(sid, "stderr", f"log {TITLE}", ts=t0 + 0.15)
    writer.close()
    store.close()
    return sid


def mcptape(*args: str, columns: str = "200") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": columns}
    return subprocess.run([*MCPTAPE, *args], capture_output=True, text=True, timeout=60, env=env)


def assert_inert(text: str) -> None:
    """Nothing a terminal acts on, apart from the line feeds that end lines."""
    assert [ch for ch in text if ch in UNSAFE and ch != "\n"] == []


@pytest.mark.parametrize("extra", [(), ("--full",), ("--no-events",)])
@pytest.mark.slow
def test_show_escapes_methods_header_fields_stderr_and_non_json_frames(
    db_path: Path, extra: tuple[str, ...]
) -> None:
    hostile_session(db_path)
    proc = mcptape("show", "last", "--db", str(db_path), *extra)
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc.stdout)
    assert "tools/list\\u001b]0;pwned\\u001b\\ #1" in proc.stdout
    assert "server\\u001b]0;pwned" in proc.stdout and "evil\\u001b[2J\\u202e" in proc.stdout
    assert "not json \\x1b[2J \\x9b2J \\u202e" in proc.stdout  # the summary quotes it with repr()
    if extra == ("--full",):
        assert "      not json \\u001b[2J \\u009b2J \\u202e\n" in proc.stdout  # and whole under --full


@pytest.mark.slow
def test_sessions_table_escapes_names_and_upstreams(db_path: Path) -> None:
    hostile_session(db_path)
    proc = mcptape("sessions", "--db", str(db_path))
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc.stdout)
    assert "evil\\u001b[2J\\u202e" in proc.stdout


@pytest.mark.slow
def test_sql_table_escapes_values_but_json_keeps_them_exact(db_path: Path) -> None:
    hostile_session(db_path)
    table = mcptape("sql", "select name, upstream from sessions", "--db", str(db_path))
    assert table.returncode == 0, table.stderr
    assert_inert(table.stdout)
    assert "srv \\u001b]0;pwned" in table.stdout
    nl = mcptape("sql", "select name from sessions", "--nl", "--db", str(db_path))
    assert nl.stdout == '{"name":"evil\\u001b[2J\u202e"}\n'  # JSON escapes ESC its own way; data intact


@pytest.mark.slow
def test_one_line_errors_escape_the_names_they_quote(db_path: Path) -> None:
    hostile_session(db_path)
    line = assert_one_line_error(mcptape("show", f"nope{TITLE}", "--db", str(db_path)), "no session")
    assert_inert(line)
    assert "evil\\u001b[2J\\u202e" in line or "evil\\x1b[2J\\u202e" in line
