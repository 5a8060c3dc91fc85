"""Frames rows turned into what a person follows: exchanges as they complete, with the rest inline.

Pure: :class:`Pairer` takes frames (and events) rows in the order they were recorded
and gives :class:`FeedItem` values, the one vocabulary `mcptape tail` prints and the
viewer sends to its pages:

- ``exchange``: a client request with its reply, once the reply is there (the store
  paired them when it wrote them: a reply row's ``request_seq`` is its request's seq);
- ``server_request``: the same for a request the server sent (sampling, elicitation,
  roots, ping), with who answered it (``origin``: client, or proxy for a rule);
- ``notification``, and ``message`` for any other frame (a reply nobody asked for, a
  batch, a line that is not JSON-RPC);
- ``event``: a stderr line, a process start or exit, an error;
- ``unanswered``: a request still waiting when its session ended.

A request stays in memory until its reply comes; one whose reply arrives after the
reader started is looked up by the reader (``request_seq``) and handed in with the reply.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any, Final

from mcptape.wire.jsontext import loads_or_none
from mcptape.wire.summaries import compact, content_text, summarize_request, summarize_result

# Requests waiting for their replies, per reader: past this many, the oldest is forgotten
# (its reply then shows as a message of its own).
MAX_PENDING: Final = 50_000
# Frames larger than this are not parsed for a summary (a 64 MiB image result).
SUMMARY_MAX_BYTES: Final = 1 << 20
_DETAIL_MAX: Final = 300

# Statuses of an exchange.
OK: Final = "ok"
ERROR: Final = "error"  # a JSON-RPC error reply
TOOL_ERROR: Final = "tool error"  # a result with isError: true
UNANSWERED: Final = "unanswered"
INPUT_REQUIRED: Final = "input required"  # a 2026-07-28 round asking for input
FAILED_STATUSES: Final = frozenset({ERROR, TOOL_ERROR, UNANSWERED, "malformed"})

ITEM_TYPES: Final = ("exchange", "server_request", "notification", "message", "event", "unanswered")


@dataclass(slots=True)
class FrameRow:
    """A frames row as the feed reads it; ``text`` is None for a frame too large to summarise."""

    id: int
    session_id: str
    seq: int
    ts: float
    direction: str
    origin: str
    kind: str
    method: str | None
    rpc_id: str | None
    size: int
    request_seq: int | None
    text: str | None = None
    meta: str | None = None  # transport metadata (JSON), when the reader was asked for it

    def message(self) -> Any:
        return loads_or_none(self.text)

    def meta_value(self) -> Any:
        """The transport metadata, parsed (None without it)."""
        return loads_or_none(self.meta)


@dataclass(slots=True)
class EventRow:
    """An events row: a stderr line, a process start or exit, an error."""

    id: int
    session_id: str
    ts: float
    kind: str
    text: str | None
    data: str | None


@dataclass(slots=True)
class FeedItem:
    """One line of the feed. ``ts`` is when it completed (the reply, the event); ``started`` the request's time."""

    type: str
    session_id: str
    ts: float
    method: str | None = None
    subject: str | None = None  # the tool, prompt or resource a request is about
    rpc_id: str | None = None
    direction: str | None = None  # of the request (c2s: the client asked), or of the frame
    started: float | None = None
    duration_ms: float | None = None
    status: str = ""
    detail: str = ""  # a short summary: the error, the log line, the stderr line
    seq: int | None = None  # the frame's, or the request's for an exchange
    reply_seq: int | None = None
    origin: str | None = None  # who wrote the reply (or the frame)
    size: int | None = None  # bytes of the reply (or the frame)

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES or self.status.startswith(ERROR)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def subject_of(method: str | None, params: Any) -> str | None:
    """The tool, prompt or resource a request names (``tools/call`` → its tool name)."""
    if not isinstance(params, dict):
        return None
    value = params.get("name") if method in ("tools/call", "prompts/get") else params.get("uri")
    return value if isinstance(value, str) else None


def _params(message: Any) -> Any:
    return message.get("params") if isinstance(message, dict) else None


def _cut(text: str) -> str:
    return text if len(text) <= _DETAIL_MAX else text[: _DETAIL_MAX - 1] + "…"


