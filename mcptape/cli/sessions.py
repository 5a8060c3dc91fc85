"""`mcptape sessions`: the recorded sessions, latest first; and what every read command shares
to open the database and find a session from what the user typed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.output import output_options

if TYPE_CHECKING:
    from sqlalchemy import RowMapping

    from mcptape.store import Store

TABLE_COLUMNS = ["id", "name", "upstream", "started", "duration", "frames", "status"]
KEEP_WHOLE = ("id", "started", "duration", "frames", "status")  # a narrow terminal cuts name and upstream
DATA_COLUMNS = [
    "id", "name", "mode", "transport", "upstream", "started", "ended", "duration_s",
    "frames", "status", "exit_code", "protocol_version", "client", "server",
]  # fmt: skip


def status_text(status: str | None, exit_code: int | None) -> str:
    """A session's status with its upstream's exit: ``ok (exit 0)``, ``error (signal 9)``."""
    text = status or "?"
    if exit_code is None:
        return text
    if exit_code < 0:  # subprocess reports death by signal N as -N
        return f"{text} (signal {-exit_code})"
    return f"{text} (exit {exit_code})"


def format_duration(seconds: float | None) -> str:
    """A duration for people: ``0.84s``, ``12.3s``, ``4m05s``, ``2h03m``; empty when unknown."""
    if seconds is None or seconds < 0:
        return ""
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def local_time(ts: float | None) -> str:
    """Epoch seconds as local wall-clock time, to the minute (``2026-11-25 21:43``)."""
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def iso_time(ts: float | None) -> str | None:
    """Epoch seconds as ISO 8601 with the local UTC offset, for machine-readable output."""
    if ts is None:
        return None
    from datetime import datetime

    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="milliseconds")


def _peer(name: str | None, version: str | None) -> str | None:
    return f"{name} {version}".rstrip() if name and version else name


def table_row(row: RowMapping) -> list[Any]:
    """A session as the table shows it: short id, local start time, readable duration."""
    ended = row["ended_at"]
    return [
        row["id"][:12],
        row["name"],
        row["upstream"],
        local_time(row["started_at"]),
        format_duration(ended - row["started_at"] if ended is not None else None),
        row["frames"],
        status_text(row["status"], row["exit_code"]),
    ]


def data_row(row: RowMapping) -> list[Any]:
    """A session for programs: full id, ISO times, duration in seconds, exit code on its own."""
    ended = row["ended_at"]
    return [
        row["id"],
        row["name"],
        row["mode"],
        row["transport"],
        row["upstream"],
        iso_time(row["started_at"]),
        iso_time(ended),
        round(ended - row["started_at"], 6) if ended is not None else None,
        row["frames"],
        row["status"],
        row["exit_code"],
        row["protocol_version"],
        _peer(row["client_name"], row["client_version"]),
        _peer(row["server_name"], row["server_version"]),
    ]


def open_for_reading(db: str | None) -> Store:
    """Open an existing recording database, or fail with a one-line error the user can act on."""
    from mcptape.store import StoreError, open_store

    try:
        return open_store(db, create=False)
    except StoreError as exc:
        raise UserError(str(exc)) from None


def session_or_error(source: Any, ref: str) -> RowMapping:
    """The session ``ref`` names, or a one-line error listing candidates."""
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.store.queries import SessionLookupError, resolve_session

    try:
        return resolve_session(source, ref)
    except SessionLookupError as exc:
        raise UserError(str(exc)) from None
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the sessions table: {database_message(exc)}") from None


def database_message(exc: BaseException) -> str:
    """The database's own one-line message for an SQLAlchemy error, without SQL or links."""
    original = getattr(exc, "orig", None) or exc
    lines = str(original).strip().splitlines()
    return lines[0] if lines else type(original).__name__


@click.command()
@db_option
@click.option(
    "--limit", "-n", type=click.IntRange(min=1), default=None, metavar="N", help="Show at most N sessions."
)
@click.option("--name", default=None, help="Only the sessions with this name.")
@output_options
def sessions(db: str | None, limit: int | None, name: str | None, fmt: str) -> None:
    """List recorded sessions, latest first.

    The table shows the short id (what `show`, `export` and `replay` accept,
    as does any unique prefix, the session name or `last`), the name, the
    upstream, the local start time, how long the session lasted, its frame
    count and its status with the upstream's exit code. --json, --nl and --csv
    give programs the full id, ISO 8601 times, the duration in seconds, the
    exit code, protocol version and client and server names.

    \b
    Examples:
      mcptape sessions
      mcptape sessions -n 5 --name everything
      mcptape sessions --nl | jq -r 'select(.status == "error") | .id'
    """
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.output import emit
    from mcptape.store.queries import list_sessions

    store = open_for_reading(db)
    try:
        rows = list_sessions(store, limit=limit, name=name)
    except SQLAlchemyError as exc:
        raise UserError(f"cannot list sessions: {database_message(exc)}") from None
    finally:
        store.close()
    if fmt == "table":
        emit([table_row(r) for r in rows], TABLE_COLUMNS, fmt, keep=KEEP_WHOLE)
        if not rows:
            where = f" named {name!r}" if name is not None else ""
            click.echo(f"no sessions{where} in {store.where}", err=True)
    else:
        emit((data_row(r) for r in rows), DATA_COLUMNS, fmt)
