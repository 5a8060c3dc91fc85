"""`mcptape wrap` and `mcptape unwrap`: route a desktop client's stdio servers through the recorder.

The click commands: loading the config, choosing servers, printing the summary and the
diff. How an entry is wrapped and unwrapped, and how the file is written, is in
:mod:`mcptape.config.wrap`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from mcptape.cli.common import UserError, db_option
from mcptape.cli.helptext import Command

if TYPE_CHECKING:
    from mcptape.config.wrap import WrapOutcome


class _Config(NamedTuple):
    path: Path
    bom: bytes
    text: str
    document: dict[str, Any]
    backup_text: str | None
    backup: dict[str, Any] | None


def _load(config: str | None) -> _Config:
    from mcptape.config.files import backup_path, split_bom
    from mcptape.config.registry import ConfigError, default_client_config_path, read_config_document
    from mcptape.wire.jsontext import loads_jsonc

    path = Path(config) if config is not None else default_client_config_path()
    try:
        _, document = read_config_document(path)
        bom, text = split_bom(path.read_bytes())
    except (ConfigError, OSError, UnicodeDecodeError) as exc:
        hint = "" if config is not None else " (the Claude Desktop default; pass CONFIG for another client)"
        raise UserError(f"{exc}{hint}") from None
    backup_text, backup = None, None
    try:
        _, backup_text = split_bom(backup_path(path).read_bytes())
        backup = loads_jsonc(backup_text)
    except (OSError, ValueError, RecursionError):
        backup_text = None
    return _Config(path, bom, text, document, backup_text, backup if isinstance(backup, dict) else None)


def _selection(document: dict[str, Any], only: tuple[str, ...]) -> frozenset[str] | None:
    if not only:
        return None
    from mcptape.config.registry import servers_key

    servers = document[servers_key(document) or "mcpServers"]
    # `--only a,b` is `--only a --only b`, unless a server's own name has a comma.
    names = [part for value in only for part in ([value] if value in servers else value.split(","))]
    unknown = [name for name in names if name not in servers]
    if unknown:
        known = ", ".join(servers) or "none"
        raise UserError(
            f"no server named {', '.join(map(repr, unknown))} in the config; its servers: {known}"
        )
    return frozenset(names)


def _apply(cfg: _Config, new_document: dict[str, Any], outcomes: list[WrapOutcome], dry_run: bool) -> bool:
    """Show the diff or write the file, then print the summary; returns whether the file changed."""
    from mcptape.config.edit import EditError
    from mcptape.config.files import back_up, unified_diff, write_atomically
    from mcptape.config.wrap import rewrite_text
    from mcptape.terminal import safe, safe_lines

    path = cfg.path
    try:
        new = rewrite_text(cfg.text, cfg.document, new_document, cfg.backup_text)
    except EditError as exc:
        raise UserError(f"cannot edit {path} in place ({exc}); nothing was written") from None
    out = sys.stderr if dry_run else sys.stdout
    # Names, commands and comments come from the file: an escape code in one must not
    # drive the terminal.
    names = [safe(o.name) for o in outcomes]
    width = max(map(len, names), default=0)
    for name, outcome in zip(names, outcomes, strict=True):
        click.echo(f"  {outcome.action:<16} {name:<{width}}  {safe(outcome.detail)}".rstrip(), file=out)
    shown = safe(str(path))
    if new == cfg.text:
        click.echo(f"Nothing to change in {shown}.", file=out)
        return False
    if dry_run:
        click.echo(safe_lines(unified_diff(cfg.text, new, path)), nl=False)
        click.echo("Dry run: nothing written.", file=out)
        return False
    try:
        click.echo(safe_lines(back_up(path)), file=out)
        write_atomically(path, cfg.bom + new.encode("utf-8"))
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}; check its permissions") from None
    click.echo(f"Wrote {shown}.", file=out)
    return True


@click.command(cls=Command)
@click.argument("config", required=False, metavar="[CONFIG]")
@db_option
@click.option("--dry-run", is_flag=True, help="Print the change as a unified diff; write nothing.")
@click.option(
    "--only", multiple=True, metavar="NAME", help="Wrap only these servers (repeat, or separate with commas)."
)
@click.option(
    "--remote",
    is_flag=True,
    help="Also record remote (url) entries: each becomes a stdio entry running "
    "`mcptape record --url URL`, which the client starts like any local server.",
)
def wrap(config: str | None, db: str | None, dry_run: bool, only: tuple[str, ...], remote: bool) -> None:
    """Record a desktop client's MCP servers: run each stdio server through `mcptape record`.

    CONFIG is an mcpServers JSON file (default: Claude Desktop's config on this
    machine). Each stdio entry {"command": X, "args": [...]} becomes
    {"command": "<mcptape>", "args": ["record", "--name", NAME, "--", X, ...]};
    env, cwd and every other key stay as they are, and so does every byte of the
    file that need not change. Remote (url) entries are left as they are unless
    --remote is given: then {"url": U, "type": T, "headers": {K: V}} becomes
    {"command": "<mcptape>", "args": ["record", "--name", NAME, "--url", U,
    "--transport", T, "--header", "K: V"]}. Entries already recorded are not
    wrapped twice. Before the file is rewritten, the original is copied once to
    CONFIG.mcptape-backup (and, later, the file as it was to CONFIG.mcptape-previous);
    the new file is written atomically with the same owner, group and mode.
    Restart the client afterwards; `mcptape unwrap` undoes the change.

    With --dry-run the diff goes to stdout and the summary to stderr.

    \b
    Examples:
      mcptape wrap --dry-run
      mcptape wrap
      mcptape wrap ~/.cursor/mcp.json --only filesystem --db ~/mcp-recordings.db
      mcptape wrap --remote --only linear
    """
    from mcptape.config.wrap import mcptape_launcher, wrap_servers

    cfg = _load(config)
    if db is not None and "://" not in db:
        # The client starts the recorder from its own working directory.
        db = os.path.abspath(os.path.expanduser(db))
    selection = _selection(cfg.document, only)
    new_document, outcomes = wrap_servers(cfg.document, mcptape_launcher(), db, selection, remote)
    changed = _apply(cfg, new_document, outcomes, dry_run)
    if changed or (dry_run and any(o.action == "wrapped" for o in outcomes)):
        where = db
        if where is None:
            from mcptape.store.engine import default_db_path

            where = f"{default_db_path()} (the default; MCPTAPE_DB in the client's environment would win)"
        verb = "Recording into" if changed else "Would record into"
        from mcptape.terminal import safe

        click.echo(safe(f"{verb} {where}."), file=sys.stdout if changed else sys.stderr)
    if changed:
        click.echo("Restart the client to start recording.")


@click.command(cls=Command)
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
    machine). Only entries as `mcptape wrap` writes them are changed: the original
    command is taken from the wrapped args (everything after `--`), so this works
    without the backup, keeps changes made to other entries since wrapping, and
    gives back the bytes wrap replaced. Entries that run mcptape some other way
    (over ssh, in a container, written by hand) are left alone. The file is backed
    up before it is rewritten, as by wrap.

    With --dry-run the diff goes to stdout and the summary to stderr.

    \b
    Examples:
      mcptape unwrap --dry-run
      mcptape unwrap
      mcptape unwrap ~/.cursor/mcp.json --only filesystem
    """
    from mcptape.config.wrap import unwrap_servers

    cfg = _load(config)
    new_document, outcomes = unwrap_servers(cfg.document, _selection(cfg.document, only), cfg.backup)
    if _apply(cfg, new_document, outcomes, dry_run):
        click.echo("Restart the client so it starts the servers directly.")
