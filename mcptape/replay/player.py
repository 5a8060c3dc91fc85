"""The tape player: a client-facing link that plays a recording's client side to a live server.

It is the downstream link of a replay (``Relay(TapePlayer(tape), server_link, ...)``),
and lives on the event loop like :class:`~mcptape.proxy.link.MemoryLink`:

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

When everything was sent and answered it ends (``"eof"``), and the relay shuts the
server down as it does when a client leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from mcptape.frames import Frame, classify_message
from mcptape.proxy.link import Deliver, Ended, EventSink, LinkEnd
from mcptape.replay.book import AnswerBook, Entry
from mcptape.replay.tape import Exchange, Tape, TapeFrame, build_tape, id_key, tape_frame

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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._deliver: Deliver | None = None
        self._ended: Ended | None = None
        self._waiters: dict[str, asyncio.Future[None]] = {}
        self._recorded: dict[str, Exchange] = {}
        self._states: dict[str, str] = {}  # recorded requestState -> the live server's
        self._send_lock = asyncio.Lock()
        self._receiving = False
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.finished = asyncio.Event()

    # -- the Link interface ---------------------------------------------------------

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        self._loop = asyncio.get_running_loop()
        self._deliver, self._ended = deliver, ended
        self._receiving = True
        self._task = self._loop.create_task(self._play())

    def send(self, frame: Frame) -> Awaitable[Any] | None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the replay is over
                loop.call_soon_threadsafe(self._received, frame)
        return None

    def close_send(self) -> None:
        pass

    def stop_receiving(self) -> None:
        self._receiving = False
        for waiter in self._waiters.values():
            if not waiter.done():
                waiter.set_result(None)

    async def aclose(self, grace: float) -> LinkEnd:
        self.stop_receiving()
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        return LinkEnd("closed")

    # -- playing --------------------------------------------------------------------

    def _note(self, direction: Any, origin: str, data: bytes) -> None:
        self.seen.append(tape_frame(len(self.seen) + 1, direction, origin, time.time(), data))

    async def _out(self, data: bytes) -> None:
        async with self._send_lock:
            if not self._receiving or self._deliver is None:
                return
            self._note("c2s", "client", data)
            pending = self._deliver(Frame(data, "c2s"))
            if pending is not None:
                await pending

    async def _wait(self, key: str) -> None:
        waiter = self._waiters.get(key)
        if waiter is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.timeout)
        except TimeoutError:
            self.timed_out.append(key)
            waiter.set_result(None)

    async def _play(self) -> None:
        exchanges = {e.index: e for e in self.tape.exchanges}
        total, done = len(self.tape.exchanges), 0
        try:
            for step in self.tape.steps:
                for key in step.wait_for:
                    await self._wait(key)
                if not self._receiving:
                    return
                for index in step.opens:
                    exchange = exchanges[index]
                    self._recorded[exchange.key] = exchange
                    assert self._loop is not None
                    self._waiters[exchange.key] = self._loop.create_future()
                await self._out(self._rewritten(step.frame))
                done += len(step.opens)
                if self.progress is not None and step.opens:
                    self.progress(done, total)
            for key in list(self._waiters):
                await self._wait(key)
        finally:
            self.finished.set()
            if self._receiving and self._ended is not None:
                self._receiving = False
                self._ended("eof")

    def _rewritten(self, frame: TapeFrame) -> bytes:
        """The frame's exact bytes, unless it echoes a requestState the live server replaced."""
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

    def _received(self, frame: Frame) -> None:
        self._note("s2c", frame.origin or "server", frame.data)
        for message in self.seen[-1].messages:
            kind = classify_message(message).kind
            if kind in ("response", "error"):
                self._answered(message)
            elif kind == "request" and self._receiving:
                ruled = self.answer(message) if self.answer is not None else None
                if ruled is not None:
                    reply = _dumps({"jsonrpc": "2.0", "id": message.get("id"), **ruled})
                else:
                    entry = self.book.take(message.get("method"), message.get("params"))
                    if entry is None:
                        entry = self.book.take_by_method(message.get("method"))
                    reply = answer_bytes(message, entry)
                task = asyncio.ensure_future(self._out(reply))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    def _answered(self, message: dict[str, Any]) -> None:
        key = id_key(message.get("id"))
        recorded = self._recorded.get(key)
        if recorded is not None and recorded.response is not None:
            old = _state(recorded.response)
            new = _state(message)
            if old is not None and new is not None:
                self._states[old] = new
        waiter = self._waiters.get(key)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def tool_in_flight(self) -> str | None:
        """The tool of the latest ``tools/call`` still waiting for its response (for rules)."""
        for key in reversed(list(self._waiters)):
            exchange = self._recorded.get(key)
            if not self._waiters[key].done() and exchange is not None and exchange.method == "tools/call":
                return exchange.subject
        return None

    def replayed_tape(self) -> Tape:
        """What was sent and received, as a tape to compare with the recording."""
        return build_tape(self.seen, "replay")


def _state(message: dict[str, Any]) -> str | None:
    result = message.get("result")
    state = result.get("requestState") if isinstance(result, dict) else None
    return state if isinstance(state, str) else None
