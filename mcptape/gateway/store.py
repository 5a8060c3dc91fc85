"""One store and one writer for a whole gateway process; a session row per MCP session.

The store opens on a thread while the listener starts; each session's
:class:`~mcptape.proxy.addons.recorder.Recorder` holds its frames until its row exists, then
is attached to the shared writer, which queues the row before the session's frames
(the event loop never waits on the database).

``--redact /json/path``: every session's frames are recorded through a
:class:`RedactingWriter`, which replaces the values at those paths by placeholders in
the recorded copy; the bytes forwarded are never touched. It fails closed: a frame it
cannot read is recorded as a stand-in without its content (see
:func:`mcptape.redact.withheld_message`), a ``redaction_failed`` event says so (and
stderr, once per session), and the session goes on being recorded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.addons.recording import SessionRow
from mcptape.redact import JsonPath, Unreadable, digest, redact_json_paths, scrub, withheld_message
from mcptape.terminal import say
from mcptape.wire.frame import Frame

if TYPE_CHECKING:
    from mcptape.gateway.heartbeat import Heartbeat
    from mcptape.store import Store, Writer


# Session columns the recorder learns from frames (handshakes, 2026 ``_meta``): after a frame
# was withheld, what they would say may hold what redaction could not find.
LEARNT_COLUMNS = frozenset(
    f"{side}_{what}" for side in ("client", "server") for what in ("name", "version", "info", "capabilities")
)


class RedactingWriter:
    """A store writer that records frames with the values at ``paths`` redacted (everything else as is)."""

    def __init__(self, writer: Writer, paths: Sequence[JsonPath]) -> None:
        self.writer = writer
        self.paths = tuple(paths)
        # Per session, the strings hidden so far: the recorder learns the session's client and
        # server info from the frames as they were, and must not store what the frames do not.
        self._hidden: dict[str, set[str]] = {}
        self._withheld: set[str] = set()  # sessions with a frame redaction could not read

    def add_frame(self, session_id: str, seq: int, frame: Frame) -> None:
        found: list[str] = []
        try:
            redacted = redact_json_paths(frame.data, self.paths, found)
        except Unreadable as exc:
            self._withhold(session_id, seq, frame, str(exc))
            return
        except Exception as exc:  # whatever goes wrong, the frame is not recorded in clear
            self._withhold(session_id, seq, frame, f"redaction failed: {type(exc).__name__}")
            return
        if redacted is not None:
            self._hidden.setdefault(session_id, set()).update(found)
            frame = Frame(
                redacted, frame.direction, frame.origin, frame.ts, {**(frame.meta or {}), "redacted": True}
            )
        self.writer.add_frame(session_id, seq, frame)

    def _withhold(self, session_id: str, seq: int, frame: Frame, why: str) -> None:
        data = frame.data
        stand_in = withheld_message(data, why, frame.rpc_id, frame.method)
        self.writer.add_frame(
            session_id,
            seq,
            frame.stand_in(stand_in, {**(frame.meta or {}), "redacted": True, "withheld": True}),
        )
        text = f"--redact could not read frame {seq} ({why}): recorded without its content"
        self.writer.add_event(
            session_id, "redaction_failed", text, {"seq": seq, "bytes": len(data), "digest": digest(data)}
        )
        if session_id not in self._withheld:
            self._withheld.add(session_id)
            say(
                f"warning: session {session_id}: {text} (said once per session; see its redaction_failed events)"
            )

    def update_session(self, session_id: str, **fields: Any) -> None:
        # The session's last update says how it ended: nothing of it is stored after that.
        ending = "ended_at" in fields
        hidden = self._hidden.pop(session_id, None) if ending else self._hidden.get(session_id)
        if hidden:
            fields = {k: scrub(v, hidden) if isinstance(v, str) else v for k, v in fields.items()}
        if session_id in self._withheld:
            fields = {k: v for k, v in fields.items() if k not in LEARNT_COLUMNS}
            if ending:
                self._withheld.discard(session_id)
        if fields:
            self.writer.update_session(session_id, **fields)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)


class GatewayStore:
    """The gateway's database: opened once, in the background; closed (flushed) at shutdown.

    A :class:`~mcptape.assemble.StoreSource`: each session gets a row of its own
    (:meth:`session_store`), created off the loop on the store's one thread, in the order
    sessions start. ``record`` False: nothing is opened nor recorded (``serve --listen
    --no-record``).
    """

    def __init__(self, db: str | None, redact_paths: Sequence[JsonPath] = (), *, record: bool = True) -> None:
        self.db = db
        self.redact_paths = tuple(redact_paths)
        self.record = record
        self.store: Store | None = None
        self.writer: Writer | None = None
        self.error: str | None = None
        self._opened = threading.Event()
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="mcptape-gateway-store")
        # A fleet on a server database: this replica's name, for its heartbeat (gateway/heartbeat.py).
        self.replica: Callable[[], str] | None = None
        self._heartbeat: Heartbeat | None = None

    def open_in_background(self) -> None:
        if not self.record:
            self._opened.set()
            return
        threading.Thread(target=self._open, name="mcptape-gateway-open", daemon=True).start()

    def _open(self) -> None:
        try:
            from mcptape.store import open_store
            from mcptape.store.lost import close_lost_once

            self.store = open_store(self.db)
            # Sessions of a gateway (or recorder) killed earlier are closed as interrupted.
            close_lost_once(self.store)
            self.writer = self.store.writer()
            if self.replica is not None and self.store.path is None:
                from mcptape.gateway.heartbeat import Heartbeat

                self._heartbeat = Heartbeat(self.store, self.replica())
                self._heartbeat.start()
        except Exception as exc:
            self.error = f"cannot open the recording database: {exc}"
            say(f"error: {self.error}; sessions are served but not recorded")
        finally:
            self._opened.set()

    def where(self) -> str:
        return self.store.where if self.store is not None else (self.db or "the default database")

    def health(self) -> dict[str, Any]:
        """Whether the store takes rows now and how far behind it is (no database I/O: cheap to poll).

        ``writable``: open, not failed, not waiting for the database (a lock, a server away);
        ``lag_s``: age of the oldest row not yet committed; ``failed``: nothing can be recorded
        (why is said on stderr: /health needs no token, so it names no database).
        """
        if not self.record:
            return {"recording": False, "writable": False, "lag_s": 0.0}
        writer = self.writer
        if writer is None:
            opened = self._opened.is_set()
            return {
                "recording": True,
                "writable": False,
                "opening": not opened,
                "failed": opened,
                "lag_s": 0.0,
            }
        return {
            "recording": True,
            "writable": writer.failed is None and not writer.waiting_for_lock,
            "lag_s": round(writer.lag, 3),
            "backlog_frames": writer.backlog,
            "backlog_bytes": writer.backlog_bytes,
            "failed": writer.failed is not None,
        }

    def session_store(self, recorder: Recorder, row: SessionRow) -> SharedSessionStore:
        """A session's way into this store: its row is created when it starts."""
        return SharedSessionStore(self, recorder, row)

    def _attach(self, handle: SharedSessionStore) -> None:
        """On the store's thread: the session's row, then its recorder attached to the shared writer."""
        recorder, row = handle.recorder, handle.row
        try:
            self._opened.wait()
            if self.store is None or self.writer is None:
                handle.error = self.error or "the recording database is not open"
                recorder.abandon(handle.error)
                return
            from mcptape.store import StoreBusyError

            fields: dict[str, Any] = {
                "mode": row.mode,
                "name": row.name,
                "transport": row.transport,
                "upstream": row.upstream,
                "replay_of": row.replay_of,
            }
            try:
                try:
                    session_id = self.store.create_session(wait_for_lock=False, **fields)
                except StoreBusyError:
                    # Another process holds the write lock: the row waits on the writer with the
                    # frames, and the recorder is attached at once (its frames then count against
                    # the process's bound, not each session's).
                    session_id = self.writer.create_session(**fields)
                self.writer.update_session(session_id, started_at=handle.started_at, **row.extra)
            except Exception as exc:
                handle.error = f"cannot create the session row: {exc}"
                recorder.abandon(handle.error)
                return
            writer = self.writer
            if self.redact_paths:
                writer = cast("Writer", RedactingWriter(writer, self.redact_paths))
            handle.session_id = session_id
            recorder.attach(writer, session_id)
        finally:
            handle.done.set()

    def close(self) -> Any:
        """Flush every frame queued and close (on a plain thread, never the loop)."""
        self._opened.wait(30)
        if self._heartbeat is not None:
            self._heartbeat.stop()
        if self.store is not None:
            self.store.close()
        self.pool.shutdown(wait=False)


class SharedSessionStore:
    """One session's row in the gateway's store (a :class:`~mcptape.assemble.SessionStore`).

    The process's writer is shared: a session's end writes nothing of its own; the store
    is flushed when the gateway shuts down.
    """

    def __init__(self, owner: GatewayStore, recorder: Recorder, row: SessionRow) -> None:
        self.owner = owner
        self.recorder = recorder
        self.row = row
        self.started_at = time.time()
        self.session_id: str | None = None
        self.error: str | None = None
        self.done = threading.Event()

    def start(self) -> SharedSessionStore:
        self.owner.pool.submit(self.owner._attach, self)
        return self

    async def opened(self) -> None:
        import asyncio

        while not self.done.is_set():
            await asyncio.sleep(0.005)

    async def afinish(self) -> bool:
        return self.error is None and self.recorder.failure is None

    def where(self) -> str:
        return self.owner.where()
