"""HTTP/1.1 responses parsed incrementally, for the gateway's forwarding client (pure, no I/O).

:class:`ResponseParser` takes bytes as they arrive, in chunks of any size, and returns
the parts of the response they complete: its head once (status, reason, headers in
order, repeated ones kept), then body bytes as they come (chunked transfer coding
removed, nothing else touched: a compressed body stays compressed), then :data:`END`.
Interim 1xx heads are skipped. RFC 9112: the body is chunked, or ``Content-Length``
long, or (neither) runs until the server closes the connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MAX_HEAD: Final = 64 << 10
MAX_CHUNK_LINE: Final = 4096
END: Final = b""  # the part that says the body is complete (body parts are never empty)


class ResponseError(ValueError):
    """The upstream's answer is not HTTP/1.1 the parser can follow (one line, for a 502)."""


@dataclass(frozen=True)
class ResponseHead:
    """Status line and headers of a response, as the server sent them."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    keep_alive: bool

    def get(self, name: str, default: str = "") -> str:
        """The first value of header ``name`` (case-insensitive), else ``default``."""
        lower = name.lower()
        for key, value in self.headers:
            if key.lower() == lower:
                return value
        return default


def parse_head(raw: bytes) -> ResponseHead:
    """A response head (without its blank line) as a :class:`ResponseHead`; ResponseError if malformed."""
    # One decode for the whole head, then plain str work. UTF-8 as aiohttp reads (and writes)
    # header values, so a non-ASCII value crosses unchanged.
    lines = raw.decode("utf-8", "surrogateescape").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if version not in ("HTTP/1.1", "HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise ResponseError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    headers: list[tuple[str, str]] = []
    close = version == "HTTP/1.0"
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name[-1] in " \t" or name[0] in " \t":
            raise ResponseError(f"malformed header line: {line[:80]!r}")
        value = value.strip()
        headers.append((name, value))
        if len(name) == 10 and name.lower() == "connection":
            tokens = {t.strip().lower() for t in value.split(",")}
            close = "close" in tokens or (close and "keep-alive" not in tokens)
    return ResponseHead(int(code), reason, headers, not close)


class ResponseParser:
    """One response at a time on a connection: feed bytes, get back head, body bytes, END."""

    def __init__(self, *, head_request: bool = False) -> None:
        self.head_request = head_request
        self.head: ResponseHead | None = None
        self.done = False
        self.until_close = False  # the body ends when the connection does
        self._buf = bytearray()
        self._left = 0  # bytes of the current chunk or of a Content-Length body still due
        self._chunked = False
        self._state = "head"  # head, length, size, data, crlf, trailer, done

    def feed(self, data: bytes) -> list[ResponseHead | bytes]:
        """The parts ``data`` completes, in order; ResponseError for a malformed response."""
        parts: list[ResponseHead | bytes] = []
        if self._state == "length" and not self._buf:
            # The common case of a body that arrives in one piece: no copy.
            return self._length(data, parts)
        self._buf += data
        while not self.done:
            if not self._step(parts):
                break
        return parts

    def eof(self) -> list[ResponseHead | bytes]:
        """The server closed the connection: END if that completes the response, else ResponseError."""
        if self.done:
            return []
        if self.until_close:
            self.done = True
            return [END]
        where = "before its head" if self.head is None else "in the middle of the body"
        raise ResponseError(f"the upstream closed the connection {where}")

    def _length(
        self, data: bytes | bytearray, parts: list[ResponseHead | bytes]
    ) -> list[ResponseHead | bytes]:
        if self.until_close:
            if data:
                parts.append(bytes(data))
            return parts
        take = data[: self._left]
        self._left -= len(take)
        if take:
            parts.append(bytes(take))
        if self._left == 0:
            self._finish(parts)
            if len(data) > len(take):
                raise ResponseError("the upstream sent bytes after the end of its response")
        return parts

    def _finish(self, parts: list[ResponseHead | bytes]) -> None:
        self.done = True
        self._state = "done"
        parts.append(END)

    def _step(self, parts: list[ResponseHead | bytes]) -> bool:
        buf = self._buf
        state = self._state
        if state == "head":
            end = buf.find(b"\r\n\r\n")
            if end == -1:
                if len(buf) > MAX_HEAD:
                    raise ResponseError(f"the upstream's response head is larger than {MAX_HEAD} bytes")
                return False
            head = parse_head(bytes(buf[:end]))
            del buf[: end + 4]
            if 100 <= head.status < 200 and head.status != 101:
                return True  # an interim answer (100 Continue, 103 Early Hints): the real one follows
            self.head = head
            parts.append(head)
            self._body_mode(head, parts)
            return not self.done
        if state == "length":
            data = bytes(buf)
            buf.clear()
            self._length(data, parts)
            return False
        if state == "size":
            end = buf.find(b"\r\n")
            if end == -1:
                if len(buf) > MAX_CHUNK_LINE:
                    raise ResponseError("a chunk size line is too long")
                return False
            size_text = bytes(buf[:end]).split(b";", 1)[0].strip()
            try:
                self._left = int(size_text, 16)
            except ValueError:
                raise ResponseError(f"bad chunk size {size_text[:20]!r}") from None
            del buf[: end + 2]
            self._state = "data" if self._left else "trailer"
            return True
        if state == "data":
            if not buf:
                return False
            take = bytes(buf[: self._left])
            del buf[: len(take)]
            self._left -= len(take)
            parts.append(take)
            if self._left == 0:
                self._state = "crlf"
            return True
        if state == "crlf":
            if len(buf) < 2:
                return False
            if buf[:2] != b"\r\n":
                raise ResponseError("a chunk is not followed by CRLF")
            del buf[:2]
            self._state = "size"
            return True
        # trailer: header lines until a blank one (trailers are dropped, as a proxy may)
        end = buf.find(b"\r\n")
        if end == -1:
            if len(buf) > MAX_HEAD:
                raise ResponseError("the upstream's trailer is too large")
            return False
        del buf[: end + 2]
        if end == 0:
            if buf:
                raise ResponseError("the upstream sent bytes after the end of its response")
            self._finish(parts)
            return False
        return True

    def _body_mode(self, head: ResponseHead, parts: list[ResponseHead | bytes]) -> None:
        if self.head_request or head.status in (204, 304) or head.status == 101:
            self._finish(parts)
            return
        coding = head.get("Transfer-Encoding").lower()
        if coding:
            if coding.rsplit(",", 1)[-1].strip() != "chunked":
                # RFC 9112 §6.3: the body then runs until the connection closes.
                self.until_close = True
                self._state = "length"
                return
            self._chunked = True
            self._state = "size"
            return
        length = head.get("Content-Length")
        if length:
            values = {v.strip() for v in length.split(",")}
            if len(values) != 1 or not next(iter(values)).isdigit():
                raise ResponseError(f"bad Content-Length {length[:40]!r}")
            self._left = int(values.pop())
            self._state = "length"
            if self._left == 0:
                self._finish(parts)
            return
        self.until_close = True
        self._state = "length"
