"""A flow: one frame on its way through the relay, and what the addons decided about it.

An addon's ``frame`` hook may let the frame pass, replace it, drop it, or answer it:

- ``flow.respond(result)`` / ``flow.respond_error(code, message, data)`` answer a
  request with its exact id: the answer goes back where the request came from and
  the request is not forwarded. For a batch, ``flow.respond(result, item=i)`` answers
  element ``i`` only; the rest of the batch is forwarded as a new batch (a proxy edit,
  recorded next to the original) and the answers go back as one batch response.
- ``flow.reply(data)`` sends back any bytes (a pre-built answer).
- ``flow.replace(data)`` forwards other bytes instead (both are recorded).
- ``flow.drop()`` forwards nothing.

The recorder records the frame that arrived, what was forwarded instead and what was
answered; a frame that was not forwarded carries ``meta["forwarded"] = False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptape.wire.frame import Frame, classify_batch, opposite
from mcptape.wire.jsonrpc import error_response, result_response
from mcptape.wire.jsontext import element_spans


@dataclass(slots=True)
class Flow:
    """One frame through the relay. ``injected``: mcptape wrote it (not a peer)."""

    frame: Frame
    injected: bool = False
    seq: int | None = None
    replies: list[Frame] = field(default_factory=list)
    replacement: Frame | None = None
    dropped: bool = False
    held: bool = False
    _item_answers: dict[int, bytes] = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        """Whether an addon answered, dropped or held the frame (later addons are not asked)."""
        return self.dropped or self.held or bool(self.replies)

    # -- decisions ----------------------------------------------------------------

    def reply(self, data: bytes) -> None:
        """Answer the frame with ``data``: it goes back to the sender, written by mcptape."""
        self.replies.append(Frame(data, opposite(self.frame.direction), origin="proxy"))

    def respond(self, result: Any, *, item: int | None = None) -> None:
        """Answer a request (or batch element ``item``) with a result carrying its exact id."""
        self._answer(lambda rid: result_response(rid, result), item)

    def respond_error(self, code: int, message: str, data: Any = None, *, item: int | None = None) -> None:
        """Answer a request (or batch element ``item``) with a JSON-RPC error carrying its exact id."""
        self._answer(lambda rid: error_response(rid, code, message, data), item)

    def _answer(self, build: Any, item: int | None) -> None:
        frame = self.frame
        if item is None:
            if frame.kind != "request" or frame.rpc_id is None:
                raise ValueError(f"only a request can be answered, not a {frame.kind}")
            self.reply(build(frame.rpc_id))
            return
        items = classify_batch(frame.data) if frame.kind == "batch" else []
        if not 0 <= item < len(items):
            raise ValueError(f"no batch element {item} to answer")
        c = items[item]
        if c.kind != "request" or c.rpc_id is None:
            raise ValueError(f"batch element {item} is a {c.kind}, not a request")
        self._item_answers[item] = build(c.rpc_id)
        # The rest of the batch goes on with each element's exact text (ids beyond 2**64 too).
        text = frame.data.decode("utf-8", errors="replace")
        spans = element_spans(text) or []
        rest = [text[a:b] for i, (a, b) in enumerate(spans) if i not in self._item_answers]
        if rest:
            self.replacement = Frame(("[" + ",".join(rest) + "]").encode(), frame.direction, origin="proxy")
        else:
            self.dropped = True
        self.replies = [
            Frame(b"[" + b",".join(self._item_answers.values()) + b"]", opposite(frame.direction), "proxy")
        ]

    def replace(self, data: bytes) -> None:
        """Forward ``data`` instead of the frame that arrived (both are recorded)."""
        self.replacement = Frame(data, self.frame.direction, origin="proxy")

    def drop(self) -> None:
        """Forward nothing."""
        self.dropped = True

    def hold(self) -> None:
        """Forward nothing now: the addon will send something itself later (``Relay.send``)."""
        self.held = True

    @property
    def outgoing(self) -> Frame | None:
        """The frame to forward, if any."""
        if self.dropped or self.held or (self.replies and not self._item_answers):
            return None
        return self.replacement if self.replacement is not None else self.frame
