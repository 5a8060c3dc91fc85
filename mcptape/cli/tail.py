"""`mcptape tail`: every exchange of every recording process, printed as it completes.

The lines come from :class:`mcptape.view.reader.FeedReader` (the viewer's live updates
read the same feed); :func:`render` lays an item out in 80 columns: local time, session,
direction, method and subject, id, duration, status, then a summary as far as the
terminal goes.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, Final

import click

from mcptape.cli.common import UserError, db_option, writing_output
from mcptape.cli.helptext import Command
from mcptape.terminal import safe

if TYPE_CHECKING:
    from mcptape.view.feed import FeedItem
    from mcptape.view.following import Following

DEFAULT_POLL_S: Final = 0.1
SESSION_WIDTH: Final = 10
METHOD_WIDTH: Final = 26
ID_WIDTH: Final = 6
DURATION_WIDTH: Final = 7
ARROWS: Final = {"c2s": "→", "s2c": "←"}
# The request's direction says who asked: a client request, or a server request (←).
_EXCHANGE_TYPES: Final = ("exchange", "server_request", "unanswered")


def clock(ts: float) -> str:
    """Local wall-clock time with milliseconds: ``14:03:07.042``."""
    whole = time.localtime(ts)
    return time.strftime("%H:%M:%S", whole) + f".{int((ts % 1) * 1000):03d}"


def duration_text(ms: float | None) -> str:
    """``0.42ms``, ``12.3ms``, ``1.24s``, ``2m03s``; empty when unknown."""
    if ms is None:
        return ""
    if ms < 10:
        return f"{ms:.2f}ms"
    if ms < 1000:
        return f"{ms:.1f}ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f}s"
    minutes, seconds = divmod(int(ms / 1000), 60)
    return f"{minutes}m{seconds:02d}s"


def session_label(session_id: str, session: dict[str, Any] | None) -> str:
    """The session's name, or the start of its id when it has none, in :data:`SESSION_WIDTH` columns."""
    name = (session or {}).get("name") or session_id[:8]
    return fit(name, SESSION_WIDTH)


def fit(text: str, width: int) -> str:
    """``text`` escaped, cut with ``…`` or padded to exactly ``width`` columns."""
    from mcptape.cli.output import cut, display_width

    text = cut(safe(text), width)
    return text + " " * (width - display_width(text))


def render(item: FeedItem, session: dict[str, Any] | None) -> str:
    """One line for an item (see the module docstring); everything recorded is escaped."""
    head = f"{clock(item.ts)} {session_label(item.session_id, session)} "
    if item.type == "event":
        from mcptape.cli.show import KIND_SHORT

        kind = KIND_SHORT.get(item.method or "", item.method or "")
        return (head + f"· {fit(kind, 6)} {safe(item.detail)}").rstrip()
    mark = ARROWS.get(item.direction or "", "?")
    what = item.method or "?"
    if item.subject:
        what = f"{what} {item.subject}"
    rpc_id = f"#{item.rpc_id}" if item.rpc_id is not None else ""
    if item.type in _EXCHANGE_TYPES:
        duration = duration_text(item.duration_ms).rjust(DURATION_WIDTH)
        status = item.status + (" (proxy)" if item.origin == "proxy" else "")
        line = f"{head}{mark} {fit(what, METHOD_WIDTH)} {fit(rpc_id, ID_WIDTH)} {duration} {safe(status)}"
        if item.detail and item.status != "ok":
            line += f": {safe(item.detail)}"
        return line.rstrip()
    if item.type == "notification":
        return f"{head}{mark} {fit(what, METHOD_WIDTH)} {safe(item.detail)}".rstrip()
    status = f"{item.status}: " if item.status else ""
    return f"{head}{mark} {fit(what, METHOD_WIDTH)} {fit(rpc_id, ID_WIDTH)} {safe(status + item.detail)}".rstrip()


def session_line(row: dict[str, Any], first: bool) -> str:
    """A line when a session shows up (``first``) or ends."""
    label = session_label(row["id"], row)
    when = row["started_at"] if first else (row["ended_at"] or time.time())
    if first:
        what = f"session {row['id'][:12]} {row['mode']} ({row['status']}) {row['upstream'] or ''}"
        return f"{clock(when)} {label} ▸ {safe(what)}".rstrip()
    what = f"session {row['id'][:12]} ended: {row['status']}"
    return f"{clock(when)} {label} ■ {safe(what)}"


