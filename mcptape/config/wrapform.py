"""What a wrapped mcpServers entry looks like: the launcher `mcptape wrap` writes, and
recognising entries that run `mcptape record` (loosely, so nothing is recorded twice)
or exactly as wrap wrote them (strictly, so unwrap touches nothing else).

Standard library only, so the CLI can import it at start-up.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any


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


def _base(token: str) -> str:
    # Split on both separators: a config written on Windows may be read anywhere.
    return re.split(r"[\\/]", token)[-1].lower()


def _is_mcptape(token: str) -> bool:
    return _base(token) in {"mcptape", "mcptape.exe", "mcptape.cmd", "mcptape.bat"}


def _is_python(token: str) -> bool:
    return re.fullmatch(r"python[0-9.]*w?(\.exe)?", _base(token)) is not None


def tokens_of(entry: Any) -> list[str] | None:
    """An entry's command line (command, then args), or None if it has no string command
    with a list of string args."""
    if not isinstance(entry, dict):
        return None
    command, args = entry.get("command"), entry.get("args", [])
    if (
        not isinstance(command, str)
        or not isinstance(args, list)
        or not all(isinstance(a, str) for a in args)
    ):
        return None
    return [command, *args]


def wrapped_split(entry: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """For an entry that runs ``mcptape record … -- CMD`` in any form (a path, ``python -m``,
    ``uvx mcptape``), (the part before ``--``, CMD); None for anything else."""
    tokens = tokens_of(entry)
    for i, token in enumerate((tokens or [])[:-1]):
        if _is_mcptape(token) and tokens[i + 1] == "record" and "--" in tokens[i + 2 :]:  # type: ignore[index]
            cut = tokens.index("--", i + 2)  # type: ignore[union-attr]
            return tokens[:cut], tokens[cut + 1 :]  # type: ignore[index]
    return None


def is_recorded(entry: Any) -> bool:
    """Whether an entry already runs through `mcptape record`, however it was written."""
    tokens = tokens_of(entry) or []
    return any(_is_mcptape(t) and nxt == "record" for t, nxt in itertools.pairwise(tokens))


@dataclass(frozen=True)
class Wrapped:
    """What `mcptape wrap` wrote into an entry: ``cut`` is the index in args of the original
    command (stdio); or the remote server's url, transport and headers."""

    cut: int | None = None
    url: str | None = None
    transport: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)


def parse_wrapped(entry: Any) -> Wrapped | None:
    """The entry as `mcptape wrap` wrote it, or None if wrap did not write it.

    Exactly ``<mcptape> record --name N [--db D] [--on-store-error forward] -- CMD…`` (``<mcptape>`` a path ending in
    mcptape, or ``<python> -m mcptape``) or ``<mcptape> record --name N [--db D] [--on-store-error forward] --url U
    [--transport T] [--header 'K: V']…``.
    """
    tokens = tokens_of(entry)
    if tokens is None:
        return None
    if _is_mcptape(tokens[0]):
        i = 1
    elif _is_python(tokens[0]) and tokens[1:3] == ["-m", "mcptape"]:
        i = 3
    else:
        return None
    if tokens[i : i + 2] != ["record", "--name"] or len(tokens) < i + 3:
        return None
    i += 3
    if tokens[i : i + 1] == ["--db"] and len(tokens) > i + 1:
        i += 2
    if tokens[i : i + 2] == ["--on-store-error", "forward"]:
        i += 2
    if tokens[i : i + 1] == ["--"]:
        return Wrapped(cut=i + 1) if len(tokens) > i + 1 else None
    if tokens[i : i + 1] != ["--url"] or len(tokens) < i + 2:
        return None
    url, transport, headers, i = tokens[i + 1], None, [], i + 2
    if tokens[i : i + 1] == ["--transport"] and len(tokens) > i + 1 and tokens[i + 1] in ("http", "sse"):
        transport, i = tokens[i + 1], i + 2
    while tokens[i : i + 1] == ["--header"] and len(tokens) > i + 1 and ":" in tokens[i + 1]:
        key, _, value = tokens[i + 1].partition(":")
        headers.append((key.strip(), value.strip()))
        i += 2
    return Wrapped(url=url, transport=transport, headers=headers) if i == len(tokens) else None
