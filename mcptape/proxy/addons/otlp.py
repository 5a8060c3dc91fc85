"""The OTLP addon (``--otlp URL``): each frame queued for export as OpenTelemetry spans and metrics.

An observer, like the recorder: its ``frame_done`` only queues the frame with what the
relay already knows of it (kind, method, id: the frame's lazily classified view, which
the relay reads next anyway), in O(1) whatever the frame's size; pairing, spans and the
network happen on the sink's thread (:mod:`mcptape.telemetry.sink`). When the queue is
full the frame is not exported (forwarding goes on), and the session records how many
frames were dropped as an ``otlp_dropped`` event (and says so once on stderr).

At the session's end its requests still unanswered end as spans with ``error.type
no_response``, its duration is recorded, and, when it was the last session feeding the
sink, everything is exported (for at most :data:`FLUSH_WAIT` seconds: a receiver that
never answers delays the end of a session by that much, never the frames).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from mcptape.proxy.addonmanager import Flow, Outcome, SessionContext
from mcptape.telemetry.conventions import SessionFacts
from mcptape.telemetry.pairing import Pairing
from mcptape.telemetry.sink import Counts, OtlpSink, sink_for
from mcptape.terminal import say

if TYPE_CHECKING:
    from mcptape.proxy.addons.recorder import Recorder

FLUSH_WAIT = 3.0  # seconds the end of the last session waits for its spans to be exported


class OtlpExporter:
    """Addon: queues every frame of the session for OTLP export (see the module docstring).

    ``target``: the receiver's URL (one sink per URL per process) or a sink of one's
    own. ``recorder``: the session's recorder, if it records: the drop count is written
    as an event of the recording, and the recording's id is the spans' ``mcp.session.id``
    when the transport has no MCP session id of its own.
    """

    def __init__(
        self, target: str | OtlpSink, recorder: Recorder | None = None, *, flush_wait: float = FLUSH_WAIT
    ) -> None:
        self.sink = sink_for(target) if isinstance(target, str) else target
        self.flush_wait = flush_wait
        self.recorder = recorder
        self.counts = Counts()
        self.pairing: Pairing | None = None
        self.started = time.time()
        self.flushed: bool | None = None  # whether the last flush finished in time

    def session_start(self, session: SessionContext) -> None:
        facts = SessionFacts(session.mode, session.transport, session.upstream or "")
        recorder = self.recorder
        self.pairing = Pairing(
            facts, (lambda: recorder.session_id) if recorder is not None else None, session
        )
        self.started = time.time()
        with self.sink._lock:
            self.sink.sessions += 1

    def frame_done(self, flow: Flow) -> None:
        pairing = self.pairing
        if pairing is None:
            return
        # A replacement (a proxy edit) is what the peer got: it carries the exchange.
        frame = flow.replacement if flow.replacement is not None else flow.frame
        self.sink.offer(
            self.counts,
            pairing,
            frame,
            frame.kind,
            frame.direction,
            frame.method,
            frame.rpc_id,
            frame.origin or "",
        )

    async def session_end(self, session: SessionContext, outcome: Outcome) -> None:
        pairing = self.pairing
        if pairing is None:
            return
        pairing.session.transport = session.transport
        recorder = self.recorder
        if recorder is not None:
            # A short session ends before its store is open: its spans wait for the
            # recording's id (mcp.session.id), as the end of the session waits for the store.
            deadline = time.monotonic() + self.flush_wait
            while recorder.session_id is None and recorder.failure is None and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        sink = self.sink
        sink.end_session(pairing, time.time(), self.started, outcome.status)
        with sink._lock:
            sink.sessions -= 1
            last = sink.sessions == 0
        if last:
            self.flushed = await sink.aflush(self.flush_wait)
        dropped = self.counts.dropped
        if dropped or self.flushed is False or (last and sink.unsent):
            self._report(session, dropped, last)

    def _report(self, session: SessionContext, dropped: int, last: bool) -> None:
        sink = self.sink
        parts = []
        if dropped:
            parts.append(f"{dropped} frames were not exported (the export queue was full)")
        waiting = sink.waiting if self.flushed is False else 0
        if self.flushed is False:
            parts.append(
                f"the export did not finish within {self.flush_wait:g} s ({waiting} frames still waiting)"
            )
        if last and sink.unsent:
            parts.append(f"{sink.unsent} spans were not accepted ({sink.failure or 'no answer'})")
        text = f"OTLP export to {sink.url}: " + "; ".join(parts)
        say(text)
        if self.recorder is not None:
            data = {
                "url": sink.url,
                "dropped_frames": dropped,
                "unsent_spans": sink.unsent if last else None,
                "waiting_frames": waiting,
            }
            self.recorder.event(session, "otlp_dropped", text, data)
