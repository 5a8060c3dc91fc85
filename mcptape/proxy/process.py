"""The server-facing stdio link: a spawned process, its stderr, its exit and its shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from mcptape.proxy.framing import LineSplitter
from mcptape.proxy.links import READ_CHUNK, FdLink

STDERR_TAIL = 20
POLL_S = 0.01


class SpawnError(Exception):
    """The upstream command could not be started (not found, not executable, bad cwd)."""


def describe_status(returncode: int) -> str:
    """Words for a process's exit status as Python reports it (negative: killed by a signal)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit status {returncode}"


def shell_status(returncode: int) -> int:
    """The status a shell would report: 128 + signal number for a killed process."""
    return 128 - returncode if returncode < 0 else returncode


class ProcessLink(FdLink):
    """A spawned MCP server: frames on its stdin/stdout, log lines on its stderr."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        on_stderr: Callable[[bytes], None] | None,
        echo_stderr: bool,
    ) -> None:
        assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
        super().__init__(proc.stdout.fileno(), proc.stdin.fileno(), "s2c", "server")
        self.proc = proc
        self.pid = proc.pid
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._on_stderr = on_stderr
        self._echo_stderr = echo_stderr
        self._stderr_thread = threading.Thread(target=self._pump_stderr, name="mcptape-stderr", daemon=True)
        self._stderr_thread.start()

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        on_stderr: Callable[[bytes], None] | None = None,
        echo_stderr: bool = True,
    ) -> ProcessLink:
        """Start ``argv`` with the full environment (plus ``env``) and pipes on all three streams."""
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                cwd=cwd,
                bufsize=0,
            )
        except FileNotFoundError as exc:
            missing = cwd if cwd and not os.path.isdir(cwd) else argv[0]
            raise SpawnError(f"cannot start the server: {missing!r} not found ({exc.strerror})") from exc
        except PermissionError as exc:
            raise SpawnError(f"cannot start the server: {argv[0]!r} is not executable") from exc
        except OSError as exc:
            raise SpawnError(f"cannot start the server {argv[0]!r}: {exc.strerror or exc}") from exc
        return cls(proc, on_stderr, echo_stderr)

    def _close_write_fd(self) -> None:
        # The Popen object owns the descriptor: closing it there keeps it from being closed twice.
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        splitter = LineSplitter()
        out = sys.stderr.buffer
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                chunk = b""
            lines = splitter.feed(chunk) if chunk else []
            if not chunk:
                rest = splitter.finish()
                if rest is not None:
                    lines.append(rest)
            for line in lines:
                self.stderr_tail.append(line.decode("utf-8", errors="replace"))
                if self._echo_stderr:
                    with contextlib.suppress(OSError, ValueError):
                        out.write(line + b"\n")
                        out.flush()
                if self._on_stderr is not None:
                    self._on_stderr(line)
            if not chunk:
                return

    async def stderr_done(self, timeout: float = 2.0) -> None:
        """Wait (briefly) until every stderr line has been read and reported."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._stderr_thread.is_alive() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(POLL_S)

    async def wait(self) -> int:
        """Wait for the process to exit; its returncode (negative when killed by a signal)."""
        # Polling keeps waiting off the default executor, whose threads asyncio.run joins at exit.
        while (code := self.proc.poll()) is None:
            await asyncio.sleep(POLL_S)
        return code

    async def shutdown(self, grace: float = 2.0) -> int:
        """Stop the server gracefully: close its stdin, then SIGTERM, then SIGKILL, a grace apart."""
        self.close_send()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wait(), grace)
        return await self.wait()
