"""mcptape's own lines on stderr: ``mcptape: MESSAGE``, escaped for the terminal.

Messages quote what servers and recordings control (tool names, error texts, sources,
commands): :func:`say` escapes control characters and bidi overrides in the whole line
(:mod:`mcptape.cli.safe_text`), so such a message can never drive the terminal.
"""

from __future__ import annotations

import sys

from mcptape.cli.safe_text import safe_lines


def say(message: str) -> None:
    """Print ``mcptape: MESSAGE`` on stderr, flushed."""
    print(f"mcptape: {safe_lines(message)}", file=sys.stderr, flush=True)
