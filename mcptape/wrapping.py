"""Rewriting mcpServers entries so they run through `mcptape record`, and back.

Wrapping rewrites an entry ``{"command": X, "args": [A, B]}`` into
``{"command": <mcptape>, "args": ["record", "--name", NAME, "--", X, A, B]}`` and keeps every
other key. The original command stays inside the wrapped args, after ``--``, so unwrapping
needs nothing but the file itself. Also here: the diff, backup and atomic write that
`mcptape wrap` and `mcptape unwrap` use to change a config file. No click, standard
library only, so the CLI module can import it at start-up.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

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
