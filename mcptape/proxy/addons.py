"""Addons: objects whose methods, named after hooks, the relay calls (mitmproxy's model, kept small).

Hooks, each optional, sync or async unless noted:

- ``session_start(session: SessionContext)``: the relay is about to pump frames.
- ``frame(flow: Flow)``: a frame arrived from a peer. The addon may
  ``flow.reply(...)`` (answer it: the answer goes back where the frame came from and
  the frame is not forwarded), ``flow.replace(...)`` or ``flow.drop()``. Addons run in
  order; once one has answered or dropped a flow, later ones are not asked.
- ``frame_done(flow: Flow)``: the decision is made; the frame is about to be forwarded
  (or not). Observers such as the recorder live here, so they see every frame that
  arrived, whatever the deciders did, and the frames mcptape writes itself
  (``flow.injected``). A hook that returns an awaitable slows the relay until it is
  done (back-pressure).

``frame`` and ``frame_done`` run on the links' reader threads (see ``links``), so they
must be quick and thread-safe; an async ``frame`` hook, or an awaitable returned by
either, runs on the event loop while the reader waits.
- ``event(session: SessionContext, kind: str, text: str | None, data: object)``: sync only;
  something that is not a frame happened (stderr line, process exit, error).
- ``session_end(session: SessionContext, outcome: Outcome)``: the session is over.

One addon's crash is reported once on stderr and as an ``error`` event; the relay
goes on without that call's effect.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcptape.frames import Direction, Frame, opposite

HOOKS = ("session_start", "frame", "frame_done", "event", "session_end")


@dataclass
class SessionContext:
    """What addons know about the session being relayed."""

    session_id: str | None
    mode: str
    transport: str
    upstream: str
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """How a session ended."""

    status: str  # ok, error, interrupted
    exit_code: int | None = None
    error: str | None = None
    ended_by: str = "server"  # server, client, signal


@dataclass
class Flow:
    """One frame on its way through the relay, and what the addons decided about it."""

    frame: Frame
    injected: bool = False
    seq: int | None = None
    replies: list[Frame] = field(default_factory=list)
    replacement: Frame | None = None
    dropped: bool = False

    @property
    def decided(self) -> bool:
        return self.dropped or bool(self.replies)

    def reply(self, data: bytes) -> None:
        """Answer the frame: ``data`` goes back to its sender, as written by mcptape."""
        back: Direction = opposite(self.frame.direction)
        self.replies.append(Frame(data, back, origin="proxy"))

    def replace(self, data: bytes) -> None:
        """Forward ``data`` instead of the frame that arrived (both are recorded)."""
        self.replacement = Frame(data, self.frame.direction, origin="proxy")

    def drop(self) -> None:
        """Forward nothing."""
        self.dropped = True

    @property
    def outgoing(self) -> Frame | None:
        """The frame to forward, if any."""
        if self.decided:
            return None
        return self.replacement if self.replacement is not None else self.frame


Hook = Callable[..., Any]


class AddonManager:
    """Calls the addons' hooks in order, isolating their failures."""

    def __init__(self, addons: list[object]) -> None:
        self.addons = addons
        self._hooks: dict[str, list[tuple[object, Hook, bool]]] = {}
        for name in HOOKS:
            found = []
            for addon in addons:
                fn = getattr(addon, name, None)
                if callable(fn):
                    found.append((addon, fn, inspect.iscoroutinefunction(fn)))
            self._hooks[name] = found
        self._reported: set[tuple[int, str]] = set()
        self.on_error: Callable[[str], None] | None = None

    def has(self, hook: str) -> bool:
        return bool(self._hooks[hook])

    def _failed(self, addon: object, hook: str, exc: BaseException) -> None:
        key = (id(addon), hook)
        message = f"addon {type(addon).__name__}.{hook} failed: {type(exc).__name__}: {exc}"
        if key not in self._reported:
            self._reported.add(key)
            print(f"mcptape: {message}", file=sys.stderr)
        if self.on_error is not None and hook != "event":
            self.on_error(message)

    async def call(self, hook: str, *args: Any) -> None:
        for addon, fn, is_async in self._hooks[hook]:
            try:
                result = fn(*args)
                if is_async or inspect.isawaitable(result):
                    await result
            except Exception as exc:
                self._failed(addon, hook, exc)

    def decide_blocking(self, flow: Flow, loop: asyncio.AbstractEventLoop) -> None:
        """Run the ``frame`` hooks from a link's reader thread; async ones run on ``loop``."""
        for addon, fn, _ in self._hooks["frame"]:
            try:
                result = fn(flow)
                if result is not None:
                    _wait_on(loop, result)
            except Exception as exc:
                self._failed(addon, "frame", exc)
            if flow.decided:
                return

    def frame_done_blocking(self, flow: Flow, loop: asyncio.AbstractEventLoop) -> None:
        """Run the ``frame_done`` hooks from a link's reader thread.

        A hook that returns an awaitable (the recorder does when its writer is behind)
        is awaited on ``loop`` while this thread waits: that is the back-pressure.
        """
        for addon, fn, _ in self._hooks["frame_done"]:
            try:
                result = fn(flow)
                if result is not None:
                    _wait_on(loop, result)
            except Exception as exc:
                self._failed(addon, "frame_done", exc)

    async def frame_done(self, flow: Flow) -> None:
        """Run the ``frame_done`` hooks on the event loop (for frames mcptape writes itself)."""
        for addon, fn, _ in self._hooks["frame_done"]:
            try:
                result: Awaitable[Any] | None = fn(flow)
                if result is not None:
                    await result
            except Exception as exc:
                self._failed(addon, "frame_done", exc)

    def call_sync(self, hook: str, *args: Any) -> None:
        for addon, fn, _ in self._hooks[hook]:
            try:
                fn(*args)
            except Exception as exc:
                self._failed(addon, hook, exc)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _wait_on(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[Any]) -> Any:
    """Await ``awaitable`` on ``loop`` from another thread, blocking this one until it is done."""
    return asyncio.run_coroutine_threadsafe(_await(awaitable), loop).result()
