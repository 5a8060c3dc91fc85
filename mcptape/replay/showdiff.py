"""Showing where two values differ so a person can read it: long text elided around the change.

Pure. ``replay`` and ``diff`` print each difference as a JSON Pointer and both values.
Short values are printed whole. Two long strings are not cut from their start (both
would read ``"line 0: xxx…"`` when line 150 of 200 changed): as pytest shows a failed
string comparison, multi-line text gets a unified diff of the lines around the change,
and one long line the part where the two differ, the identical parts before and after it
elided and counted.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Final

VALUE_WIDTH: Final = 120  # a value longer than this (as JSON) is not printed whole
CONTEXT_CHARS: Final = 30  # identical characters kept on each side of a change in one line
MIDDLE_CHARS: Final = 160  # the changed part of one line, at most
CONTEXT_LINES: Final = 2  # identical lines kept around each change in a text
DIFF_LINES: Final = 40  # lines of unified diff shown, at most
LINE_CHARS: Final = 160  # one line of a unified diff, at most


def as_json(value: Any) -> str:
    """A value as the reports print it: JSON, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False)


def too_long(a: str, b: str) -> bool:
    """Whether two texts, printed whole side by side, would not make a readable line."""
    return len(as_json(a)) + len(as_json(b)) > VALUE_WIDTH


def cut(text: str, width: int = VALUE_WIDTH) -> str:
    """``text`` cut to ``width`` characters, ending in ``...`` when cut."""
    return text if len(text) <= width else text[: width - 3] + "..."


def long_text_lines(a: Any, b: Any, names: tuple[str, str] = ("recorded", "replayed")) -> list[str] | None:
    """How two long strings differ, as a headline and indented lines; None when they are not two
    strings, or are short enough to print whole."""
    if not isinstance(a, str) or not isinstance(b, str) or a == b or not too_long(a, b):
        return None
    if "\n" in a or "\n" in b:
        return _lines_diff(a, b, names)
    return _chars_diff(a, b, names)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the newline that ends the last line
    return lines


def _lines_diff(a: str, b: str, names: tuple[str, str]) -> list[str]:
    left, right = _lines(a), _lines(b)
    first = next((i for i, (x, y) in enumerate(zip(left, right, strict=False)) if x != y), None)
    if first is None:
        first = min(len(left), len(right))  # one text goes on where the other ends
    head = (
        f"the text differs from line {first + 1} "
        f"({_count(_line_count(a), 'line')} {names[0]}, {_count(_line_count(b), 'line')} {names[1]}):"
    )
    body = list(difflib.unified_diff(left, right, names[0], names[1], n=CONTEXT_LINES, lineterm=""))
    if len(body) > DIFF_LINES:
        body = [*body[:DIFF_LINES], f"... {len(body) - DIFF_LINES} more lines of diff"]
    return [head, *(cut(line, LINE_CHARS) for line in body)]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _line_count(text: str) -> int:
    """Lines as an editor counts them: a final newline ends the last line, it starts none."""
    return len(_lines(text))


def _chars_diff(a: str, b: str, names: tuple[str, str]) -> list[str]:
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    start = max(0, prefix - CONTEXT_CHARS)
    head = (
        f"the text differs from character {prefix + 1} "
        f"({_count(len(a), 'character')} {names[0]}, {_count(len(b), 'character')} {names[1]}):"
    )
    width = max(len(n) for n in names)
    lines = [head]
    for name, text in zip(names, (a, b), strict=True):
        end = min(len(text), len(text) - suffix + CONTEXT_CHARS)
        middle = text[start:end]
        if len(middle) > MIDDLE_CHARS + 2 * CONTEXT_CHARS:
            middle = middle[: MIDDLE_CHARS + CONTEXT_CHARS]
            end = start + len(middle)
        shown = as_json(middle)[1:-1]
        before = f"…({start} identical) " if start else ""
        after = f" …({len(text) - end} more)" if end < len(text) else ""
        lines.append(f"  {name:<{width}}  {before}{shown}{after}")
    return lines


def arguments_text(value: Any, width: int = 80) -> str:
    """A request's arguments beside its method in a report line: compact JSON, a long string cut
    in its middle (a path keeps its file name), the whole cut at ``width``."""

    def dump(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    text = dump(value)
    if len(text) > width:
        text = dump(_middles_cut(value))
    return cut(text, width)


def _middles_cut(value: Any, keep: tuple[int, int] = (12, 30)) -> Any:
    if isinstance(value, str) and len(value) > sum(keep) + 1:
        return value[: keep[0]] + "…" + value[-keep[1] :]
    if isinstance(value, dict):
        return {k: _middles_cut(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_middles_cut(v, keep) for v in value]
    return value


class Repeats:
    """The long texts already shown for one answer: a tool's text is often its structured
    content again, and one diff of it is enough."""

    def __init__(self) -> None:
        self._shown: dict[tuple[str, str], str] = {}

    def earlier(self, pointer: str, a: Any, b: Any) -> str | None:
        """The pointer where this same pair of long texts was shown already; None the first time."""
        if not isinstance(a, str) or not isinstance(b, str) or not too_long(a, b):
            return None
        if (a, b) in self._shown:
            return self._shown[(a, b)]
        self._shown[(a, b)] = pointer
        return None
