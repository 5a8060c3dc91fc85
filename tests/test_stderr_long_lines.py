"""A server's stderr line without a newline for a long time is passed on in pieces, not held.

A 300 MB stderr line used to be held whole by the line splitter and copied again for the
echo (671 MB resident for `record`). Past HOLD_LINE bytes a line is echoed as it arrives
and recorded by its head, with the size of what was cut.
"""

from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from mcptape.proxy.links import process
from mcptape.proxy.links.process import _Stderr


class Collect:
    """Stands in for our stderr's binary buffer: keeps what the echo thread writes."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.lock = threading.Lock()

    def write(self, data: bytes) -> int:
        with self.lock:
            self.data += data
        return len(data)

    def flush(self) -> None:
        pass

    def size(self) -> int:
        with self.lock:
            return len(self.data)


def wait_until(test: Any, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_long_stderr_line_is_echoed_as_it_arrives_and_recorded_by_its_head(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(process, "HOLD_LINE", 64 << 10)
    # The echo drops what a slow stderr cannot take (by design): on a loaded machine its
    # thread may fall behind the reader, and this test is about pieces, not drops.
    monkeypatch.setattr(process, "ECHO_QUEUE", 64 << 20)
    out = Collect()
    monkeypatch.setattr(process.sys, "stderr", SimpleNamespace(buffer=out))
    read_fd, write_fd = os.pipe()
    events: list[tuple[str, str | None, object]] = []
    reader = _Stderr(read_fd, echo=True)
    reader.attach(lambda kind, text, data: events.append((kind, text, data)))
    head = b"start " + b"y" * 100_000
    body = b"z" * (2 << 20)
    os.write(write_fd, b"before\n")
    os.write(write_fd, head)
    for i in range(0, len(body), 1 << 16):
        os.write(write_fd, body[i : i + (1 << 16)])
    # Most of the line is out before its end is written: it was not held for its newline.
    assert wait_until(lambda: out.size() >= len(b"before\n") + len(head) + len(body) - (128 << 10))
    os.write(write_fd, b" end\nafter\n")
    os.close(write_fd)
    assert reader.done.wait(10)
    assert wait_until(lambda: out.size() >= len(head) + len(body) + 17)
    time.sleep(0.05)  # the echo thread writes what it took last
    assert bytes(out.data) == b"before\n" + head + body + b" end\nafter\n"
    texts = [text for kind, text, _ in events if kind == "stderr"]
    assert texts[0] == "before" and texts[-1] == "after"
    [long] = texts[1:-1]
    cut = len(head) + len(body) + 4 - process.MAX_STDERR_LINE
    assert long.startswith("start yyy") and long.endswith(f" … [{cut} bytes cut]")
    assert len(long) < process.MAX_STDERR_LINE + 40
    assert reader.tail[0] == "before" and reader.tail[1].startswith("start y")
    os.close(read_fd)


def test_a_long_last_stderr_line_without_a_newline_is_recorded_when_the_stream_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(process, "HOLD_LINE", 1 << 10)
    read_fd, write_fd = os.pipe()
    events: list[tuple[str, str | None, object]] = []
    reader = _Stderr(read_fd, echo=False)
    reader.attach(lambda kind, text, data: events.append((kind, text, data)))
    os.write(write_fd, b"x" * 50_000)
    os.close(write_fd)
    assert reader.done.wait(10)
    [(kind, text, _)] = events
    assert kind == "stderr" and text is not None
    assert text.startswith("x" * process.MAX_STDERR_LINE)
    assert text.endswith(f" … [{50_000 - process.MAX_STDERR_LINE} bytes cut]")
    os.close(read_fd)
