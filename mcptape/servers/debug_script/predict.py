"""Find compiled files whose source maps name the breakpoint file, before Node loads them.

A breakpoint set when V8 reports a script (``Debugger.scriptParsed``) comes too
late for a CommonJS module: ``require`` compiles and runs the module at once, and
V8's "pause before a script with a source map runs" does not fire for the
functions Node compiles modules into. So, as editors' debuggers do, we read the
source maps on disk first and set the breakpoint by URL on the generated file
before the program starts; the ``scriptParsed`` path still covers scripts found
nowhere on disk (maps generated in memory, files outside the searched folders).

The search is bounded: the folders of the files the command names (the script
Node runs) and the working directory, skipping ``node_modules`` and hidden
folders, at most :data:`MAX_FILES` files looked at and none larger than
:data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from mcptape.servers.debug_script.sourcemap import load_source_map

MAX_FILES: Final = 5000
MAX_FILE_BYTES: Final = 8 * 1024 * 1024
_SKIPPED_DIRS: Final = frozenset({"node_modules", "__pycache__"})
_SCRIPT_SUFFIXES: Final = (".js", ".mjs", ".cjs")
_INLINE_MAP_MARKER: Final = b"sourceMappingURL=data:"
# An inline map is the script's last line: reading this much of the end finds it, unless
# the last line is longer, in which case the whole file is read.
_TAIL_BYTES: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class PredictedLocation:
    """A generated file and the 0-based (line, column) where the breakpoint line landed in it."""

    script: str
    line: int
    column: int


def search_roots(argv: list[str], cwd: str) -> list[str]:
    """The folders to search: those of the existing files in ``argv``, then ``cwd``."""
    roots: list[str] = []
    for arg in argv[1:]:
        if arg.startswith("-"):
            continue
        path = os.path.abspath(os.path.join(cwd, arg))
        if os.path.isfile(path):
            roots.append(os.path.dirname(path))
    roots.append(os.path.abspath(cwd))
    # Keep the order, drop repeats and folders inside another root.
    unique: list[str] = []
    for root in roots:
        if not any(root == seen or root.startswith(seen.rstrip("/") + "/") for seen in unique):
            unique.append(root)
    return unique


def predict_locations(candidates: set[str], line0: int, roots: list[str]) -> list[PredictedLocation]:
    """Generated locations of ``line0`` of the file known by any path in ``candidates``."""
    needles = {os.path.basename(path).encode() for path in candidates}
    found: dict[str, PredictedLocation] = {}
    for path in _walk(roots):
        location = _predict_from(path, candidates, needles, line0)
        if location is not None:
            found.setdefault(location.script, location)
    return list(found.values())


def _predict_from(
    path: str, candidates: set[str], needles: set[bytes], line0: int
) -> PredictedLocation | None:
    data = _read(path)
    if data is None:
        return None
    if path.endswith(".map"):
        # Cheap test first: a map naming our file contains its base name in `sources`.
        if not any(needle in data for needle in needles):
            return None
        script = path[: -len(".map")]
        if not os.path.isfile(script):
            return None
        # Through the cache: the same map is looked up again when its script pauses.
        loaded = load_source_map(path, script)
        if loaded is None:
            return None
        source_map = loaded
    else:
        if _INLINE_MAP_MARKER not in data:
            return None
        url = (
            data[data.rindex(_INLINE_MAP_MARKER) + len("sourceMappingURL=") :]
            .split()[0]
            .decode("ascii", "replace")
        )
        inline_map = load_source_map(url, path)
        if inline_map is None:
            return None
        source_map, script = inline_map, path
    index = source_map.source_index(candidates)
    if index is None or not script.endswith(_SCRIPT_SUFFIXES):
        return None
    position = source_map.generated_position(index, line0)
    if position is None:
        return None
    return PredictedLocation(script, *position)


def _read(path: str) -> bytes | None:
    """A ``.map`` whole; a script only when its tail holds an inline map (most scripts do not)."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            if not path.endswith(".map"):
                handle.seek(max(0, size - _TAIL_BYTES))
                tail = handle.read()
                last_line_is_longer = size > _TAIL_BYTES and b"\n" not in tail.rstrip(b"\r\n")
                if _INLINE_MAP_MARKER not in tail and not last_line_is_longer:
                    return None
                handle.seek(0)
            return handle.read()
    except OSError:
        return None


def _walk(roots: list[str]) -> Iterator[str]:
    seen = 0
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
            for name in sorted(files):
                if not name.endswith((*_SCRIPT_SUFFIXES, ".map")):
                    continue
                seen += 1
                if seen > MAX_FILES:
                    return
                yield os.path.join(folder, name)
