"""How far the writer is behind its producers, in time and bytes, and the back-pressure that bounds it.

Producers count what they queue (:meth:`Backlog.queued`), the writer thread what it
committed (:meth:`Backlog.committed`). The backlog is *over its limit* when the oldest
row not yet committed was queued more than ``max_lag`` seconds ago, or more than
``max_bytes`` wait; producers then hold back until it is under half of both: a thread
with :meth:`Backlog.wait_below_limit`, the event loop with ``await``
:meth:`Backlog.drain`. Bounding the lag in time is what bounds the loss of a ``kill -9``.

When each row was queued is kept as a sample every :data:`SAMPLE_S` at most, so the
lag is known to within that and costs producers one clock read per row. Producers
append samples, the writer thread alone drops those it has committed past (a deque
takes both at once), so knowing the lag takes no lock: producers ask it for every
frame, and two reader threads meeting on a lock under the GIL cost each other
milliseconds.

While the writer waits for the database (:meth:`Backlog.locked_out`: a write lock another
process holds, a PostgreSQL server restarting), the lag limit is lifted and only the
bytes limit holds producers back: a lock held for seconds (``sqlite3`` in a terminal,
a long ``BEGIN IMMEDIATE``) or a restart would otherwise stall forwarding as long, and
holding the relay back cannot make those rows commit sooner.

The bytes limit is also one for the whole process (:data:`mcptape.wire.held.HELD`):
every writer and every recorder still waiting for its store counts what it holds there,
so twenty gateway sessions under a locked database hold tens of MB, not twenty times that.

The writer
thread never waits for a lock a producer may hold (a producer may be interrupted by a
signal handler that closes the writer): it wakes waiters only when their lock is free,
and waiters look again every :data:`POLL_S` anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Final

from mcptape.wire.held import HELD

SAMPLE_S: Final = 0.005
POLL_S: Final = 0.05


class Backlog:
    """Counters of queued and committed rows, bytes and frames, with the limits on their difference."""

    def __init__(self, max_lag: float, max_bytes: int) -> None:
        self.max_lag = max_lag
        self.max_bytes = max_bytes
        # Producer side, under _lock (reentrant: a signal handler may queue on the same thread).
        self._lock = threading.RLock()
        self._queued_rows = 0
        self._queued_bytes = 0
        self._queued_frames = 0
        # (row number, monotonic time) every SAMPLE_S at most: when the oldest waiting row was queued.
        self._samples: deque[tuple[int, float]] = deque()
        # Writer side, written by the writer thread alone.
        self._done_rows = 0
        self._done_bytes = 0
        self._done_frames = 0
        self._released = False
        # Bytes of a large frame the writer waits for producers to finish with (to take
        # its bytes over): holding them back for it meanwhile would only make both wait.
        self._yielding = 0
        # True while the writer waits for another process's write lock: lag is no reason to wait.
        self._locked_out = False
        self._progress = threading.Condition(threading.Lock())
        self._drainers: deque[tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = deque()
        HELD.hold(self)

    @property
    def held_bytes(self) -> int:
        """Bytes queued and not yet committed (what this writer holds in memory)."""
        return self._queued_bytes - self._done_bytes

    def queued(self, nbytes: int, *, frame: bool) -> None:
        """A producer queued one row of ``nbytes``."""
        now = time.monotonic()
        with self._lock:
            self._queued_rows += 1
            self._queued_bytes += nbytes
            self._queued_frames += frame
            samples = self._samples
            if not samples or now - samples[-1][1] >= SAMPLE_S:
                samples.append((self._queued_rows, now))

    def committed(self, nrows: int, nbytes: int, nframes: int) -> None:
        """The writer thread is done with these rows (written, or given up on): wake whoever waits."""
        self._done_rows += nrows
        self._done_bytes += nbytes
        self._done_frames += nframes
        # Keep as head the last sample at or before the oldest waiting row (done + 1): the
        # writer thread is the only one to take samples out, producers only add them.
        samples, first_waiting = self._samples, self._done_rows + 1
        while len(samples) > 1 and samples[1][0] <= first_waiting:
            samples.popleft()
        self.wake()

    def yield_to_producers(self, nbytes: int) -> None:
        """The writer thread waits for producers to finish with ``nbytes`` it has queued (0: no more).

        Meanwhile the lag limit is lifted and those bytes do not count toward the bytes
        limit: producers held back for them would keep the writer waiting.
        """
        self._yielding = nbytes
        if nbytes:
            self.wake()

    def locked_out(self, waiting: bool) -> None:
        """The writer thread waits (True) or no longer waits (False) for the database (a lock, a server away)."""
        if waiting != self._locked_out:
            self._locked_out = waiting
            if waiting:
                self.wake()

    @property
    def waiting_for_lock(self) -> bool:
        """Whether the writer waits for the database now (another process's lock, a server away)."""
        return self._locked_out

    def release(self) -> None:
        """Nothing will be committed any more (the writer stopped or failed): nobody should wait."""
        self._released = True
        HELD.let_go(self)  # what it still has will never be written: no longer held for a store
        self.wake()

    @property
    def frames(self) -> int:
        """Frames queued and not yet committed."""
        return self._queued_frames - self._done_frames

    @property
    def bytes(self) -> int:
        """Bytes queued and not yet committed."""
        return self._queued_bytes - self._done_bytes

    def lag(self) -> float:
        """Seconds since the oldest row not yet committed was queued (0 when none waits)."""
        done = self._done_rows
        if self._queued_rows <= done:
            return 0.0
        samples = self._samples
        try:
            head = samples[0]
            # The writer drops samples when it commits; a row queued after that, when
            # nothing was waiting, may have a sample of its own next to the head: then
            # that one is when the oldest waiting row was queued (rows only grow, so no
            # sample further on can be).
            if len(samples) > 1 and samples[1][0] <= done + 1:
                head = samples[1]
        except IndexError:  # nothing sampled yet, or the writer dropped one meanwhile
            return 0.0
        return time.monotonic() - head[1]

    @property
    def over_limit(self) -> bool:
        """True when the oldest row waits more than ``max_lag`` s or more than ``max_bytes`` wait."""
        if self._released:
            return False
        waiting = self._queued_bytes - self._done_bytes
        if self._yielding:
            return waiting - self._yielding > self.max_bytes
        return (
            waiting > self.max_bytes
            or HELD.over_with(self, waiting)
            or (not self._locked_out and self.lag() > self.max_lag)
        )

    def under_half(self) -> bool:
        """Whether producers held back may go on (hysteresis: under half of both limits)."""
        if self._released:
            return True
        if self._yielding:
            return self._queued_bytes - self._done_bytes - self._yielding <= self.max_bytes // 2
        waiting = self._queued_bytes - self._done_bytes
        under_bytes = waiting <= self.max_bytes // 2 and HELD.under_half_with(self, waiting)
        return under_bytes and (self._locked_out or self.lag() <= self.max_lag / 2)

    def wait_below_limit(self, timeout: float | None = None) -> bool:
        """Block a thread until under half the limits (at once when not over them); False on timeout."""
        if not self.over_limit:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.under_half():
            remaining = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if remaining <= 0:
                return False
            with self._progress:
                self._progress.wait(remaining)
        return True

    async def drain(self) -> None:
        """Wait on the loop, never blocking it, until under half the limits."""
        if not self.over_limit:
            return
        loop = asyncio.get_running_loop()
        while not self.under_half():
            future: asyncio.Future[None] = loop.create_future()
            self._drainers.append((loop, functools.partial(resolve, future)))
            # The writer may have caught up between the test above and the append: look again.
            if self.under_half():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(future, POLL_S)

    def wake(self) -> None:
        """Wake blocked threads and loops (from the writer thread; never waits for a lock)."""
        if self._progress.acquire(blocking=False):
            try:
                self._progress.notify_all()
            finally:
                self._progress.release()
        while self._drainers:
            try:
                loop, wake = self._drainers.popleft()
            except IndexError:
                return
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
                loop.call_soon_threadsafe(wake)


def resolve(future: asyncio.Future[None]) -> None:
    """Set ``future`` done (on its loop), unless it already is."""
    if not future.done():
        future.set_result(None)
