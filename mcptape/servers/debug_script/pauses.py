"""Where a pause is in the breakpoint file, and whether it counts as a hit.

A pause at one of our breakpoints is located in the breakpoint file's terms:
directly when the paused script is the file itself, through the script's source
map when one names the file (a compiled ``dist/app.js``, or the file itself
compiled by a loader such as tsx). It counts when ``locations.slide_allowed``
says the place stands for the requested line; otherwise it is refused and a note
says why. Verdicts are cached per paused position, so a loop pays once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mcptape.servers.debug_script.evaluate import escape_lone_surrogates
from mcptape.servers.debug_script.locations import HitLocation, refusal_note, slide_allowed, slide_note
from mcptape.servers.debug_script.target import BreakpointTarget, ScriptMap


class PauseLocator:
    """The scripts that may pause at our breakpoints, their maps, and the verdict on each paused position."""

    def __init__(self, target: BreakpointTarget, note: Callable[[str], None]) -> None:
        self.target = target
        self.note = note
        # scriptId -> (url, sourceMapURL) of every script that may pause at our breakpoints.
        self.script_urls: dict[str, tuple[str, str]] = {}
        # scriptId -> its map naming our file (None: read, names nothing of ours).
        self.maps: dict[str, ScriptMap | None] = {}
        # (scriptId, line, column) of a pause -> where it is in our file, None when refused.
        self.verdicts: dict[tuple[str, int, int], HitLocation | None] = {}

    def remember(self, script_id: str, url: str, source_map_url: str) -> None:
        """A parsed script that names our file or may map to it."""
        self.script_urls[script_id] = (url, source_map_url)

    async def where(self, frame: dict[str, Any]) -> HitLocation | None:
        """Where in the breakpoint file a pause is, or None when it is not the requested line's code."""
        location = frame.get("location") or {}
        script_id = str(location.get("scriptId"))
        line, column = int(location.get("lineNumber", 0)), int(location.get("columnNumber", 0))
        key = (script_id, line, column)
        if key in self.verdicts:
            return self.verdicts[key]
        function, _ = escape_lone_surrogates(str(frame.get("functionName") or ""))
        landed = await self._original(script_id, line, column, function)
        verdict: HitLocation | None = None
        if landed is None:
            self.note(
                f"V8 stopped for line {self.target.line} in generated code that maps to no line of "
                f"{self.target.path}: those pauses were not counted."
            )
        elif slide_allowed(self.target.code(), self.target.line0, landed.line - 1):
            verdict = landed
            if landed.line != self.target.line:
                self.note(slide_note(self.target.line, landed.line))
        else:
            self.note(refusal_note(self.target.line, landed, self.target.code()))
        self.verdicts[key] = verdict
        return verdict

    async def _original(self, script_id: str, line: int, column: int, function: str) -> HitLocation | None:
        """A paused position in the breakpoint file's terms: through the script's map when it has one."""
        if script_id not in self.maps and script_id in self.script_urls:
            url, source_map_url = self.script_urls[script_id]
            self.maps[script_id] = (
                await asyncio.to_thread(self.target.script_map, url, source_map_url)
                if source_map_url
                else None
            )
        mapped = self.maps.get(script_id)
        if mapped is None:
            url = self.script_urls.get(script_id, ("", ""))[0]
            if not self.target.names_script(url):
                return None
            return HitLocation(line + 1, column + 1, function)
        mapping = mapped.source_map.original_position(line, column)
        if mapping is None or mapping.source != mapped.source or mapping.original_line is None:
            return None
        return HitLocation(mapping.original_line + 1, (mapping.original_column or 0) + 1, function)

    def compiled(self, frame: dict[str, Any]) -> bool:
        """Whether the paused script's map names our file: its line numbers are not our file's."""
        script_id = str((frame.get("location") or {}).get("scriptId"))
        return self.maps.get(script_id) is not None
