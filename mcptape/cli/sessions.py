"""`mcptape sessions`: the recorded sessions, latest first; and what every read command shares
to open the database and find a session from what the user typed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command
from mcptape.cli.output import output_options
from mcptape.store.describe import (
    DATA_COLUMNS,
    data_row,
    database_message,
    session_label,
)
from mcptape.terminal import safe

if TYPE_CHECKING:
    from sqlalchemy import RowMapping

    from mcptape.store import Store
    from mcptape.store.targets import Target

T = TypeVar("T")

# Most useful first: what to type to see it, what it is and what made it, how it ended;
# the long upstream last.
# Short headers: at 80 columns every letter is a letter of a name or a status less.
TABLE_COLUMNS = ["id", "name", "mode", "status", "started", "took", "frames", "server"]
KEEP_WHOLE = ("id", "mode", "started", "took", "frames")
SHRINK_FIRST = ("server", "name", "status")  # a narrow terminal cuts these, in this order


def status_text(status: str | None, exit_code: int | None) -> str:
    """A finished session's status in words (see :func:`mcptape.store.status.status_label`)."""
    from mcptape.store.status import status_label

    return status_label(status, exit_code)


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


def local_time(ts: float | None, now: float | None = None) -> str:
    """Epoch seconds as local wall-clock time, short: ``11-25 21:43`` this year, else ``2025-11-25``."""
    if ts is None:
        return ""
    when = time.localtime(ts)
    if when.tm_year == time.localtime(now).tm_year:
        return time.strftime("%m-%d %H:%M", when)
    return time.strftime("%Y-%m-%d", when)


def table_row(row: RowMapping, label: str) -> list[Any]:
    """A session as the table shows it: short id, name, mode, status ``label``, local start,
    readable duration, frames, the upstream in short."""
    ended = row["ended_at"]
    return [
        row["id"][:12],
        table_name(row),
        row["mode"],
        label,
        local_time(row["started_at"]),
        format_duration(ended - row["started_at"] if ended is not None else None),
        row["frames"],
        short_upstream(row["upstream"]),
    ]


def table_name(row: RowMapping) -> str | None:
    """The session's name; for an unnamed replay or served session, the name of the recording
    it played, in parentheses (it is not that session's name: `show NAME` means the recording)."""
    if row["name"] or not row.get("replay_of_name"):
        return row["name"]
    return f"({row['replay_of_name']})"


def short_upstream(upstream: str | None) -> str | None:
    """A command line as the table shows it, its telling words first: the program without its
    directory, a script of an npm package as the package (``node server-filesystem``), a
    command npm installed as its name (``node_modules/.bin/mcp-server-memory``), other
    long paths as their last two parts. `show` and --json give it whole."""
    if not upstream or "://" in upstream.split(" ", 1)[0]:
        return upstream  # a URL is read from its start
    out = []
    for i, word in enumerate(upstream.split(" ")):
        parts = word.split("/")
        if "/node_modules/" in word:
            package = word.rsplit("/node_modules/", 1)[1].split("/")
            # A scope's package (@scope/name), or an installed command (.bin/name): its name.
            named = (package[0].startswith("@") or package[0] == ".bin") and len(package) > 1
            out.append(package[1] if named else package[0])
        elif word.startswith("/") and i == 0:
            out.append(parts[-1] or word)
        elif word.startswith("/") and len(parts) > 4:
            out.append("…/" + "/".join(parts[-2:]))
        else:
            out.append(word)
    return " ".join(out)


def open_for_reading(db: str | None) -> Store:
    """Open an existing recording database, or fail with a one-line error the user can act on."""
    from mcptape.store import StoreError, open_store

    try:
        return open_store(db, create=False)
    except StoreError as exc:
        raise UserError(str(exc)) from None


def session_or_error(source: Any, ref: str, *, replayable: bool = False) -> RowMapping:
    """The session ``ref`` names, or a one-line error listing candidates (``replayable``: see
    :func:`mcptape.store.queries.resolve_session`)."""
    from mcptape.store.queries import resolve_session

    return _found_or_error(lambda src, name: resolve_session(src, name, replayable=replayable), source, ref)


def target_or_error(source: Any, ref: str) -> Target:
    """The session or conversation ``ref`` names (:func:`mcptape.store.targets.resolve_target`),
    or a one-line error."""
    from mcptape.store.targets import resolve_target

    return _found_or_error(resolve_target, source, ref)


def _found_or_error(lookup: Callable[[Any, str], T], source: Any, ref: str) -> T:
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.store.queries import SessionLookupError

    try:
        return lookup(source, ref)
    except SessionLookupError as exc:
        raise UserError(str(exc)) from None
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the recording: {database_message(exc)}") from None


@click.command(cls=Command)
@db_option
@click.option(
    "--limit", "-n", type=click.IntRange(min=1), default=None, metavar="N", help="Show at most N sessions."
)
@click.option("--name", default=None, help="Only the sessions with this name.")
@output_options
def sessions(db: str | None, limit: int | None, name: str | None, fmt: str) -> None:
    """List recorded sessions, latest first.

    The table shows the short id (what `show` and `export` accept, as does
    any unique prefix, the session name or `last`), the name (a replay's is
    the replayed recording's, in parentheses), the mode (what made it:
    record, proxy, call, replay, serve), the status, the local start time,
    how long it took, its frame count and the server (the upstream: its
    command line in short, or its URL). Statuses: running; ok (the server exited 0);
    closed (the client left, and the server exited or mcptape stopped it;
    "closed (server exit N)" when it exited with N); failed (the server
    exited with an error before sending anything: it did not start); error
    (the server ended the session with status N or signal N); interrupted
    (mcptape was stopped by a signal); lost (still marked running, but the
    recorder on this machine is gone). --json, --nl and --csv give programs
    the full id, ISO 8601 times, the duration in seconds, the status as
    stored (or lost), the exit code, protocol version, client and server
    names, and the session a replay played (replay_of).

    \b
    Examples:
      mcptape sessions
      mcptape sessions -n 5 --name everything
      mcptape sessions --nl | jq -r 'select(.status == "error") | .id'
    """
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.output import emit
    from mcptape.store.queries import connect, iter_sessions

    store = open_for_reading(db)
    listed = 0
    try:
        with connect(store) as conn:
            # Rows are turned into what is printed as they arrive: 100,000 sessions held as
            # database rows took 250 MB; --json, --nl and --csv stream them.
            if fmt == "table":
                table = [
                    table_row(r, session_label(store, conn, r))
                    for r in iter_sessions(conn, limit=limit, name=name)
                ]
                listed = len(table)
                emit(table, TABLE_COLUMNS, fmt, keep=KEEP_WHOLE, shrink_first=SHRINK_FIRST)
            else:
                data = (
                    data_row(r, session_label(store, conn, r) == "lost")
                    for r in iter_sessions(conn, limit=limit, name=name)
                )
                emit(data, DATA_COLUMNS, fmt)
    except SQLAlchemyError as exc:
        raise UserError(f"cannot list sessions: {database_message(exc)}") from None
    finally:
        store.close()
    if fmt == "table" and not listed:
        where = f" named {name!r}" if name is not None else ""
        click.echo(safe(f"no sessions{where} in {store.where}"), err=True)
