"""What a session's status means to a person: the label `sessions` and `show` print.

The store keeps what the recorder wrote: ``running`` until the session ends, then
``closed`` (the client left), ``ok`` (the server exited 0; older recordings also say
``ok`` when the client left), ``error`` (the server ended the session with a failure)
or ``interrupted`` (mcptape was stopped by a signal), with the server's exit code. :func:`status_label` says what happened in words a person can
trust: a server that exited 5 after the client left is ``closed (server exit 5)``, not
``ok``; a server mcptape had to stop after its client left is ``closed``; a server that
exited non-zero without ever answering is ``failed``; a session
still marked ``running`` whose recorder is gone (killed, machine rebooted) is ``lost``.
:func:`recorder_alive` finds that out from ``/proc`` for the recorder's pid.
"""

from __future__ import annotations

from mcptape.store.procinfo import process_ended, process_started_at, recorder_alive

__all__ = [
    "exit_words",
    "process_ended",
    "process_started_at",
    "recorder_alive",
    "status_label",
    "stopped_in",
]


def exit_words(exit_code: int) -> str:
    """``exit 5``, or ``signal 9`` for a process killed by a signal (reported as -9)."""
    return f"signal {-exit_code}" if exit_code < 0 else f"exit {exit_code}"


def status_label(
    status: str | None,
    exit_code: int | None,
    *,
    server_spoke: bool = True,
    recorder_alive: bool | None = None,
    stopped_by_us: bool = False,
) -> str:
    """The status of a session in a few words.

    ``server_spoke`` says whether the server sent at least one frame; ``recorder_alive``
    whether the process recording a ``running`` session still exists (None: unknown);
    ``stopped_by_us`` whether mcptape itself signalled the server, which outlived its client
    (``call`` and the gateway stop every server so): that is how such a session closes,
    not a failure, and its signal is a detail of the exit event.
    """
    if status == "running":
        return "lost" if recorder_alive is False else "running"
    text = status or "?"
    if exit_code is None:
        return text
    words = exit_words(exit_code)
    if status in ("ok", "closed"):
        # "closed": the client left; "ok" is what recordings before 0.2 say for that too.
        if stopped_by_us:
            return "closed"  # whatever its exit status after mcptape's signal
        if exit_code == 0:
            return status
        if not server_spoke and exit_code > 0:
            return f"failed (server {words})"
        return f"closed (server {words})"  # the client left; the server's exit was not 0
    if status == "interrupted" and (stopped_by_us or exit_code == 0):
        # mcptape was stopped and stopped the server: it exited 0 when its stdin closed, or
        # of mcptape's own signal. Neither is news.
        return status
    if status == "error" and not server_spoke:
        return f"failed (server {words})"
    return f"{text} (server {words})"


def stopped_in(exit_event_data: str | None) -> bool:
    """Whether a ``process_exit`` event's data says mcptape had to signal the server."""
    import json

    try:
        value = json.loads(exit_event_data or "null")
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("stopped") is True
