"""Tokens whose format names them are redacted wherever they stand on a command line: a
server started as `server-github ghp_…` put its token in the database as it was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcptape.redact import PLACEHOLDER, placeholder, redact_argv, redact_text
from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE

GITHUB = "ghp_" + "a1B2c3D4e5" * 4
TOKENS = [
    GITHUB,
    "github_pat_" + "11ABCDEFG0" * 4,
    "glpat-" + "x" * 20,
    "xoxb-1234567890-abcdefghij",
    "sk-ant-api03-" + "Zz9" * 10,
    "sk-proj-" + "q" * 40,
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "AIza" + "SyA-1234567890abcdefghijklmnopqrstu",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]


@pytest.mark.parametrize("token", TOKENS)
def test_a_known_token_is_redacted_bare_and_inside_a_path(token: str) -> None:
    assert redact_argv(["srv", token]) == ["srv", placeholder(token)]
    assert redact_argv(["srv", f"--root=/data/{token}/x"]) == ["srv", f"--root=/data/{placeholder(token)}/x"]


@pytest.mark.parametrize(
    "word",
    ["sk-learn", "task-management-server-for-teams", "desk-top-application-frameworks", "ghp_short", "AKIA"],
)
def test_words_that_only_look_like_a_token_prefix_are_kept(word: str) -> None:
    assert redact_argv(["srv", word]) == ["srv", word]


def test_a_redacted_token_is_not_redacted_again() -> None:
    once = redact_text(f"Bearer {GITHUB}")
    assert once == f"Bearer {placeholder(GITHUB)}"
    assert redact_text(once) == once and PLACEHOLDER.search(once)


@pytest.mark.slow
def test_a_bare_token_on_the_servers_command_line_never_reaches_the_database(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    server = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.readline())", GITHUB]
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db), "--", *server], input=ping, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    for file in tmp_path.iterdir():  # the WAL too
        assert GITHUB.encode() not in file.read_bytes(), file
    [(upstream,)] = query(db, "select upstream from sessions")
    # Placeholders are keyed per process: the recorder's differs from ours.
    assert GITHUB not in upstream and PLACEHOLDER.search(upstream)


@pytest.mark.slow
def test_secrets_a_server_prints_on_stderr_never_reach_the_database(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    lines = [
        f"connecting with token {GITHUB}",
        "Authorization: Bearer s3cr3t-b34r3r-v4lu3",
        "fetching https://alice:hunter2hunter2@example.com/api",
        "OPENAI_API_KEY=sk-proj-" + "q" * 40,
    ]
    script = (
        "import sys; sys.stderr.write(sys.argv[1]); sys.stderr.flush();"
        " sys.stdout.write(sys.stdin.readline()); sys.exit(3)"
    )
    server = [sys.executable, "-c", script, "".join(line + "\n" for line in lines)]
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db), "--", *server], input=ping, capture_output=True, timeout=60
    )
    assert proc.returncode == 3, proc.stderr
    assert GITHUB.encode() in proc.stderr  # the client's log still gets the server's stderr as it was
    recorded = "\n".join(text for (text,) in query(db, "select text from events where kind = 'stderr'"))
    assert "connecting with token «redacted:" in recorded and "fetching https://alice:«redacted:" in recorded
    for secret in (GITHUB, "s3cr3t-b34r3r-v4lu3", "hunter2hunter2", "sk-proj-" + "q" * 40):
        for file in tmp_path.iterdir():  # the events, the session's error and stderr tail, the WAL
            assert secret.encode() not in file.read_bytes(), (secret, file)
