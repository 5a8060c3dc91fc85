"""`mcptape prune`: retention, frames older than a duration removed, emptied sessions with them."""

from __future__ import annotations

import re

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """Seconds in ``30d``, ``12h``, ``90m``, ``2w`` or ``3600s``; UserError otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if not match:
        raise UserError(f"--older-than {text!r} is not a duration such as 30d, 12h, 90m or 2w")
    return float(match.group(1)) * _UNITS[match.group(2)]


@click.command(cls=Command)
@click.option("--older-than", "older_than", required=True, metavar="AGE", help="30d, 12h, 90m, 2w, 3600s.")
@click.option("--dry-run", is_flag=True, help="Count what would go; remove nothing.")
@db_option
def prune(older_than: str, dry_run: bool, db: str | None) -> None:
    """Remove recorded frames older than AGE, and the sessions left with none.

    On PostgreSQL whole days of frames go at once (frames is partitioned by day); what
    is left older (SQLite, the default partition) is deleted in small batches, so
    recorders and gateways writing meanwhile are never held up for long. Events older
    than AGE go too, and sessions that ended before it and have no frame left. A
    running session is never removed; the views are unchanged.

    \b
    Examples:
      mcptape prune --older-than 30d
      mcptape prune --older-than 12h --dry-run \\
          --db postgresql+psycopg://mcptape@db/recordings
    """
    import time

    from mcptape.store import StoreError, open_store
    from mcptape.store.prune import prune as run_prune

    cutoff = time.time() - parse_age(older_than)
    try:
        with open_store(db) as store:
            if store.readonly:
                raise UserError(f"{store.where} is read-only here: nothing can be pruned")
            done = run_prune(store, cutoff, dry_run=dry_run)
    except StoreError as exc:
        raise UserError(str(exc)) from None
    verb = "would remove" if dry_run else "removed"
    dropped = f" ({done.partitions} day partition(s) dropped)" if done.partitions else ""
    click.echo(
        f"{verb} {done.frames} frame(s){dropped}, {done.events} event(s) and {done.sessions} session(s) "
        f"older than {older_than.strip()}"
    )
