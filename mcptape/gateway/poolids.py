"""Clients of a stateless pool kept apart: ids and progress tokens of the gateway's own in a shared upstream.

2026-07-28 clients (no session) share a pooled upstream (:mod:`mcptape.gateway.stateless`),
but their request ids and progress tokens are theirs alone: two may use id 1, or progress
token ``"t"``, at the same moment. Each request taken into a pool gets an id of the
gateway's own (``"mcptape-pool-N"``), and its progress token another, so the upstream's
answers and progress are told apart and routed to the stream of the request they belong
to; on the way back each gets the client's own again (the id as the client wrote it).
Frames are edited in their text, member by member: every other byte stays as it was.

A cancellation names the client's own id. It reaches the request it means only when that
is sure: the request with that id that came on the same connection, else the only one in
the pool with that id, unless that connection's own request with that id just finished
(a late cancellation). Otherwise it reaches nobody, and that is recorded: a cancellation
is advice (the server may ignore it), another client's request is not ours to cancel.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass

import orjson

from mcptape.wire.frame import Frame
from mcptape.wire.ids import id_key
from mcptape.wire.jsontext import Member, element_spans, object_members
from mcptape.wire.protocol import CANCELLED

PREFIX = "mcptape-pool-"
RELATED = "io.modelcontextprotocol/related-request-id"
KEEP_FINISHED = 256  # requests remembered after their answer, to tell a late cancellation


@dataclass
class Lent:
    """One client request in a pool: the id and progress token it got, and the client's own."""

    sid: str  # the pool session that runs it
    ours: str  # our id's JSON text
    theirs: str  # the client's id, as it wrote it
    connection: int
    token_ours: str | None = None
    token_theirs: str | None = None


def _member(text: str, start: int, key: str) -> Member | None:
    found = None
    for member in object_members(text, start) or ():
        if member.key == key:
            found = member  # the last of duplicate keys wins, as parsers do
    return found


def _at(text: str, start: int, *keys: str) -> Member | None:
    member = None
    for key in keys:
        member = _member(text, start, key)
        if member is None:
            return None
        start = member.value_start
    return member


def _edited(data: bytes, edits: list[tuple[int, int, str]], text: str) -> bytes:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text.encode("utf-8", "surrogateescape")


def _objects(text: str) -> list[int]:
    """Where the message's objects start: the message, or each element of a batch."""
    stripped = len(text) - len(text.lstrip())
    if text.startswith("[", stripped):
        return [start for start, _ in element_spans(text, stripped) or ()]
    return [stripped]


class PoolIds:
    """The ids and progress tokens one pool lent its clients' requests (see the module docstring)."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()  # answers are placed from any thread
        self.lent: dict[str, Lent] = {}  # id key of our id -> the request
        self._tokens: dict[str, Lent] = {}  # our progress token's text -> the request
        self._finished: deque[tuple[int, str]] = deque(maxlen=KEEP_FINISHED)  # (connection, their id key)

    def take(self, frame: Frame, sid: str, connection: int) -> Frame:
        """A client's frame as the pool's upstream gets it: each request with an id of ours."""
        text = frame.data.decode("utf-8", "surrogateescape")
        edits: list[tuple[int, int, str]] = []
        taken = []
        for start in _objects(text):
            method, rid = _member(text, start, "method"), _member(text, start, "id")
            if method is None or rid is None:
                continue
            number = next(self._numbers)
            lent = Lent(sid, f'"{PREFIX}{number}"', text[rid.value_start : rid.value_end], connection)
            edits.append((rid.value_start, rid.value_end, lent.ours))
            token = _at(text, start, "params", "_meta", "progressToken")
            if token is not None:
                lent.token_theirs = text[token.value_start : token.value_end]
                lent.token_ours = f'"{PREFIX}{number}-progress"'
                edits.append((token.value_start, token.value_end, lent.token_ours))
            taken.append(lent)
        if not edits:
            return frame
        with self._lock:
            for lent in taken:
                self.lent[id_key(lent.ours)] = lent
                if lent.token_ours is not None:
                    self._tokens[lent.token_ours] = lent
        pool = [{"id": lent.theirs, "ours": lent.ours} for lent in taken]
        return Frame(
            _edited(frame.data, edits, text),
            frame.direction,
            frame.origin,
            frame.ts,
            {**(frame.meta or {}), "pool": pool},
        )

    def give_back(self, data: bytes) -> bytes | None:
        """An upstream frame as the client gets it: answers and progress with the client's own id
        and token (None: nothing to change). An answered request is let go."""
        if PREFIX.encode() not in data:
            return None
        text = data.decode("utf-8", "surrogateescape")
        edits: list[tuple[int, int, str]] = []
        with self._lock:
            for start in _objects(text):
                edits.extend(self._back(text, start))
        return _edited(data, edits, text) if edits else None

    def _back(self, text: str, start: int) -> list[tuple[int, int, str]]:
        # Under the lock: the edits of one message.
        edits = []
        rid = _member(text, start, "id")
        if rid is not None and _member(text, start, "method") is None:
            lent = self.lent.pop(id_key(text[rid.value_start : rid.value_end]), None)
            if lent is not None:
                edits.append((rid.value_start, rid.value_end, lent.theirs))
                if lent.token_ours is not None:
                    self._tokens.pop(lent.token_ours, None)
                self._finished.append((lent.connection, id_key(lent.theirs)))
            return edits
        token = _at(text, start, "params", "progressToken")
        if token is not None:
            lent = self._tokens.get(text[token.value_start : token.value_end])
            if lent is not None and lent.token_theirs is not None:
                edits.append((token.value_start, token.value_end, lent.token_theirs))
        related = _at(text, start, "params", "_meta", RELATED)
        if related is not None:
            lent = self.lent.get(id_key(text[related.value_start : related.value_end]))
            if lent is not None:
                edits.append((related.value_start, related.value_end, lent.theirs))
        return edits

    def cancel(self, frame: Frame, connection: int) -> tuple[str, Frame] | None:
        """Where a client's ``notifications/cancelled`` goes, and as what; None: to nobody (see
        the module docstring)."""
        message = frame.message
        if not isinstance(message, dict) or message.get("method") != CANCELLED:
            return None
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("requestId"), (str, int)):
            return None
        theirs = id_key(orjson.dumps(params["requestId"]).decode())
        with self._lock:
            named = [lent for lent in self.lent.values() if id_key(lent.theirs) == theirs]
            mine = [lent for lent in named if lent.connection == connection]
            if len(mine) == 1:
                target = mine[0]
            elif not mine and len(named) == 1 and (connection, theirs) not in self._finished:
                target = named[0]
            else:
                return None
        text = frame.data.decode("utf-8", "surrogateescape")
        requested = _at(text, _objects(text)[0], "params", "requestId")
        if requested is None:
            return None
        edits = [(requested.value_start, requested.value_end, target.ours)]
        meta = {**(frame.meta or {}), "pool": [{"id": target.theirs, "ours": target.ours}]}
        return target.sid, Frame(
            _edited(frame.data, edits, text), frame.direction, frame.origin, frame.ts, meta
        )

    def forget(self, sid: str) -> None:
        """A pool session ended: what it ran is answered by nobody now."""
        with self._lock:
            for key, lent in list(self.lent.items()):
                if lent.sid == sid:
                    del self.lent[key]
                    if lent.token_ours is not None:
                        self._tokens.pop(lent.token_ours, None)
