"""The recorder addon: every frame and event of a session into the store, without blocking forwarding.

The recorder can start before the store is open: frames are numbered as they pass and
kept in memory until :meth:`Recorder.attach` hands it a writer (``record`` opens and
migrates the database in the background while the first frames are forwarded at
once). Past :data:`EARLY_LIMIT` bytes held, the relay waits for the store.

Memory: what every recorder of the process holds early and what its writers hold counts
against one bound for the whole process (:data:`mcptape.wire.held.HELD`): past it
the relay waits, whatever the session (a gateway serves many).

Back-pressure: when the writer's backlog passes its limit (about 100 ms of traffic),
``frame_done`` returns an awaitable, and the link that delivered the frame waits on
it. Nothing is dropped. A store that fails for good (a corrupted file, a full disk)
is said once on stderr; frames keep flowing and ``record`` exits non-zero at the end.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcptape.proxy.addonmanager import Flow, Outcome, SessionContext
from mcptape.terminal import say
from mcptape.wire.frame import KEEP_PARSED_BYTES
from mcptape.wire.handshake import HELLO_METHODS, client_hello, server_hello
from mcptape.wire.held import HELD
from mcptape.wire.largeframes import LARGE, LARGE_FRAME_BYTES

if TYPE_CHECKING:
    from mcptape.store import Writer


LOOKS = 16
EARLY_LIMIT = 64 << 20  # bytes held for a store that is not open yet, at most
EARLY_LAG = 0.1  # seconds of traffic held before the relay waits for the store (bounded loss)
EARLY_FEW = 64  # ...unless fewer items than this are held: a handshake's few frames never wait
EARLY_PATIENCE = 5.0  # how long the relay waits for a store that is slow to open, then goes on
BLOCKED_PATIENCE = 2.0  # how long the relay waits for a writer that makes no progress (a lock)


def _release_large(held: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Held frames are no longer counted as large frames waiting for the store."""
    for op, args in held:
        if op == "frame" and len(args[1].data) >= LARGE_FRAME_BYTES:
            LARGE.finished()


