"""Start the Node.js process under the inspector and find its WebSocket URL.

The command is split like a POSIX shell would (``shlex``), never run through a
shell, and inherits our working directory and environment. Its stdin is closed
(ours carries MCP frames) and its stdout and stderr are drained continuously, so
a chatty script never blocks on a full pipe and never writes into our stdout.

The inspector URL is read from what Node prints on stderr (``Debugger listening
on ws://...``) rather than assumed from the port, so ``--inspect-brk=0`` works,
and a busy port (``Starting inspector on HOST:PORT failed: address already in
use``) is reported at once instead of timing out.

Each process gets its own process group. :meth:`NodeProcess.close` kills the
group if anything in it still runs, and :func:`kill_live_process_groups` lets the
server's signal handler do the same for every run in flight. A server killed
with SIGKILL runs no handler: on Linux the process is started with a parent-death
signal (``PR_SET_PDEATHSIG``), so the kernel kills it when the server dies.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import re
import shlex
import signal
import sys
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from mcptape.servers.debug_script.errors import DebugScriptError
from mcptape.servers.debug_script.policy import is_node

DEFAULT_INSPECTOR_PORT: Final = 9229
_INSPECT_BRK = re.compile(r"^--inspect-brk(?:=(?:(?:\[[^\]]*\]|[^:]*):)?(\d+))?$")
_ANY_INSPECT = re.compile(r"^--inspect(?:-brk|-wait)?(?:=|$)")
_INSPECT_ONLY = re.compile(r"^--inspect(?:=|$)")
_PR_SET_PDEATHSIG: Final = 1
_LISTENING = re.compile(r"Debugger listening on (ws://\S+)")
_START_FAILED = re.compile(r"Starting inspector on (\S+) failed: (.*)")
# What Node's inspector itself says on stderr: not worth repeating in an error message.
_INSPECTOR_CHATTER = re.compile(
    r"(Debugger listening on |Debugger attached\.|Debugger ending on |Waiting for the debugger to disconnect"
    r"|For help, see: https://nodejs\.org/en/docs/inspector)"
)
_TERM_GRACE_SECONDS: Final = 1.0
_STDERR_TAIL_LINES: Final = 12
_EXIT_POLL_SECONDS: Final = 0.02
_DRAIN_GRACE_SECONDS: Final = 0.5
_MAX_LINE_BYTES: Final = 64 * 1024

# Process groups of runs in flight, for the signal handler of the server process.
_LIVE_GROUPS: set[int] = set()


def split_command(command: str) -> list[str]:
    """Split ``command`` into argv like a shell would, without running a shell."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise DebugScriptError(
            f"Cannot parse command {command!r}: {error}. Quote it as you would in a shell, "
            "e.g. node --inspect-brk=0 './my script.js'."
        ) from error
    if not argv:
        raise DebugScriptError(
            "The command is empty: expected the command that starts Node.js, e.g. node --inspect-brk=9229 ./test.js."
        )
    return argv


def inspector_port(argv: list[str]) -> int:
    """The port named by ``--inspect-brk=[HOST:]PORT``; 9229 when the flag gives none."""
    for arg in argv:
        match = _INSPECT_BRK.match(arg)
        if match and match.group(1):
            return int(match.group(1))
    return DEFAULT_INSPECTOR_PORT


def with_inspect_brk(argv: list[str]) -> list[str]:
    """``argv`` with ``--inspect-brk=0`` added after ``node`` when the command asks for no inspector.

    Without it Node would run the script to its end without ever listening for us.
    Port 0 lets the system pick a free port (the URL is read from stderr anyway),
    so such commands never collide with each other. Commands that are not ``node``
    itself (``npm run``, a wrapper script) are left alone: they must pass the flag
    on themselves.
    """
    for arg in argv:
        if _INSPECT_ONLY.match(arg):
            raise DebugScriptError(
                f"{arg} starts the inspector but lets the script run before the debugger attaches, so "
                f"breakpoints would be missed: use {arg.replace('--inspect', '--inspect-brk', 1)} instead "
                "(Node then waits for debug-script before running any code)."
            )
    if any(_ANY_INSPECT.match(arg) for arg in argv):
        return argv
    if not is_node(argv[0]):
        return argv
    return [argv[0], "--inspect-brk=0", *argv[1:]]


