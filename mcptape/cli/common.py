"""Pieces every command shares: the --db option, one-line user errors, output formats."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class UserError(click.ClickException):
    """A mistake the user can fix: printed as one line, exit status 2, never a traceback."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"mcptape: error: {self.format_message()}", err=True)


def db_option(func: F) -> F:
    """`--db PATH|URL`: the recording database (default: $MCPTAPE_DB, else the per-user data dir)."""
    return click.option(
        "--db",
        "db",
        metavar="PATH|URL",
        envvar="MCPTAPE_DB",
        show_envvar=True,
        default=None,
        help="Recording database: a file path or a SQLAlchemy URL (default: the per-user data directory).",
    )(func)
