"""Which sessions and conversations `mcptape tail --session` follows, as frames land (pure).

A session is followed by its id. A conversation named as :mod:`mcptape.store.targets`
resolves it is followed as it grows, on every replica:

- a shared ``conversation_id``: every session whose row carries it, also one that a
  replica opens after tail started;
- a ``trace-…``/``client-…`` conversation of 2026-07-28 traffic: each request that
  continues one of its exchanges (echoes a ``requestState``, polls a task its answers
  minted: :mod:`mcptape.store.stitching`) or starts it anew (its trace, its client),
  with the reply; and the events of its sessions while one of its exchanges ran there.

:class:`Following` is fed each poll's frames rows before its items are filtered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcptape.store import stitching
from mcptape.store.targets import Target
from mcptape.view.feed import FeedItem, FrameRow

_EXCHANGES = ("exchange", "server_request", "unanswered")


# Requests that continue what no answer seen yet minted (a retry recorded by one replica
# before another replica's writer flushed the answer it continues): kept this long.
WAITING_MAX = 10_000


@dataclass
class _Stitched:
    """A ``trace-``/``client-`` conversation: its requests, what they minted, when they ran."""

    id: str
    requests: set[tuple[str, int]] = field(default_factory=set)  # (session, seq) of its requests
    minted: set[str] = field(default_factory=set)
    running: dict[tuple[str, int], float] = field(default_factory=dict)  # request -> when it was sent
    windows: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # session -> exchanges' times
    waiting: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)  # link -> requests
    replied: set[tuple[str, int]] = field(default_factory=set)

    def feed(self, requests: list[tuple[FrameRow, Mapping[str, Any]]], replies: list[FrameRow]) -> None:
        for row, session in requests:
            self._request(row, session)
        # An answer can mint what a request read before it continues: go round until nothing joins.
        joined = True
        while joined:
            joined = False
            for row in replies:
                key = (row.session_id, row.request_seq or 0)
                if key in self.requests and key not in self.replied:
                    self.replied.add(key)
                    self._reply(row, key)
                    joined = True

    def _request(self, row: FrameRow, session: Mapping[str, Any]) -> None:
        message = row.message()
        continues = stitching.link(row.method, message)
        if (continues is not None and continues in self.minted) or (
            stitching.own_conversation(dict(session), message, row.meta_value()) == self.id
        ):
            self._join(row.session_id, row.seq, row.ts)
        elif continues is not None:
            self.waiting.setdefault(continues, []).append((row.session_id, row.seq, row.ts))
            if len(self.waiting) > WAITING_MAX:
                del self.waiting[next(iter(self.waiting))]

    def _join(self, session_id: str, seq: int, ts: float) -> None:
        self.requests.add((session_id, seq))
        self.running[(session_id, seq)] = ts

    def _reply(self, row: FrameRow, key: tuple[str, int]) -> None:
        minted = stitching.mint(row.message())
        if minted is not None:
            self.minted.add(minted)
            for session_id, seq, ts in self.waiting.pop(minted, ()):
                self._join(session_id, seq, ts)
        started = self.running.pop(key, row.ts)
        self.windows.setdefault(row.session_id, []).append((started, row.ts))

    def ran(self, session_id: str, ts: float) -> bool:
        """Whether one of its exchanges was running in ``session_id`` at ``ts``."""
        if any(sid == session_id and started <= ts for (sid, _), started in self.running.items()):
            return True
        return any(a <= ts <= b for a, b in self.windows.get(session_id, ()))


class Following:
    """What ``--session`` named: sessions by id, conversations as they grow (module docstring)."""

    def __init__(self, targets: Iterable[Target]) -> None:
        self.session_ids: set[str] = set()
        self.shared: set[str] = set()
        self.stitched: list[_Stitched] = []
        for target in targets:
            if target.conversation is None:
                self.session_ids.add(target.session["id"])
            elif target.seqs is None:
                self.shared.add(target.conversation)
                self.session_ids.update(target.session_ids)
            else:
                self.stitched.append(_Stitched(target.conversation))

    @property
    def everything_read(self) -> bool:
        """Whether the reader must read every session (a conversation may grow into new ones)."""
        return bool(self.shared or self.stitched)

    def seed(self, conversation: str, frames: Iterable[tuple[str, Any]]) -> None:
        """What a stitched conversation already holds: ``(session id, StoredFrame)`` of its exchanges."""
        for follower in self.stitched:
            if follower.id != conversation:
                continue
            for session_id, frame in frames:
                if frame.kind == "request":
                    follower.requests.add((session_id, frame.seq))
                elif frame.kind == "response":
                    minted = stitching.mint(frame.message())
                    if minted is not None:
                        follower.minted.add(minted)

    def feed(self, rows: list[FrameRow], sessions: Mapping[str, Mapping[str, Any]]) -> None:
        """Learn from a poll's frames which of them the conversations hold."""
        for row in rows:
            session = sessions.get(row.session_id)
            if session is not None and session.get("conversation_id") in self.shared:
                self.session_ids.add(row.session_id)
        if not self.stitched:
            return
        requests = [
            (row, sessions[row.session_id])
            for row in rows
            if row.kind == "request" and row.direction == "c2s" and row.session_id in sessions
        ]
        replies = [row for row in rows if row.kind in ("response", "error") and row.request_seq is not None]
        for follower in self.stitched:
            follower.feed(requests, replies)

    def wants_session(self, session_id: str, row: Mapping[str, Any]) -> bool:
        """Whether a session's start and end are worth a line."""
        return session_id in self.session_ids or row.get("conversation_id") in self.shared

    def wants(self, item: FeedItem) -> bool:
        if item.session_id in self.session_ids:
            return True
        for follower in self.stitched:
            if item.type in _EXCHANGES and (item.session_id, item.seq or 0) in follower.requests:
                return True
            if item.type == "event" and follower.ran(item.session_id, item.ts):
                return True
        return False
