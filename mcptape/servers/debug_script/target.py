"""Which loaded scripts the breakpoint file names, directly or through a source map.

Node names a CommonJS script by its path on some versions and by its ``file://``
URL on others, and always names ES modules by URL; a URL percent-encodes some
characters of the path. :func:`url_regex` builds one JavaScript regular
expression that matches every spelling, for ``Debugger.setBreakpointByUrl``.

A compiled file (``dist/test.js``) can stand for the breakpoint file
(``src/test.ts``) through its source map; :meth:`BreakpointTarget.mapped_location`
finds the generated position of the requested line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from mcptape.servers.debug_script.locations import code_lines
from mcptape.servers.debug_script.sourcemap import SourceMap, load_source_map, path_from_url

# Characters a file URL never percent-encodes; any other one may appear either way.
_URL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-._~")
_JS_REGEX_SPECIAL = frozenset("\\^$.*+?()[]{}|/")


def _js_escape(char: str) -> str:
    return "\\" + char if char in _JS_REGEX_SPECIAL else char


def _path_pattern(path: str) -> str:
    parts: list[str] = []
    for char in path:
        if char in _URL_SAFE:
            parts.append(_js_escape(char))
        else:
            encoded = "".join(_percent_pattern(byte) for byte in char.encode())
            parts.append(f"(?:{_js_escape(char)}|{encoded})")
    return "".join(parts)


def _percent_pattern(byte: int) -> str:
    # %c3 and %C3 are the same URL: match either case of each hex digit.
    digits = "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in f"{byte:02X}")
    return f"%{digits}"


def url_regex(paths: set[str]) -> str:
    """A JavaScript regex matching each path as a plain path or as a ``file://`` URL."""
    alternatives = "|".join(_path_pattern(path) for path in sorted(paths))
    return f"^(?:file://)?(?:{alternatives})$"


@dataclass(frozen=True, slots=True)
class MappedLocation:
    """A script's source map names the breakpoint file; ``position`` is the generated
    (line, column) of the breakpoint line, or None when no code came from that line or after it."""

    position: tuple[int, int] | None


@dataclass(frozen=True)
class ScriptMap:
    """A loaded script's source map that names the breakpoint file as source ``source``."""

    source_map: SourceMap
    source: int


@dataclass
class BreakpointTarget:
    """The breakpoint as the user gave it, resolved against the server's working directory."""

    file: str
    line: int
    path: str = field(init=False)
    candidates: set[str] = field(init=False)
    needles: frozenset[bytes] = field(init=False)
    _code: list[bool] | None = field(init=False, default=None)
    _code_read: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        self.path = os.path.normpath(os.path.abspath(self.file))
        # Node loads the real path of a main module (symlinks resolved): accept both spellings.
        self.candidates = {self.path, os.path.realpath(self.path)}
        names = {os.path.basename(path) for path in self.candidates}
        # A map's `sources` may percent-encode the name (spaces, non-ASCII).
        self.needles = frozenset(
            spelling.encode() for name in names for spelling in (name, quote(name, safe=""))
        )

    def code(self) -> list[bool] | None:
        """Which lines of the breakpoint file hold code (read once); None when it cannot be read."""
        if not self._code_read:
            self._code_read = True
            try:
                self._code = code_lines(Path(self.path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                self._code = None
        return self._code

    def line_count(self) -> int | None:
        """How many lines the breakpoint file has; None when it cannot be read."""
        code = self.code()
        return None if code is None else len(code)

    @property
    def line0(self) -> int:
        """The 0-based line the Chrome DevTools Protocol expects."""
        return self.line - 1

    @property
    def url_regex(self) -> str:
        """The ``urlRegex`` for ``Debugger.setBreakpointByUrl``."""
        return url_regex(self.candidates)

    def names_script(self, url: str) -> bool:
        """Whether a parsed script's URL is the breakpoint file itself."""
        path = path_from_url(url)
        return path is not None and os.path.normpath(path) in self.candidates

    def script_map(self, script_url: str, source_map_url: str) -> ScriptMap | None:
        """The script's source map when it names our file (decoding nothing else); else None."""
        if not source_map_url:
            return None
        source_map = load_source_map(source_map_url, script_url, self.needles)
        if source_map is None:
            return None
        index = source_map.source_index(self.candidates)
        return None if index is None else ScriptMap(source_map, index)

    def mapped_location(self, script_url: str, source_map_url: str) -> MappedLocation | None:
        """Where our line landed in a script whose source map names our file; None when it does not."""
        mapped = self.script_map(script_url, source_map_url)
        if mapped is None:
            return None
        return MappedLocation(mapped.source_map.generated_position(mapped.source, self.line0))

    def describe(self) -> str:
        """``/abs/path/test.ts:9`` for messages."""
        return f"{self.path}:{self.line}"
