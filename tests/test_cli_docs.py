"""Every command and every option is documented, and `mcptape --help` lists every command."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import click
import pytest

from mcptape.cli.main import COMMANDS, cli
from tests.conftest import MCPTAPE


def load(name: str) -> click.Command:
    ctx = click.Context(cli)
    command = cli.get_command(ctx, name)
    assert command is not None, f"{name} is in COMMANDS but the group cannot load it"
    return command


def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
    """The command and, for a group, each of its subcommands with its full path."""
    yield path, command
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(click.Context(command)):
            sub = command.get_command(click.Context(command), sub_name)
            assert sub is not None
            yield from walk(sub, f"{path} {sub_name}")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_and_each_of_its_options_has_help_text(name: str) -> None:
    for path, command in walk(load(name), name):
        assert (command.help or "").strip(), f"`mcptape {path}` has no docstring (its help text)"
        undocumented = [
            "/".join(param.opts)
            for param in command.params
            if isinstance(param, click.Option) and not (param.help or "").strip()
        ]
        assert not undocumented, f"`mcptape {path}` options without help text: {', '.join(undocumented)}"


@pytest.mark.parametrize("name", ["sessions", "show", "sql", "export"])
def test_read_commands_show_worked_examples(name: str) -> None:
    help_text = load(name).help or ""
    assert "Examples:" in help_text
    assert f"mcptape {name}" in help_text


def test_mcptape_help_lists_every_command() -> None:
    result = subprocess.run([*MCPTAPE, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    listed = set()
    in_commands = False
    for line in result.stdout.splitlines():
        if line.startswith("Commands:"):
            in_commands = True
        elif in_commands and line.startswith("  ") and line.strip():
            listed.add(line.split()[0])
    assert listed == set(COMMANDS)
