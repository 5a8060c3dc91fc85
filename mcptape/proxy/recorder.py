"""The recorder addon: every frame and event of a session into the store, without blocking forwarding."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from mcptape.proxy.addons import Flow, Outcome, SessionContext
from mcptape.proxy.handshake import HELLO_METHODS, client_hello, server_hello

if TYPE_CHECKING:
    from mcptape.store import Writer


LOOKS = 16


class Recorder:
    """Queues frames and events to the store's writer; applies back-pressure when it falls behind."""

    def __init__(self, writer: Writer, session_id: str) -> None:
        self.writer = writer
        self.session_id = session_id
        self.seq = 0
        # Both links' reader threads record: sequence numbers must follow queue order.
        self._lock = threading.Lock()
        # Handshake learning: ids of hello requests awaiting their result; stop once complete.
        self._hello_ids: dict[str, str] = {}
        self._client_known = False
        self._server_known = False
        # Identity arrives in the first exchanges; give up looking after a few frames so a
        # peer that never says who it is costs nothing later.
        self._looks_left = LOOKS

    def frame_done(self, flow: Flow) -> Awaitable[Any] | None:
        frame = flow.frame
        with self._lock:
            self.seq += 1
            flow.seq = self.seq
            self.writer.add_frame(self.session_id, self.seq, frame)
            if flow.replacement is not None:
                self.seq += 1
                replacement = flow.replacement
                replacement.meta = {**(replacement.meta or {}), "replaces": flow.seq}
                self.writer.add_frame(self.session_id, self.seq, replacement)
            if not (self._client_known and self._server_known):
                if self._looks_left:
                    self._looks_left -= 1
                    self._learn(flow)
                elif self._hello_ids or frame.method in HELLO_METHODS:
                    self._learn(flow)
        if self.writer.over_limit:
            return self.writer.drain()
        return None

    def _learn(self, flow: Flow) -> None:
        frame = flow.frame
        kind = frame.kind
        if frame.direction == "c2s" and kind == "request" and not flow.injected:
            if frame.method in HELLO_METHODS and frame.rpc_id is not None:
                self._hello_ids[frame.rpc_id] = frame.method or ""
            if not self._client_known:
                fields = client_hello(frame.message)
                if fields:
                    self._client_known = "client_name" in fields
                    self.writer.update_session(self.session_id, **fields)
        elif frame.direction == "s2c" and kind == "response" and not flow.injected:
            method = self._hello_ids.pop(frame.rpc_id or "", None)
            fields = server_hello(frame.message, method)
            if fields:
                self._server_known = "server_name" in fields
                self.writer.update_session(self.session_id, **fields)

    def event(self, session: SessionContext, kind: str, text: str | None, data: object) -> None:
        self.writer.add_event(self.session_id, kind, text, data)

    def session_end(self, session: SessionContext, outcome: Outcome) -> None:
        self.writer.update_session(
            self.session_id,
            ended_at=time.time(),
            status=outcome.status,
            exit_code=outcome.exit_code,
            error=outcome.error,
        )
        self.writer.flush()
