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
start-up stuck somewhere must stay killable), said in one line.

A process whose work needs no clean-up of its own (``mcptape mcp``, which writes
nothing) rather dies of such a signal at once: :func:`die_on`.

``replay`` runs one session per recording: between two (writing one's frames, comparing,
the report) a signal is noted the same way, with ``after`` the signal that stopped the
session, so that one more is the second and gives up.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from types import FrameType

# What stops a session of a process mcptape runs itself (Ctrl-C, kill, a closed terminal).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_caught: list[int] = []
_before = 0  # signals that came before the noting began (they stopped a session)


def catch_early(signals: Sequence[int], *, after: Sequence[int] = ()) -> None:
    """Note ``signals`` from now until a session's event loop takes them over (main thread only).

    ``after``: the signals that already stopped a session of this process; the next one
    noted is then a second signal.
    """
    global _before
    _before = len(after)
    for signum in signals:
        signal.signal(signum, _note)


def _note(signum: int, _frame: FrameType | None) -> None:
    _caught.append(signum)
    if len(_caught) + _before > 1:
        name = signal.Signals(signum).name
        os.write(2, f"mcptape: {name} again: giving up; what was not written is lost\n".encode())
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def take_early() -> list[int]:
    """The signals noted so far, in order; none are noted afterwards (until they come again)."""
    global _before
    caught = list(_caught)
    _caught.clear()
    _before = 0
    return caught


def die_on(signals: Sequence[int]) -> None:
    """End the process by the default action of each of ``signals`` (main thread only).

    Python's own SIGINT is a KeyboardInterrupt: it would leave an SDK stdio server
    waiting on its stdin reader thread, Ctrl-C doing nothing until a line came.
    """
    for signum in signals:
        signal.signal(signum, _die)


def _die(signum: int, _frame: FrameType | None) -> None:
    die_of(signum)


def die_of(signum: int) -> None:
    """End the process by ``signum``, as if it had no handler for it."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
