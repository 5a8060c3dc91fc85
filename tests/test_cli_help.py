"""Help reads at 80 columns: `--help` is a summary, `--help-all` the whole, no line wider than 80.

In process (click's runner at a terminal width of 80): the help of every command, the whole
help of every command, and `mcptape --help-all`, which prints all of it.
"""

from __future__ import annotations

import inspect
import re

import click
import pytest
from click.testing import CliRunner

from mcptape.cli.helptext import Command
from mcptape.cli.main import COMMANDS, cli

WIDTH = 80
SUMMARY_LINES = 60


def help_of(*args: str) -> str:
    result = CliRunner().invoke(
        cli, list(args), terminal_width=WIDTH, prog_name="mcptape", catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None
    return found


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_is_a_summary_that_fits_80_columns(name: str) -> None:
    text = help_of(name, "--help")
    assert wide(text) == []
    assert len(text.splitlines()) <= SUMMARY_LINES, (
        f"`mcptape {name} --help` is {len(text.splitlines())} lines"
    )
    assert "--help-all" in text


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_all_is_the_whole_and_fits_80_columns(name: str) -> None:
    text = help_of(name, "--help-all")
    assert wide(text) == []
    flat = squeezed(text)  # click wraps lines at spaces and after hyphens
    found = command(name)
    assert isinstance(found, Command)
    for param in found.params:
        if isinstance(param, click.Option) and param.help:
            assert squeezed(param.help) in flat, f"{name} {param.opts[0]}"
    details = inspect.cleandoc(found.help or "").partition("\f")[2]
    for paragraph in re.split(r"\n\s*\n", details):
        words = squeezed(paragraph.replace("\b", ""))
        if words:
            assert words[:60] in flat, f"{name}: {words[:60]!r} missing from --help-all"


def test_mcptape_help_all_holds_every_command_whole_at_80_columns() -> None:
    text = help_of("--help-all")
    assert wide(text) == []
    for name in COMMANDS:
        assert f"Usage: mcptape {name} " in text or f"Usage: mcptape {name}\n" in text
    assert "--help-all" in help_of("--help")


def test_serve_url_is_where_misses_are_forwarded_not_a_replay_target() -> None:
    text = " ".join(help_of("serve", "--help-all").split())
    assert "Replay against" not in text
    assert "--url URL With --on-miss forward:" in text


def test_record_exit_status_2_covers_a_database_that_cannot_be_opened() -> None:
    text = " ".join(help_of("record", "--help").split())
    assert "2 the server could not be started or the database could not be opened" in text


@pytest.mark.slow
def test_the_script_call_help_shows_runs_against_the_reference_server() -> None:
    import json
    import subprocess

    from tests.helpers.paths import MCPTAPE, everything_server_cmd

    server = everything_server_cmd()
    assert server is not None, "tests/npm is not installed: run npm ci in tests/npm"
    text = help_of("call", "--help-all")
    script = text[text.index('[{"method"') : text.index("}]", text.index('[{"method"')) + 2]
    steps = json.loads(script)
    assert [step["method"] for step in steps] == ["tools/list", "tools/call", "resources/read"]
    proc = subprocess.run(
        [*MCPTAPE, "call", "--script", "-", "--no-record", "--structured", "--", *server],
        input=script, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"success": true' in proc.stdout.replace('":true', '": true')
