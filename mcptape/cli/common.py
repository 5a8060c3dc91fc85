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
        from mcptape.cli.safe_text import safe

        # Messages quote names a recording controls (sessions, servers, methods).
        click.echo(f"mcptape: error: {safe(self.format_message())}", err=True)


class Interrupted(click.ClickException):
    """Ctrl-C: one line on stderr and the status a shell gives SIGINT (130), not click's "Aborted!"."""

    exit_code = 130

    def __init__(self, message: str = "interrupted") -> None:
        super().__init__(message)

    def show(self, file: Any = None) -> None:
        click.echo(f"mcptape: {self.format_message()}", err=True)


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


class Seconds(click.ParamType):
    """A positive, finite number of seconds: ``nan``, ``inf``, 0 and negatives are usage errors."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        import math

        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{value!r} is not a time limit: give a finite number of seconds above 0", param, ctx)
        return seconds
