"""The bounded queue and the thread behind ``--otlp URL``: export never slows forwarding.

The :class:`~mcptape.proxy.addons.otlp.OtlpExporter` addon of each session hands every
frame to :meth:`OtlpSink.offer`: a lock, a length check and an append, whatever the
frame's size. Everything else happens on the sink's thread: pairing requests with their
answers (:mod:`mcptape.telemetry.pairing`), making spans and histogram points
(:mod:`mcptape.telemetry.pipeline`, which imports opentelemetry-proto there, not on the
relay's path), and exporting them in batches (every :data:`INTERVAL` seconds or
:data:`BATCH` spans).

The thread shares the interpreter with the relay's: it works in slices of at most
:data:`SLICE` seconds of its own CPU time, and between two slices it rests, nine
times as long as it worked while frames keep coming (so a burst of traffic gets at
least 90 % of the interpreter), and just long enough to hand it over when they do not
(so a backlog drains at once when the burst is over). A span costs tens of microseconds,
so the queue, deep enough for a burst, is emptied soon after it.

Bounds: at most :data:`QUEUE_LIMIT` frames wait; a frame offered to a full queue is
dropped and counted for its session (a receiver that never answers holds the thread in
an export for up to :data:`TIMEOUT` seconds while frames keep coming). A waiting frame
keeps its bytes (a small one is parsed again on the thread: its parsed value, many
times its size, is not kept alive) while less than :data:`BYTE_LIMIT` bytes wait; past
that only what the relay classified (kind, method, id) goes, so a burst of large answers
costs no more memory than the recorder's own backlog. One sink serves every session of
a process that exports to the same URL (the gateway's many sessions share one thread
and one connection).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mcptape.telemetry.conventions import Operation
from mcptape.telemetry.pairing import Pairing
from mcptape.wire.frame import KEEP_PARSED_BYTES, Frame, parse

if TYPE_CHECKING:
    from mcptape.telemetry.pipeline import Destination, Pipeline

QUEUE_LIMIT: Final = 65_536  # frames waiting for the exporter's thread (a burst of 60,000 fits)
BYTE_LIMIT: Final = 64 << 20  # bytes of frames kept waiting (beyond: their facts only)
# A frame up to this size waits as its bytes alone and is parsed again on the thread (a
# few microseconds); a larger one waits as the frame, with the relay's parsed value when
# nothing let go of it (a recorder's writer does: Frame.forget_message, and the thread
# then parses it again), counted at three times its size either way.
REPARSE_BYTES: Final = 16 << 10
ITEM_BYTES: Final = 256  # what a waiting frame costs beyond its bytes (the queue's entry)
BATCH: Final = 256  # spans per export, at most (serializing them holds the interpreter ~2 us a span)
INTERVAL: Final = 1.0  # seconds between exports while traffic flows
METRICS_INTERVAL: Final = 10.0  # seconds between exports of the histograms
TIMEOUT: Final = 5.0  # seconds an export may take, retries included
SLICE: Final = 0.0005  # seconds of CPU the thread works at a time, then it rests (see _rest)
REST_FACTOR: Final = 9.0
HANDOVER: Final = 0.0001  # seconds of rest that let a waiting thread take the interpreter


@dataclass
class Counts:
    """One session's bookkeeping: frames dropped because the queue was full."""

    dropped: int = 0


