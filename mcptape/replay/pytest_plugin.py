"""The pytest plugin (entry point ``pytest11``): recordings of MCP sessions as test fixtures.

Two fixtures, one option:

``mcptape_server(command)``
    For testing an MCP *client*: returns the command line the client should start as
    its stdio server. With a recording it is ``mcptape serve`` playing it back (no
    real server needed); when recording, it is ``mcptape record`` in front of
    ``command``, and the session is written to the recording file after the test.

``mcptape_replay(command, recording=None, ignore=(), keep=())``
    For testing an MCP *server*: replays a recording (by default this test's own)
    against ``command`` and fails the test with the diff when responses differ.

``--mcptape-record-mode`` (pytest-recording's modes; a typo is a usage error):

- ``none`` (default): only play recordings; a missing one fails the test;
- ``once``: record when the recording does not exist yet, else play it;
- ``new_episodes``: play the recording; requests it has no answer for go to the real
  server; the file becomes this run's session (recorded answers plus new ones);
- ``all``: always talk to the real server and record, replacing the file
  (``mcptape_replay`` updates the file from the server's answers, never fails);
- ``rewrite``: like ``all``, but the old file is deleted before the test.

Recordings are JSONL files (the format ``mcptape export`` writes) under
``recordings/<test module>/<test name>.jsonl`` next to the test file: text that
reviews and merges like code, needs no database of the user's, and reads the same in
any later mcptape version (a SQLite file would be a binary blob in version control,
and an old schema would need migrating before every run).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

import pytest

MODES: Final = ("none", "once", "new_episodes", "all", "rewrite")
MCPTAPE: Final = [sys.executable, "-m", "mcptape"]
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcptape", "MCP session recordings (mcptape)")
    group.addoption(
        "--mcptape-record-mode",
        choices=MODES,
        default="none",
        help="none (default): play recordings only; once: record missing ones; new_episodes: forward "
        "what a recording lacks to the real server and record it; all: always record; rewrite: "
        "delete, then record.",
    )


def recording_path(node: pytest.Item, name: str | None = None) -> Path:
    """Where a test's recording lives: ``recordings/<module>/<test>.jsonl`` beside the test file."""
    test_file = Path(str(node.path))
    if name is None:
        name = _UNSAFE.sub("_", node.name).strip("_")
    path = Path(name)
    if path.suffix != ".jsonl":
        path = path.with_name(path.name + ".jsonl")
    if len(path.parts) == 1:
        path = Path(test_file.stem) / path
    return test_file.parent / "recordings" / path


@pytest.fixture
def mcptape_record_mode(request: pytest.FixtureRequest) -> str:
    """The --mcptape-record-mode in effect."""
    return str(request.config.getoption("--mcptape-record-mode"))


def _export(db: Path, name: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [*MCPTAPE, "export", name, "--db", str(db), "-o", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"mcptape could not write the recording {target}: {proc.stderr.strip()}")


def _latest_of_mode(db: Path, mode: str) -> str | None:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        row = con.execute(
            "select id from sessions where mode = ? order by started_at desc limit 1", (mode,)
        ).fetchone()
    finally:
        con.close()
    return row[0] if row else None


def _check(path: Path) -> None:
    """Fail the test on a recording `mcptape serve` cannot read (a hand edit gone wrong), saying
    where: else the client under test fails on a server that died at start, in its own words."""
    from mcptape.replay.tape import TapeError, read_jsonl

    try:
        read_jsonl(path)
    except TapeError as exc:
        pytest.fail(f"the MCP recording cannot be played: {exc}", pytrace=False)


@pytest.fixture
def mcptape_server(
    request: pytest.FixtureRequest, mcptape_record_mode: str, tmp_path: Path
) -> Iterator[Callable[..., list[str]]]:
    """A factory: ``mcptape_server(command, recording=None)`` -> the argv a client under test starts."""
    made: list[tuple[str, str, Path]] = []  # (mode of the session, its name or "", recording file)

    def factory(command: Sequence[str] | None = None, recording: str | None = None) -> list[str]:
        path = recording_path(request.node, recording)
        db = tmp_path / f"mcptape-{len(made)}.db"
        mode = mcptape_record_mode
        if mode == "rewrite" and path.exists():
            path.unlink()
        exists = path.exists()
        if exists and mode in ("none", "once", "new_episodes"):
            _check(path)
        if mode == "none" or (mode == "once" and exists):
            if not exists:
                pytest.fail(
                    f"no MCP recording {path}: run pytest with --mcptape-record-mode=once to record it",
                    pytrace=False,
                )
            return [*MCPTAPE, "serve", "--file", str(path)]
        if not command:
            pytest.fail(f"--mcptape-record-mode={mode} needs the real server's command", pytrace=False)
        if mode == "new_episodes" and exists:
            made.append(("serve", "", path))
            return [
                *MCPTAPE,
                "serve",
                "--file",
                str(path),
                "--db",
                str(db),
                "--on-miss",
                "forward",
                "--",
                *command,
            ]
        name = f"mcptape-pytest-{len(made)}"
        made.append(("record", name, path))
        return [*MCPTAPE, "record", "--db", str(db), "--name", name, "--no-echo-stderr", "--", *command]

    yield factory
    for i, (mode, name, path) in enumerate(made):
        db = tmp_path / f"mcptape-{i}.db"
        if not db.exists():
            continue  # the client never started the server
        ref = name or _latest_of_mode(db, mode)
        if ref:
            _export(db, ref, path)


@pytest.fixture
def mcptape_replay(request: pytest.FixtureRequest, mcptape_record_mode: str) -> Callable[..., str]:
    """A function: ``mcptape_replay(command, recording=None, ignore=(), keep=())`` replays a
    recording against ``command`` and fails the test with the diff; returns the report text."""

    def replay(
        command: Sequence[str],
        recording: str | None = None,
        ignore: Sequence[str] = (),
        keep: Sequence[str] = (),
        timeout: float = 30.0,
    ) -> str:
        path = recording_path(request.node, recording)
        if not path.exists():
            pytest.fail(
                f"no MCP recording {path}: record one with the mcptape_server fixture "
                "(--mcptape-record-mode=once) or `mcptape export SESSION -o FILE`",
                pytrace=False,
            )
        argv: list[str] = [*MCPTAPE, "replay", "--file", str(path), "--timeout", str(timeout)]
        for rule in ignore:
            argv += ["--ignore", rule]
        for category in keep:
            argv += ["--keep", category]
        if mcptape_record_mode in ("all", "rewrite"):
            argv.append("--update")
        proc = subprocess.run([*argv, "--", *command], capture_output=True, text=True, timeout=timeout * 20)
        if proc.returncode == 2:
            pytest.fail(f"mcptape could not replay {path}:\n{proc.stdout}{proc.stderr}", pytrace=False)
        if proc.returncode == 1 and "--update" not in argv:
            pytest.fail(f"the server's responses differ from {path}:\n{proc.stdout}", pytrace=False)
        return proc.stdout

    return replay
