"""Test helper: signal a running `mcptape` mid-burst, then look at what it left behind.

:class:`Signalled` starts mcptape with its stderr read line by line (so a test waits for
an observable point, such as a progress line, before it signals) and its stdout in a
file; :func:`child_pids` names the processes it started, to check none outlives it.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import INITIALIZE, INITIALIZED

WAIT_S = 60.0  # bounds on waiting for a line or an exit: a hang fails, never a slow machine


def child_pids(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def catching(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (its SigCgt mask)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def serve_fifo(fifo: Path, text: bytes, proc: subprocess.Popen[bytes]) -> None:
    """Give ``text`` to every open of ``fifo`` for reading, while ``proc`` runs."""
    while proc.poll() is None:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody is reading it yet
            time.sleep(0.005)
            continue
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
        time.sleep(0.05)  # the reader sees the end of the file before the next open


def echo_tape(path: Path, count: int) -> Path:
    """A JSONL recording (`mcptape export`'s format) of a handshake and ``count`` echo calls
    to server-everything, each answered as server-everything answers it."""
    lines = []

    def frame(direction: str, message: dict[str, Any]) -> None:
        lines.append(json.dumps({"dir": direction, "t": 0.0, "frame": json.dumps(message)}))

    frame("c2s", INITIALIZE)
    frame("s2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {}}})
    frame("c2s", INITIALIZED)
    for i in range(1, count + 1):
        call = {"name": "echo", "arguments": {"message": f"m{i}"}}
        frame("c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call})
        frame(
            "s2c",
            {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"Echo: m{i}"}]}},
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Signalled:
    """``mcptape ARGS...`` running, its stderr lines in a queue, its stdout in ``stdout_file``."""

    def __init__(self, *args: str, stdout_file: Path, stdin: int | IO[bytes] = subprocess.DEVNULL) -> None:
        self.stdout_file = stdout_file
        with open(stdout_file, "wb") as out:
            self.proc = subprocess.Popen(
                [*MCPTAPE, *args], stdin=stdin, stdout=out, stderr=subprocess.PIPE, env=dict(os.environ)
            )
        self.stderr: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._lines.put(raw.decode("utf-8", "replace"))
        self._lines.put(None)

    def wait_for(self, text: str) -> str:
        """The first stderr line (from here on) holding ``text``; fails if mcptape ends first."""
        while True:
            try:
                line = self._lines.get(timeout=WAIT_S)
            except queue.Empty:
                self.proc.kill()  # the test fails: nothing it started may outlive it
                raise AssertionError(f"mcptape never said {text!r}: {''.join(self.stderr)}") from None
            if line is None:
                raise AssertionError(f"mcptape ended before saying {text!r}: {''.join(self.stderr)}")
            self.stderr.append(line)
            if text in line:
                return line

    def finish(self) -> tuple[int, str]:
        """Its exit status and its whole stderr, once it has exited."""
        try:
            code = self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # it hangs: the test fails, and nothing it started may outlive it
            raise AssertionError(f"mcptape did not exit: {''.join(self.stderr)}") from None
        self._reader.join(timeout=WAIT_S)
        while True:
            line = self._lines.get_nowait() if not self._lines.empty() else None
            if line is None:
                break
            self.stderr.append(line)
        return code, "".join(self.stderr)

    def stdout(self) -> str:
        return self.stdout_file.read_text(encoding="utf-8")


class InTerminal:
    """``mcptape ARGS...`` on a pseudo-terminal of its own (as a TUI runs), its output read on a thread."""

    def __init__(self, *args: str, cwd: Path) -> None:
        import fcntl
        import pty
        import struct
        import termios

        self.pid, self._fd = pty.fork()
        if self.pid == 0:  # the child: become mcptape
            os.chdir(cwd)
            os.execve(MCPTAPE[0], [*MCPTAPE, *args], {**os.environ, "TERM": "xterm-256color"})
        fcntl.ioctl(
            self._fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 400, 0, 0)
        )  # 400x40: long paths fit
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            self.output += chunk

    def wait_for(self, text: bytes) -> None:
        """Until the screen has shown ``text`` (its escape sequences, which may split words, left out).

        Only for text drawn whole: a screen redrawn in place writes only what changed
        ("connecting" becoming "connected" may be the two letters "ed"); else :meth:`wait_until`.
        """
        import re

        self.wait_until(
            lambda: text in re.sub(rb"\x1b\[[0-9;?>$]*[a-zA-Z]", b"", bytes(self.output)),
            f"the terminal showing {text!r}",
        )

    def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        """Until ``condition()`` holds; ``what`` names it when it never does."""
        deadline = time.monotonic() + WAIT_S  # a bound on a hang, not a timing assertion
        while not condition():
            if time.monotonic() > deadline:
                os.kill(self.pid, 9)  # the test fails: nothing it started may outlive it
                raise AssertionError(f"never: {what}: {bytes(self.output[-600:])!r}")
            time.sleep(0.05)

    def finish(self) -> int:
        """Its exit status, as a shell gives it (128+N when killed by signal N)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(self.pid, 9)
                raise AssertionError("it did not exit")
            time.sleep(0.02)
        self._reader.join(WAIT_S)
        os.close(self._fd)
        return os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
