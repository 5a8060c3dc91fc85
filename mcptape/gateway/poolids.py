"""Clients of a stateless pool kept apart: ids and progress tokens of the gateway's own in a shared upstream.

2026-07-28 clients (no session) share a pooled upstream (:mod:`mcptape.gateway.stateless`),
but their request ids and progress tokens are theirs alone: two may use id 1, or progress
token ``"t"``, at the same moment. Each request taken into a pool gets an id of the
gateway's own (``"mcptape-pool-N"``), and its progress token another, so the upstream's
answers and progress are told apart and routed to the stream of the request they belong
to; on the way back each gets the client's own again (the id as the client wrote it).
Frames are edited in their text, member by member: every other byte stays as it was.

The session's relay and recording see the clients' side (:class:`PoolUpstream` wraps the
upstream link and does the editing at that boundary): every frame is recorded as its
client sent or got it, and a ``pool`` entry in its metadata says which id or token the
upstream used instead. The client-facing link routes what comes back by those (unique) ids.

A cancellation names the client's own id. It reaches the request it means only when that
is sure: the request with that id that came on the same connection, else the only one in
the pool with that id, unless that connection's own request with that id just finished
(a late cancellation). Otherwise it reaches nobody, and that is recorded: a cancellation
is advice (the server may ignore it), another client's request is not ours to cancel.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from mcptape.proxy.link import Deliver, Ended, EventSink, Link, LinkBase, LinkEnd
from mcptape.wire.frame import Frame
from mcptape.wire.ids import id_key
from mcptape.wire.jsontext import Member, element_spans, object_members
from mcptape.wire.protocol import CANCELLED, MESSAGE, PROGRESS

PREFIX = "mcptape-pool-"
RELATED = "io.modelcontextprotocol/related-request-id"
KEEP_FINISHED = 256  # requests remembered after their answer, to tell a late cancellation
KEEP_OUTGOING = 1024  # client frames waiting to go upstream in their edited form, at most


@dataclass
class Lent:
    """One client request in a pool: the id and progress token it got, and the client's own."""

    sid: str  # the pool session that runs it
    ours: str  # our id's JSON text
    theirs: str  # the client's id, as it wrote it
    connection: int
    token_ours: str | None = None
    token_theirs: str | None = None
    sent: bool = False  # its edited form went upstream


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
        # Client frames on their way through the relay -> their edited form for the upstream.
        self._outgoing: OrderedDict[int, tuple[Frame, Frame, list[Lent]]] = OrderedDict()

    def take(self, frame: Frame, sid: str, connection: int) -> Frame:
        """A client's frame as the pool's upstream gets it: each request with an id of ours.

        The client's frame gets a ``pool`` entry in its metadata (our ids), and when it reaches
        the upstream link (:class:`PoolUpstream`), the edited frame goes out in its place.
        """
        text = frame.data.decode("utf-8", "surrogateescape")
        taken = []
        for start in _objects(text):
            method, rid = _member(text, start, "method"), _member(text, start, "id")
            if method is None or rid is None:
                continue
            number = next(self._numbers)
            lent = Lent(sid, f'"{PREFIX}{number}"', text[rid.value_start : rid.value_end], connection)
            token = _at(text, start, "params", "_meta", "progressToken")
            if token is not None:
                lent.token_theirs = text[token.value_start : token.value_end]
                lent.token_ours = f'"{PREFIX}{number}-progress"'
            taken.append(lent)
        if not taken:
            return frame
        with self._lock:
            for lent in taken:
                self.lent[id_key(lent.ours)] = lent
                if lent.token_ours is not None:
                    self._tokens[lent.token_ours] = lent
        pool = [{"as": "id", "theirs": lent.theirs, "ours": lent.ours} for lent in taken]
        return self._lend(frame, self._edit(frame, taken), pool, taken)

    def _edit(self, frame: Frame, lents: list[Lent]) -> Frame:
        """``frame`` with the requests' ids and progress tokens the ones ``lents`` give them, in order."""
        text = frame.data.decode("utf-8", "surrogateescape")
        edits: list[tuple[int, int, str]] = []
        requests = [s for s in _objects(text) if _member(text, s, "method") and _member(text, s, "id")]
        for start, lent in zip(requests, lents, strict=False):
            rid = _member(text, start, "id")
            assert rid is not None
            edits.append((rid.value_start, rid.value_end, lent.ours))
            token = _at(text, start, "params", "_meta", "progressToken")
            if token is not None and lent.token_ours is not None:
                edits.append((token.value_start, token.value_end, lent.token_ours))
        return Frame(_edited(frame.data, edits, text), frame.direction, frame.origin, frame.ts)

    def _lend(self, frame: Frame, edited: Frame, pool: list[dict[str, str]], lents: list[Lent]) -> Frame:
        frame.meta = {**(frame.meta or {}), "pool": pool}
        edited.meta = frame.meta
        with self._lock:
            self._outgoing[id(frame)] = (frame, edited, lents)
            while len(self._outgoing) > KEEP_OUTGOING:
                self._outgoing.popitem(last=False)
        return edited

    def outgoing(self, frame: Frame, *, keep: bool = False) -> Frame:
        """The frame that goes upstream for ``frame`` (let go of unless ``keep``): its edited form.

        A frame forwarded in place of a client's (an injector declaring capabilities in it)
        was never lent anything: it takes what the latest unsent request with its id got.
        """
        with self._lock:
            found = self._outgoing.get(id(frame))
            if found is not None and found[0] is frame:
                if not keep:
                    del self._outgoing[id(frame)]
                    for lent in found[2]:
                        lent.sent = True
                return found[1]
            if frame.kind != "request" or frame.rpc_id is None:
                return frame
            theirs = id_key(frame.rpc_id)
            unsent = [lent for lent in self.lent.values() if not lent.sent and id_key(lent.theirs) == theirs]
            if not unsent:
                return frame
            lent = unsent[-1]
            if not keep:
                lent.sent = True
                for key, (_, _, lents) in list(self._outgoing.items()):
                    if lent in lents:  # the client's frame it stood in for is not sent now
                        del self._outgoing[key]
        return self._edit(frame, [lent])

    def give_back(self, data: bytes) -> tuple[bytes, list[dict[str, str]]] | None:
        """An upstream frame as the client gets it: answers and progress with the client's own id
        and token, and what was given back (for its ``pool`` metadata); None: nothing to change.
        An answered request is let go."""
        if PREFIX.encode() not in data:
            return None
        text = data.decode("utf-8", "surrogateescape")
        edits: list[tuple[int, int, str]] = []
        notes: list[dict[str, str]] = []
        with self._lock:
            for start in _objects(text):
                self._back(text, start, edits, notes)
        return (_edited(data, edits, text), notes) if edits else None

    def _back(
        self, text: str, start: int, edits: list[tuple[int, int, str]], notes: list[dict[str, str]]
    ) -> None:
        # Under the lock: the edits of one message.
        def give(member: Member, how: str, theirs: str) -> None:
            ours = text[member.value_start : member.value_end]
            edits.append((member.value_start, member.value_end, theirs))
            notes.append({"as": how, "theirs": theirs, "ours": ours})

        rid = _member(text, start, "id")
        if rid is not None and _member(text, start, "method") is None:
            lent = self.lent.pop(id_key(text[rid.value_start : rid.value_end]), None)
            if lent is not None:
                give(rid, "id", lent.theirs)
                if lent.token_ours is not None:
                    self._tokens.pop(lent.token_ours, None)
                self._finished.append((lent.connection, id_key(lent.theirs)))
            return
        token = _at(text, start, "params", "progressToken")
        if token is not None:
            lent = self._tokens.get(text[token.value_start : token.value_end])
            if lent is not None and lent.token_theirs is not None:
                give(token, "token", lent.token_theirs)
        related = _at(text, start, "params", "_meta", RELATED)
        if related is not None:
            lent = self.lent.get(id_key(text[related.value_start : related.value_end]))
            if lent is not None:
                give(related, "related", lent.theirs)

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
        edited = Frame(_edited(frame.data, edits, text), frame.direction, frame.origin, frame.ts)
        note = {"as": "cancelled", "theirs": target.theirs, "ours": target.ours}
        return target.sid, self._lend(frame, edited, [note], [])

    def forget(self, sid: str) -> None:
        """A pool session ended: what it ran is answered by nobody now."""
        with self._lock:
            for key, lent in list(self.lent.items()):
                if lent.sid == sid:
                    del self.lent[key]
                    if lent.token_ours is not None:
                        self._tokens.pop(lent.token_ours, None)


