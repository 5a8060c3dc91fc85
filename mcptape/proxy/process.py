"""The server-facing stdio link: a spawned process, its stderr, its exit and its shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from mcptape.proxy.framing import LineSplitter
from mcptape.proxy.links import READ_CHUNK, StreamLink

STDERR_TAIL = 20


class SpawnError(Exception):
    """The upstream command could not be started (not found, not executable, bad cwd)."""


def describe_status(returncode: int) -> str:
    """Words for a process's exit status as asyncio reports it (negative: killed by a signal)."""
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


class ProcessLink(StreamLink):
    """A spawned MCP server: frames on its stdin/stdout, log lines on its stderr."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        on_stderr: Callable[[bytes], None] | None,
        echo_stderr: bool,
    ) -> None:
        assert proc.stdout is not None and proc.stdin is not None
        super().__init__(proc.stdout, proc.stdin, "s2c")
        self.proc = proc
        self.pid = proc.pid
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._on_stderr = on_stderr
        self._echo_stderr = echo_stderr
        self._stderr_task = asyncio.ensure_future(self._pump_stderr())

    @classmethod
    async def spawn(
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
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=full_env,
                cwd=cwd,
                limit=1 << 26,
            )
        except FileNotFoundError as exc:
            missing = cwd if cwd and not os.path.isdir(cwd) else argv[0]
            raise SpawnError(f"cannot start the server: {missing!r} not found ({exc.strerror})") from exc
        except PermissionError as exc:
            raise SpawnError(f"cannot start the server: {argv[0]!r} is not executable") from exc
        except OSError as exc:
            raise SpawnError(f"cannot start the server {argv[0]!r}: {exc.strerror or exc}") from exc
        return cls(proc, on_stderr, echo_stderr)

    async def _pump_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        splitter = LineSplitter()
        out = sys.stderr.buffer
        while True:
            chunk = await stream.read(READ_CHUNK)
            lines = splitter.feed(chunk) if chunk else []
            if not chunk:
                rest = splitter.finish()
                if rest is not None:
                    lines.append(rest)
            for line in lines:
                self.stderr_tail.append(line.decode("utf-8", errors="replace"))
                if self._echo_stderr:
                    with contextlib.suppress(OSError):
                        out.write(line + b"\n")
                        out.flush()
                if self._on_stderr is not None:
                    self._on_stderr(line)
            if not chunk:
                return

    async def stderr_done(self, timeout: float = 2.0) -> None:
        """Wait (briefly) until every stderr line has been read and reported."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), timeout)

    async def wait(self) -> int:
        """Wait for the process to exit; its returncode (negative when killed by a signal)."""
        return await self.proc.wait()

    async def shutdown(self, grace: float = 2.0) -> int:
        """Stop the server gracefully: close its stdin, then SIGTERM, then SIGKILL, a grace apart."""
        await self.close_send()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if self.proc.returncode is not None:
                break
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.proc.wait(), grace)
        return await self.proc.wait()
