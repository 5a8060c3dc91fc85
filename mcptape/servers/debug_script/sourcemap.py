"""Source maps (revision 3): decode them and find where an original line landed.

A breakpoint on ``src/test.ts`` must become a breakpoint in the JavaScript Node
actually runs (``dist/test.js``). V8 tells us each script's ``sourceMapURL`` (the
``//# sourceMappingURL=`` comment): an inline ``data:`` URL or a file next to the
script. :func:`load_source_map` reads either; :class:`SourceMap` answers "where in
the generated code does original line L of this source start?".

Everything here is pure except the file read in :func:`load_source_map`. Lines and
columns are 0-based, as in source maps and the Chrome DevTools Protocol.
"""

from __future__ import annotations

import base64
import bisect
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BASE64_VALUE = {char: index for index, char in enumerate(_BASE64)}
_CONTINUATION = 0b100000
_DIGIT_MASK = 0b011111


class SourceMapError(ValueError):
    """A source map that cannot be decoded."""


@dataclass(frozen=True, slots=True)
class Mapping:
    """One mapping segment: a generated position and, when it has one, its original position."""

    generated_line: int
    generated_column: int
    source: int | None = None
    original_line: int | None = None
    original_column: int | None = None


def decode_vlq(segment: str) -> list[int]:
    """Decode one Base64 VLQ segment (``"AAgBC"``) into its signed integers."""
    values: list[int] = []
    accumulated = 0
    shift = 0
    for char in segment:
        digit = _BASE64_VALUE.get(char)
        if digit is None:
            raise SourceMapError(f"invalid base64 VLQ character {char!r} in segment {segment!r}")
        accumulated += (digit & _DIGIT_MASK) << shift
        if digit & _CONTINUATION:
            shift += 5
            continue
        # The lowest bit of the assembled number is its sign.
        magnitude = accumulated >> 1
        values.append(-magnitude if accumulated & 1 else magnitude)
        accumulated = 0
        shift = 0
    if shift:
        raise SourceMapError(f"VLQ segment {segment!r} ends in the middle of a number")
    return values


def decode_mappings(mappings: str) -> list[Mapping]:
    """Decode a ``mappings`` string into absolute positions.

    The generated column restarts on every line; source index, original line and
    original column are deltas that carry across lines, as the format says.
    """
    decoded: list[Mapping] = []
    source = original_line = original_column = name = 0
    # Real maps repeat the same few segments ("AAAA", "CAAC", ...) millions of times.
    segment_values: dict[str, list[int]] = {}
    for line_number, line in enumerate(mappings.split(";")):
        column = 0
        for segment in line.split(","):
            if not segment:
                continue
            fields = segment_values.get(segment)
            if fields is None:
                fields = segment_values[segment] = decode_vlq(segment)
                if len(fields) not in (1, 4, 5):
                    raise SourceMapError(
                        f"mapping segment {segment!r} has {len(fields)} fields, expected 1, 4 or 5"
                    )
            column += fields[0]
            if len(fields) == 1:
                decoded.append(Mapping(line_number, column))
                continue
            source += fields[1]
            original_line += fields[2]
            original_column += fields[3]
            if len(fields) == 5:
                name += fields[4]
            decoded.append(Mapping(line_number, column, source, original_line, original_column))
    return decoded


