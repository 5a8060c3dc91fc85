"""Open the recording store in the background and hand it to a recorder when it is ready.

The first frames of a session must not wait for the database: importing SQLAlchemy,
opening the file, running migrations and inserting the session row take 0.3–0.5 s,
and another process may hold the write lock for much longer. :class:`BackgroundStore`
does all of that on a thread of its own while the relay forwards; the
:class:`~mcptape.proxy.addons.recorder.Recorder` holds frames until :meth:`Recorder.attach`.

At the end, :meth:`BackgroundStore.finish` writes everything (waiting, with one clear
message, while another process holds the lock: SIGTERM loses nothing) and closes.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcptape.proxy.addons.recorder import Recorder
from mcptape.terminal import say

if TYPE_CHECKING:
    from mcptape.store import Store, Writer


SLOW_OPEN_S = 8.0  # beyond the first 2 s, how long a store may take to open before it is said


@dataclass
class SessionRow:
    """The columns of the session row to create."""

    mode: str
    name: str | None = None
    transport: str | None = None
    upstream: str | None = None
    replay_of: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class BackgroundStore:
    """Opens ``db`` on a thread, creates the session row and attaches ``recorder``."""

    def __init__(self, db: str | None, row: SessionRow, recorder: Recorder) -> None:
        self.db = db
        self.row = row
        self.recorder = recorder
        self.started_at = time.time()
        self.store: Store | None = None
        self.writer: Writer | None = None
        self.session_id: str | None = None
        self.error: str | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._open, name="mcptape-store-open", daemon=True)

    def start(self) -> BackgroundStore:
        self._thread.start()
        return self

    def _open(self) -> None:
        try:
            from mcptape.store import StoreBusyError, StoreError, open_store

            try:
                store = open_store(self.db)
                self.store = store
                self.recorder.locked_out = lambda: store.waiting_for_lock
                from mcptape.store.lost import close_lost_once

                close_lost_once(store)
                fields: dict[str, Any] = {
                    "mode": self.row.mode,
                    "name": self.row.name,
                    "transport": self.row.transport,
                    "upstream": self.row.upstream,
                    "replay_of": self.row.replay_of,
                }
                try:
                    session_id = store.create_session(wait_for_lock=False, **fields)
                    writer = store.writer()
                except StoreBusyError:
                    # Another process holds the lock (sqlite3 in a terminal): waiting here kept
                    # the recorder detached and stalled the relay 5 s; the writer waits instead.
                    writer = store.writer()
                    session_id = writer.create_session(**fields)
                # The session began when the server did, not when the store was ready.
                writer.update_session(session_id, started_at=self.started_at, **self.row.extra)
            except StoreError as exc:
                self.error = str(exc)
                self.recorder.abandon(self.error)
                return
            self.writer, self.session_id = writer, session_id
            self.recorder.attach(writer, session_id)
        except Exception as exc:  # never a traceback on a reader's thread; say what happened
            why = "out of memory" if isinstance(exc, MemoryError) else f"{type(exc).__name__}: {exc}"
            self.error = f"cannot open the recording database: {why}"
            self.recorder.abandon(self.error)
        finally:
            self.done.set()

    async def opened(self) -> None:
        """Wait on the loop, without blocking it, until the store is open or failed."""
        import asyncio

        while not self.done.is_set():
            await asyncio.sleep(0.005)

    def where(self) -> str:
        if self.store is not None:
            return self.store.where
        from mcptape.store import resolve_url

        try:
            return resolve_url(self.db).removeprefix("sqlite:///")
        except Exception:
            return self.db or "the default database"

    def finish(self) -> bool:
        """Write everything queued and close; True when everything was recorded.

        While the store is still opening (a lock held by another process), waits for it
        with one message on stderr, so that nothing already forwarded is lost.
        """
        if not self.done.wait(2.0):
            # Still opening: a lock another process holds, or a slow start (importing,
            # migrating on a loaded machine): said as what it is, once it is worth saying.
            locked = self.store is not None and self.store.waiting_for_lock
            if locked or not self.done.wait(SLOW_OPEN_S):
                why = "another process holds its lock" if locked else "it is slow to open"
                say(
                    f"waiting for the recording database {self.where()} ({why}); frames already "
                    "forwarded will be written once it is ready (Ctrl-C again gives up on them)."
                )
                self.done.wait()
        ok = self.error is None
        if self.writer is not None:
            self.writer.close()
            if self.writer.failed or self.writer.errors:
                ok = False
        if self.store is not None:
            self.store.close()
        return ok and self.recorder.failure is None

    async def afinish(self) -> bool:
        """:meth:`finish` on a plain thread, awaited on the loop without blocking it.

        A plain thread, not the loop's default executor, whose threads ``asyncio.run``
        joins at exit. A failure to close is said on stderr and gives False.
        """
        import asyncio

        result: list[bool] = []
        done = asyncio.Event()
        loop = asyncio.get_running_loop()

        def work() -> None:
            try:
                result.append(self.finish())
            except Exception as exc:
                say(f"error: closing the recording database failed: {exc}")
                result.append(False)
            finally:
                loop.call_soon_threadsafe(done.set)

        threading.Thread(target=work, name="mcptape-store-close", daemon=True).start()
        await done.wait()
        return result[0]
