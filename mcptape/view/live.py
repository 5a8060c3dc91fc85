"""Live updates for the viewer's pages: one poller over the store, its news fanned out to each page.

While at least one page listens, :class:`LiveHub` polls the store with a
:class:`~mcptape.view.reader.FeedReader` (in a thread, every :data:`POLL_S`) and hands
each listener what it asked for: a session's page gets that session's new frames (the
same arrays :mod:`mcptape.view.timeline` sends) and events; the sessions list gets, per
session, how many frames and errors came, and sessions that started or ended. Nobody
listening, nothing is polled.

A listener that cannot keep up (its queue of :data:`QUEUE_MAX` messages is full) is
dropped with a last message telling its page to reload: a page never silently misses frames.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Final

from mcptape.view import timeline
from mcptape.view.feed import FrameRow
from mcptape.view.reader import FeedReader, Poll

POLL_S: Final = 0.1
QUEUE_MAX: Final = 1000
RETRY_S: Final = 1.0


@dataclass(eq=False)
class Listener:
    """One page: ``session_id`` None is the sessions list."""

    session_id: str | None
    queue: asyncio.Queue[tuple[str, Any]] = field(default_factory=lambda: asyncio.Queue(QUEUE_MAX))
    dropped: bool = False

    def put(self, event: str, data: Any) -> None:
        if self.dropped:
            return
        try:
            self.queue.put_nowait((event, data))
        except asyncio.QueueFull:
            self.dropped = True
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
            self.queue.put_nowait(("reload", {"reason": "the page fell behind the live updates"}))


def frame_arrays(rows: list[FrameRow], start: float) -> dict[str, Any]:
    """New frames of one session as :func:`mcptape.view.timeline.columns` lays them out."""
    found: list[timeline.Row] = [
        (r.seq, r.ts, r.direction, r.origin, r.kind, r.method, r.rpc_id, r.size, r.request_seq) for r in rows
    ]
    return timeline.columns(found, start)


class LiveHub:
    """The poller and its listeners (see the module docstring)."""

    def __init__(self, store: Any, executor: Executor, poll_s: float = POLL_S) -> None:
        self._store = store
        self._executor = executor
        self._poll_s = poll_s
        self._listeners: set[Listener] = set()
        self._task: asyncio.Task[None] | None = None
        self._reader: FeedReader | None = None
        self._ready = asyncio.Event()
        self.polls = 0

    @contextlib.asynccontextmanager
    async def listen(self, session_id: str | None) -> AsyncIterator[Listener]:
        """A listener for the ``with`` block; the poller runs while anyone listens.

        Once inside, every frame written after the poller's start reaches the listener: a
        page reads what came since its own load (its last frame id) after entering."""
        listener = Listener(session_id)
        self._listeners.add(listener)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())
        try:
            await self._ready.wait()
            yield listener
        finally:
            self._listeners.discard(listener)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._reader is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._reader.close)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._reader is None and self._listeners:
            try:
                # Starts at the newest frame: what a page loaded before came with its own last id.
                # No text: the pages get frames rows and events, never the summaries tail prints.
                self._reader = await loop.run_in_executor(
                    self._executor, lambda: FeedReader(self._store, discover=True, text_max=0)
                )
            except Exception as exc:  # the database is away: the pages hear it, the hub tries again
                self._trouble(exc)
                await asyncio.sleep(RETRY_S)
        self._ready.set()
        if self._reader is None:
            self._task = None
            return
        reader = self._reader
        while self._listeners:
            try:
                found = await loop.run_in_executor(self._executor, reader.poll)
            except Exception as exc:  # the database went away for a while: say so, try again
                self._trouble(exc)
                await asyncio.sleep(RETRY_S)
                continue
            self.polls += 1
            self._dispatch(found, reader)
            if not found.more:
                await asyncio.sleep(self._poll_s)
        self._task = None

    def _trouble(self, exc: Exception) -> None:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        for listener in list(self._listeners):
            listener.put("trouble", {"error": message})

    def _dispatch(self, found: Poll, reader: FeedReader) -> None:
        if not (found.frames or found.items or found.sessions):
            return
        by_session: dict[str, list[FrameRow]] = defaultdict(list)
        for row in found.frames:
            by_session[row.session_id].append(row)
        counts = {
            sid: {"frames": len(rows), "errors": sum(1 for r in rows if r.kind in ("error", "malformed"))}
            for sid, rows in by_session.items()
        }
        events_by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for item in found.items:
            if item.type == "event":
                events_by_session[item.session_id].append(
                    {"ts": item.ts, "kind": item.method, "text": item.detail}
                )
        for listener in list(self._listeners):
            if listener.session_id is None:
                if found.sessions or counts:
                    listener.put("sessions", {"sessions": found.sessions, "counts": counts})
                continue
            sid = listener.session_id
            session = reader.sessions.get(sid)
            start = session["started_at"] if session else 0.0
            rows = by_session.get(sid)
            changed = [s for s in found.sessions if s["id"] == sid]
            if rows or events_by_session.get(sid) or changed:
                listener.put(
                    "frames",
                    {
                        "frames": frame_arrays(rows or [], start),
                        "last_id": rows[-1].id if rows else None,
                        "events": [
                            {**e, "t": round((e.pop("ts") - start) * 1000, 3)}
                            for e in events_by_session.get(sid, [])
                        ],
                        "session": changed[-1] if changed else None,
                    },
                )
