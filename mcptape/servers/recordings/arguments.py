"""A tool's arguments as a client sent them, checked: one-line failures, never a traceback."""

from __future__ import annotations

import difflib
from typing import Any


class ToolFailure(Exception):
    """The tool cannot do what was asked; ``str()`` is one line for the client (an ``isError`` result)."""


class Arguments:
    """The arguments of one call of ``tool``; :meth:`done` refuses any that was not asked for."""

    def __init__(self, arguments: Any, tool: str) -> None:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolFailure(f"{tool}: the arguments must be a JSON object")
        self.values = arguments
        self.tool = tool
        self.seen: set[str] = set()

    def _get(self, key: str) -> Any:
        self.seen.add(key)
        return self.values.get(key)

    def text(self, key: str) -> str | None:
        value = self._get(key)
        if value is not None and not isinstance(value, str):
            raise ToolFailure(f"{self.tool}: {key} must be a string, got {type(value).__name__}")
        return value

    def required_text(self, key: str) -> str:
        value = self.text(key)
        if value is None or not value.strip():
            raise ToolFailure(f"{self.tool}: {key} is required")
        return value

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ToolFailure(f"{self.tool}: {key} must be true or false")
        return value

    def bounded(self, key: str, default: int, most: int, *, low: int = 1) -> int:
        """An integer from ``low`` to ``most`` (``default`` when absent)."""
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ToolFailure(f"{self.tool}: {key} must be an integer from {low} to {most}")
        if not low <= value <= most:
            raise ToolFailure(f"{self.tool}: {key} must be from {low} to {most}, got {value}")
        return int(value)

    def bounded_number(self, key: str, default: float, most: float) -> float:
        """A number above 0 and at most ``most`` (``default`` when absent)."""
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= most:
            raise ToolFailure(f"{self.tool}: {key} must be a number of seconds above 0 and at most {most:g}")
        return float(value)

    def done(self) -> None:
        """Refuse an argument the tool does not take, naming the nearest one it does."""
        unknown = sorted(set(self.values) - self.seen)
        if unknown:
            near = difflib.get_close_matches(unknown[0], sorted(self.seen), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f" (it takes: {', '.join(sorted(self.seen))})"
            raise ToolFailure(f"{self.tool}: unknown argument {unknown[0]!r}{hint}")
