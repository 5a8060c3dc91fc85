"""Server-sent events: an incremental parser and an encoder (pure, no I/O).

The parser takes bytes as they arrive from the network, in chunks of any size, and
returns each complete event as soon as its terminating blank line is seen, so a stream
is relayed event by event and never buffered whole (the WHATWG event-stream format:
``event:``, ``data:`` (joined by newlines), ``id:``, ``retry:``, comments starting
with ``:``; lines end in CRLF, LF or CR).
"""

from __future__ import annotations

from dataclasses import dataclass

# One event's data, at most: frames of many megabytes are normal, but a peer that never
# ends a line or an event must not make the parser hold all it sends (as the gateway
# bounds a request body).
MAX_EVENT_BYTES = 256 << 20


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event. ``event`` defaults to ``"message"``; ``id`` is None when absent."""

    data: bytes
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SseParser:
    """Feed bytes with :meth:`feed`; complete events come back in order."""

    def __init__(self, max_event_bytes: int | None = -1) -> None:
        """``max_event_bytes``: None for no limit; by default :data:`MAX_EVENT_BYTES`."""
        self._buf = bytearray()
        self._scanned = 0  # the start of _buf holds no line end this far: not searched again
        self._data: list[bytes] = []
        self._size = 0
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._pending_cr = False
        self.max_event_bytes = MAX_EVENT_BYTES if max_event_bytes == -1 else max_event_bytes
        self.last_event_id: str | None = None
        """The ``id:`` of the last event that arrived whole (what a reconnect sends as ``Last-Event-ID``)."""

    def reset(self) -> None:
        """A new connection goes on from here: what the last one left unfinished (a line, an
        event without its blank line) is dropped, as WHATWG says; ``last_event_id`` stays."""
        self._buf = bytearray()
        self._scanned = 0
        self._data, self._size, self._event, self._id, self._retry = [], 0, "", None, None
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse a chunk; returns the events it completed (possibly none)."""
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split between two chunks
        self._pending_cr = False
        self._buf += chunk
        events: list[SseEvent] = []
        start = 0
        buf = self._buf
        n = len(buf)
        # A long line arrives in many chunks: searching it again from its start for each
        # one made parsing quadratic (a 32 MB event took a second, 256 MB over a minute).
        scan = self._scanned
        while start < n:
            lf = buf.find(b"\n", max(start, scan))
            cr = buf.find(b"\r", max(start, scan), lf if lf != -1 else n)
            scan = 0
            if cr != -1:
                end, nxt = cr, cr + 1
                if nxt < n and buf[nxt] == 0x0A:
                    nxt += 1
                elif nxt == n:
                    self._pending_cr = True
            elif lf != -1:
                end, nxt = lf, lf + 1
            else:
                break
            event = self._line(bytes(buf[start:end]))
            if event is not None:
                events.append(event)
            start = nxt
        del buf[:start]
        self._scanned = len(buf)
        if self.max_event_bytes is not None and self._size + len(buf) > self.max_event_bytes:
            raise ValueError(f"an SSE event is larger than {self.max_event_bytes} bytes")
        return events

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            self._size += len(value)
            if self.max_event_bytes is not None and self._size > self.max_event_bytes:
                raise ValueError(f"an SSE event is larger than {self.max_event_bytes} bytes")
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event, eid, retry = self._data, self._event, self._id, self._retry
        self._data, self._size, self._event, self._retry = [], 0, "", None
        self._id = None
        if eid is not None:
            # Only an event that arrived whole moves it (WHATWG: set on dispatch): resuming
            # after a half-sent event's id would have the server skip that event.
            self.last_event_id = eid
        if not data:
            # An id-only event still moves the resumption point; nothing to deliver.
            return (
                SseEvent(b"", event or "message", eid, retry)
                if (eid is not None or retry is not None)
                else None
            )
        return SseEvent(b"\n".join(data), event or "message", eid, retry)


def encode_event(data: bytes, *, event: str | None = None, id: str | None = None) -> bytes:
    """One SSE event as bytes. A JSON frame has no raw newlines, but any are split into data lines."""
    out = bytearray()
    if id is not None:
        out += b"id: " + id.encode() + b"\n"
    if event is not None:
        out += b"event: " + event.encode() + b"\n"
    for line in data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"):
        out += b"data: " + line + b"\n"
    out += b"\n"
    return bytes(out)