class OtlpSink:
    """A bounded queue of frames and the thread that turns them into exported spans and metrics."""

    def __init__(
        self,
        url: str,
        *,
        queue_limit: int = QUEUE_LIMIT,
        byte_limit: int = BYTE_LIMIT,
        batch: int = BATCH,
        interval: float = INTERVAL,
        timeout: float = TIMEOUT,
        destination: Callable[[], Destination] | None = None,
    ) -> None:
        self.url = url
        self.queue_limit = queue_limit
        self.byte_limit = byte_limit
        self.batch = batch
        self.interval = interval
        self.timeout = timeout
        self._destination = destination
        self._queue: deque[tuple[Any, ...]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.offered = 0  # frames, every session (the relay is busy while it grows)
        self.dropped = 0  # frames, every session
        self.sent = 0  # spans the receiver accepted
        self.unsent = 0  # spans made but not accepted (an export failed or never finished)
        self.failure: str | None = None  # why the last export failed
        self.sessions = 0  # sessions feeding the sink now
        self._holding: set[Pairing] = set()  # sessions whose spans wait for their recording's id
        self._thread = threading.Thread(target=self._run, name="mcptape-otlp", daemon=True)
        self._thread.start()

    # -- any thread ---------------------------------------------------------------

    def offer(
        self,
        counts: Counts,
        pairing: Pairing,
        frame: Frame,
        kind: str,
        direction: str,
        method: str | None,
        rpc_id: str | None,
        origin: str,
    ) -> bool:
        """Queue a frame for its session's spans (O(1)); False when the queue was full (counted)."""
        size = len(frame.data)
        kept: Frame | bytes | None = frame.data if size <= REPARSE_BYTES else frame
        weight = ITEM_BYTES + (size if size <= REPARSE_BYTES or size > KEEP_PARSED_BYTES else 3 * size)
        with self._lock:
            self.offered += 1
            if len(self._queue) >= self.queue_limit:
                counts.dropped += 1
                self.dropped += 1
                return False
            if self._bytes + weight > self.byte_limit:
                kept, weight = None, ITEM_BYTES
            self._bytes += weight
            self._queue.append(
                (pairing, kept, kind, direction, method, rpc_id, frame.ts, origin, weight, frame.meta)
            )
            wake = len(self._queue) >= self.batch
        if wake:
            self._wake.set()
        return True

    @property
    def waiting(self) -> int:
        """Frames (and session ends) waiting for the thread now."""
        with self._lock:
            return len(self._queue)

    def end_session(self, pairing: Pairing, ts: float, started: float, status: str | None) -> None:
        """A session is over: its unanswered requests end, its duration is recorded."""
        with self._lock:
            self._queue.append(("end", pairing, ts, started, status))

    def request_flush(self) -> threading.Event:
        """Ask for everything queued to be exported now; the event is set once it was tried."""
        done = threading.Event()
        with self._lock:
            self._queue.append(("flush", done))
        self._wake.set()
        return done

    def flush(self, timeout: float) -> bool:
        """Export everything queued, waiting at most ``timeout`` seconds; True when done."""
        return self.request_flush().wait(timeout)

    async def aflush(self, timeout: float) -> bool:
        """:meth:`flush` awaited on the loop without blocking it."""
        done = self.request_flush()
        deadline = time.monotonic() + timeout
        while not done.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return done.is_set()

    # -- the sink's thread -------------------------------------------------------------

    def _open(self) -> Pipeline | None:
        try:
            from mcptape.telemetry.pipeline import OtlpHttp, Pipeline

            destination = (
                self._destination() if self._destination is not None else OtlpHttp(self.url, self.timeout)
            )
            return Pipeline(destination)
        except Exception as exc:  # the packages are missing or broken: say why, forward regardless
            self.failure = f"cannot start OpenTelemetry: {type(exc).__name__}: {exc}"
            return None

    def _run(self) -> None:
        pipeline = self._open()
        last_spans = last_metrics = time.monotonic()
        seen = self.offered
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            flushes: list[threading.Event] = []
            began, cpu = time.perf_counter(), time.thread_time()
            while True:
                with self._lock:
                    if not self._queue:
                        break
                    item = self._queue.popleft()
                    if len(item) == 10:
                        self._bytes -= item[8]
                try:
                    self._take(pipeline, item, flushes)
                except Exception as exc:  # one odd frame costs its span, never the thread
                    self.failure = f"{type(exc).__name__}: {exc}"
                if pipeline is not None and pipeline.waiting >= self.batch:
                    self._export(pipeline)
                    last_spans = time.monotonic()
                if time.perf_counter() - began > SLICE:
                    # the CPU this thread used, not the time it waited for the interpreter
                    seen = self._rest(time.thread_time() - cpu, seen)
                    began, cpu = time.perf_counter(), time.thread_time()
            now = time.monotonic()
            for pairing in list(self._holding):
                self._add(pipeline, pairing.ready([], now))
                if not pairing.holding:
                    self._holding.discard(pairing)
            if pipeline is not None and (flushes or now - last_spans >= self.interval):
                self._export(pipeline)
                last_spans = now
            if pipeline is not None and (flushes or now - last_metrics >= METRICS_INTERVAL):
                self._export_metrics(pipeline)
                last_metrics = now
            for done in flushes:
                done.set()

    def _rest(self, worked: float, seen: int) -> int:
        """Give way to the relay's threads, which share the interpreter with this one.

        While frames keep coming (more were offered since the last rest), sleep nine
        times as long as this thread worked: it takes at most a tenth of the
        interpreter, and a burst fills the queue instead of slowing the frames down.
        When none came, the relay is idle: rest only long enough for a thread waiting
        for the interpreter to take it, and drain the backlog. Returns the count seen."""
        offered = self.offered
        time.sleep(min(REST_FACTOR * worked, 0.1) if offered != seen else HANDOVER)
        return offered

    def _take(self, pipeline: Pipeline | None, item: tuple[Any, ...], flushes: list[threading.Event]) -> None:
        head = item[0]
        if head == "flush":
            flushes.append(item[1])
            return
        if head == "end":
            _, pairing, ts, started, status = item
            ops = pairing.end(ts)
            if pipeline is not None:
                pipeline.add_session(pairing.session, ts - started, status)
        else:
            pairing, kept, kind, direction, method, rpc_id, ts, origin, _, meta = item
            if isinstance(kept, bytes):  # a small frame: parsed again here
                msg = parse(kept) if kind != "malformed" else None
                if type(msg) is object:  # parse's "not JSON"
                    msg = None
                done = pairing.seen(kept, msg, meta, kind, direction, method, rpc_id, ts, origin)
            else:
                done = pairing.frame(kept, kind, direction, method, rpc_id, ts, origin)
            ops = pairing.ready(done, time.monotonic())
            if pairing.holding:
                self._holding.add(pairing)
        self._add(pipeline, ops)

    def _add(self, pipeline: Pipeline | None, ops: list[Operation]) -> None:
        if pipeline is None:
            self.unsent += len(ops)
            return
        for op in ops:
            pipeline.add(op)

    def _export(self, pipeline: Pipeline) -> None:
        try:
            count, ok = pipeline.export_spans()
        except Exception as exc:
            count, ok = 0, False
            self.failure = f"{type(exc).__name__}: {exc}"
        if ok:
            self.sent += count
        else:
            self.unsent += count
            self._failed(pipeline)

    def _export_metrics(self, pipeline: Pipeline) -> None:
        try:
            ok = pipeline.export_metrics()
        except Exception as exc:
            ok = False
            self.failure = f"{type(exc).__name__}: {exc}"
        if not ok:
            self._failed(pipeline)

    def _failed(self, pipeline: Pipeline) -> None:
        self.failure = (
            pipeline.destination.failure or self.failure or "the receiver did not accept the export"
        )


_SINKS: dict[str, OtlpSink] = {}
_SINKS_LOCK = threading.Lock()


def sink_for(url: str) -> OtlpSink:
    """The process's sink for ``url`` (made on first use; every session exporting there shares it)."""
    with _SINKS_LOCK:
        sink = _SINKS.get(url)
        if sink is None:
            sink = _SINKS[url] = OtlpSink(url)
        return sink
