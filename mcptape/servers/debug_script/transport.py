"""Our stdin for the SDK's stdio server, with requests holding lone UTF-16 surrogates made answerable.

JSON allows ``"\\ud83d"`` (half of a surrogate pair) in a string, but the SDK's
parser refuses such a line and drops it without an answer, so a client waits
forever. :func:`answerable_line` rewrites such a line before the SDK sees it:
each lone surrogate becomes U+FFFD, and a ``tools/call`` request is marked
(:data:`LONE_SURROGATE_KEY` in its arguments, naming where the first one was) so
the tool answers with an error saying what was wrong instead of running.

Pure except :func:`surrogate_safe_stdin`, which wraps our real stdin.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import AsyncIterator
from typing import Any, Final

LONE_SURROGATE_KEY: Final = "mcptape.lone_surrogate"
_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_LONE: Final = re.compile("[\ud800-\udfff]")


def answerable_line(line: str) -> str:
    """``line`` unchanged, or with its lone surrogates replaced and a tools/call marked."""
    # Our stdin is decoded with errors="replace": a surrogate can only arrive as an escape.
    if not _ESCAPED_SURROGATE.search(line):
        return line
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return line
    found: list[str] = []
    cleaned = _replace(message, "", found)
    if not found:
        return line
    params = cleaned.get("params") if isinstance(cleaned, dict) else None
    if isinstance(cleaned, dict) and cleaned.get("method") == "tools/call" and isinstance(params, dict):
        arguments = params.get("arguments")
        where = (
            found[0].removeprefix("params.arguments.")
            if found[0].startswith("params.arguments.")
            else found[0]
        )
        params["arguments"] = {
            **(arguments if isinstance(arguments, dict) else {}),
            LONE_SURROGATE_KEY: where,
        }
    return json.dumps(cleaned, ensure_ascii=False) + ("\n" if line.endswith("\n") else "")


def _replace(value: Any, path: str, found: list[str]) -> Any:
    if isinstance(value, str):
        if value.isascii():
            return value
        replaced = _LONE.sub("\ufffd", value)
        if replaced != value:
            found.append(path or "message")
        return replaced
    if isinstance(value, list):
        return [_replace(item, path, found) for item in value]
    if isinstance(value, dict):
        return {
            _replace(key, path, found): _replace(item, f"{path}.{key}" if path else str(key), found)
            for key, item in value.items()
        }
    return value


class _Lines:
    """The async line iterator the SDK's stdio server reads (all it uses of its stdin)."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            yield answerable_line(line)


def surrogate_safe_stdin() -> Any:
    """Our stdin as UTF-8 lines (undecodable bytes replaced, as the SDK does), passed through :func:`answerable_line`."""
    import anyio

    text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    return _Lines(anyio.wrap_file(text))