def has_inspect_brk(argv: list[str]) -> bool:
    """Whether the command asks Node to wait for the debugger (``--inspect-brk`` or ``--inspect-wait``)."""
    return any(_ANY_INSPECT.match(arg) for arg in argv)


def kill_live_process_groups() -> None:
    """SIGKILL every Node process group still running; safe to call from a signal handler."""
    for group in list(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    _LIVE_GROUPS.clear()


def install_cleanup_handlers() -> None:
    """Kill every live Node process group when this process exits or is told to stop.

    A client that gives up on the server sends SIGTERM (the mcp SDK does, to our
    process group, which our Node groups are not part of); Python's default
    handling would end us without running any clean-up. SIGINT is treated the
    same: as a KeyboardInterrupt it would leave the stdio server waiting on its
    stdin reader thread.
    """
    atexit.register(kill_live_process_groups)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _kill_then_die)


def _kill_then_die(signum: int, frame: object) -> None:
    kill_live_process_groups()
    # Die of the same signal, so our parent sees the usual exit status.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


class NodeProcess:
    """A started Node.js process: its drained output, its inspector URL, its clean-up."""

    def __init__(self, process: asyncio.subprocess.Process, argv: list[str]) -> None:
        self._process = process
        self.argv = argv
        self.pid = process.pid
        self.stderr_tail: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._inspector: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.exited = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = [
            asyncio.create_task(self._drain_stderr()),
            asyncio.create_task(self._drain(process.stdout)),
            asyncio.create_task(self._watch_exit()),
        ]

    @classmethod
    async def start(cls, argv: list[str]) -> NodeProcess:
        """Start ``argv`` in its own process group, with our cwd and environment."""
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent(),
            )
        except FileNotFoundError as error:
            raise DebugScriptError(
                f"Cannot start command: {argv[0]!r} was not found (searched PATH from {os.getcwd()}). "
                "Give the command that starts Node.js, e.g. node --inspect-brk=9229 ./test.js."
            ) from error
        except PermissionError as error:
            raise DebugScriptError(
                f"Cannot start command: {argv[0]!r} is not executable ({error.strerror}). "
                "Give the command that starts Node.js, e.g. node --inspect-brk=9229 ./test.js."
            ) from error
        except OSError as error:
            raise DebugScriptError(f"Cannot start command {shlex.join(argv)!r}: {error}.") from error
        _LIVE_GROUPS.add(process.pid)
        return cls(process, argv)

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited (negative: killed by that signal)."""
        return self._process.returncode

    def describe_exit(self) -> str:
        """``status 1`` or ``signal SIGKILL``, for messages."""
        code = self.returncode
        if code is None:
            return "still running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"signal {signal.Signals(-code).name}"
        return f"status {code}"

    def stderr_excerpt(self) -> str:
        """The last stderr lines, ready to append to a message (empty when there were none)."""
        lines = [_shorten(line.strip()) for line in self.stderr_tail if line.strip()]
        return f" Last stderr: {' | '.join(lines)}" if lines else ""

    async def inspector_url(self) -> str:
        """Wait until Node prints its inspector URL; raise when it cannot or does not."""
        exit_wait = asyncio.create_task(self.exited.wait())
        waiters: set[asyncio.Future[Any]] = {self._inspector, exit_wait}
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exit_wait.cancel()
        if self._inspector.done():
            return self._inspector.result()
        # Exit may be observed before the stderr drain reads the last lines.
        await asyncio.wait([self._tasks[0]], timeout=_DRAIN_GRACE_SECONDS)
        if self._inspector.done():
            return self._inspector.result()
        raise DebugScriptError(
            f"Process exited ({self.describe_exit()}) before the Node.js inspector started: expected "
            f"'Debugger listening on ws://...' on stderr (port {inspector_port(self.argv)}). Start Node "
            f"with --inspect-brk=<port>, e.g. node --inspect-brk=9229 ./test.js.{self.stderr_excerpt()}"
        )

    def inspector_missing_hint(self) -> str:
        """Why we are still waiting when no inspector URL has appeared (empty once it has)."""
        if self._inspector.done():
            return ""
        if has_inspect_brk(self.argv):
            return (
                ": the Node.js inspector had not started yet (no 'Debugger listening on ws://...' on "
                "stderr); Node needs tens of milliseconds to start, so allow a longer timeout"
            )
        return (
            f": the Node.js inspector never came up (no 'Debugger listening on ws://...' for port "
            f"{inspector_port(self.argv)} on stderr); start Node with --inspect-brk=<port>"
        )

    async def close(self, grace: float = 0.0) -> None:
        """Stop whatever still runs in the process group, then reap it and the drain tasks.

        ``grace`` seconds are left for the process to exit on its own first (it does
        once the debugger disconnects after its script ended); then SIGTERM, then
        SIGKILL. The SIGKILL is sent even when this coroutine is cancelled midway.
        """
        group = self.pid
        try:
            if grace > 0 and self.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.exited.wait(), grace)
            if self.returncode is None:
                _signal_group(group, signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.exited.wait(), _TERM_GRACE_SECONDS)
        finally:
            # Children the script started share its group: none may outlive the run.
            _signal_group(group, signal.SIGKILL)
            _LIVE_GROUPS.discard(group)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.exited.wait(), _TERM_GRACE_SECONDS)
        # Let the drains read the last lines (for messages) before they are stopped.
        await asyncio.wait(self._tasks, timeout=_DRAIN_GRACE_SECONDS)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._inspector.done() and not self._inspector.cancelled():
            self._inspector.exception()  # retrieved: no "never retrieved" warning for an unread failure

    async def _watch_exit(self) -> None:
        # Not Process.wait(): it also waits for the pipes to close, which a grandchild
        # holding them open would delay indefinitely.
        while self._process.returncode is None:
            await asyncio.sleep(_EXIT_POLL_SECONDS)
        self.exited.set()

    async def _drain_stderr(self) -> None:
        stream = self._process.stderr
        assert stream is not None
        pending = b""
        while chunk := await stream.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                self._on_stderr_line(raw.decode("utf-8", "replace").rstrip("\r"))
            # A script may write megabytes without a newline: keep only what a message could show.
            pending = pending[-_MAX_LINE_BYTES:]
        if pending:
            self._on_stderr_line(pending.decode("utf-8", "replace"))

    def _on_stderr_line(self, line: str) -> None:
        if not _INSPECTOR_CHATTER.match(line):
            self.stderr_tail.append(line)
        if self._inspector.done():
            return
        if listening := _LISTENING.search(line):
            self._inspector.set_result(listening.group(1))
        elif failed := _START_FAILED.search(line):
            address, reason = failed.groups()
            advice = (
                "The port is already in use (perhaps by another debug session): choose a free port, "
                "or --inspect-brk=0 to let the system pick one."
                if "in use" in reason
                else "Choose another address or port, or --inspect-brk=0 to let the system pick one."
            )
            self._inspector.set_exception(
                DebugScriptError(f"Node.js could not start its inspector on {address}: {reason}. {advice}")
            )

    @staticmethod
    async def _drain(stream: asyncio.StreamReader | None) -> None:
        if stream is not None:
            while await stream.read(65536):
                pass


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to SIGKILL the child when this process dies; None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    libc = _libc()
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)  # the server died between fork and prctl: nothing would kill us later

    return hook


@functools.cache
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _shorten(line: str, limit: int = 300) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)
