"""The tape player: a client-facing link that plays a recording's client side to a live server.

It is the downstream link of a replay (``Relay(TapePlayer(tape), server_link, ...)``):

- it delivers the recorded client frames in order, their exact bytes, waiting before
  each for the responses the recording shows arriving before it (so a client that
  pipelined is replayed pipelined, and one that waited is replayed waiting), each wait
  bounded by ``timeout``;
- it answers the live server's own requests (sampling, elicitation, roots, ping) from
  the recording, matched by method and parameters, with the live request's id;
- a 2026-07-28 retry that echoes a ``requestState`` gets the state the live server
  just minted, never the recorded one;
- it keeps every frame it sent and received, in order: :meth:`replayed_tape` is what
  the comparison reads.

A replay is a long chain of round trips, so no frame takes a turn of the event loop
or a writer thread on its way. The player has a thread of its own, which sends to the
server link directly; and when the response the next frame waited for arrives, the
thread that delivers it (the server's stdio reader) sends that frame itself, without
even waking the player, provided the write cannot block: nothing else is awaited, the
frame is small, and what the server may not have read yet is too (a reader blocked
writing to a server that is itself blocked writing to us would deadlock both).

When everything was sent and answered it ends (``"eof"``), and the relay shuts the
server down as it does when a client leaves.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcptape.proxy.link import Deliver, Ended, EventSink, LinkBase, LinkEnd, wait_from_thread
from mcptape.replay.book import AnswerBook, Entry
from mcptape.replay.tape import (
    Exchange,
    Step,
    Tape,
    TapeFrame,
    build_tape,
    id_key,
    message_kinds,
    tape_frame,
)
from mcptape.wire.frame import Frame

METHOD_NOT_FOUND = -32601
# The delivering thread sends the next frame itself only when the server has read every
# request and what it may not have read yet (notifications sent since) stays well below
# a pipe's 64 KiB: such a write never blocks.
KEEP_NOTIFICATIONS = 10_000
INLINE_MAX = 16 << 10
UNREAD_MAX = 32 << 10
# How long a step waits for the server's requests the client had answered before it in
# the recording (roots/list after initialized); a server that no longer asks is forgiven.
ASKS_WAIT_S = 2.0


def _dumps(message: Any) -> bytes:
    return orjson.dumps(message)


def answer_bytes(request: dict[str, Any], entry: Entry | None) -> bytes:
    """The recorded answer re-addressed to the live request's id (an error when there is none)."""
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
    recorded = entry.answer if entry is not None else None
    if isinstance(recorded, dict) and "result" in recorded:
        reply["result"] = recorded["result"]
    elif isinstance(recorded, dict) and "error" in recorded:
        reply["error"] = recorded["error"]
    else:
        reply["error"] = {
            "code": METHOD_NOT_FOUND,
            "message": f"mcptape replay: the recording has no answer to {request.get('method')}",
        }
    return _dumps(reply)


