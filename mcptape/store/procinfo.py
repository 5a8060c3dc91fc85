"""What /proc says about a process: whether the recorder of a session still runs.

A session row keeps the pid of the mcptape process recording it. That process is gone
when no process has the pid, when the one that has it now started after the session
did (the pid was reused), or when it is a zombie its parent has not reaped yet.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

# The kernel's boot time is whole seconds; a process's start time computed from it can
# be early by up to that much, never late.
_START_SLACK_S: Final = 1.0


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