def item_json(item: FeedItem, session: dict[str, Any] | None) -> str:
    """An item as one NDJSON line, with the session's name."""
    import orjson

    from mcptape.cli.output import json_text, json_with_surrogates

    obj = item.as_json()
    obj["session_name"] = (session or {}).get("name")
    try:
        return json_text(orjson.dumps(obj))
    except TypeError:  # a lone surrogate in a recorded string
        return json_with_surrogates(obj)


@click.command(
    cls=Command,
    summary_options=("--session", "--name", "--method", "--slow", "--errors", "--json", "--db"),
)
@db_option
@click.option(
    "--session",
    "session_refs",
    multiple=True,
    metavar="SESSION",
    help="Only this session (an id, a unique prefix, a name or `last`) or this conversation (a shared "
    "conversation_id, trace-... or client-...: see the conversations view), also where it goes on (repeatable).",
)
@click.option(
    "--name",
    "names",
    multiple=True,
    metavar="PATTERN",
    help="Only sessions whose name matches this shell pattern (repeatable).",
)
@click.option(
    "--method",
    "methods",
    multiple=True,
    metavar="PATTERN",
    help="Only these methods (shell pattern), or METHOD:TOOL such as 'tools/call:weather' (repeatable).",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    metavar="KIND",
    help="Only these: exchange, server-request, notification, message, event, stderr, unanswered (repeatable).",
)
@click.option(
    "--slow",
    "slow_ms",
    type=click.FloatRange(min=0),
    metavar="MS",
    help="Only exchanges that took at least MS milliseconds.",
)
@click.option(
    "--errors",
    is_flag=True,
    help="Only what failed: error replies, tool errors, unanswered requests, bad lines, errors.",
)
@click.option("--json", "as_json", is_flag=True, help="Print each item as one JSON object per line (NDJSON).")
@click.option(
    "--last",
    "last_frames",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Begin with the last N frames already recorded.",
)
@click.option(
    "--poll",
    "poll_s",
    type=click.FloatRange(min=0.01, max=10),
    default=DEFAULT_POLL_S,
    show_default=True,
    metavar="SECONDS",
    help="How often to look for new frames.",
)
def tail(
    db: str | None, session_refs: tuple[str, ...], names: tuple[str, ...], methods: tuple[str, ...],
    kinds: tuple[str, ...], slow_ms: float | None, errors: bool, as_json: bool, last_frames: int, poll_s: float,
) -> None:  # fmt: skip
    """Follow every recording as it happens: one line per exchange as it completes.

    Reads the recording database (SQLite or PostgreSQL) that record, proxy,
    call, replay and serve write to, wherever they run: no server needed.
    Each line gives the local time, the session (its name, else the start of
    its id), → for a client's request or ← for the server's (sampling,
    elicitation, roots), the method and tool, the JSON-RPC id, how long the
    answer took and its status (ok, error CODE, tool error, input required,
    unanswered when the session ended first). Notifications (← log messages,
    progress), the server's stderr and process events (·) come inline, and
    ▸/■ mark a session's start and end. Lines fit 80 columns; what a
    recording holds is shown escaped. Ctrl-C stops it (exit status 0).

    \b
    Examples:
      mcptape tail
      mcptape tail --name 'files*' --method 'tools/*' --slow 500
      mcptape tail --errors --kind exchange --kind stderr
      mcptape tail --json | jq 'select(.status != "ok")'
      mcptape tail --session trace-4bf92f3577b34da6a3ce929d0e0e4736 --last 100
    \f
    --session also takes a conversation (as `mcptape show` does) and follows
    it as it grows: every session row sharing its conversation_id, on any
    replica, also one opened later; for a trace-... or client-... id of
    2026-07-28 traffic, each exchange that starts it (its trace, its client)
    or continues it (echoes a requestState, polls a task it started),
    wherever it is recorded, and the stderr of those sessions while one of
    its exchanges runs there.

    With --json, each item is one JSON object per line: {type, session_id,
    session_name, ts, method, subject, rpc_id, direction, started,
    duration_ms, status, detail, seq, reply_seq, origin, size}.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.sessions import open_for_reading
    from mcptape.store.describe import database_message
    from mcptape.view.filters import ItemFilter

    store = open_for_reading(db)
    try:
        try:
            item_filter = ItemFilter.build(
                names=names, methods=methods, kinds=kinds, slow_ms=slow_ms, errors=errors
            )
        except ValueError as exc:
            raise UserError(f"--kind: {exc}") from None
        following = _following(store, session_refs) if session_refs else None
        try:
            _follow(store, item_filter, following, as_json, last_frames, poll_s)
        except SQLAlchemyError as exc:
            raise UserError(f"cannot read the recording: {database_message(exc)}") from None
    finally:
        store.close()


def _following(store: Any, refs: tuple[str, ...]) -> Following:
    """What --session names, each resolved once; a stitched conversation learns what it holds."""
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.cli.sessions import target_or_error
    from mcptape.store.describe import database_message
    from mcptape.store.targets import target_frames
    from mcptape.view.following import Following

    targets = [target_or_error(store, ref) for ref in refs]
    following = Following(targets)
    try:
        for target in targets:
            if target.conversation is not None and target.seqs is not None:
                frames = target_frames(store, target)
                following.seed(target.conversation, ((target.session_ids[i], f) for i, f in frames))
    except SQLAlchemyError as exc:
        raise UserError(f"cannot read the recording: {database_message(exc)}") from None
    return following


def _follow(
    store: Any, item_filter: Any, following: Following | None, as_json: bool, last_frames: int, poll_s: float
) -> None:
    from sqlalchemy import func, select
    from sqlalchemy.exc import OperationalError

    from mcptape.cli.output import cut, terminal_width
    from mcptape.store.schema import frames
    from mcptape.terminal import say
    from mcptape.view.reader import FeedReader

    after = None
    if last_frames:
        with store.engine.connect() as conn:
            after = max(0, (conn.execute(select(func.max(frames.c.id))).scalar() or 0) - last_frames)
    only = None if following is None or following.everything_read else following.session_ids
    stitched = following is not None and bool(following.stitched)
    reader = FeedReader(store, session_ids=only, after_frame=after, meta=stitched)
    width = None if as_json else terminal_width()
    out = sys.stdout
    say(f"following {store.where} (Ctrl-C to stop)")
    printer = Printer(item_filter, as_json, following)
    failing = False
    try:
        with writing_output():
            while True:
                try:
                    found = reader.poll()
                except OperationalError as exc:  # a server restarting, a lock: try again
                    if not failing:
                        from mcptape.store.describe import database_message

                        say(f"cannot read {store.where} for now ({database_message(exc)}); retrying")
                    failing = True
                    time.sleep(max(poll_s, 0.5))
                    continue
                failing = False
                lines = printer.lines(found, reader.sessions)
                if lines:
                    out.write("".join((cut(line, width) if width else line) + "\n" for line in lines))
                    out.flush()
                if not found.more:
                    time.sleep(poll_s)
    except KeyboardInterrupt:
        return  # Ctrl-C is how tail is meant to end
    finally:
        reader.close()


class Printer:
    """The lines a poll gives: sessions showing up or ending (not with --json), then the items kept."""

    def __init__(self, item_filter: Any, as_json: bool, following: Following | None = None) -> None:
        self.filter = item_filter
        self.as_json = as_json
        self.following = following
        self._shown: set[str] = set()

    def lines(self, found: Any, sessions: dict[str, dict[str, Any]]) -> list[str]:
        lines: list[str] = []
        if self.following is not None:
            self.following.feed(found.frames, sessions)
        if not self.as_json:
            for row in found.sessions:
                if self._session_wanted(row):
                    first = row["id"] not in self._shown
                    self._shown.add(row["id"])
                    if first or row["status"] != "running":
                        lines.append(session_line(row, first=first))
        for item in found.items:
            session = sessions.get(item.session_id)
            if self.following is not None and not self.following.wants(item):
                continue
            if self.filter.matches(item, session):
                lines.append(item_json(item, session) if self.as_json else render(item, session))
        return lines

    def _session_wanted(self, row: dict[str, Any]) -> bool:
        import fnmatch

        if self.following is not None and not self.following.wants_session(row["id"], row):
            return False
        names = self.filter.names
        return not names or any(fnmatch.fnmatchcase(row["name"] or "", n) for n in names)
