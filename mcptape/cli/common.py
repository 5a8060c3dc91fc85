"""Pieces every command shares: the --db option, one-line user errors, output formats."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class UserError(click.ClickException):
    """A mistake the user can fix: printed as one line, exit status 2, never a traceback."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        from mcptape.terminal import safe

        # Messages quote names a recording controls (sessions, servers, methods).
        click.echo(f"mcptape: error: {safe(self.format_message())}", err=True)


class Interrupted(click.ClickException):
    """Ctrl-C: one line on stderr and the status a shell gives SIGINT (130), not click's "Aborted!"."""

    exit_code = 130

    def __init__(self, message: str = "interrupted") -> None:
        super().__init__(message)

    def show(self, file: Any = None) -> None:
        click.echo(f"mcptape: {self.format_message()}", err=True)


class OutputError(click.ClickException):
    """Our own output cannot be written (a full disk, an I/O error): one line, exit status 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"mcptape: error: {self.format_message()}", err=True)


@contextlib.contextmanager
def writing_output() -> Iterator[None]:
    """Turn a failed write of our output into :class:`OutputError` instead of a traceback.

    A closed pipe (``| head``) is left to click, which ends quietly.
    """
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        raise OutputError(f"cannot write the output: {exc.strerror or exc}") from None


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


class MissingExtra(click.UsageError):
    """An option that needs an optional extra not installed: one line saying what to install
    (a usage error: ``call`` reports those with its own exit status)."""

    def show(self, file: Any = None) -> None:
        from mcptape.terminal import safe

        click.echo(f"mcptape: error: {safe(self.format_message())}", err=True)


def _check_otlp(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from urllib.parse import urlsplit

    from mcptape.telemetry import missing_packages

    try:
        parts = urlsplit(value)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        ok = False
    if not ok:
        raise click.BadParameter(
            f"{value!r} is not an OTLP/HTTP receiver's URL; expected http(s)://HOST:PORT, "
            "e.g. http://localhost:4318 (Jaeger, the OpenTelemetry Collector)"
        )
    missing = missing_packages()
    if missing is not None:
        raise MissingExtra(f"--otlp: {missing}")
    return value


def otlp_option(func: F) -> F:
    """`--otlp URL`: export each exchange as an OpenTelemetry span (and the duration metrics) over OTLP/HTTP."""
    return click.option(
        "--otlp",
        "otlp",
        metavar="URL",
        default=None,
        callback=_check_otlp,
        help="Export one OpenTelemetry span per exchange, and the MCP duration histograms, to the "
        "OTLP/HTTP receiver at URL (e.g. Jaeger or a Collector: http://localhost:4318). Needs "
        "mcptape[otel]. Export never holds frames back: what a full queue cannot take is counted "
        "in an otlp_dropped event.",
    )(func)
