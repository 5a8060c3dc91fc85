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

It plays from a thread of its own, like a stdio reader: a response the server's reader
thread hands over wakes the player, which sends the next frame straight to the server
link, without a turn of the event loop or a writer thread on the way (a replay is a
long chain of such round trips). It never plays on the thread that delivers the
server's frames: writing to a server whose output we are not reading could deadlock.

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

from mcptape.frames import Frame, classify_message
from mcptape.proxy.link import Deliver, Ended, EventSink, LinkEnd, wait_from_thread
from mcptape.replay.book import AnswerBook, Entry
from mcptape.replay.tape import Exchange, Step, Tape, TapeFrame, build_tape, id_key, tape_frame

METHOD_NOT_FOUND = -32601


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


class TapePlayer:
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
        self.book = AnswerBook(
            Entry(i, c.method, c.request.get("params"), c.answer) for i, c in enumerate(tape.server_calls, 1)
        )
        self.finished = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._deliver: Deliver | None = None
        self._ended: Ended | None = None
        # Everything below is shared by the player thread and whoever delivers the server's
        # frames (its reader thread or the loop): guarded by _cv.
        self._cv = threading.Condition()
        self._waiting: dict[str, Exchange] = {}  # requests sent and not answered yet
        self._states: dict[str, str] = {}  # recorded requestState -> the live server's
        self._outbox: deque[bytes] = deque()  # answers to the server's own requests
        self._receiving = False
        self._thread: threading.Thread | None = None

    # -- the Link interface ---------------------------------------------------------

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._loop = asyncio.get_running_loop()
        self._deliver, self._ended = deliver, ended
        self._receiving = True
        self._thread = threading.Thread(target=self._play, name="mcptape-tape-player", daemon=True)
        self._thread.start()

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        """A frame from the server (any thread): noted, and the player woken if it waits for it."""
        with self._cv:
            self._received(frame)
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

    # -- playing (the player thread) --------------------------------------------------

    def _play(self) -> None:
        exchanges = {e.index: e for e in self.tape.exchanges}
        total, done = len(self.tape.exchanges), 0
        try:
            for step in self.tape.steps:
                for key in step.wait_for:
                    if not self._wait(key):
                        return
                with self._cv:
                    if not self._receiving:
                        return
                    for index in step.opens:
                        exchange = exchanges[index]
                        self._waiting[exchange.key] = exchange
                    data = self._rewritten(step)
                    frame = step.frame
                    if data is frame.data and frame.kind != "batch" and frame.messages:
                        self._note("c2s", "client", data, frame.messages[0])  # parsed already
                    else:
                        self._note("c2s", "client", data)
                self._out(data)
                done += len(step.opens)
                if self.progress is not None and step.opens:
                    self.progress(done, total)
            while True:
                with self._cv:
                    last = next(iter(self._waiting), None)
                if last is None or not self._wait(last):
                    return
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

    def _wait(self, key: str) -> bool:
        """Wait for ``key``'s response (at most ``timeout``), answering server requests meanwhile.

        False when the replay is stopping.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            with self._cv:
                while self._receiving and not self._outbox and key in self._waiting:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.timed_out.append(key)
                        del self._waiting[key]
                        return True
                    self._cv.wait(left)
                if not self._receiving:
                    return False
                reply = self._outbox.popleft() if self._outbox else None
                if reply is None:
                    return True  # answered
                self._note("c2s", "client", reply)
            self._out(reply)

    def _out(self, data: bytes) -> None:
        deliver, loop = self._deliver, self._loop
        if deliver is None or loop is None or not self._receiving:
            return
        pending = deliver(Frame(data, "c2s"))
        if pending is not None:
            wait_from_thread(loop, pending)

    def _note(self, direction: Any, origin: str, data: bytes, *parsed: Any) -> TapeFrame:
        """Under _cv: keep a frame for the comparison, in the order it was sent or received.

        ``parsed``: the frame's JSON value when it is known already (not parsed again).
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

    def _received(self, frame: Frame) -> None:
        # The relay has parsed the frame already (to track the requests it answers).
        noted = self._note("s2c", frame.origin or "server", frame.data, frame.message)
        woken = False
        for message in noted.messages:
            kind = classify_message(message).kind
            if kind in ("response", "error"):
                woken = self._answered(message) or woken
            elif kind == "request" and self._receiving:
                self._outbox.append(self._answer(message))
                woken = True
        if woken:
            self._cv.notify_all()

    def _answer(self, request: dict[str, Any]) -> bytes:
        ruled = self.answer(request) if self.answer is not None else None
        if ruled is not None:
            return _dumps({"jsonrpc": "2.0", "id": request.get("id"), **ruled})
        entry = self.book.take(request.get("method"), request.get("params"))
        if entry is None:
            entry = self.book.take_by_method(request.get("method"))
        return answer_bytes(request, entry)

    def _answered(self, message: dict[str, Any]) -> bool:
        recorded = self._waiting.pop(id_key(message.get("id")), None)
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