class Recorder:
    """Queues frames and events to the store's writer; applies back-pressure when it falls behind."""

    def __init__(
        self,
        writer: Writer | None = None,
        session_id: str | None = None,
        *,
        forwards_without_store: bool = True,
    ) -> None:
        self.writer = writer
        # Whether the session goes on when the store fails (record --on-store-error forward,
        # every other mode) or stops (record's default): what the warning says.
        self.forwards_without_store = forwards_without_store
        self.session_id = session_id
        self.seq = 0
        self.failure: str | None = None  # why recording stopped, said once on stderr
        # Both links record (reader threads, the loop): sequence numbers follow queue order.
        self._lock = threading.Lock()
        self._early: list[tuple[str, tuple[Any, ...]]] = []
        self._early_bytes = 0
        self._early_since: float | None = None
        self._impatient = False  # waited EARLY_PATIENCE once: hold frames without waiting
        # Set by whoever opens the store: whether it is only waiting for another process's
        # write lock (then waiting for it cannot make it open sooner: frames are held).
        self.locked_out: Callable[[], bool] = lambda: False
        self._blocked = False  # the writer made no progress for BLOCKED_PATIENCE: stop waiting on it
        self._ready = threading.Event()
        if writer is not None:
            self._ready.set()
        # Handshake learning: ids of hello requests awaiting their result; stop once complete.
        self._hello_ids: dict[str, str] = {}
        self._client_known = False
        self._server_known = False
        # Identity arrives in the first exchanges; give up looking after a few frames so a
        # peer that never says who it is costs nothing later.
        self._looks_left = LOOKS

    # -- the store arrives ------------------------------------------------------------

    @property
    def held_bytes(self) -> int:
        """Bytes held for a store that is not open yet (see :data:`~mcptape.wire.held.HELD`)."""
        return self._early_bytes

    def attach(self, writer: Writer, session_id: str) -> None:
        """The store is open: write what was held, in order, then record directly. Any thread."""
        with self._lock:
            self.writer, self.session_id = writer, session_id
            early, self._early = self._early, []
            for op, args in early:
                self._apply(op, args)
            self._early_bytes = 0  # the writer holds (and counts) them now
            HELD.let_go(self)
            _release_large(early)
            self._ready.set()

    def abandon(self, why: str) -> None:
        """The store could not be opened: say so once, drop what was held, record nothing more."""
        with self._lock:
            _release_large(self._early)
            self._early = []
            self._early_bytes = 0
            HELD.let_go(self)
            self._warn(why)
            self._ready.set()

    def _warn(self, why: str) -> None:
        """Say once why the store could not be opened, and what the session does now."""
        if self.failure is None:
            self.failure = why
            going_on = (
                "frames are still forwarded but are not being recorded"
                if self.forwards_without_store
                else "stopping (--on-store-error forward keeps forwarding without recording)"
            )
            say(f"error: {why}; {going_on}")

    def _apply(self, op: str, args: tuple[Any, ...]) -> None:
        writer = self.writer
        assert writer is not None and self.session_id is not None
        if op == "frame":
            writer.add_frame(self.session_id, *args)
        elif op == "event":
            writer.add_event(self.session_id, *args)
        else:
            writer.update_session(self.session_id, **args[0])

    def _put(self, op: str, args: tuple[Any, ...], size: int) -> None:
        """Under _lock: to the writer, or held until the store is open."""
        if self.writer is not None:
            self._apply(op, args)
        elif self.failure is None:
            if self._early_since is None:
                self._early_since = time.monotonic()
                HELD.hold(self)
            self._early.append((op, args))
            self._early_bytes += size
            if op == "frame" and size >= LARGE_FRAME_BYTES:
                LARGE.queued()  # a stdio reader waits for it as for one in the writer's queue

    async def _wait_ready(self, patience: float | None) -> None:
        deadline = None if patience is None else time.monotonic() + patience
        while not self._ready.is_set():
            if deadline is not None and (time.monotonic() >= deadline or self.locked_out()):
                # Another process's write lock holds the store: the store says so itself.
                if not self._impatient:
                    self._impatient = True
                    say(
                        "the recording database is slow to open; forwarding goes on and "
                        "frames are kept in memory until it is ready"
                    )
                return
            await asyncio.sleep(0.005)

    # -- hooks ------------------------------------------------------------------------

    def frame_done(self, flow: Flow) -> Awaitable[Any] | None:
        frame = flow.frame
        if not flow.injected and flow.outgoing is not frame:
            frame.meta = {**(frame.meta or {}), "forwarded": False}
        with self._lock:
            self.seq += 1
            flow.seq = self.seq
            writer, session_id = self.writer, self.session_id
            if writer is not None and session_id is not None:  # _put, inline: it runs for every frame
                writer.add_frame(session_id, self.seq, frame)
            else:
                self._put("frame", (self.seq, frame), len(frame.data))
            if flow.replacement is not None:
                self.seq += 1
                replacement = flow.replacement
                replacement.meta = {**(replacement.meta or {}), "replaces": flow.seq}
                self._put("frame", (self.seq, replacement), len(replacement.data))
            if not (self._client_known and self._server_known):
                if self._looks_left:
                    self._looks_left -= 1
                    self._learn(flow)
                elif self._hello_ids or (frame.direction == "c2s" and frame.method in HELLO_METHODS):
                    # (a server frame teaches nothing unless it answers a hello: it is not
                    # even parsed for this, so it need not be before it is forwarded)
                    self._learn(flow)
            if writer is None:
                early = self._early_bytes
                held = len(self._early)
                since = self._early_since
        if writer is None:
            # Frames held for a store that is still opening would be lost by a kill -9:
            # hold at most ~100 ms of traffic, then wait (boundedly) for the store.
            if early > EARLY_LIMIT or (early and HELD.over):
                return self._wait_ready(None)
            if (
                not self._impatient
                and held > EARLY_FEW
                and since is not None
                and time.monotonic() - since > EARLY_LAG
            ):
                return self._wait_ready(EARLY_PATIENCE)
            return None
        failed = writer.failed
        if failed and self.failure is None:
            self.failure = f"recording into {writer.where} failed: {failed}"  # the writer said it
        if not writer.over_limit:
            if self._blocked:
                self._blocked = False
                say("the recording database is writable again; catching up")
            return None
        if self._blocked and not HELD.over:
            return None  # locked out: frames wait in memory, within the process's bound
        return self._drain(writer)

    async def _drain(self, writer: Writer) -> None:
        """Back-pressure: wait for the writer, but not for a database another process keeps locked.

        Waiting bounds what a kill -9 loses to ~100 ms of traffic; a database locked by
        someone else for seconds would stall the client as long, so past
        BLOCKED_PATIENCE the frames wait in memory instead (within the process's bound,
        :data:`~mcptape.wire.held.PROCESS_MAX_BYTES`), said once.
        """
        if self._blocked:
            await writer.drain()
            return
        try:
            await asyncio.wait_for(writer.drain(), BLOCKED_PATIENCE)
        except TimeoutError:
            if not self._blocked:
                self._blocked = True
                say(
                    f"the recording database has not accepted writes for {BLOCKED_PATIENCE:g} s "
                    "(locked by another process?); forwarding goes on and frames wait in memory"
                )

    def _learn(self, flow: Flow) -> None:
        frame = flow.frame
        kind = frame.kind
        if frame.direction == "c2s" and kind == "request" and not flow.injected:
            if frame.method in HELLO_METHODS and frame.rpc_id is not None:
                self._hello_ids[frame.rpc_id] = frame.method or ""
            if not self._client_known and (frame.method in HELLO_METHODS or frame.size <= KEEP_PARSED_BYTES):
                # Any request may name the client (2026 _meta), but a large one is not
                # parsed for it: that would build the whole value (mcptape.wire.frame).
                fields = client_hello(frame.message)
                if fields:
                    self._client_known = "client_name" in fields
                    self._put("update", (fields,), 256)
        elif frame.direction == "s2c" and kind == "response" and not flow.injected:
            method = self._hello_ids.pop(frame.rpc_id or "", None)
            if method is None and frame.size > KEEP_PARSED_BYTES:
                return  # a large answer to another request is not parsed for the server's name
            fields = server_hello(frame.message, method)
            if fields:
                self._server_known = "server_name" in fields
                self._put("update", (fields,), 256)

    def update(self, **fields: Any) -> None:
        """Queue new values for the session's row (after everything queued before). Any thread."""
        with self._lock:
            self._put("update", (fields,), 256)

    def event(self, session: SessionContext, kind: str, text: str | None, data: object) -> None:
        # Stamped now: one held while the store opens must not take the time it is written
        # (it would leave the frames it happened beside).
        with self._lock:
            self._put("event", (kind, text, data, time.time()), len(text or "") + 64)

    def session_end(self, session: SessionContext, outcome: Outcome) -> None:
        fields = {
            "ended_at": time.time(),
            "status": outcome.status,
            "exit_code": outcome.exit_code,
            "error": outcome.error,
        }
        with self._lock:
            self._put("update", (fields,), 256)
