"""Normalisation before comparison: what changes on every run is taken out of both sides.

Defaults, each of which the user can turn off (``--keep CATEGORY``):

``meta``
    every ``_meta`` member, at any depth (progress tokens, trace ids, the 2026-07-28
    protocol version and client info that travel on every message);
``ids``
    values the server mints: members named like ``requestState``, ``nextCursor``,
    ``taskId``, ``sessionId``, and UUIDs anywhere inside a string;
``timestamps``
    date-times anywhere inside a string: ISO 8601, JavaScript's ``Date.toString()``
    (``Thu Nov 26 2026 15:30:01 GMT+0000 (Coordinated Universal Time)``, what Node
    servers such as server-filesystem print for file times), HTTP and RFC 2822 dates
    (``Thu, 26 Nov 2026 15:30:01 GMT``) and C's ``ctime`` (``Thu Nov 26 15:30:01 2026``);
    and members named like ``timestamp``/``createdAt``/``lastModified``.

A tool result's text content that is the JSON of its ``structuredContent`` (what the
specification asks a tool with structured output to send too) is compared as that
structured content, once: it becomes ``<structuredContent>``, so a changed field is reported
at its pointer in ``structuredContent`` alone, and ``--ignore`` of that pointer covers the text.

On top, ``--ignore-text`` regular expressions: what they match inside any string is
replaced by ``<ignored>`` on both sides (a random number or a duration inside a tool's
text, which ``--ignore`` could only leave out with the whole text); and ``--ignore`` rules: a JSON Pointer whose segments may be ``*`` (any member or
element), optionally scoped to a method (``tools/call=/result/content/*/annotations``)
or to one tool (``tools/call:weather=/result/structuredContent/humidity``). An ignored
member is removed from both sides. A rule whose pointer is ``/`` removes matching
notifications and server requests from the comparison altogether.

Everything here is pure and works on plain JSON values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from mcptape.wire.protocol import TOOLS_CALL

CATEGORIES: Final = ("meta", "ids", "timestamps")
MINTED_KEYS: Final = frozenset(
    {"requestState", "nextCursor", "cursor", "taskId", "sessionId", "requestId", "resumptionToken"}
)
TIME_KEYS: Final = frozenset(
    {"timestamp", "createdAt", "updatedAt", "lastModified", "lastUpdatedAt", "startedAt", "endedAt", "time"}
)
MINTED: Final = "<minted>"
IGNORED: Final = "<ignored>"
MIRROR: Final = "<structuredContent>"  # a text content block that repeats the structured content
TIMESTAMP: Final = "<timestamp>"
UUID: Final = "<uuid>"
_UUID_RE: Final = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_ISO_RE: Final = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"
)

_DAY: Final = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTH: Final = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_TIME: Final = r"\d{2}:\d{2}:\d{2}"
_TEXT_DATE_RE: Final = re.compile(
    rf"\b{_DAY} {_MONTH} \d{{2}} \d{{4}} {_TIME}(?: GMT[+-]\d{{4}}(?: \([^()\n]{{1,64}}\))?)?"  # JavaScript
    rf"|\b{_DAY}, \d{{1,2}} {_MONTH} \d{{4}} {_TIME}(?: (?:GMT|UTC|UT|[+-]\d{{4}}))?"  # HTTP, RFC 2822
    rf"|\b{_DAY} {_MONTH} [ \d]\d {_TIME} \d{{4}}\b"  # ctime
)


class IgnoreRuleError(ValueError):
    """An ``--ignore`` rule that is not ``[METHOD[:TOOL]=]/JSON/POINTER``."""


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """Remove the members ``segments`` names (``*`` for any) from messages of ``method``/``tool``."""

    segments: tuple[str, ...]
    method: str | None = None
    tool: str | None = None

    def applies(self, method: str | None, tool: str | None) -> bool:
        """Whether the rule is scoped to this method (and tool), or to every message."""
        if self.method is not None and self.method != method:
            return False
        return self.tool is None or self.tool == tool


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """The unescaped segments of a JSON Pointer (RFC 6901); ``/`` alone is the empty key."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise IgnoreRuleError(f"{pointer!r} is not a JSON Pointer: it must start with '/'")
    return tuple(s.replace("~1", "/").replace("~0", "~") for s in pointer[1:].split("/"))


