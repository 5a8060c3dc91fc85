"""How fast ``serve`` plays what a server sent while answering: as recorded, faster, or at once.

A live server spaces out the progress notifications of a long call and the answer that
ends it; a client may depend on that. The TypeScript SDK handles a notification a
microtask after it reads it but a response at once: given a progress notification and
the answer in one read, it drops the request's progress handler first and then finds
"a progress notification for an unknown token". So the tape server plays the gaps the
recording shows between the messages of one answer (each gap capped, divided by the
pace's factor), and whatever the pace, a notification and the answer that follows it
leave in separate writes with a short real pause between them: a pipe can join two
writes into one read, and only a pause lets the client's event loop run its microtasks.

:func:`parse_pace` reads ``--pace``; :class:`Pacer` keeps time for one answer being played.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Final

RECORDED: Final = "recorded"
FAST: Final = "fast"
MAX_GAP_S: Final = 1.0  # a recorded gap longer than this is played as this long
# Between a notification and the answer after it, at any pace: enough for the client's
# reader to take the notification in a read of its own (a few turns of its event loop).
NOTIFICATION_PAUSE_S: Final = 0.02


class PaceError(ValueError):
    """A ``--pace`` value that is none of recorded, fast or a positive factor."""


@dataclass(frozen=True, slots=True)
class Pace:
    """Recorded gaps are divided by ``factor`` (1: as recorded) and capped; ``factor`` None: no gaps."""

    factor: float | None = 1.0
    max_gap: float = MAX_GAP_S

    def gap(self, recorded: float) -> float:
        """How long to play a recorded gap of ``recorded`` seconds."""
        if self.factor is None or recorded <= 0:
            return 0.0
        return min(recorded, self.max_gap) / self.factor

    def __str__(self) -> str:
        if self.factor is None:
            return FAST
        return RECORDED if self.factor == 1.0 else f"{self.factor:g}"


def parse_pace(text: str) -> Pace:
    """``recorded``, ``fast`` or FACTOR (``2``: twice as fast as recorded, ``0.5``: half as fast)."""
    value = text.strip().lower()
    if value == RECORDED:
        return Pace(1.0)
    if value == FAST:
        return Pace(None)
    try:
        factor = float(value)
    except ValueError:
        factor = float("nan")
    if not factor > 0 or factor == float("inf"):
        raise PaceError(
            f"--pace {text!r}: expected recorded, fast, or a factor above 0 (2 plays twice as fast)"
        )
    return Pace(factor)


class Pacer:
    """Keeps the time of one answer being played: call :meth:`wait` before and :meth:`sent` after
    each message. Time spent meanwhile (waiting for the client's answer to a server request)
    counts towards the next gap."""

    def __init__(self, pace: Pace) -> None:
        self.pace = pace
        self._last_ts: float | None = None
        self._last_sent = 0.0
        self._after_notification = False

    async def wait(self, ts: float | None, *, answer: bool = False) -> None:
        """Wait until the message recorded at ``ts`` is due (``answer``: it is the response)."""
        elapsed = time.monotonic() - self._last_sent
        delay = 0.0
        if self._last_ts is not None and ts is not None:
            delay = self.pace.gap(ts - self._last_ts) - elapsed
        if answer and self._after_notification:
            delay = max(delay, NOTIFICATION_PAUSE_S - elapsed)
        if delay > 0:
            await asyncio.sleep(delay)

    def sent(self, ts: float | None, *, notification: bool) -> None:
        """A message recorded at ``ts`` has just been handed to the client."""
        self._last_ts = ts if ts is not None else self._last_ts
        self._last_sent = time.monotonic()
        self._after_notification = notification
