"""Hints for the usage slips people make most: a mistyped command, a missing ``--``.

Pure functions over what was typed and the commands' declared parameters; the group in
:mod:`mcptape.cli.main` adds their text to click's usage errors.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Iterable, Sequence

import click


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` Did you mean 'record'?`` for the nearest choice(s), or an empty string."""
    matches = difflib.get_close_matches(word, list(choices), n=2, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"


def takes_a_command(command: click.Command) -> bool:
    """True when ``command`` ends in a ``-- COMMAND [ARGS]...`` argument (any number of words)."""
    return any(isinstance(p, click.Argument) and p.nargs == -1 for p in command.params)


def command_start(command: click.Command, args: Sequence[str]) -> int | None:
    """Where the server's command begins in ``args`` (what followed the subcommand's name):
    the first word that is neither one of ``command``'s options, nor an option's value, nor
    one of the arguments it takes before the command (``replay SESSION -- COMMAND``)."""
    takes_value: set[str] = set()
    known: set[str] = set()
    fixed = 0  # positional arguments before the command
    for param in command.params:
        if isinstance(param, click.Option):
            names = [*param.opts, *param.secondary_opts]
            known.update(names)
            if not param.is_flag and not param.count:
                takes_value.update(param.opts)
        elif isinstance(param, click.Argument) and param.nargs > 0 and not _is_variadic_seen(command, param):
            fixed += param.nargs
    skip = False
    for index, word in enumerate(args):
        if skip:
            skip = False
            continue
        if word == "--":
            return None  # the user did put one
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            if name not in known:
                return None  # the unknown option comes before any command word
            skip = name in takes_value and "=" not in word
            continue
        if fixed:
            fixed -= 1
            continue
        return index
    return None


def _is_variadic_seen(command: click.Command, param: click.Argument) -> bool:
    """Whether ``param`` comes after the command's variadic argument (then it is not before it)."""
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    variadic = next((i for i, p in enumerate(arguments) if p.nargs == -1), len(arguments))
    return arguments.index(param) > variadic


def double_dash_hint(command: click.Command, args: Sequence[str], option: str) -> str:
    """For an unknown ``option`` given to a command that runs another one: put ``--`` first."""
    if not takes_a_command(command):
        return ""
    start = command_start(command, args)
    if start is None:
        return f"If {option} is meant for the server, put -- before the server's command."
    fixed = [*args[:start], "--", *args[start:]]
    name = command.name or "record"
    return (
        f"{option} belongs to the server's command: put -- before it, "
        f"as in: mcptape {name} {shlex.join(fixed)}"
    )
