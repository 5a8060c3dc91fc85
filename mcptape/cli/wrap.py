"""`mcptape wrap` and `mcptape unwrap`: route a desktop client's stdio servers through the recorder.

Wrapping rewrites an entry ``{"command": X, "args": [A, B]}`` into
``{"command": <mcptape>, "args": ["record", "--name", NAME, "--", X, A, B]}`` and keeps every
other key. The original command stays inside the wrapped args, after ``--``, so unwrapping
needs nothing but the file itself.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

import click

from mcptape.cli.common import UserError, db_option

BACKUP_SUFFIX = ".mcptape-backup"


class Outcome(NamedTuple):
    """What a command did (or would do) to one mcpServers entry, for the summary."""

    name: str
    action: str  # wrapped, unwrapped, already wrapped, not wrapped, left alone, skipped
    detail: str


def mcptape_launcher() -> list[str]:
    """The command that starts this mcptape, usable by a client that runs with a minimal PATH.

    The console script installed beside this interpreter comes first, then one on PATH,
    and last ``<python> -m mcptape``, which works wherever this interpreter does.
    """
    import shutil
    import sysconfig

    names = ["mcptape.exe", "mcptape"] if os.name == "nt" else ["mcptape"]
    scheme_dirs = [sysconfig.get_path("scripts"), sysconfig.get_path("scripts", f"{os.name}_user")]
    # The interpreter's own directory is not resolved: in a venv, bin/python is a
    # symlink out of the venv, and the console script lives beside the link.
    for directory in [os.path.dirname(sys.executable), *scheme_dirs]:
        for name in names:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return [os.path.abspath(candidate)]
    found = shutil.which("mcptape")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "mcptape"]


def _is_mcptape(token: str) -> bool:
    # Split on both separators: a config written on Windows may be read anywhere.
    base = re.split(r"[\\/]", token)[-1].lower()
    return base in {"mcptape", "mcptape.exe", "mcptape.cmd", "mcptape.bat"}


def wrapped_split(entry: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """For a wrapped entry, (the mcptape command before ``--``, the original command after it).

    Recognises ``/path/mcptape record ... -- CMD``, ``python -m mcptape record ... -- CMD``
    and launchers such as ``uvx mcptape record ... -- CMD``; None for anything else.
    """
    command, args = entry.get("command"), entry.get("args", [])
    if (
        not isinstance(command, str)
        or not isinstance(args, list)
        or not all(isinstance(a, str) for a in args)
    ):
        return None
    tokens = [command, *args]
    for i, token in enumerate(tokens[:-1]):
        if _is_mcptape(token) and tokens[i + 1] == "record" and "--" in tokens[i + 2 :]:
            cut = tokens.index("--", i + 2)
            return tokens[:cut], tokens[cut + 1 :]
    return None


def _remote_url(entry: dict[str, Any]) -> str | None:
    if "command" in entry:
        return None
    url = entry.get("url", entry.get("serverUrl"))
    return url if isinstance(url, str) else None


def _replace_command(entry: dict[str, Any], command: str, args: list[str]) -> dict[str, Any]:
    """The entry with a new command and args, every other key kept in its place."""
    result: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "command":
            result["command"] = command
            if "args" not in entry and args:
                result["args"] = args
        elif key == "args":
            # Unwrapping an entry that had no args gives none back: the round trip stays exact.
            if args:
                result["args"] = args
        else:
            result[key] = value
    return result


def wrap_servers(
    document: dict[str, Any], launcher: list[str], db: str | None, only: frozenset[str] | None = None
) -> tuple[dict[str, Any], list[Outcome]]:
    """The document with each selected stdio entry running through `mcptape record`, and what happened."""
    servers: dict[str, Any] = {}
    outcomes: list[Outcome] = []
    for name, entry in document["mcpServers"].items():
        servers[name] = entry
        if only is not None and name not in only:
            continue
        if not isinstance(entry, dict):
            outcomes.append(Outcome(name, "skipped", f"not an object: {entry!r}"))
            continue
        split = wrapped_split(entry)
        if split is not None:
            outcomes.append(Outcome(name, "already wrapped", _join(split[1])))
            continue
        url = _remote_url(entry)
        if url is not None:
            outcomes.append(Outcome(name, "left alone", f"{url} (remote; `mcptape proxy` will serve it)"))
            continue
        command, args = entry.get("command"), entry.get("args", [])
        if not isinstance(command, str) or not command:
            outcomes.append(Outcome(name, "skipped", "neither a command nor a url"))
            continue
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            outcomes.append(Outcome(name, "skipped", f"args must be a list of strings, got {args!r}"))
            continue
        original = [command, *args]
        record = ["record", "--name", name, *(["--db", db] if db is not None else []), "--", *original]
        full = [*launcher, *record]
        servers[name] = _replace_command(entry, full[0], full[1:])
        outcomes.append(Outcome(name, "wrapped", _join(original)))
    return {**document, "mcpServers": servers}, outcomes


def unwrap_servers(
    document: dict[str, Any], only: frozenset[str] | None = None
) -> tuple[dict[str, Any], list[Outcome]]:
    """The document with each selected wrapped entry back to the command after ``--``."""
    servers: dict[str, Any] = {}
    outcomes: list[Outcome] = []
    for name, entry in document["mcpServers"].items():
        servers[name] = entry
        if only is not None and name not in only:
            continue
        split = wrapped_split(entry) if isinstance(entry, dict) else None
        if split is None:
            url = _remote_url(entry) if isinstance(entry, dict) else None
            outcomes.append(Outcome(name, "left alone" if url else "not wrapped", url or ""))
            continue
        original = split[1]
        if not original:
            outcomes.append(Outcome(name, "skipped", "wrapped, but no command after `--`; fix it by hand"))
            continue
        servers[name] = _replace_command(entry, original[0], original[1:])
        outcomes.append(Outcome(name, "unwrapped", _join(original)))
    return {**document, "mcpServers": servers}, outcomes


def unified_diff(old: str, new: str, path: Path) -> str:
    """A unified diff from the current file text to the text that would be written."""
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"{path}", tofile=f"{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def write_atomically(path: Path, text: str) -> None:
    """Replace the file's content in one step (temp file, fsync, rename), keeping its mode."""
    import stat
    import tempfile

    # A symlinked config (dotfile managers) keeps its link: the file it points to is replaced.
    target = path.resolve()
    mode = stat.S_IMODE(target.stat().st_mode)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def ensure_backup(path: Path) -> tuple[Path, bool]:
    """Copy the file to ``<file>.mcptape-backup`` unless a backup exists; (its path, made now?)."""
    import shutil

    target = path.resolve()
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    try:
        # Exclusive creation: an existing backup holds the older original and is never replaced.
        with open(backup, "xb") as out, open(target, "rb") as src:
            shutil.copyfileobj(src, out)
    except FileExistsError:
        return backup, False
    shutil.copymode(target, backup)
    return backup, True


def _join(command: list[str]) -> str:
    import shlex

    return shlex.join(command)


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
