"""Rewriting a user's config file safely: backups, atomic replacement, the same owner,
group and mode, the BOM and line endings as they were, and a diff to show first.

Used by `mcptape wrap` and `unwrap`; standard library only.
"""

from __future__ import annotations

import codecs
import os
import stat
import tempfile
from pathlib import Path

BACKUP_SUFFIX = ".mcptape-backup"
PREVIOUS_SUFFIX = ".mcptape-previous"


def split_bom(data: bytes) -> tuple[bytes, str]:
    """(the BOM or b"", the rest decoded as UTF-8 with every line ending kept)."""
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    return bom, data[len(bom) :].decode("utf-8")


def backup_path(path: Path) -> Path:
    """Where the original of ``path`` is kept: ``<file>.mcptape-backup`` beside its target."""
    target = path.resolve()
    return target.with_name(target.name + BACKUP_SUFFIX)


def _keep_owner_and_mode(reference: os.stat_result, path: str | Path) -> None:
    os.chmod(path, stat.S_IMODE(reference.st_mode))
    if hasattr(os, "chown") and (reference.st_uid, reference.st_gid) != _owner(path):
        # Run as root on a user's config, the new file must stay the user's.
        os.chown(path, reference.st_uid, reference.st_gid)


def _owner(path: str | Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_uid, st.st_gid


def write_atomically(path: Path, data: bytes) -> None:
    """Replace the file's content in one step (temp file, fsync, rename), keeping its
    owner, group and mode. A symlinked config keeps its link: its target is replaced."""
    target = path.resolve()
    _write_copy(target, data, target.stat())


def _write_copy(target: Path, data: bytes, reference: os.stat_result) -> None:
    """Write ``target`` in one step with the owner, group and mode of ``reference``."""
    # mkstemp creates the file 0600: nobody else can read it before its mode is set.
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        _keep_owner_and_mode(reference, temp)
        os.replace(temp, target)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


def back_up(path: Path) -> str:
    """Save the file as it is now before it is rewritten; returns a line saying where.

    The first backup, ``<file>.mcptape-backup``, holds the original from before mcptape
    ever touched the file and is never replaced. A later rewrite of a file that differs
    from it first saves the current bytes to ``<file>.mcptape-previous``, so every
    rewrite can be undone by hand. Both get the file's owner, group and mode.
    """
    target = path.resolve()
    current = target.read_bytes()
    reference = target.stat()
    original = backup_path(path)
    try:
        # Exclusive creation: an existing backup holds the older original.
        fd = os.open(original, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if original.read_bytes() == current:
            return f"The backup {original} holds the file as it is now."
        previous = target.with_name(target.name + PREVIOUS_SUFFIX)
        _write_copy(previous, current, reference)
        return f"Kept the original in {original}; saved the file as it was to {previous}"
    with os.fdopen(fd, "wb") as out:
        out.write(current)
    _keep_owner_and_mode(reference, original)
    return f"Backed up the original to {original}"


def unified_diff(old: str, new: str, path: Path) -> str:
    """A unified diff from the current file text to the text that would be written."""
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"{path}", tofile=f"{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