def reply_status(reply: FrameRow, message: Any) -> tuple[str, str]:
    """An exchange's status and detail from its reply: ok, ``error CODE`` with its message,
    ``tool error``, ``input required``."""
    body = message if isinstance(message, dict) else {}
    if reply.kind == "error":
        found = body.get("error")
        error: dict[str, Any] = found if isinstance(found, dict) else {}
        code = error.get("code")
        return (f"{ERROR} {code}" if isinstance(code, int) else ERROR), _cut(str(error.get("message") or ""))
    result = body.get("result")
    if isinstance(result, dict):
        if result.get("isError") is True:
            return TOOL_ERROR, _cut(content_text(result.get("content")))
        if result.get("resultType") == "input_required":
            return INPUT_REQUIRED, _cut(compact(result.get("inputRequests")))
    if message is None:
        return OK, ""
    return OK, _cut(summarize_result(reply.method, None, result))


class Pairer:
    """Feeds frames and events through, gives the items they complete (see the module docstring)."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self._pending: OrderedDict[tuple[str, int], FrameRow] = OrderedDict()
        self._max_pending = max_pending

    def waiting_for(self, reply: FrameRow) -> bool:
        """Whether the request ``reply`` answers is held here (else the reader looks it up)."""
        return reply.request_seq is None or (reply.session_id, reply.request_seq) in self._pending

    def frame(self, row: FrameRow, request: FrameRow | None = None) -> FeedItem | None:
        """The item ``row`` completes (None for a request, which waits for its reply).

        ``request`` is the row of the request a reply answers when it is not held here
        (it was recorded before the reader started)."""
        if row.kind == "request" and row.rpc_id is not None:
            self._pending[(row.session_id, row.seq)] = row
            if len(self._pending) > self._max_pending:
                self._pending.popitem(last=False)
            return None
        message = row.message()
        if row.kind in ("response", "error") and row.request_seq is not None:
            held = self._pending.pop((row.session_id, row.request_seq), None) or request
            if held is not None:
                return self._exchange(held, row, message)
        if row.kind == "notification":
            return FeedItem(
                "notification", row.session_id, row.ts, row.method, direction=row.direction,
                detail=_cut(summarize_request(row.method, _params(message))) if message is not None else "",
                seq=row.seq, origin=row.origin, size=row.size,
            )  # fmt: skip
        return self._message(row, message)

    def event(self, row: EventRow) -> FeedItem:
        text = row.text if row.text is not None else (row.data or "")
        status = "error" if row.kind == "error" else ""
        return FeedItem("event", row.session_id, row.ts, row.kind, detail=_cut(text), status=status)

    def session_ended(self, session_id: str, ended_at: float | None) -> list[FeedItem]:
        """The requests of a session that ended without their replies, as ``unanswered`` items."""
        keys = [key for key in self._pending if key[0] == session_id]
        items = []
        for key in keys:
            request = self._pending.pop(key)
            params = _params(request.message())
            end = ended_at if ended_at is not None else request.ts
            item = FeedItem(
                "unanswered", session_id, end, request.method, subject_of(request.method, params),
                request.rpc_id, request.direction, request.ts, max(0.0, end - request.ts) * 1000,
                UNANSWERED, "the session ended before a reply", request.seq,
            )  # fmt: skip
            items.append(item)
        return items

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _exchange(self, request: FrameRow, reply: FrameRow, message: Any) -> FeedItem:
        status, detail = reply_status(reply, message)
        method = request.method or reply.method
        return FeedItem(
            "exchange" if request.direction == "c2s" else "server_request",
            reply.session_id, reply.ts, method, subject_of(method, _params(request.message())),
            request.rpc_id, request.direction, request.ts, max(0.0, reply.ts - request.ts) * 1000,
            status, detail, request.seq, reply.seq, reply.origin, reply.size,
        )  # fmt: skip

    def _message(self, row: FrameRow, message: Any) -> FeedItem:
        if row.kind == "malformed":
            status, detail = "malformed", _cut(repr((row.text or "")[:200]))
        elif row.kind == "batch":
            count = len(message) if isinstance(message, list) else 0
            status, detail = "", f"batch of {count}"
        elif row.kind in ("response", "error"):
            status, detail = reply_status(row, message)
            detail = _cut(f"a reply to no request seen: {detail}")
        else:
            status, detail = "", _cut(summarize_request(row.method, _params(message)))
        return FeedItem(
            "message", row.session_id, row.ts, row.method, rpc_id=row.rpc_id, direction=row.direction,
            status=status, detail=detail, seq=row.seq, origin=row.origin, size=row.size,
        )  # fmt: skip
