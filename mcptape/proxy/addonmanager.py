"""Addons: objects whose methods, named after hooks, the relay calls (mitmproxy's model, kept small).

The hooks are declared in :mod:`mcptape.proxy.hooks`. This module calls them:

- in order, each addon's crash reported once on stderr and as an ``error`` event,
  the relay going on without that call's effect;
- without ever blocking the event loop: :meth:`AddonManager.run_frame` runs the
  ``frame`` and ``frame_done`` hooks on the calling thread and, as soon as a hook
  returns an awaitable (an async addon, or the recorder's back-pressure), hands back
  an awaitable that finishes the flow on the loop. A reader thread blocks on it
  (:func:`mcptape.proxy.link.wait_from_thread`); a loop-side link awaits it.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from mcptape.proxy.flow import Flow
from mcptape.proxy.hooks import ALL_HOOKS, HOOKS, Hook, Outcome, SessionContext
from mcptape.terminal import say

__all__ = ["AddonError", "AddonManager", "Flow", "Outcome", "SessionContext"]


class AddonError(Exception):
    """An addon is malformed (a method that looks like a misspelled hook, an async sync-only hook)."""


HookFn = Callable[..., Any]
Prepare = Callable[[Flow], None]
_Stage = tuple[int, int]  # (0: frame hooks, 1: frame_done hooks; index of the next hook)


def _check_addon(addon: object) -> None:
    for name, member in inspect.getmembers(type(addon)):
        if name.startswith("_") or name in HOOKS or not callable(member):
            continue
        near = difflib.get_close_matches(name, HOOKS, n=1, cutoff=0.8)
        if near:
            raise AddonError(f"{type(addon).__name__}.{name} is not a hook: did you mean {near[0]!r}?")
    for hook in ALL_HOOKS:
        fn = getattr(addon, hook.name, None)
        if fn is not None and not hook.may_be_async and inspect.iscoroutinefunction(fn):
            raise AddonError(f"{type(addon).__name__}.{hook.name} must not be async")


class AddonManager:
    """Calls the addons' hooks in order, isolating their failures."""

    def __init__(self, addons: list[object]) -> None:
        for addon in addons:
            _check_addon(addon)
        self.addons = list(addons)
        self._hooks: dict[str, list[tuple[object, HookFn]]] = {name: [] for name in HOOKS}
        for addon in addons:
            for name in HOOKS:
                fn = getattr(addon, name, None)
                if callable(fn):
                    self._hooks[name].append((addon, fn))
        # The frame hooks of each phase, looked up once: run_frame runs for every frame.
        self._phases: tuple[tuple[str, list[tuple[object, HookFn]]], ...] = (
            ("frame", self._hooks["frame"]),
            ("frame_done", self._hooks["frame_done"]),
        )
        self._reported: set[tuple[int, str]] = set()
        self.on_error: Callable[[str], None] | None = None
        self._tasks: set[asyncio.Future[None]] = set()  # async hooks called from sync code, running

    def has(self, hook: str) -> bool:
        return bool(self._hooks[hook])

    def _failed(self, addon: object, hook: str, exc: BaseException) -> None:
        key = (id(addon), hook)
        message = f"addon {type(addon).__name__}.{hook} failed: {type(exc).__name__}: {exc}"
        if key not in self._reported:
            self._reported.add(key)
            say(message)
        if self.on_error is not None and hook != "event":
            self.on_error(message)

    # -- lifecycle hooks (on the loop) ------------------------------------------------

    async def call(self, event: Hook) -> None:
        """Call ``event``'s hook on every addon in order, awaiting the async ones."""
        hook, args = event.name, event.args()
        for addon, fn in self._hooks[hook]:
            try:
                result = fn(*args)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                self._failed(addon, hook, exc)

    def call_sync(self, event: Hook) -> None:
        """Call a sync-only hook (``event``) on every addon in order, on this thread."""
        hook, args = event.name, event.args()
        for addon, fn in self._hooks[hook]:
            try:
                fn(*args)
            except Exception as exc:
                self._failed(addon, hook, exc)

    def call_soon(self, event: Hook) -> None:
        """Call a lifecycle hook from code that cannot await it: an async hook runs on the loop."""
        hook, args = event.name, event.args()
        for addon, fn in self._hooks[hook]:
            try:
                result = fn(*args)
                if inspect.isawaitable(result):
                    task = asyncio.ensure_future(self._settle(addon, hook, result))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
            except Exception as exc:
                self._failed(addon, hook, exc)

    async def _settle(self, addon: object, hook: str, awaitable: Awaitable[Any]) -> None:
        try:
            await awaitable
        except Exception as exc:
            self._failed(addon, hook, exc)

    # -- frames (on any thread) ---------------------------------------------------------

    def run_frame(
        self, flow: Flow, *, decide: bool = True, prepare: Prepare | None = None
    ) -> Awaitable[None] | None:
        """Run ``frame`` (when ``decide``) then ``frame_done`` hooks; an awaitable if one must be waited on.

        ``prepare(flow)`` runs once between the two: the decision is made, the frame is not
        recorded yet (the relay lets the destination link say how the frame goes out).
        """
        # Without frame hooks nothing decides: start with the observers.
        step = self._step((0 if decide and self._phases[0][1] else 1, 0), flow, prepare)
        return None if step is None else self._finish(step, flow, prepare)

    def _step(
        self, stage: _Stage, flow: Flow, prepare: Prepare | None
    ) -> tuple[Awaitable[Any], _Stage, object, str] | None:
        """Run hooks synchronously from ``stage``; stop at the first that returns an awaitable."""
        phase, index = stage
        while phase < 2:
            if phase == 1 and index == 0 and prepare is not None:
                prepare(flow)
            hook, hooks = self._phases[phase]
            while index < len(hooks):
                if phase == 0 and flow.decided:
                    index = len(hooks)
                    break
                addon, fn = hooks[index]
                index += 1
                try:
                    result = fn(flow)
                except Exception as exc:
                    self._failed(addon, hook, exc)
                    continue
                if result is not None and inspect.isawaitable(result):
                    return result, (phase, index), addon, hook
            phase, index = phase + 1, 0
        return None

    async def _finish(
        self, step: tuple[Awaitable[Any], _Stage, object, str], flow: Flow, prepare: Prepare | None
    ) -> None:
        current: tuple[Awaitable[Any], _Stage, object, str] | None = step
        while current is not None:
            awaitable, stage, addon, hook = current
            try:
                await awaitable
            except Exception as exc:
                self._failed(addon, hook, exc)
            current = self._step(stage, flow, prepare)
