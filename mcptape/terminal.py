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
import sys
from typing import Final

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
