"""The one error a debug-script run reports to its caller.

Every failure the tool turns into an ``isError`` result is a :class:`DebugScriptError`
whose message is the whole user-facing text: what happened, what was expected and
what to do. Two messages are fixed by the tool's contract and exported as
constants so the server, the tests and callers agree on them byte for byte.

::

    DebugScriptError
    ├── raised by launch.py   command cannot be split or started, inspector never
    │                         came up, inspector port already in use
    ├── raised by session.py  process exited before the breakpoint was hit, timeout,
    │                         no loaded script matches the breakpoint file
    └── raised by server.py   invalid arguments (line < 1, timeout <= 0)
"""

from __future__ import annotations

from typing import Final

PROCESS_EXITED: Final = "Process exited before breakpoint was hit"


def timeout_message(timeout_ms: float) -> str:
    """``Timeout waiting for breakpoint after N ms``, with N as the caller wrote it (2000, not 2000.0)."""
    return f"Timeout waiting for breakpoint after {format_ms(timeout_ms)} ms"


def format_ms(timeout_ms: float) -> str:
    """A millisecond count without a spurious ``.0``."""
    return str(int(timeout_ms)) if float(timeout_ms).is_integer() else str(timeout_ms)


class DebugScriptError(Exception):
    """A debug-script run failed; ``str(error)`` is the message shown to the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
