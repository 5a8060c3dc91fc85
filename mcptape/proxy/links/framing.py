"""stdio framing: split a byte stream into lines on ``\\n`` only, with no small line limit.

asyncio's ``readline`` stops at 64 KiB by default, and MCP frames of many megabytes
(images, ``data:`` icons) are normal, so we split ourselves. Scanning resumes where
the previous search stopped, so a 20 MB line arriving in 64 KiB chunks costs linear
time, not quadratic.
"""

from __future__ import annotations


class LineSplitter:
    """Accumulates chunks and hands out complete lines (without their ``\\n``)."""

    __slots__ = ("_buf", "_scan")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scan = 0  # everything before this offset is known to hold no newline

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add a chunk; return the lines it completed, in order."""
        if not self._buf and b"\n" not in chunk:
            self._buf += chunk
            self._scan = len(self._buf)
            return []
        buf = self._buf
        buf += chunk
        lines: list[bytes] = []
        start = 0
        pos = buf.find(b"\n", self._scan)
        if pos >= 0:
            # Slicing a memoryview copies once; slicing the bytearray would copy twice.
            with memoryview(buf) as view:
                while pos >= 0:
                    lines.append(bytes(view[start:pos]))
                    start = pos + 1
                    pos = buf.find(b"\n", start)
        if start:
            del buf[:start]
        self._scan = len(buf)
        return lines

    def pending(self) -> int:
        """Bytes held that do not yet form a complete line."""
        return len(self._buf)

    def finish(self) -> bytes | None:
        """At end of stream: the trailing bytes that had no newline, if any."""
        if not self._buf:
            return None
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan = 0
        return rest
