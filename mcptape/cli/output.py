"""One set of output formats for every command that prints rows: --table, --json, --nl, --csv.

``output_options`` adds the four flags (one parameter, ``fmt``); ``emit`` writes rows
in the chosen format. Tables are for people: aligned columns, numbers on the right,
long cells cut with ``…`` so a row fits the terminal. The other formats are for
programs and keep every value whole: ``bytes`` become text when they are UTF-8 and
base64 otherwise, ``None`` is ``null`` (JSON) or an empty field (CSV), floats keep
their full precision.
"""

from __future__ import annotations

import base64
import csv
import math
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import IO, Any, Final, TypeVar

import click

from mcptape.terminal import safe

F = TypeVar("F", bound=Callable[..., Any])

FORMATS: Final = ("table", "json", "nl", "csv")
_HELP: Final = {
    "table": "Aligned columns cut to the terminal width (the default).",
    "json": "One JSON array of objects.",
    "nl": "Newline-delimited JSON: one object per line.",
    "csv": "CSV with a header line.",
}
ELLIPSIS: Final = "…"
_MIN_CUT_WIDTH: Final = 6
_GAP: Final = "  "
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def output_options(func: F) -> F:
    """Add ``--table`` (default), ``--json``, ``--nl`` and ``--csv``; the choice arrives as ``fmt``."""
    for name in reversed(FORMATS):
        # Only the default flag may name a default: click takes the first one it finds.
        extra: dict[str, Any] = {"default": True} if name == "table" else {}
        func = click.option(f"--{name}", "fmt", flag_value=name, help=_HELP[name], **extra)(func)
    return func


def emit(
    rows: Iterable[Sequence[Any]],
    columns: Sequence[str],
    fmt: str,
    *,
    file: IO[str] | None = None,
    width: int | None = None,
    keep: Collection[str] = (),
    shrink_first: Sequence[str] = (),
) -> None:
    """Write ``rows`` (sequences in ``columns`` order) to ``file`` (stdout) in format ``fmt``.

    ``width`` limits a table's line length; by default it is the terminal's width when
    stdout is a terminal, ``$COLUMNS`` when set, and unlimited otherwise (so a piped
    table keeps whole cells). Table columns named in ``keep`` (ids, times) are never cut;
    the others give up their width: those named in ``shrink_first`` in that order, each
    down to its minimum, then the widest first. JSON, NDJSON and CSV stream row by row.
    """
    from mcptape.cli.common import writing_output

    out = file if file is not None else sys.stdout
    with writing_output():
        if fmt == "table":
            limit = width if width is not None else terminal_width()
            write_table(out, rows, columns, limit, keep=keep, shrink_first=shrink_first)
        elif fmt in ("json", "nl"):
            write_json(out, rows, columns, lines=fmt == "nl")
        elif fmt == "csv":
            write_csv(out, rows, columns)
        else:
            raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")
        out.flush()


def terminal_width() -> int | None:
    """The width a table should fit: the terminal's, ``$COLUMNS``, or None (no limit) when piped."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


# -- JSON and CSV ---------------------------------------------------------------------------


def json_value(value: Any) -> Any:
    """A value orjson can write: bytes become UTF-8 text or ``{"$base64": true, "encoded": ...}``."""
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return {"$base64": True, "encoded": base64.b64encode(data).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def unique_keys(columns: Sequence[str]) -> list[str]:
    """Column names usable as object keys: a repeated name gets ``_2``, ``_3``... (``select 1, 1``)."""
    seen: dict[str, int] = {}
    keys = []
    for name in columns:
        key = name
        while key in seen:
            seen[name] += 1
            key = f"{name}_{seen[name]}"
        seen.setdefault(key, 1)
        keys.append(key)
    return keys


def json_text(encoded: bytes) -> str:
    """orjson output as text with U+2028/U+2029 escaped: valid JSON either way, but many line
    readers (Python's ``str.splitlines``, older JavaScript) would break a line there."""
    text = encoded.decode()
    if "\u2028" in text or "\u2029" in text:
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text


def json_with_surrogates(obj: dict[str, Any]) -> str:
    """Compact JSON for ``obj`` whose strings hold lone surrogates (orjson refuses them): each
    is written as its ``\\udXXX`` escape, so the line is UTF-8 and reads back to the same value."""
    import json

    text = json.dumps(obj, default=str, ensure_ascii=False, separators=(",", ":"))
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def write_json(out: IO[str], rows: Iterable[Sequence[Any]], columns: Sequence[str], *, lines: bool) -> None:
    """Write a JSON array of objects, or one object per line when ``lines``."""
    import orjson

    keys = unique_keys(columns)
    opts = orjson.OPT_NON_STR_KEYS

    def dump(row: Sequence[Any]) -> str:
        obj = {k: json_value(v) for k, v in zip(keys, row, strict=True)}
        try:
            return json_text(orjson.dumps(obj, default=str, option=opts))
        except orjson.JSONEncodeError:
            return json_with_surrogates(obj)

    if lines:
        for row in rows:
            out.write(dump(row) + "\n")
        return
    first = True
    for row in rows:
        out.write(("[" if first else ",\n ") + dump(row))
        first = False
    out.write("[]\n" if first else "]\n")


def csv_value(value: Any) -> Any:
    """A CSV field: empty for None, text or base64 for bytes, full precision for floats."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(data).decode("ascii")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        # CSV has no escapes: a lone surrogate (not UTF-8) is written as U+FFFD.
        return _SURROGATE.sub("\ufffd", value)
    return value


def write_csv(out: IO[str], rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> None:
    """Write CSV (RFC 4180 quoting, ``\\r\\n`` line ends) with a header line."""
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_value(v) for v in row])


# -- tables ---------------------------------------------------------------------------------


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
