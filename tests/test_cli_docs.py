"""Every command and every option is documented, and `mcptape --help` lists every command."""

from __future__ import annotations

import inspect
import re
import subprocess
from collections.abc import Iterator

import click
import pytest

from mcptape.cli.main import COMMANDS, cli
from tests.helpers.paths import MCPTAPE, ROOT


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


@pytest.mark.slow
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


# -- every command the documentation names exists -------------------------------------------

# Commands planned in DESIGN.md: text may name them only once they are registered.
PLANNED = ("proxy", "servers", "call", "replay", "serve", "diff")
_FENCED = re.compile(r"```.*?\n(.*?)```", re.S)
_INLINE = re.compile(r"`([^`\n]+)`")
_INVOKED = re.compile(r"(?:^|[\s`$(/'\"])mcptape\s+([a-z][a-z-]*)", re.M)


def code_in(text: str) -> list[str]:
    """The parts of a text that are commands, not prose: fenced blocks, `inline code`, and
    indented lines that start with `mcptape ` (a help text's examples)."""
    pieces = _FENCED.findall(text)
    pieces += _INLINE.findall(_FENCED.sub("", text))
    pieces += [line for line in text.splitlines() if re.match(r"\s+mcptape ", line)]
    return pieces


def named_commands(text: str) -> set[str]:
    """Every `mcptape NAME` in the commands of ``text``, and every planned command in backticks."""
    names = set()
    for piece in code_in(text):
        names.update(_INVOKED.findall(piece))
        if piece.strip() in PLANNED:
            names.add(piece.strip())
    return names


def help_texts() -> Iterator[tuple[str, str]]:
    """(where, text) for the group's help and every command's and option's help."""
    yield "mcptape --help", inspect.cleandoc(cli.help or "")
    for name in COMMANDS:
        for path, command in walk(load(name), name):
            yield f"mcptape {path} --help", inspect.cleandoc(command.help or "")
            for param in command.params:
                if isinstance(param, click.Option) and param.help:
                    yield f"mcptape {path} {'/'.join(param.opts)}", param.help


def test_named_commands_are_found_in_code_not_prose() -> None:
    text = "mcptape sits between.\n  mcptape export last\n\n```sh\nmcptape show last\n.venv/bin/mcptape demo\n```\nsee `replay` and `mcptape sql`"
    assert named_commands(text) == {"export", "show", "demo", "replay", "sql"}


def test_every_command_the_help_texts_name_exists() -> None:
    wrong = {
        where: sorted(named - set(COMMANDS))
        for where, text in help_texts()
        if (named := named_commands(text))
    }
    assert {where: names for where, names in wrong.items() if names} == {}


def test_every_command_the_readme_names_exists() -> None:
    named = named_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert named, "the README names no command at all?"
    assert sorted(named - set(COMMANDS)) == []


def test_the_readme_and_help_promise_nothing_that_is_not_there() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    intro = readme.split("\n## ", 1)[0]
    # Replay is planned, not built: the first paragraph must not promise it.
    if "replay" not in COMMANDS:
        assert "replay" not in intro.lower()
    assert "any MCP server" not in readme  # only stdio servers can be recorded today
    for where, text in help_texts():
        assert "corpus" not in text.lower(), f"{where} names a 'corpus' format it never explains"
        if "replay" not in COMMANDS:
            assert "replayed" not in text, f"{where} says something can be replayed"
