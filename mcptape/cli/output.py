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
import re
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import IO, Any, Final, TypeVar

import click

from mcptape.store.sql_query import csv_value
from mcptape.terminal import (  # the table writer lives with the rest of what a terminal shows
    ELLIPSIS,
    cell_text,
    char_width,
    cut,
    display_width,
    fit_widths,
    format_float,
    is_number,
    one_line,
    pad,
    terminal_width,
    write_table,
)

F = TypeVar("F", bound=Callable[..., Any])

FORMATS: Final = ("table", "json", "nl", "csv")
_HELP: Final = {
    "table": "Aligned columns cut to the terminal width (the default).",
    "json": "One JSON array of objects.",
    "nl": "Newline-delimited JSON: one object per line.",
    "csv": "CSV with a header line.",
}
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

__all__ = [
    "ELLIPSIS",
    "cell_text",
    "char_width",
    "csv_value",
    "cut",
    "display_width",
    "fit_widths",
    "format_float",
    "is_number",
    "one_line",
    "pad",
    "terminal_width",
    "write_table",
]


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


def write_csv(out: IO[str], rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> None:
    """Write CSV (RFC 4180 quoting, ``\\r\\n`` line ends) with a header line."""
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_value(v) for v in row])
