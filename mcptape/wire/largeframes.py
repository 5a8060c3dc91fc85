"""Large frames in flight: at most one frame of many megabytes in memory at a time.

A frame of :data:`LARGE_FRAME_BYTES` or more costs its size several times while it
crosses mcptape: once while a reader splits it out of the stream (the buffer and the
frame), once more while the store inserts it (SQLite's bound copy and its record).
Two such frames at once (a server echoing a 64 MiB request) would add up, so the
store's writer counts the large frames it has queued and not yet finished with
(:meth:`LargeFrames.queued`, :meth:`LargeFrames.finished`), and a stdio reader that
finds itself holding a large incomplete line waits (:meth:`LargeFrames.wait_idle`,
a bounded wait) until that count is zero before reading the rest. Forwarding is
only delayed, never stopped: past the patience the reader goes on.

Process-wide on purpose: the writer is shared by every session of a process.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Final

LARGE_FRAME_BYTES: Final = 4 << 20
READER_PATIENCE_S: Final = 2.0  # a reader waits at most this long for the writer, per line

__all__ = ["LARGE", "LARGE_FRAME_BYTES", "READER_PATIENCE_S", "LargeFrames", "give_large_blocks_back"]

_M_MMAP_THRESHOLD: Final = -3  # glibc's mallopt parameter
MMAP_THRESHOLD_BYTES: Final = 1 << 20


def give_large_blocks_back() -> bool:
    """Have glibc map blocks of :data:`MMAP_THRESHOLD_BYTES` and more on their own; True when it took.

    glibc raises its threshold for that as the process frees large blocks (up to
    32 MiB), and a freed block under it stays in the heap: after one 20 MiB frame
    the process keeps 20 MiB more for good. With a fixed threshold a large frame's
    memory goes back to the system when the frame is freed. Elsewhere: does nothing.
    Done once per process, when the first large frame arrives (importing ctypes costs
    milliseconds that a session without large frames need not pay).
    """
    global _tuned
    if _tuned is None:
        _tuned = False
        with contextlib.suppress(Exception):  # not glibc (musl, macOS): nothing to tune
            import ctypes

            _tuned = bool(ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    return _tuned


_tuned: bool | None = None


class LargeFrames:
    """A count of large frames the store has yet to finish with, and a bounded wait for zero."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._count = 0
        self.waits = 0  # how many times a reader waited (tests and benchmarks read it)

    @property
    def count(self) -> int:
        """Large frames queued and not yet finished."""
        return self._count

    def queued(self) -> None:
        """A large frame entered the store's queue."""
        with self._cv:
            self._count += 1

    def finished(self) -> None:
        """The store is done with one large frame (written, or given up on) and holds it no more."""
        with self._cv:
            self._count = max(0, self._count - 1)
            if self._count == 0:
                self._cv.notify_all()

    def wait_idle(self, timeout: float = READER_PATIENCE_S) -> bool:
        """Block (a reader thread, never the event loop) until no large frame is pending; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cv:
            if self._count == 0:
                return True
            self.waits += 1
            while self._count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cv.wait(remaining)
        return True


LARGE: Final = LargeFrames()
