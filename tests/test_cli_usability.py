"""The small things a new user trips on, each tried the way a user types it.

A mistyped command, a forgotten `--`, `show --full --json`, plurals, `export -o` onto a
symlink or a FIFO (and the mode of what it writes), Ctrl-C during the demo, the
setuptools metadata that used to bury the test run in warnings, and `show`/`sessions`
in an 80-column terminal (COLUMNS=80, and a real pseudo-terminal 80 columns wide).
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import stat
import struct
import subprocess
import termios
import time
import tomllib
from pathlib import Path

import pytest

from mcptape.cli.hints import command_start, did_you_mean
from mcptape.cli.output import display_width
from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.corpus import BASE, SESSIONS, load_corpus
from tests.helpers.paths import MCPTAPE, ROOT


def mcptape(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPTAPE, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("usability") / "rec.db"
    for name, (file, offset, _) in SESSIONS.items():
        load_corpus(db, file, name, BASE + offset)
    return db


# -- usage slips ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_mistyped_command_gets_the_nearest_one() -> None:
    proc = mcptape("recrod", "--", "true")
    assert proc.returncode == 2
    assert "No such command 'recrod'. Did you mean 'record'?" in proc.stderr
    assert did_you_mean("sesions", ["sessions", "show"]) == " Did you mean 'sessions'?"
    assert did_you_mean("zzz", ["sessions", "show"]) == ""


@pytest.mark.slow
def test_a_server_flag_without_the_double_dash_gets_the_command_line_that_works(tmp_path: Path) -> None:
    proc = mcptape(
        "record", "--name", "files", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "No such option '-y'" in proc.stderr
    assert (
        "put -- before it, as in: mcptape record --name files -- npx -y @modelcontextprotocol/server-filesystem /tmp"
        in proc.stderr
    )
    assert not (tmp_path / "x").exists()


def test_the_double_dash_hint_knows_which_words_are_options_and_values() -> None:
    from mcptape.cli.main import cli

    record = cli.get_command(None, "record")  # type: ignore[arg-type]
    assert record is not None
    assert command_start(record, ["--db", "x.db", "--echo-stderr", "npx", "-y"]) == 3
    assert command_start(record, ["--db=x.db", "node", "s.js"]) == 1
    assert command_start(record, ["-y", "npx"]) is None  # nothing to move: the hint says so in words
    assert command_start(record, ["--", "npx", "-y"]) is None


@pytest.mark.slow
def test_show_refuses_full_with_json_instead_of_ignoring_it(corpus: Path) -> None:
    assert_one_line_error(
        mcptape("show", "last", "--full", "--json", "--db", str(corpus)), "--full and --json"
    )


# -- words ----------------------------------------------------------------------------------


def test_counts_of_one_are_singular() -> None:
    from mcptape.wire.summaries import count_of, summarize_result

    assert [count_of(n, "tool") for n in (0, 1, 2)] == ["0 tools", "1 tool", "2 tools"]
    assert summarize_result("tools/list", None, {"tools": [{"name": "add"}]}) == "1 tool: add"
    assert summarize_result("resources/templates/list", None, {"resourceTemplates": [{"name": "g"}] * 2}) == (
        "2 resource templates: g, g"
    )


# -- export -o ------------------------------------------------------------------------------


@pytest.mark.slow
def test_export_writes_a_private_file_and_says_1_frame(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    from mcptape.store import open_store
    from mcptape.wire.frame import Frame

    store = open_store(str(db))
    sid = store.create_session(mode="record", name="one")
    writer = store.writer()
    writer.add_frame(sid, 1, Frame(b'{"jsonrpc":"2.0","method":"x"}', "c2s"))
    writer.close()
    store.close()
    target = tmp_path / "one.jsonl"
    target.write_text("old\n")
    os.chmod(target, 0o644)
    proc = mcptape("export", "one", "-o", str(target), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("exported 1 frame of session ")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text().count("\n") == 1
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


@pytest.mark.slow
def test_export_refuses_to_replace_a_symlink(corpus: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.jsonl"
    target.write_text("keep me\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert_one_line_error(mcptape("export", "last", "-o", str(link), "--db", str(corpus)), "is a symlink")
    assert link.is_symlink() and target.read_text() == "keep me\n"
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


@pytest.mark.slow
def test_export_refuses_to_replace_a_fifo(corpus: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert_one_line_error(mcptape("export", "last", "-o", str(fifo), "--db", str(corpus)), "is a FIFO")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


# -- Ctrl-C ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_during_the_demo_exits_130_without_aborted(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*MCPTAPE, "demo", "--db", str(tmp_path / "tour.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("An MCP client talks to the demo server")
    time.sleep(0.3)  # the recorder and the server are starting
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground process group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Aborted!" not in err and "Traceback" not in err
    assert err.strip().splitlines()[-1] == "mcptape: the demo was interrupted"


# -- packaging ------------------------------------------------------------------------------


def test_the_license_is_an_spdx_string_with_a_setuptools_that_reads_it() -> None:
    # A `license = {text = ...}` table made setuptools print ~50 lines of deprecation
    # warnings on every `pip install -e .`; an SPDX string needs setuptools 77 or later.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    requires = [r for r in project["build-system"]["requires"] if r.startswith("setuptools")]
    assert requires == ["setuptools>=77"]


# -- 80 columns -----------------------------------------------------------------------------


def run_in_terminal(args: list[str], columns: int = 80, rows: int = 40) -> str:
    """Run ``mcptape ARGS`` on a pseudo-terminal of ``columns`` x ``rows``; what it printed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([*MCPTAPE, *args], stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(30)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("command", [["sessions"], ["show", "everything-ts"], ["show", "everything-py"]])
@pytest.mark.slow
def test_sessions_and_show_fit_a_real_80_column_terminal(corpus: Path, command: list[str]) -> None:
    output = run_in_terminal([*command, "--db", str(corpus)])
    lines = output.splitlines()
    assert len(lines) > 3 and max(len(line) for line in lines) <= 80, output


@pytest.mark.slow
def test_show_keeps_the_summary_readable_at_80_columns(corpus: Path) -> None:
    lines = mcptape("show", "everything-ts", "--db", str(corpus), env={"COLUMNS": "80"}).stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].startswith("session ") and lines[1].startswith("upstream ")
    # Offset, arrow, kind and a method of up to 22 characters take 41 columns: the summary,
    # what a reader came for, keeps the other 39 (it had 24 before).
    cut = [line for line in lines[3:] if line.endswith("…") and len(" ".join(line.split()[3:5])) <= 22]
    assert cut and all(display_width(line) == 80 and line[40] == " " and line[41] != " " for line in cut), cut


@pytest.mark.slow
def test_sessions_at_80_columns_keeps_ids_names_and_status_whole(corpus: Path) -> None:
    lines = mcptape("sessions", "--db", str(corpus), env={"COLUMNS": "80"}).stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert [line.split()[1:4] for line in lines[2:]] == [
        ["py2026", "record", "ok"],
        ["everything-py", "record", "ok"],
        ["everything-ts", "record", "ok"],
    ]


def test_the_double_dash_hint_skips_the_arguments_that_come_before_the_command() -> None:
    import click

    @click.command()
    @click.argument("session")
    @click.option("--timeout", type=float)
    @click.argument("command", nargs=-1)
    def replay(session: str, timeout: float | None, command: tuple[str, ...]) -> None:
        """A command shaped like `replay SESSION -- COMMAND`."""

    assert command_start(replay, ["last", "--timeout", "3", "npx", "-y"]) == 3
    assert command_start(replay, ["last"]) is None