def format_pointer(segments: Iterable[str | int]) -> str:
    """A JSON Pointer for ``segments`` (``~`` and ``/`` escaped); ``""`` is the whole value."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in segments)


def parse_ignore(text: str) -> IgnoreRule:
    """Parse ``/pointer``, ``METHOD=/pointer`` or ``METHOD:TOOL=/pointer``."""
    scope, sep, pointer = text.rpartition("=")
    if not sep:
        scope, pointer = "", text
    if not pointer.startswith("/"):
        raise IgnoreRuleError(
            f"--ignore {text!r}: expected a JSON Pointer such as /result/content/*/annotations, "
            "optionally after METHOD= or METHOD:TOOL= (e.g. tools/call:weather=/result/structuredContent)"
        )
    method, _, tool = scope.partition(":")
    segments = () if pointer == "/" else parse_pointer(pointer)
    return IgnoreRule(segments, method or None, tool or None)


def parse_text(pattern: str) -> re.Pattern[str]:
    """An ``--ignore-text`` regular expression (Python syntax), compiled."""
    if not pattern:
        raise IgnoreRuleError("--ignore-text '': give a regular expression that matches something")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise IgnoreRuleError(f"--ignore-text {pattern!r}: not a regular expression: {exc}") from None
    if compiled.match(""):
        raise IgnoreRuleError(f"--ignore-text {pattern!r} matches the empty string: it would mark every gap")
    return compiled


@dataclass(frozen=True)
class Normaliser:
    """What to take out of messages before they are compared."""

    keep: frozenset[str] = frozenset()
    ignores: tuple[IgnoreRule, ...] = field(default_factory=tuple)
    texts: tuple[re.Pattern[str], ...] = field(default_factory=tuple)

    @classmethod
    def from_options(
        cls, keep: Iterable[str] = (), ignores: Iterable[str] = (), texts: Iterable[str] = ()
    ) -> Normaliser:
        """From ``--keep`` categories, ``--ignore`` rules and ``--ignore-text`` regular expressions
        (raises IgnoreRuleError, ValueError)."""
        keep = frozenset(keep)
        unknown = keep - set(CATEGORIES)
        if unknown:
            raise ValueError(
                f"unknown --keep category {sorted(unknown)[0]!r} (expected {', '.join(CATEGORIES)})"
            )
        return cls(keep, tuple(parse_ignore(i) for i in ignores), tuple(parse_text(t) for t in texts))

    def dropped(self, method: str | None, tool: str | None = None) -> bool:
        """Whether messages of this method are left out of the comparison (a ``METHOD=/`` rule)."""
        return any(
            r.segments == () and r.method is not None and r.applies(method, tool) for r in self.ignores
        )

    def normalise(self, value: Any, method: str | None = None, tool: str | None = None) -> Any:
        """A copy of ``value`` without what the defaults and the rules for ``method``/``tool`` remove."""
        out = self._defaults(mirrors_folded(value) if method == TOOLS_CALL else value)
        for rule in self.ignores:
            if rule.segments and rule.applies(method, tool):
                out = remove_pointer(out, rule.segments)
        return out

    def _defaults(self, value: Any) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key == "_meta" and "meta" not in self.keep:
                    continue
                if key in MINTED_KEYS and "ids" not in self.keep and isinstance(item, str | int):
                    out[key] = MINTED
                elif (
                    key in TIME_KEYS and "timestamps" not in self.keep and isinstance(item, str | int | float)
                ):
                    out[key] = TIMESTAMP
                else:
                    out[key] = self._defaults(item)
            return out
        if isinstance(value, list):
            return [self._defaults(item) for item in value]
        if isinstance(value, str):
            return self._string(value)
        return value

    def _string(self, text: str) -> str:
        for pattern in self.texts:
            text = pattern.sub(IGNORED, text)
        if "ids" not in self.keep and "-" in text:
            text = _UUID_RE.sub(UUID, text)
        if "timestamps" not in self.keep:
            if "-" in text:
                text = _ISO_RE.sub(TIMESTAMP, text)
            if ":" in text:
                text = _TEXT_DATE_RE.sub(TIMESTAMP, text)
        return text


def mirrors_folded(answer: Any) -> Any:
    """``answer`` (``{"result": ...}``) with each text content block that is the JSON of the
    result's ``structuredContent`` replaced by :data:`MIRROR`; the same object when there is none."""
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, dict) or "structuredContent" not in result:
        return answer
    content = result.get("content")
    if not isinstance(content, list):
        return answer
    structured = result["structuredContent"]
    folded = [{**block, "text": MIRROR} if _mirrors(block, structured) else block for block in content]
    if all(a is b for a, b in zip(folded, content, strict=True)):
        return answer
    return {**answer, "result": {**result, "content": folded}}


def _mirrors(block: Any, structured: Any) -> bool:
    if not isinstance(block, dict) or block.get("type") != "text":
        return False
    text = block.get("text")
    if not isinstance(text, str) or not text.lstrip().startswith(("{", "[")):
        return False
    import json

    try:
        return bool(json.loads(text) == structured)
    except ValueError:
        return False


def remove_pointer(value: Any, segments: tuple[str, ...]) -> Any:
    """A copy of ``value`` without the members ``segments`` names (``*`` matches any)."""
    if not segments:
        return value
    head, rest = segments[0], segments[1:]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if head in ("*", key):
                if rest:
                    out[key] = remove_pointer(item, rest)
                # else: removed
            else:
                out[key] = item
        return out
    if isinstance(value, list):
        if head == "*":
            return [] if not rest else [remove_pointer(item, rest) for item in value]
        if head.isdigit() and int(head) < len(value):
            index = int(head)
            if not rest:
                return value[:index] + value[index + 1 :]
            return [*value[:index], remove_pointer(value[index], rest), *value[index + 1 :]]
    return value
