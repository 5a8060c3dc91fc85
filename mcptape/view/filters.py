"""Which feed items `mcptape tail` shows: its --name, --method, --kind, --slow and --errors (pure).

--session (sessions and conversations) is :mod:`mcptape.view.following`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from mcptape.view.feed import ITEM_TYPES, FeedItem

# What --kind takes: the item types, plus "stderr" for the server's stderr lines alone.
KINDS: Final = (*ITEM_TYPES, "stderr")
_EXCHANGES: Final = ("exchange", "server_request", "unanswered")


def kind_name(text: str) -> str:
    """``server-request`` and ``server_request`` are one kind; raises ValueError for an unknown one."""
    name = text.strip().lower().replace("-", "_")
    if name not in KINDS:
        raise ValueError(f"unknown kind {text!r} (expected {', '.join(k.replace('_', '-') for k in KINDS)})")
    return name


@dataclass(frozen=True)
class ItemFilter:
    """Every condition given must hold; an empty filter lets everything through.

    ``methods``: shell patterns matched against the method, or ``METHOD:SUBJECT`` (the
    tool, prompt or resource: ``tools/call:weather*``). ``names``: patterns of session
    names. ``slow_ms``: only exchanges that took at least this long (or never finished).
    ``errors``: only what failed: error replies, tool errors, unanswered requests, lines
    that are not JSON-RPC, error events.
    """

    names: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    kinds: frozenset[str] = frozenset()
    slow_ms: float | None = None
    errors: bool = False

    @classmethod
    def build(
        cls,
        *,
        names: Iterable[str] = (),
        methods: Iterable[str] = (),
        kinds: Iterable[str] = (),
        slow_ms: float | None = None,
        errors: bool = False,
    ) -> ItemFilter:
        return cls(
            tuple(names),
            tuple(methods),
            frozenset(kind_name(k) for k in kinds),
            slow_ms,
            errors,
        )

    def matches(self, item: FeedItem, session: dict[str, Any] | None) -> bool:
        if self.names:
            name = (session or {}).get("name") or ""
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names):
                return False
        if self.kinds and not self._kind_matches(item):
            return False
        if self.methods and not any(self._method_matches(item, pattern) for pattern in self.methods):
            return False
        if self.slow_ms is not None and (
            item.type not in _EXCHANGES or (item.duration_ms or 0.0) < self.slow_ms
        ):
            return False
        return not self.errors or item.failed

    def _kind_matches(self, item: FeedItem) -> bool:
        if item.type in self.kinds:
            return True
        return "stderr" in self.kinds and item.type == "event" and item.method == "stderr"

    @staticmethod
    def _method_matches(item: FeedItem, pattern: str) -> bool:
        method = item.method or ""
        if ":" in pattern and item.type != "event":
            method_pattern, _, subject_pattern = pattern.partition(":")
            return fnmatch.fnmatchcase(method, method_pattern) and fnmatch.fnmatchcase(
                item.subject or "", subject_pattern
            )
        return fnmatch.fnmatchcase(method, pattern)
