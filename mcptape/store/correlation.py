"""Pairing requests with their replies as frames are written, so the views need not search.

The writer thread sees each session's frames in the order they were recorded and
hands every one to :meth:`Correlator.see`. A request (one frame, or an element of a
batch) waits under its direction and its id's key; a response or error going the
other way with an id of the same key takes the oldest request waiting there. Ids are
compared the way peers compare them: ``1``, ``1.0`` and ``1e0`` are one id, ``"1"``
is another (:func:`id_key`). Two requests waiting under one id are answered in the
order they were sent. Answers mcptape wrote itself (origin ``proxy``) pair like any
other; a frame that replaces another (``meta.replaces``) takes its place. A frame of a
gateway's stateless pool pairs by the id its upstream saw (``meta.pool``, see
:mod:`mcptape.gateway.poolids`): unique there, where the clients' own ids need not be.

What the writer stores for a pair:

- the reply gets its request's ``method`` (a response has none on the wire);
- a reply frame gets ``request_seq``, the ``seq`` of the frame holding its request;
- when either side is an element of a batch, a ``batch_replies`` row
  ``(session_id, request_seq, request_index, reply_seq, reply_index)``, with -1 as the
  index of a side that is a frame of its own.

A pure class with no database: the migration that backfills old recordings runs the
same pairing over stored rows (:func:`pair_stored`).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from mcptape.wire.frame import Frame, classify_message, id_key

# Requests nobody answers (notifications sent with an id by mistake, a dead peer) must
# not grow the writer's memory without end: past this many waiting in one session, the
# oldest is forgotten (it then shows as unanswered, which it almost surely is).
MAX_WAITING: Final = 100_000
NOT_IN_BATCH: Final = -1

_cached_key = functools.lru_cache(maxsize=4096)(id_key)


@dataclass(slots=True)
class Pairing:
    """What a frame gets from the correlator: the method and request seq of a reply, batch pairs."""

    method: str | None = None
    request_seq: int | None = None
    batch_pairs: list[tuple[int, int, int, int]] = field(default_factory=list)


_NOTHING: Final = Pairing()


# A request waiting for its reply: (seq of its frame, index in its batch or -1, method).
_Waiting = tuple[int, int, str | None]


def _key(rpc_id: str) -> str:
    """:func:`id_key`, answered without a call for the ids almost every peer uses.

    A plain integer of up to 64 digits without a leading zero, and a string without
    escapes, are their own key (as id_key says); this runs for every frame.
    """
    first = rpc_id[:1]
    if first == '"':
        if rpc_id[-1] == '"' and "\\" not in rpc_id and len(rpc_id) > 1:
            return rpc_id
    elif rpc_id.isdigit() and rpc_id.isascii() and len(rpc_id) <= 64 and (first != "0" or len(rpc_id) == 1):
        return rpc_id
    return _cached_key(rpc_id)


def pairing_id(frame: Frame) -> str | None:
    """The id a frame pairs by: the one its upstream saw when a pool lent it one, else its own."""
    pool = frame.meta.get("pool") if frame.meta else None
    if isinstance(pool, list) and len(pool) == 1 and isinstance(pool[0], dict) and pool[0].get("as") == "id":
        ours = pool[0].get("ours")
        if isinstance(ours, str):
            return ours
    return frame.rpc_id


class Correlator:
    """Requests waiting for replies, per session; see the module docstring for the rule."""

    def __init__(self) -> None:
        self._sessions: dict[str, dict[tuple[str, str], list[_Waiting]]] = {}
        self._counts: dict[str, int] = {}

    def see(
        self,
        session_id: str,
        seq: int,
        direction: str,
        kind: str,
        method: str | None,
        rpc_id: str | None,
        message: Any = None,
        replaces: int | None = None,
    ) -> Pairing:
        """Record one frame (in session order) and return what its row gets.

        ``message`` is needed only for a batch (its parsed list); ``replaces`` is the seq
        of the frame this one replaces (from ``meta.replaces``).
        """
        if kind == "request" and rpc_id is not None:
            self._wait(session_id, direction, rpc_id, (seq, NOT_IN_BATCH, method), replaces)
            return _NOTHING
        if kind in ("response", "error") and rpc_id is not None:
            waiting = self._take(session_id, direction, rpc_id)
            if waiting is None:
                return _NOTHING
            request_seq, index, request_method = waiting
            if index == NOT_IN_BATCH:
                return Pairing(request_method, request_seq)
            return Pairing(request_method, request_seq, [(request_seq, index, seq, NOT_IN_BATCH)])
        if kind == "batch" and isinstance(message, list):
            return self._batch(session_id, seq, direction, message)
        return _NOTHING

    def forget(self, session_id: str) -> None:
        """Drop what waits in a session that ended."""
        self._sessions.pop(session_id, None)
        self._counts.pop(session_id, None)

    def _batch(self, session_id: str, seq: int, direction: str, elements: list[Any]) -> Pairing:
        pairs: list[tuple[int, int, int, int]] = []
        for index, element in enumerate(elements):
            found = classify_message(element)
            if found.rpc_id is None:
                continue
            if found.kind == "request":
                self._wait(session_id, direction, found.rpc_id, (seq, index, found.method), None)
            elif found.kind in ("response", "error"):
                waiting = self._take(session_id, direction, found.rpc_id)
                if waiting is not None:
                    pairs.append((waiting[0], waiting[1], seq, index))
        return Pairing(batch_pairs=pairs) if pairs else _NOTHING

    def _wait(
        self, session_id: str, direction: str, rpc_id: str, waiting: _Waiting, replaces: int | None
    ) -> None:
        table = self._sessions.get(session_id)
        if table is None:
            table = self._sessions[session_id] = OrderedDict()  # the oldest in O(1) when full
        key = (direction, _key(rpc_id))
        queue = table.get(key)
        if queue is None:
            table[key] = [waiting]
        else:
            if replaces is not None:  # the replaced request was never forwarded: nobody answers it
                before = len(queue)
                queue[:] = [w for w in queue if w[0] != replaces]
                self._counts[session_id] -= before - len(queue)
            queue.append(waiting)
        count = self._counts.get(session_id, 0) + 1
        if count > MAX_WAITING:
            oldest = next(iter(table))
            del table[oldest][0]
            if not table[oldest]:
                del table[oldest]
            count -= 1
        self._counts[session_id] = count

    def _take(self, session_id: str, reply_direction: str, rpc_id: str) -> _Waiting | None:
        table = self._sessions.get(session_id)
        if not table:
            return None
        key = ("s2c" if reply_direction == "c2s" else "c2s", _key(rpc_id))
        queue = table.get(key)
        if not queue:
            return None
        waiting = queue.pop(0)
        if not queue:
            del table[key]
        self._counts[session_id] -= 1
        return waiting


@dataclass(frozen=True, slots=True)
class StoredReply:
    """A backfilled pairing of a stored frame: its row id and what the writer would have stored."""

    frame_id: int
    method: str | None
    request_seq: int | None


def pair_stored(
    rows: Iterable[tuple[int, str, int, str, str, str | None, str | None, Any]],
) -> tuple[list[StoredReply], list[tuple[str, int, int, int, int]]]:
    """Pair stored frames (id, session_id, seq, direction, kind, method, rpc_id, parsed batch or None).

    ``rows`` must come in (session_id, seq) order. Returns the reply frames to update and
    the ``batch_replies`` rows, as the writer would have written them.
    """
    correlator = Correlator()
    replies: list[StoredReply] = []
    pairs: list[tuple[str, int, int, int, int]] = []
    for frame_id, session_id, seq, direction, kind, method, rpc_id, batch in rows:
        pairing = correlator.see(session_id, seq, direction, kind, method, rpc_id, batch)
        if pairing.request_seq is not None or (pairing.method is not None and method is None):
            replies.append(StoredReply(frame_id, pairing.method, pairing.request_seq))
        pairs.extend((session_id, *pair) for pair in pairing.batch_pairs)
    return replies, pairs


__all__ = ["Correlator", "Pairing", "StoredReply", "id_key", "pair_stored"]
