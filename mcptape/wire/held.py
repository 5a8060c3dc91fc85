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

    def hold(self, holder: Holder) -> None:
        self._holders.append(holder)

    def let_go(self, holder: Holder) -> None:
        with contextlib.suppress(ValueError):
            self._holders.remove(holder)

    @property
    def bytes(self) -> int:
        return sum(holder.held_bytes for holder in list(self._holders))

    @property
    def over(self) -> bool:
        return self.bytes > PROCESS_MAX_BYTES

    @property
    def under_half(self) -> bool:
        return self.bytes <= PROCESS_MAX_BYTES // 2


HELD: Final = Held()
