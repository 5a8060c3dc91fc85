"""What a session's status means to a person: the label `sessions` and `show` print.

The store keeps what the recorder wrote: ``running`` until the session ends, then
``closed`` (the client left), ``ok`` (the server exited 0; older recordings also say
``ok`` when the client left), ``error`` (the server ended the session with a failure)
or ``interrupted`` (mcptape was stopped by a signal), with the server's exit code. :func:`status_label` says what happened in words a person can
trust: a server that exited 5 after the client left is ``closed (server exit 5)``, not
``ok``; a server that exited non-zero without ever answering is ``failed``; a session
still marked ``running`` whose recorder is gone (killed, machine rebooted) is ``lost``.
:func:`recorder_alive` finds that out from ``/proc`` for the recorder's pid.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

# The kernel's boot time is whole seconds; a process's start time computed from it can
# be early by up to that much, never late.
_START_SLACK_S: Final = 1.0


def exit_words(exit_code: int) -> str:
    """``exit 5``, or ``signal 9`` for a process killed by a signal (reported as -9)."""
    return f"signal {-exit_code}" if exit_code < 0 else f"exit {exit_code}"


def status_label(
    status: str | None,
    exit_code: int | None,
    *,
    server_spoke: bool = True,
    recorder_alive: bool | None = None,
) -> str:
    """The status of a session in a few words.

    ``server_spoke`` says whether the server sent at least one frame; ``recorder_alive``
    whether the process recording a ``running`` session still exists (None: unknown).
    """
    if status == "running":
        return "lost" if recorder_alive is False else "running"
    text = status or "?"
    if exit_code is None:
        return text
    words = exit_words(exit_code)
    if status in ("ok", "closed"):
        # "closed": the client left; "ok" is what recordings before 0.2 say for that too.
        if exit_code == 0:
            return status
        if not server_spoke and exit_code > 0:
            return f"failed (server {words})"
        return f"closed (server {words})"  # the client left; the server's exit was not 0
    if status == "error" and not server_spoke:
        return f"failed (server {words})"
    return f"{text} (server {words})"


def is_lost(status: str | None, recorder_alive: bool | None) -> bool:
    """A session marked running whose recorder is known to be gone."""
    return status == "running" and recorder_alive is False


def _stat_fields(pid: int, proc: Path) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (field 3, the state, first)."""
    stat = (proc / str(pid) / "stat").read_text()
    # The command name (field 2) is in parentheses and may hold spaces: count after it.
    return stat[stat.rindex(")") + 2 :].split()


def process_ended(pid: int, proc: Path = Path("/proc")) -> bool:
    """Whether ``pid`` is a process that has ended but whose parent has not reaped it yet.

    A recorder killed with SIGKILL by a desktop client or a shell's ``timeout`` stays a
    zombie until its parent waits for it: it still has its pid, but it is gone.
    """
    try:
        return _stat_fields(pid, proc)[0] in ("Z", "X", "x")
    except (OSError, ValueError, IndexError):
        return False


def process_started_at(pid: int, proc: Path = Path("/proc")) -> float | None:
    """When process ``pid`` started, in epoch seconds, from ``/proc``; None when unknown."""
    try:
        fields = _stat_fields(pid, proc)
        boot = next(
            float(line.split()[1])
            for line in (proc / "stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        ticks = int(fields[19])  # field 22, starttime, in clock ticks since boot
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def recorder_alive(pid: int | None, started_at: float) -> bool | None:
    """Whether the process that recorded a session started at ``started_at`` still runs.

    False when no process has that pid, or when the process that has it now started after
    the session did (the pid was reused); None when there is no pid to check.
    """
    if pid is None or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    except OSError:
        return None
    if process_ended(pid):
        return False
    started = process_started_at(pid)
    return not (started is not None and started > started_at + _START_SLACK_S)
