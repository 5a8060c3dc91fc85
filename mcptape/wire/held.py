"""Bytes this process holds for its recording stores: one count and one bound for every session.

Writers (:mod:`mcptape.store.backlog`) count the rows they hold until they are committed,
and recorders (:mod:`mcptape.proxy.addons.recorder`) the frames they hold until their store
is open. While another process holds the database's write lock, that is what grows: with one
bound for the whole process (:data:`PROCESS_MAX_BYTES`), twenty gateway sessions hold tens
of MB between them, not each, and past it every session's relay waits. Light on purpose:
the recorder imports it before any store module is loaded.
"""

from __future__ import annotations

import contextlib
from typing import Final, Protocol

PROCESS_MAX_BYTES = 64 << 20  # what the whole process holds for its stores, at most


class Holder(Protocol):
    @property
    def held_bytes(self) -> int: ...


class Held:
    """Bytes of rows this process holds for its stores (queued to writers, or kept by recorders
    whose store is not open yet), whatever the session or writer: one count for one bound.

    Each holder counts its own bytes and this sums them when asked: no lock that a writer
    thread would wait on (see the module docstring), and list operations are atomic.
    """

    def __init__(self) -> None:
        self._holders: list[Holder] = []
        # The only holder, when there is one alone (a ``record``: its writer): it then
        # needs no sum (see over_with). May be stale after racing changes; over_with
        # trusts it only beside a list that holds one holder, which then is this one.
        self._sole: Holder | None = None

    def hold(self, holder: Holder) -> None:
        self._holders.append(holder)
        self._sole = self._alone()

    def let_go(self, holder: Holder) -> None:
        with contextlib.suppress(ValueError):
            self._holders.remove(holder)
        self._sole = self._alone()

    def _alone(self) -> Holder | None:
        holders = list(self._holders)
        return holders[0] if len(holders) == 1 else None

    @property
    def bytes(self) -> int:
        return sum(holder.held_bytes for holder in list(self._holders))

    @property
    def over(self) -> bool:
        return self.bytes > PROCESS_MAX_BYTES

    @property
    def under_half(self) -> bool:
        return self.bytes <= PROCESS_MAX_BYTES // 2

    def over_with(self, holder: Holder, own: int) -> bool:
        """``over``, asked by ``holder`` (holding, ``own`` bytes): while it holds alone, its
        own count is the sum, and no other holder is asked (this runs for every frame)."""
        if self._sole is holder and len(self._holders) == 1:
            return own > PROCESS_MAX_BYTES
        return self.bytes > PROCESS_MAX_BYTES

    def under_half_with(self, holder: Holder, own: int) -> bool:
        """``under_half``, asked by ``holder`` as :meth:`over_with` is."""
        if self._sole is holder and len(self._holders) == 1:
            return own <= PROCESS_MAX_BYTES // 2
        return self.bytes <= PROCESS_MAX_BYTES // 2


HELD: Final = Held()
