"""What goes to a person's terminal: mcptape's own lines on stderr, and text made safe to print.

Method names, tool names, session names, server names, stderr lines and whole frames
come from the MCP server or client that was recorded. Printed raw, an escape sequence
in any of them can set the window title, clear the screen, rewrite earlier lines or
(with bidi overrides) make text read differently from what it is. Every human-readable
output of mcptape goes through :func:`safe` (one line) or :func:`safe_lines` (several
lines): control characters (C0, DEL, C1: ESC among them), Unicode line and paragraph
separators, bidi formatting characters and lone surrogates become the JSON-style escape ``\\uXXXX``
(``\\n``, ``\\r``, ``\\t`` for the common three), so nothing is hidden and nothing acts.
Machine-readable output (JSON, CSV, export) keeps values whole and is left alone.

mcptape's own messages go through :func:`say` (``mcptape: MESSAGE`` on stderr, the
whole line escaped): the one route to a person's terminal for what mcptape says.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import sys
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from typing import IO, Any, Final

# Bidi embeddings/overrides (U+202A-202E), isolates (U+2066-2069) and the invisible marks
# (LRM, RLM, ALM): they reorder what a terminal shows ("Trojan Source").
BIDI_CONTROLS: Final = (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)
# Lone UTF-16 surrogates (a JSON "\\ud800", argv that is not UTF-8) are escaped too: no
# UTF-8 terminal can print them, and writing one raises.
_UNSAFE: Final = (
    *range(0x20),
    0x7F,
    *range(0x80, 0xA0),
    0x2028,
    0x2029,
    *BIDI_CONTROLS,
    *range(0xD800, 0xE000),
)
_ESCAPES: Final[dict[int, str]] = {code: f"\\u{code:04x}" for code in _UNSAFE} | {
    0x09: "\\t",
    0x0A: "\\n",
    0x0D: "\\r",
}
_KEEP_NEWLINE: Final = {code: text for code, text in _ESCAPES.items() if code != 0x0A}


def safe(text: str) -> str:
    """``text`` on one line with every character that could drive a terminal escaped.

    >>> safe("tools/call\\x1b]0;owned\\x07")
    'tools/call\\\\u001b]0;owned\\\\u0007'
    """
    return text.translate(_ESCAPES)


def safe_lines(text: str) -> str:
    """Like :func:`safe`, but line feeds stay line feeds (for multi-line bodies)."""
    return text.translate(_KEEP_NEWLINE)


def say(message: str) -> None:
    """Print ``mcptape: MESSAGE`` on stderr, flushed, escaped for the terminal.

    A closed or broken stderr loses only the message: what mcptape says must never stop
    what it does (a desktop client may close a server's stderr).
    """
    with contextlib.suppress(OSError, ValueError):
        print(f"mcptape: {safe_lines(message)}", file=sys.stderr, flush=True)


# -- tables ---------------------------------------------------------------------------------

ELLIPSIS: Final = "…"
_MIN_CUT_WIDTH: Final = 6
_GAP: Final = "  "


def terminal_width() -> int | None:
    """The width a table should fit: the terminal's, ``$COLUMNS``, or None (no limit) when piped."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def format_float(value: float) -> str:
    """A float for people: 6 significant digits, 3 decimals from 1000 up, no trailing zeros."""
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    magnitude = abs(value)
    if magnitude >= 1e15 or magnitude < 1e-4:
        return f"{value:.6g}"
    if magnitude >= 1000:
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{value:.6g}"


def cell_text(value: Any) -> str:
    """What a table shows for a value, on one line."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError:
            return f"<{len(data)} bytes>"
    return one_line(str(value))


def one_line(text: str) -> str:
    """``text`` on one line, safe for a terminal: see :func:`mcptape.terminal.safe`."""
    return safe(text)


def char_width(ch: str) -> int:
    """Columns a character takes in a terminal: 2 for wide East Asian and emoji, 0 for combining."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal."""
    if text.isascii():
        return len(text)
    return sum(char_width(ch) for ch in text)


def cut(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` columns, ending in ``…`` when something was cut."""
    if display_width(text) <= width:
        return text
    kept: list[str] = []
    used = 0
    for ch in text:
        w = char_width(ch)
        if used + w > width - 1:
            break
        kept.append(ch)
        used += w
    return "".join(kept) + ELLIPSIS


def pad(text: str, width: int, *, right: bool) -> str:
    """``text`` padded with spaces to ``width`` columns, on the left when ``right``-aligned."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def fit_widths(
    natural: Sequence[int], minimum: Sequence[int], limit: int | None, shrink_first: Sequence[int] = ()
) -> list[int]:
    """Column widths that fit ``limit`` (gaps included): the columns at the indexes in
    ``shrink_first`` give up space first, in that order; then the widest columns.

    No column goes below its ``minimum``; when even that does not fit, lines run long.
    """
    widths = list(natural)
    if limit is None:
        return widths
    budget = limit - len(_GAP) * max(0, len(widths) - 1)
    for index in shrink_first:
        excess = sum(widths) - budget
        if excess <= 0:
            return widths
        widths[index] = max(minimum[index], widths[index] - excess)

    def total(cap: int) -> int:
        return sum(min(w, max(cap, m)) for w, m in zip(widths, minimum, strict=True))

    if total(max(widths, default=0)) <= budget:
        return widths
    low, high = 0, max(widths, default=0)
    while low < high:  # the largest cap whose total still fits
        mid = (low + high + 1) // 2
        if total(mid) <= budget:
            low = mid
        else:
            high = mid - 1
    return [min(w, max(low, m)) for w, m in zip(widths, minimum, strict=True)]


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def write_table(
    out: IO[str],
    rows: Iterable[Sequence[Any]],
    columns: Sequence[str],
    width: int | None,
    *,
    keep: Collection[str] = (),
    shrink_first: Sequence[str] = (),
) -> None:
    """Write an aligned table with a header and a dashed rule, fitted to ``width`` columns."""
    raw_rows = [list(row) for row in rows]
    text_rows = [[cell_text(v) for v in row] for row in raw_rows]
    headers = [cell_text(c) for c in columns]
    right = [
        any(is_number(row[i]) for row in raw_rows)
        and all(row[i] is None or is_number(row[i]) for row in raw_rows)
        for i in range(len(columns))
    ]
    natural = [
        max([display_width(h)] + [display_width(row[i]) for row in text_rows]) for i, h in enumerate(headers)
    ]
    minimum = [
        n if c in keep else min(n, max(_MIN_CUT_WIDTH, display_width(h)))
        for n, h, c in zip(natural, headers, columns, strict=True)
    ]
    order = [list(columns).index(c) for c in shrink_first if c in columns]
    widths = fit_widths(natural, minimum, width, order)

    def line(cells: Sequence[str]) -> str:
        parts = [pad(cut(c, w), w, right=r) for c, w, r in zip(cells, widths, right, strict=True)]
        return _GAP.join(parts).rstrip() + "\n"

    out.write(line(headers))
    out.write(_GAP.join("-" * w for w in widths) + "\n")
    for cells in text_rows:
        out.write(line(cells))