class TapePlayer(LinkBase):
    """Plays the client side of ``tape``; see the module docstring."""

    def __init__(
        self,
        tape: Tape,
        *,
        timeout: float = 30.0,
        progress: Callable[[int, int], None] | None = None,
        answer: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    ) -> None:
        self.name = "tape"
        # Injection rules the user gave: asked first for every server request (a result or
        # error member, or None to answer from the recording).
        self.answer = answer
        self.tape = tape
        self.timeout = timeout
        self.progress = progress
        self.seen: list[TapeFrame] = []
        self.timed_out: list[str] = []
        # A server that floods notifications must not fill memory: past this many, they
        # are counted, not kept (the recording's own count, twice over, or 10,000).
        recorded = len(tape.loose) + sum(len(e.notifications) for e in tape.exchanges)
        self.keep_notifications = max(KEEP_NOTIFICATIONS, 2 * recorded)
        self.notifications_kept = 0
        self.notifications_dropped = 0
        self.book = AnswerBook(
            Entry(i, c.method, c.request.get("params"), c.answer) for i, c in enumerate(tape.server_calls, 1)
        )
        self.finished = threading.Event()
        self._exchanges = {e.index: e for e in tape.exchanges}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._deliver: Deliver | None = None
        self._ended: Ended | None = None
        # Everything below is shared by the player thread and whoever delivers the server's
        # frames (its reader thread or the loop): guarded by _cv.
        self._cv = threading.Condition()
        self._waiting: dict[str, Exchange] = {}  # requests sent and not answered yet
        self._deadlines: dict[str, float] = {}  # when each of them is reported missing
        self._cursor = 0  # the next step to send
        self._sending = False  # a thread is sending a step: the next waits (frames stay in order)
        self._unread = 0  # bytes sent since the last request frame (maybe not read yet)
        self._done = 0  # exchanges sent, for progress
        self._states: dict[str, str] = {}  # recorded requestState -> the live server's
        self._outbox: deque[bytes] = deque()  # answers to the server's own requests
        self._server_answers = 0  # the server's requests answered (queued in order) so far
        self._forgiven = 0  # ...plus those it never asked, given up waiting for
        self._asks_step = -1  # the step waiting for the server's requests, and until when
        self._asks_due = 0.0
        self._receiving = False
        self._thread: threading.Thread | None = None

    # -- the Link interface ---------------------------------------------------------

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._deliver, self._ended = deliver, ended
        self._receiving = True
        self._thread = threading.Thread(target=self._play, name="mcptape-tape-player", daemon=True)
        self._thread.start()

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        """A frame from the server (any thread): noted; the next frame sent if it waited for this one."""
        data = None
        with self._cv:
            progressed = self._received(frame)
            if progressed and threading.get_ident() != self._loop_thread:
                data = self._claim(inline=True)
            if progressed and data is None and self._player_has_work():
                self._cv.notify_all()
        if data is not None:
            self._send_step(data)
        return None

    def close_send(self) -> None:
        pass

    def stop_receiving(self) -> None:
        with self._cv:
            self._receiving = False
            self._cv.notify_all()

    async def aclose(self, grace: float) -> LinkEnd:
        self.stop_receiving()
        thread = self._thread
        if thread is not None and thread.is_alive():
            # It may be waiting on the loop (back-pressure), so wait for it without blocking it.
            deadline = time.monotonic() + max(grace, 1.0)
            while thread.is_alive() and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
        return LinkEnd("closed")

    # -- playing --------------------------------------------------------------------

    def _play(self) -> None:
        """The player thread: sends what is ready, answers the server's requests, reports what never came."""
        try:
            while True:
                with self._cv:
                    reply = data = None
                    while reply is None and data is None:
                        if not self._receiving:
                            return
                        if self._outbox:
                            reply = self._outbox.popleft()
                            self._note("c2s", "client", reply)
                            break
                        data = self._claim(inline=False)
                        if data is not None:
                            break
                        if self._cursor >= len(self.tape.steps) and not self._waiting and not self._sending:
                            return  # everything sent and answered (or reported missing)
                        self._cv.wait(self._expire())
                if reply is not None:
                    self._out(reply)
                else:
                    assert data is not None
                    self._send_step(data)
        except Exception as exc:  # a bug must not leave the replay hanging
            with self._cv:
                self._note("s2c", "proxy", _dumps({"mcptape": f"player failed: {type(exc).__name__}: {exc}"}))
        finally:
            self.finished.set()
            with self._cv:
                ending = self._receiving
                self._receiving = False
            if ending and self._ended is not None:
                self._ended("eof")

    def _expire(self) -> float | None:
        """Under _cv: report the requests past their deadline; how long until the next one is due."""
        asks = self._asks_step == self._cursor
        if not self._deadlines and not asks:
            return None
        now = time.monotonic()
        expired = False
        for key, due in list(self._deadlines.items()):
            if due <= now:
                self.timed_out.append(key)
                del self._deadlines[key]
                self._waiting.pop(key, None)
                expired = True
        dues = list(self._deadlines.values())
        if asks:
            dues.append(self._asks_due)
        if not dues:
            return 0.0 if expired else None  # something expired: look again at once
        return max(0.0, min(dues) - now)

    def _asked_enough(self, step: Step) -> bool:
        """Under _cv: whether the server asked (and got answers to) what it had asked before ``step``.

        Waits :data:`ASKS_WAIT_S` at most per step; what was not asked by then is forgiven.
        """
        if self._server_answers + self._forgiven >= step.answers_before:
            return True
        now = time.monotonic()
        if self._asks_step != self._cursor:
            self._asks_step, self._asks_due = self._cursor, now + min(ASKS_WAIT_S, self.timeout)
            return False
        if now < self._asks_due:
            return False
        self._forgiven = step.answers_before - self._server_answers
        return True

    def _claim(self, *, inline: bool) -> bytes | None:
        """Under _cv: the next step's bytes if it may be sent now (the caller sends it), else None."""
        steps = self.tape.steps
        if self._sending or not self._receiving or self._cursor >= len(steps):
            return None
        step = steps[self._cursor]
        if any(key in self._waiting for key in step.wait_for) or not self._asked_enough(step):
            return None
        data = self._rewritten(step)
        if inline and (
            self._waiting or self._outbox or len(data) > INLINE_MAX or self._unread + len(data) > UNREAD_MAX
        ):
            return None
        self._cursor += 1
        self._sending = True
        self._unread = 0 if step.opens else self._unread + len(data)
        due = time.monotonic() + self.timeout
        for index in step.opens:
            exchange = self._exchanges[index]
            self._waiting[exchange.key] = exchange
            self._deadlines[exchange.key] = due
        frame = step.frame
        if data is frame.data and frame.kind != "batch" and frame.messages:
            self._note("c2s", "client", data, frame.messages[0], frame.kind)  # parsed already
        else:
            self._note("c2s", "client", data)
        if step.opens:
            self._done += len(step.opens)
            if self.progress is not None:
                self.progress(self._done, len(self._exchanges))
        return data

    def _send_step(self, data: bytes) -> None:
        """Send a claimed step, then let the next one go (the player thread may be waiting for it)."""
        try:
            self._out(data)
        finally:
            with self._cv:
                self._sending = False
                if self._player_has_work():
                    self._cv.notify_all()

    def _player_has_work(self) -> bool:
        """Under _cv: whether the player thread would do something now (wake it only then)."""
        if not self._receiving or self._outbox:
            return True
        steps = self.tape.steps
        if self._cursor >= len(steps):
            return not self._waiting
        return not any(key in self._waiting for key in steps[self._cursor].wait_for)

    def _out(self, data: bytes) -> None:
        deliver, loop = self._deliver, self._loop
        if deliver is None or loop is None or not self._receiving:
            return
        pending = deliver(Frame(data, "c2s"))
        if pending is not None:
            wait_from_thread(loop, pending)

    def _note(self, direction: Any, origin: str, data: bytes, *parsed: Any) -> TapeFrame:
        """Under _cv: keep a frame for the comparison, in the order it was sent or received.

        ``parsed``: the frame's JSON value (and its kind) when known already (not parsed again).
        """
        noted = tape_frame(len(self.seen) + 1, direction, origin, time.time(), data, *parsed)
        self.seen.append(noted)
        return noted

    def _rewritten(self, step: Step) -> bytes:
        """Under _cv: the frame's bytes, unless it echoes a requestState the live server replaced."""
        frame = step.frame
        if not self._states:
            return frame.data
        changed = False
        messages = []
        for message in frame.messages:
            params = message.get("params")
            state = params.get("requestState") if isinstance(params, dict) else None
            if isinstance(state, str) and state in self._states:
                message = {**message, "params": {**params, "requestState": self._states[state]}}
                changed = True
            messages.append(message)
        if not changed:
            return frame.data
        return _dumps(messages if frame.kind == "batch" else messages[0])

    # -- what the server sends (under _cv, on the thread that delivers it) -------------

    def _received(self, frame: Frame) -> bool:
        """Under _cv: note a server frame; whether it answered a request or asked something."""
        if frame.kind == "notification":
            if self.notifications_kept >= self.keep_notifications:
                self.notifications_dropped += 1
                return False
            self.notifications_kept += 1
        # The relay has parsed the frame already (to track the requests it answers).
        noted = self._note("s2c", frame.origin or "server", frame.data, frame.message, frame.kind)
        woken = False
        for kind, message in message_kinds(noted):
            if kind in ("response", "error"):
                woken = self._answered(message) or woken
            elif kind == "request" and self._receiving:
                self._outbox.append(self._answer(message))
                self._server_answers += 1
                woken = True
        return woken

    def _answer(self, request: dict[str, Any]) -> bytes:
        ruled = self.answer(request) if self.answer is not None else None
        if ruled is not None:
            return _dumps({"jsonrpc": "2.0", "id": request.get("id"), **ruled})
        entry = self.book.take(request.get("method"), request.get("params"))
        if entry is None:
            entry = self.book.take_by_method(request.get("method"))
        return answer_bytes(request, entry)

    def _answered(self, message: dict[str, Any]) -> bool:
        key = id_key(message.get("id"))
        recorded = self._waiting.pop(key, None)
        self._deadlines.pop(key, None)
        if recorded is None:
            return False
        if recorded.response is not None:
            old = _state(recorded.response)
            new = _state(message)
            if old is not None and new is not None:
                self._states[old] = new
        return True

    def tool_in_flight(self) -> str | None:
        """The tool of the latest ``tools/call`` still waiting for its response (for rules)."""
        for exchange in reversed(list(self._waiting.values())):
            if exchange.method == "tools/call":
                return exchange.subject
        return None

    def replayed_tape(self) -> Tape:
        """What was sent and received, as a tape to compare with the recording."""
        with self._cv:
            frames = list(self.seen)
        return build_tape(frames, "replay")


def _state(message: dict[str, Any]) -> str | None:
    result = message.get("result")
    state = result.get("requestState") if isinstance(result, dict) else None
    return state if isinstance(state, str) else None