def upstream_view(frame: Frame) -> dict[str, Any] | None:
    """What routes a given-back frame, as the upstream wrote it (our ids); None: not given back."""
    notes = (frame.meta or {}).get("pool")
    for note in notes if isinstance(notes, list) else ():
        try:
            ours = orjson.loads(note["ours"])
        except (KeyError, orjson.JSONDecodeError):
            continue
        if note.get("as") == "id":
            return {"jsonrpc": "2.0", "id": ours, "result": None}
        if note.get("as") == "token":
            return {"jsonrpc": "2.0", "method": PROGRESS, "params": {"progressToken": ours}}
        if note.get("as") == "related":
            return {"jsonrpc": "2.0", "method": MESSAGE, "params": {"_meta": {RELATED: ours}}}
    return None


class PoolUpstream(LinkBase):
    """A pool session's upstream link as its clients see it: client frames go out with the pool's
    ids and tokens (:meth:`PoolIds.outgoing`), upstream frames come in with the client's
    (:meth:`PoolIds.give_back`, noted in their ``pool`` metadata)."""

    def __init__(self, inner: Link, ids: PoolIds) -> None:
        self.inner = inner
        self.ids = ids
        self.name = inner.name

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        def back(frame: Frame) -> Awaitable[Any] | None:
            found = self.ids.give_back(frame.data)
            if found is not None:
                data, notes = found
                frame = Frame(
                    data, frame.direction, frame.origin, frame.ts, {**(frame.meta or {}), "pool": notes}
                )
            return deliver(frame)

        self.inner.start(back, ended, event)

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        return self.inner.send(self.ids.outgoing(frame))

    def prepare(self, frame: Frame) -> dict[str, Any] | None:
        return self.inner.prepare(self.ids.outgoing(frame, keep=True))

    def close_send(self) -> None:
        self.inner.close_send()

    def stop_receiving(self) -> None:
        self.inner.stop_receiving()

    async def aclose(self, grace: float) -> LinkEnd:
        return await self.inner.aclose(grace)

    def hurry(self) -> None:
        self.inner.hurry()

    def kill(self) -> None:
        self.inner.kill()

    def watch_transport(self, settled: Callable[[str], None]) -> None:
        self.inner.watch_transport(settled)
