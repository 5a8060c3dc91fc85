"""Which rows a poll by id still has to read: past the last id seen, and the gaps behind it.

Rows are read by increasing id (frames, events). On SQLite an id is taken and committed
under the one write lock, so ids become visible in order. On PostgreSQL a sequence hands
out ids when rows are inserted and transactions commit in any order: a poll can see
id 12 while id 11 is still in a transaction of another recorder, and reading only past
12 would lose 11 for good. So an id skipped over is a *gap*, read again by later polls
until it shows up or has been missing for :data:`GAP_PATIENCE_S` (a rolled-back insert,
a deleted row: ids that will never come).

Pure: the reader asks :meth:`IdCursor.low` for the id to read past and tells
:meth:`IdCursor.seen` what it got.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Final

# Recorders commit every 20-100 ms; a transaction open for this long is not a recorder's.
GAP_PATIENCE_S: Final = 10.0
# Past this many ids missing at once (a session deleted), only the newest ones are waited for.
MAX_GAP_IDS: Final = 10_000


class IdCursor:
    """The ids read so far: the highest, and the missing ones below it still worth waiting for."""

    def __init__(self, after: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.last = after
        self._clock = clock
        self._gaps: dict[int, float] = {}  # missing id -> when it was first missed

    def low(self) -> int:
        """Read the rows with an id above this (the oldest gap still waited for, else the last id)."""
        self._expire()
        return min(self._gaps) - 1 if self._gaps else self.last

    def fresh(self, row_id: int) -> bool:
        """Whether a row read past :meth:`low` is new (above the last id, or filling a gap)."""
        return row_id > self.last or row_id in self._gaps

    def seen(self, ids: Iterable[int]) -> None:
        """The ids a poll returned, in increasing order."""
        now = self._clock()
        for row_id in ids:
            if row_id in self._gaps:
                del self._gaps[row_id]
                continue
            if row_id <= self.last:
                continue
            first_missing = max(self.last + 1, row_id - MAX_GAP_IDS)
            for missing in range(first_missing, row_id):
                self._gaps[missing] = now
            self.last = row_id

    @property
    def gaps(self) -> int:
        """How many ids are still waited for."""
        return len(self._gaps)

    def _expire(self) -> None:
        if not self._gaps:
            return
        limit = self._clock() - GAP_PATIENCE_S
        for row_id in [i for i, since in self._gaps.items() if since < limit]:
            del self._gaps[row_id]
