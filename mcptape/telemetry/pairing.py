"""A live session's frames paired into operations: each request with its answer, by (direction, id).

Runs on the exporter's thread (:mod:`mcptape.telemetry.sink`), never on the relay's:
the addon hands over each frame with the facts the relay already classified (kind,
method, id), and this reads the rest. A request id is unique per direction, so a
request travelling ``c2s`` is answered by the ``s2c`` reply with the same id (compared
with :func:`mcptape.wire.ids.id_key`, so ``1`` and ``1.0`` meet). A batch is paired
element by element. A request cancelled by ``notifications/cancelled`` ends there; one
the session ends without answering ends with the session.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcptape.proxy.addonmanager import SessionContext
from mcptape.telemetry.conventions import Operation, SessionFacts, begin, role_of
from mcptape.telemetry.facts import reply_facts, request_facts, slim
from mcptape.wire.frame import KEEP_PARSED_BYTES, Frame, classify_batch, opposite
from mcptape.wire.ids import encode_id, id_key
from mcptape.wire.protocol import CANCELLED, INITIALIZE

MAX_PENDING = 100_000  # requests awaiting an answer kept per session; beyond, the oldest end unanswered
# Operations held until the recording's id is known (its spans' mcp.session.id): the store
# opens in the background, after the first exchanges are done.
HOLD_OPS = 4096
HOLD_SECONDS = 5.0


def _header(meta: dict[str, Any] | None, name: str) -> str | None:
    """A header recorded in a frame's metadata (any case; the frame's own, else a hop's)."""
    if not isinstance(meta, dict):
        return None
    for holder in (meta, meta.get("upstream"), meta.get("downstream")):
        headers = holder.get("headers") if isinstance(holder, dict) else None
        if isinstance(headers, dict):
            for key, value in headers.items():
                if isinstance(key, str) and key.lower() == name and isinstance(value, str):
                    return value
    return None


class Pairing:
    """Pairs one session's frames into :class:`Operation` s (one thread only)."""

    def __init__(
        self,
        session: SessionFacts,
        recording_id: Callable[[], str | None] | None = None,
        context: SessionContext | None = None,
    ) -> None:
        self.session = session
        self._recording_id = recording_id
        # The live session: an upstream may settle its transport at run time (``auto``).
        self._context = context
        self.pending: dict[tuple[str, str], Operation] = {}
        self.ended = False
        self._held: list[Operation] = []
        self._held_since: float | None = None

    def _learn(self, meta: Any) -> None:
        session = self.session
        if self._context is not None:
            session.transport = self._context.transport
        if session.recording_id is None and self._recording_id is not None:
            session.recording_id = self._recording_id()
        if meta is None:
            return
        if session.mcp_session_id is None:
            session.mcp_session_id = _header(meta, "mcp-session-id")
        if session.protocol_version is None:
            session.protocol_version = _header(meta, "mcp-protocol-version")

    def frame(
        self,
        frame: Frame | None,
        kind: str,
        direction: str,
        method: str | None,
        rpc_id: str | None,
        ts: float,
        origin: str,
    ) -> list[Operation]:
        """The operations a frame completes. ``frame`` None: its bytes were not kept (too
        much was waiting), so only what the relay had classified is known."""
        if frame is None:
            return self.seen(None, None, None, kind, direction, method, rpc_id, ts, origin)
        msg: Any = None
        if kind != "malformed":
            msg = frame.message if frame.size <= KEEP_PARSED_BYTES else slim(frame.data)
        return self.seen(frame.data, msg, frame.meta, kind, direction, method, rpc_id, ts, origin)

    def seen(
        self,
        data: bytes | None,
        msg: Any,
        meta: dict[str, Any] | None,
        kind: str,
        direction: str,
        method: str | None,
        rpc_id: str | None,
        ts: float,
        origin: str,
    ) -> list[Operation]:
        """:meth:`frame` given the frame's bytes and its parsed (or slimmed) value: the
        operations it completes."""
        self._learn(meta)
        if kind == "batch":
            if data is None or not isinstance(msg, list) or len(data) > KEEP_PARSED_BYTES:
                return []
            done: list[Operation] = []
            for item, c in zip(msg, classify_batch(data), strict=False):
                done.extend(self._one(item, c.kind, direction, c.method, c.rpc_id, ts, origin))
            return done
        return self._one(msg, kind, direction, method, rpc_id, ts, origin)

    def _one(
        self,
        msg: Any,
        kind: str,
        direction: str,
        method: str | None,
        rpc_id: str | None,
        ts: float,
        origin: str,
    ) -> list[Operation]:
        session = self.session
        if kind in ("request", "notification") and method is not None:
            facts = request_facts(msg)
            if facts.protocol_version and (session.protocol_version is None or method == INITIALIZE):
                session.protocol_version = facts.protocol_version
            is_request = kind == "request"
            op = begin(
                method,
                direction,
                ts,
                facts,
                session,
                rpc_id=rpc_id if is_request else None,
                notification=not is_request,
            )
            if kind == "notification":
                done = [op]
                if method == CANCELLED and isinstance(facts.cancels, (str, int)):
                    cancelled = self.pending.pop((direction, id_key(encode_id(facts.cancels))), None)
                    if cancelled is not None:
                        cancelled.end, cancelled.error_type = ts, "cancelled"
                        done.insert(0, cancelled)
                return done
            if rpc_id is None:
                return []
            done = []
            if len(self.pending) >= MAX_PENDING:
                done.append(self._unanswered(self.pending.pop(next(iter(self.pending))), ts))
            self.pending[(direction, id_key(rpc_id))] = op
            return done
        if kind in ("response", "error") and rpc_id is not None:
            op = self.pending.pop((opposite(direction), id_key(rpc_id)), None)  # type: ignore[arg-type]
            if op is None:
                return []  # an answer to a request mcptape did not see (or already ended)
            reply = reply_facts(msg, op.method)
            if kind == "error" and reply.error_type is None:
                reply.error_type = "_OTHER"
            if reply.protocol_version:
                session.protocol_version = reply.protocol_version
            op.end = max(ts, op.start)
            op.answered_by = origin
            op.role = role_of(session.mode, op.direction, origin)
            op.error_type, op.error_code, op.error_message = reply.error_type, reply.code, reply.message
            return [op]
        return []

    @staticmethod
    def _unanswered(op: Operation, ts: float) -> Operation:
        op.end, op.error_type = max(ts, op.start), "no_response"
        return op

    def end(self, ts: float) -> list[Operation]:
        """The session is over: every request still waiting ends unanswered."""
        self.ended = True
        self._learn(None)
        done = [self._unanswered(op, ts) for op in self.pending.values()]
        self.pending.clear()
        return self.ready(done, time.monotonic())

    @property
    def holding(self) -> bool:
        """Whether operations wait for the recording's id (ask :meth:`ready` again later)."""
        return bool(self._held)

    def ready(self, ops: list[Operation], now: float) -> list[Operation]:
        """The operations to export now: while the recording's id is not known yet (its
        store is opening), they wait, for at most :data:`HOLD_SECONDS` or :data:`HOLD_OPS`."""
        if self._held and not ops:
            self._learn(None)
        if self._recording_id is None or self.session.recording_id is not None or self.ended:
            if self._held:
                ops, self._held = self._held + ops, []
            return ops
        if ops:
            if self._held_since is None:
                self._held_since = now
            self._held.extend(ops)
        if len(self._held) >= HOLD_OPS or (
            self._held_since is not None and now - self._held_since >= HOLD_SECONDS
        ):
            self._recording_id = None  # not coming: stop waiting for it
            ops, self._held = self._held, []
            return ops
        return []