@dataclass(frozen=True)
class SourceMap:
    """A decoded source map with its sources resolved to absolute paths where they are files.

    ``sources[i]`` is an absolute, normalised path when source ``i`` resolves to a
    local file, else the source string as written (``webpack://...``).
    """

    sources: list[str]
    mappings: list[Mapping]
    # Mappings by generated line, sorted by column: built on the first reverse lookup.
    _by_line: dict[int, list[Mapping]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str | bytes, base_dir: str | None) -> SourceMap:
        """Parse map JSON; relative sources are resolved against ``base_dir`` (the map's folder)."""
        try:
            data = json.loads(text)
        except ValueError as error:
            raise SourceMapError(f"source map is not JSON: {error}") from error
        if not isinstance(data, dict):
            raise SourceMapError("source map is not a JSON object")
        return cls._from_dict(data, base_dir)

    @classmethod
    def _from_dict(cls, data: dict[str, Any], base_dir: str | None) -> SourceMap:
        if "sections" in data:
            return cls._from_sections(data["sections"], base_dir)
        raw_sources = data.get("sources") or []
        root = data.get("sourceRoot") or ""
        sources = [_resolve_source(str(source or ""), str(root), base_dir) for source in raw_sources]
        mappings = decode_mappings(str(data.get("mappings") or ""))
        return cls(sources, mappings)

    @classmethod
    def _from_sections(cls, sections: list[dict[str, Any]], base_dir: str | None) -> SourceMap:
        # An index map: each section is a whole map placed at an offset of the generated file.
        sources: list[str] = []
        mappings: list[Mapping] = []
        for section in sections:
            offset = section.get("offset") or {}
            line_offset = int(offset.get("line", 0))
            column_offset = int(offset.get("column", 0))
            part = cls._from_dict(section.get("map") or {}, base_dir)
            first_source = len(sources)
            sources.extend(part.sources)
            for mapping in part.mappings:
                column = mapping.generated_column + (column_offset if mapping.generated_line == 0 else 0)
                mappings.append(
                    Mapping(
                        mapping.generated_line + line_offset,
                        column,
                        None if mapping.source is None else mapping.source + first_source,
                        mapping.original_line,
                        mapping.original_column,
                    )
                )
        return cls(sources, mappings)

    def source_index(self, candidates: set[str]) -> int | None:
        """The index of the first source whose path is one of ``candidates`` (absolute, normalised)."""
        for index, source in enumerate(self.sources):
            if source in candidates:
                return index
        return None

    def generated_position(self, source: int, original_line: int) -> tuple[int, int] | None:
        """The first generated (line, column) of ``original_line`` in ``source``.

        When the line itself produced no code (a comment, a type declaration), the
        next original line that did is used, as editors and V8 slide a breakpoint to
        the next breakable line.
        """
        landing = self.landing(source, original_line)
        return None if landing is None else (landing[0], landing[1])

    def landing(self, source: int, original_line: int) -> tuple[int, int, int] | None:
        """Generated (line, column) and the original line it came from, for :meth:`generated_position`."""
        best_line: int | None = None
        best: tuple[int, int] | None = None
        for mapping in self.mappings:
            if mapping.source != source or mapping.original_line is None:
                continue
            if mapping.original_line < original_line:
                continue
            position = (mapping.generated_line, mapping.generated_column)
            if best_line is None or mapping.original_line < best_line:
                best_line, best = mapping.original_line, position
            elif mapping.original_line == best_line and best is not None and position < best:
                best = position
        if best is None or best_line is None:
            return None
        return (*best, best_line)

    def original_position(self, generated_line: int, generated_column: int) -> Mapping | None:
        """The mapping covering a generated position: the last one at or before it on its line."""
        if not self._by_line:
            for mapping in self.mappings:
                self._by_line.setdefault(mapping.generated_line, []).append(mapping)
            for line in self._by_line.values():
                line.sort(key=lambda mapping: mapping.generated_column)
            self._by_line.setdefault(-1, [])  # marks the index as built, even for an empty map
        line = self._by_line.get(generated_line) or []
        index = bisect.bisect_right(line, generated_column, key=lambda mapping: mapping.generated_column)
        if index == 0:
            return None
        mapping = line[index - 1]
        return mapping if mapping.original_line is not None else None


def _resolve_source(source: str, root: str, base_dir: str | None) -> str:
    combined = source
    if root and not _is_absolute(source):
        combined = root.rstrip("/") + "/" + source
    path = path_from_url(combined)
    if path is not None:
        return os.path.normpath(path)
    if "://" in combined or base_dir is None:
        return combined
    return os.path.normpath(os.path.join(base_dir, unquote(combined)))


def _is_absolute(source: str) -> bool:
    return source.startswith("/") or "://" in source


def path_from_url(url: str) -> str | None:
    """The local path a ``file://`` URL or an absolute path names; None for anything else."""
    if url.startswith("file://"):
        return unquote(urlsplit(url).path)
    if url.startswith("/"):
        return url
    return None


def load_source_map(
    source_map_url: str, script_url: str, needles: frozenset[bytes] | None = None
) -> SourceMap | None:
    """Read the source map a script points at: an inline ``data:`` URL or a local file.

    A relative map URL is resolved against the script's folder. Returns None when
    the map is remote, missing or unreadable: a script without a usable map simply
    cannot take a mapped breakpoint, which is not an error of the run. With
    ``needles``, a map whose text contains none of them is not decoded (None): a
    map naming our file holds its base name, and decoding big unrelated maps is slow.
    """
    script_path = path_from_url(script_url)
    script_dir = os.path.dirname(script_path) if script_path else None
    try:
        if source_map_url.startswith("data:"):
            return _parse_cached(source_map_url, script_dir, None, needles)
        map_path = path_from_url(source_map_url)
        if map_path is None:
            if "://" in source_map_url or script_dir is None:
                return None
            map_path = os.path.join(script_dir, unquote(source_map_url))
        stat = os.stat(map_path)
        return _parse_cached(map_path, os.path.dirname(map_path), (stat.st_mtime_ns, stat.st_size), needles)
    except (OSError, SourceMapError, ValueError, RecursionError):
        return None


# Few entries: a 9 MB map decodes to ~200 MB of objects.
@functools.lru_cache(maxsize=4)
def _parse_cached(
    where: str, base_dir: str | None, version: tuple[int, int] | None, needles: frozenset[bytes] | None
) -> SourceMap | None:
    """Decode a map once per content: a data: URL, or a file at one (mtime, size).

    Decoding a large map takes seconds of pure Python; the same map is met by the
    prediction, by ``scriptParsed`` and by the next call on the same project.
    Failures raise, so they are not cached.
    """
    data = _data_url_payload(where) if version is None else Path(where).read_bytes()
    if needles is not None and not any(needle in data for needle in needles):
        return None
    return SourceMap.parse(data, base_dir)


def _data_url_payload(url: str) -> bytes:
    header, _, payload = url.partition(",")
    if header.endswith(";base64"):
        return base64.b64decode(payload)
    return unquote(payload).encode()
