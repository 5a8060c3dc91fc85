"""`mcptape wrap` and `mcptape unwrap`: route a desktop client's stdio servers through the recorder.

The click commands: loading the config, choosing servers, printing the summary and the
diff. How an entry is wrapped and unwrapped, and how the file is written, is in
:mod:`mcptape.wrapping`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from mcptape.cli.common import UserError, db_option
from mcptape.wrapping import (
    Outcome,
    ensure_backup,
    mcptape_launcher,
    unified_diff,
    unwrap_servers,
    wrap_servers,
    write_atomically,
)


def _load(config: str | None) -> tuple[Path, str, dict[str, Any]]:
    from mcptape.config import ConfigError, default_client_config_path, read_config_document

    path = Path(config) if config is not None else default_client_config_path()
    try:
        text, document = read_config_document(path)
    except ConfigError as exc:
        hint = "" if config is not None else " (the Claude Desktop default; pass CONFIG for another client)"
        raise UserError(f"{exc}{hint}") from None
    return path, text, document


def _selection(document: dict[str, Any], only: tuple[str, ...]) -> frozenset[str] | None:
    if not only:
        return None
    servers = document["mcpServers"]
    # `--only a,b` is `--only a --only b`, unless a server's own name has a comma.
    names = [part for value in only for part in ([value] if value in servers else value.split(","))]
    unknown = [name for name in names if name not in servers]
    if unknown:
        known = ", ".join(servers) or "none"
        raise UserError(
            f"no server named {', '.join(map(repr, unknown))} in the config; its servers: {known}"
        )
    return frozenset(names)


def _apply(
    path: Path,
    old: str,
    new_document: dict[str, Any],
    outcomes: list[Outcome],
    dry_run: bool,
    make_backup: bool,
) -> bool:
    """Show the diff or write the file, then print the summary; returns whether the file changed."""
    from mcptape.config import render_config

    changed = {o.name for o in outcomes if o.action in ("wrapped", "unwrapped")}
    new = render_config(new_document, old, changed)
    out = sys.stderr if dry_run else sys.stdout
    width = max((len(o.name) for o in outcomes), default=0)
    for outcome in outcomes:
        click.echo(f"  {outcome.action:<16} {outcome.name:<{width}}  {outcome.detail}".rstrip(), file=out)
    if new == old:
        click.echo(f"Nothing to change in {path}.", file=out)
        return False
    if dry_run:
        click.echo(unified_diff(old, new, path), nl=False)
        click.echo("Dry run: nothing written.", file=out)
        return False
    try:
        if make_backup:
            backup, made = ensure_backup(path)
            click.echo(
                f"{'Backed up the original to' if made else 'Kept the existing backup'} {backup}", file=out
            )
        write_atomically(path, new)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}; check its permissions") from None
    click.echo(f"Wrote {path}.", file=out)
    return True


@click.command()
@click.argument("config", required=False, metavar="[CONFIG]")
@db_option
@click.option("--dry-run", is_flag=True, help="Print the change as a unified diff; write nothing.")
@click.option(
    "--only", multiple=True, metavar="NAME", help="Wrap only these servers (repeat, or separate with commas)."
)
def wrap(config: str | None, db: str | None, dry_run: bool, only: tuple[str, ...]) -> None:
    """Record a desktop client's MCP servers: run each stdio server through `mcptape record`.

    CONFIG is an mcpServers JSON file (default: Claude Desktop's config on this
    machine). Each stdio entry {"command": X, "args": [...]} becomes
    {"command": "<mcptape>", "args": ["record", "--name", NAME, "--", X, ...]};
    env, cwd and every other key stay as they are. Remote (url) entries are left
    alone. Entries already wrapped are not wrapped twice. The original file is
    copied once to CONFIG.mcptape-backup, and the new one is written atomically.
    Restart the client afterwards; `mcptape unwrap` undoes the change.

    With --dry-run the diff goes to stdout and the summary to stderr.

    \b
    Examples:
      mcptape wrap --dry-run
      mcptape wrap
      mcptape wrap ~/.cursor/mcp.json --only filesystem --db ~/mcp-recordings.db
    """
    path, text, document = _load(config)
    if db is not None and "://" not in db:
        # The client starts the recorder from its own working directory.
        db = os.path.abspath(os.path.expanduser(db))
    new_document, outcomes = wrap_servers(document, mcptape_launcher(), db, _selection(document, only))
    changed = _apply(path, text, new_document, outcomes, dry_run, make_backup=True)
    if changed:
        where = db or "the default database ($MCPTAPE_DB or the per-user data directory)"
        click.echo(f"Recording into {where}. Restart the client to start recording.")


@click.command()
@click.argument("config", required=False, metavar="[CONFIG]")
@click.option("--dry-run", is_flag=True, help="Print the change as a unified diff; write nothing.")
@click.option(
    "--only",
    multiple=True,
    metavar="NAME",
    help="Unwrap only these servers (repeat, or separate with commas).",
)
def unwrap(config: str | None, dry_run: bool, only: tuple[str, ...]) -> None:
    """Undo `mcptape wrap`: run each wrapped server directly again.

    CONFIG is an mcpServers JSON file (default: Claude Desktop's config on this
    machine). The original command is taken from the wrapped args (everything
    after `--`), so this works without the backup and keeps changes made to other
    entries since wrapping. The backup file, if any, is left in place.

    With --dry-run the diff goes to stdout and the summary to stderr.

    \b
    Examples:
      mcptape unwrap --dry-run
      mcptape unwrap
      mcptape unwrap ~/.cursor/mcp.json --only filesystem
    """
    path, text, document = _load(config)
    new_document, outcomes = unwrap_servers(document, _selection(document, only))
    if _apply(path, text, new_document, outcomes, dry_run, make_backup=False):
        click.echo("Restart the client so it starts the servers directly.")
