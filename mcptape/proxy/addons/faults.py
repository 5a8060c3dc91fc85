"""The faults addon: mcptape disturbs chosen frames on purpose (fault rules), and records what it did.

Which frames and how is :mod:`mcptape.rules.faults` (pure); this addon applies a rule
that fired with the relay's own means only:

- ``drop``: ``flow.drop()``; ``error:CODE``: ``flow.respond_error(...)`` (the answer
  goes back with the request's exact id, recorded with origin ``proxy``);
  ``malformed``: ``flow.replace(...)`` with the frame's text cut in the middle;
- ``timeout``: ``flow.hold()`` and nothing more: the request is never forwarded nor
  answered, so the sender's own timeout is what fires;
- ``delay:MS``: ``flow.hold()``, then :meth:`Relay.send` of the same bytes MS later;
- ``duplicate``: the frame passes, and :meth:`Relay.send` sends it once more (the link
  that delivered it waits for that, so both leave before the next frame);
- ``reorder``: the frame is held until the next frame going the same way arrives; that
  one is held too and the addon sends both, swapped (:meth:`Relay.send`), while the link
  that delivered it waits: nothing else overtakes them. With nothing following within
  :data:`REORDER_WAIT_S`, the held frame goes alone, late;
- ``cut``: the frame is dropped and :meth:`Relay.cut` cuts the client's connection
  where it would have gone (stdio: the pipe; streamable HTTP: its SSE stream).

Frames mcptape sends late carry their own bytes: a peer sees the same text. Every fault
is recorded beside the frame it touched: the frame's ``meta`` says ``"fault"`` (rule and
action), an event of kind ``fault`` names the frame's ``seq``, and what mcptape sent in
a peer's place is recorded with origin ``proxy`` and the same ``meta``. The session's
first event (``faults``) lists the rules with their seeds, so a run can be repeated.

A response is matched by the method (and tool) of the request it answers: the addon
remembers each request in flight, by direction and id, until it is answered.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Final

from mcptape.proxy.addonmanager import Flow, Outcome, SessionContext
from mcptape.proxy.link import LinkClosed
from mcptape.rules.faults import Fault, FaultSet
from mcptape.wire.frame import Frame, id_key, opposite
from mcptape.wire.protocol import TOOLS_CALL

if TYPE_CHECKING:
    from mcptape.proxy.relay import Relay

REORDER_WAIT_S: Final = 1.0  # a held frame nothing follows goes alone after this long
MAX_IN_FLIGHT: Final = 10_000  # requests remembered per direction (a peer that never answers)
FAULT_MESSAGE: Final = "mcptape fault injection: error {code} answered in the {peer}'s place"


class Faults:
    """Applies fault rules to the frames of a session; see the module docstring."""

    def __init__(self, faults: FaultSet) -> None:
        self.faults = faults
        self.relay: Relay | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        # requests in flight: (direction, id key) -> (method, tool name)
        self._requests: dict[tuple[str, str], tuple[str, str | None]] = {}
        # id(flow) -> the fault, the frame's role in it, and (reorder) the frame it overtakes
        self._touched: dict[int, tuple[Fault, str, Frame | None]] = {}
        self._reordered: dict[str, tuple[Frame, Fault]] = {}  # direction -> frame waiting to be overtaken
        self._tasks: set[concurrent.futures.Future[None]] = set()

    def use_relay(self, relay: Relay) -> None:
        """Give the relay that carries the session (frames sent late, cuts)."""
        self.relay = relay

    # -- hooks ---------------------------------------------------------------------

    def session_start(self, session: SessionContext) -> None:
        self._loop = asyncio.get_running_loop()
        if self.relay is not None:
            rules = [rule.describe() for rule in self.faults.rules]
            specs = "; ".join(rule.spec for rule in self.faults.rules)
            self.relay.emit("faults", f"fault rules: {specs}", {"rules": rules})

    async def session_end(self, session: SessionContext, outcome: Outcome) -> None:
        for task in list(self._tasks):
            task.cancel()

    def frame(self, flow: Flow) -> None:
        frame = flow.frame
        direction = frame.direction
        if self._reordered and direction in self._reordered:
            with self._lock:
                held = self._reordered.pop(direction, None)
            if held is not None:
                self._overtake(flow, *held)
                return
        method, tool = self._about(frame)
        if method is None:
            return
        fault = self.faults.pick(direction, frame.kind, method, tool)
        if fault is None:
            return
        self._apply(flow, fault)

    def frame_done(self, flow: Flow) -> Coroutine[Any, Any, None] | None:
        if not self._touched:
            return None
        with self._lock:
            touched = self._touched.pop(id(flow), None)
        if touched is None:
            return None
        fault, role, overtaken = touched
        frame = flow.frame
        self._record(flow, fault, role)
        action = fault.rule.action
        if role == "overtakes":
            assert overtaken is not None
            # Recorded first (this hook runs after the recorder's), then both go out, swapped,
            # while the link that delivered this frame waits: what follows comes after them.
            return self._send_in_order(self._copy(flow, fault), overtaken)
        if action == "duplicate":
            return self._send_in_order(self._copy(flow, fault))
        if action == "delay":
            assert fault.rule.arg is not None
            self._later(self._send_late(self._copy(flow, fault), fault.rule.arg / 1000))
        elif action == "reorder":
            assert overtaken is not None  # here: the frame held until another overtakes it
            if overtaken.meta is not None:
                overtaken.meta["fault"]["of"] = flow.seq
            self._later(self._reorder_timeout(overtaken))
        elif action == "cut" and self.relay is not None:
            self.relay.cut(frame)
        return None

    # -- what a frame is about -------------------------------------------------------------

    def _about(self, frame: Frame) -> tuple[str | None, str | None]:
        """The method and tool a frame is about: its own, or (a response) its request's."""
        kind = frame.kind
        if kind == "notification":
            return frame.method, None
        if kind == "request" and frame.rpc_id is not None:
            tool = _tool_name(frame) if frame.method == TOOLS_CALL else None
            with self._lock:
                if len(self._requests) < MAX_IN_FLIGHT:
                    self._requests[(frame.direction, id_key(frame.rpc_id))] = (frame.method or "", tool)
            return frame.method, tool
        if kind in ("response", "error") and frame.rpc_id is not None:
            with self._lock:
                found = self._requests.pop((opposite(frame.direction), id_key(frame.rpc_id)), None)
            return found if found is not None else (None, None)
        return None, None

    # -- applying a fault -------------------------------------------------------------------

    def _apply(self, flow: Flow, fault: Fault) -> None:
        rule = fault.rule
        action = rule.action
        frame = flow.frame
        frame.meta = {**(frame.meta or {}), "fault": _meta(fault)}
        if action == "drop" or action == "cut":
            flow.drop()
        elif action == "error":
            assert rule.arg is not None
            peer = "server" if frame.direction == "c2s" else "client"
            flow.respond_error(rule.arg, FAULT_MESSAGE.format(code=rule.arg, peer=peer), {"fault": rule.spec})
            for reply in flow.replies:
                reply.meta = {**(reply.meta or {}), "fault": _meta(fault)}
        elif action in ("timeout", "delay"):
            flow.hold()
        elif action == "malformed":
            out = flow.replacement.data if flow.replacement is not None else frame.data
            flow.replace(malformed(out))
            assert flow.replacement is not None
            flow.replacement.meta = {"fault": _meta(fault)}
        late = None
        if action == "reorder":
            flow.hold()
            late = Frame(_outgoing(flow), frame.direction, meta={"fault": _meta(fault)})
            with self._lock:
                self._reordered[frame.direction] = (late, fault)
        with self._lock:
            self._touched[id(flow)] = (fault, action, late)

    def _overtake(self, flow: Flow, held: Frame, fault: Fault) -> None:
        """The frame after a reordered one: held too; both go out swapped once it is recorded."""
        frame = flow.frame
        frame.meta = {**(frame.meta or {}), "fault": {**_meta(fault), "role": "overtakes"}}
        flow.hold()
        with self._lock:
            self._touched[id(flow)] = (fault, "overtakes", held)

    def _record(self, flow: Flow, fault: Fault, role: str) -> None:
        """The event beside the frame: which rule did what to which frame (its seq)."""
        if self.relay is None:
            return
        frame = flow.frame
        rule = fault.rule
        about = frame.method or ""
        what = {
            "delay": f"sent {rule.arg} ms late",
            "drop": "dropped",
            "duplicate": "sent twice",
            "error": f"answered with error {rule.arg} in the peer's place",
            "timeout": "held: never forwarded nor answered",
            "cut": "dropped, and the client's connection cut there",
            "malformed": "replaced by a malformed frame",
            "reorder": "held until the next frame overtakes it",
            "overtakes": "held, to be sent before the frame it overtakes",
        }[role]
        seq = f"#{flow.seq} " if flow.seq is not None else ""
        text = f"fault {rule.label}: {seq}{frame.direction} {frame.kind} {about} {what}".replace("  ", " ")
        data = {
            "seq": flow.seq,
            "action": rule.label,
            "role": role,
            "rule": rule.spec,
            "rule_index": fault.index,
            "draw": fault.draw,
            "direction": frame.direction,
            "kind": frame.kind,
            "rpc_id": frame.rpc_id,
        }
        self.relay.emit("fault", text, data)

    # -- frames sent later --------------------------------------------------------------------

    def _copy(self, flow: Flow, fault: Fault) -> Frame:
        return Frame(_outgoing(flow), flow.frame.direction, meta={"fault": {**_meta(fault), "of": flow.seq}})

    def _later(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run ``coroutine`` on the session's loop (from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            coroutine.close()
            return
        try:
            task = asyncio.run_coroutine_threadsafe(coroutine, loop)
        except RuntimeError:
            coroutine.close()
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_late(self, frame: Frame, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._send(frame)

    async def _send_in_order(self, *frames: Frame) -> None:
        for frame in frames:
            await self._send(frame)

    async def _reorder_timeout(self, held: Frame) -> None:
        await asyncio.sleep(REORDER_WAIT_S)
        with self._lock:
            waiting = self._reordered.get(held.direction)
            still = waiting is not None and waiting[0] is held
            if still:
                del self._reordered[held.direction]
        if still:
            await self._send(held)

    async def _send(self, frame: Frame) -> None:
        if self.relay is None:
            return
        frame.ts = time.time()  # recorded when it goes out, not when the fault held it
        with contextlib.suppress(LinkClosed, ConnectionError):
            await self.relay.send(frame)


def malformed(data: bytes) -> bytes:
    """``data`` cut in the middle: not JSON any more, and still one line (a frame is never split)."""
    cut = data[: max(1, len(data) // 2)].replace(b"\n", b" ").replace(b"\r", b" ")
    return cut if cut != data else b"{"


def _outgoing(flow: Flow) -> bytes:
    """What the flow would have forwarded (an earlier addon's edit included)."""
    return flow.replacement.data if flow.replacement is not None else flow.frame.data


def _meta(fault: Fault) -> dict[str, Any]:
    return {"rule": fault.rule.spec, "action": fault.rule.label, "draw": fault.draw}


def _tool_name(frame: Frame) -> str | None:
    message = frame.message
    params = message.get("params") if isinstance(message, dict) else None
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None
