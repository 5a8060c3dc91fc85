"""Signals that come while a relaying process starts up, before its event loop can take them.

``record`` spends its first few hundred milliseconds importing (SQLAlchemy, the store)
and spawning its server; its event loop installs the handlers that stop a session
cleanly (:meth:`mcptape.assemble.Session.run`) only after that. A SIGTERM in that
window used to end the process by the default action: exit 143 from a shell, no
session row, the client's frames already in the pipe neither forwarded nor recorded.
A SIGINT was a KeyboardInterrupt in the middle of an import.

:func:`catch_early` notes such a signal instead; :meth:`Session.run` takes what was
noted (:func:`take_early`) and stops the session at once, as it would have a moment
later: the session is recorded ``interrupted``, the server is shut down gracefully, and
the exit status is 128+N as for any signal. A second signal before the session runs is
not waited for: the process dies of it, as it would have without mcptape's handlers (a
start-up stuck somewhere must stay killable).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from types import FrameType

# What stops a session of a process mcptape runs itself (Ctrl-C, kill, a closed terminal).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_caught: list[int] = []


def catch_early(signals: Sequence[int]) -> None:
    """Note ``signals`` from now until a session's event loop takes them over (main thread only)."""
    for signum in signals:
        signal.signal(signum, _note)


def _note(signum: int, _frame: FrameType | None) -> None:
    _caught.append(signum)
    if len(_caught) > 1:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def take_early() -> list[int]:
    """The signals noted so far, in order; none are noted afterwards (until they come again)."""
    caught = list(_caught)
    _caught.clear()
    return caught
