"""The server-facing stdio link: a spawned process, its stderr, its exit and its shutdown.

The server runs in a process group of its own, so that shutting it down reaches the
children it started (``npx`` starts ``node``; a shell wrapper starts the real server)
and a Ctrl-C in a terminal reaches mcptape alone, which then shuts the server down in
order: stdin closed, then SIGTERM, then SIGKILL, a grace apart.

stderr is logging, and a server may flood it. It is read on a thread of its own and
never slows frames: lines longer than :data:`MAX_STDERR_LINE` are cut, bursts of short
lines are coalesced into one event per :data:`COALESCE_BYTES`, and past
:data:`STDERR_RATE` bytes a second what is not recorded is counted and said in a
``stderr_cut`` event. The copy to our own stderr (desktop clients show it in their
logs) goes through a bounded queue on another thread, so a client that does not read
our stderr cannot stall the server either.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence

from mcptape.proxy.link import Deliver, Ended, EventSink, LinkEnd, describe_status
from mcptape.proxy.links.framing import LineSplitter
from mcptape.proxy.links.stdio import READ_CHUNK, FdLink
from mcptape.redact import redact_text

STDERR_TAIL = 20
MAX_STDERR_LINE = 16 << 10
COALESCE_LINES = 16  # more lines than this in one read become one event
COALESCE_BYTES = 64 << 10
STDERR_RATE = 1 << 20  # bytes of stderr recorded per second, beyond a burst of 4x
ECHO_QUEUE = 1 << 20
HOLD_LINE = 1 << 20  # bytes of one stderr line held before it is passed on in pieces
POLL_S = 0.005
# Waits at shutdown look again after 0.5 ms, then twice as long each time up to POLL_S: a
# server that exits at once on end of input is seen within about a millisecond, not 5.
FIRST_POLL_S = 0.0005
READER_LINGER_S = 0.5  # after the process exited, how long a grandchild may keep its stdout open
# The waits of a shutdown once mcptape itself was signalled (ProcessLink.hurry): after
# closing stdin, then after SIGTERM. A client that signals us sends SIGKILL 2 s later.
HURRIED_EOF_S = 0.3
HURRIED_TERM_S = 0.8
READER_MAX_S = 15.0  # how long the reader may take to deliver what a dead server wrote (recording waits)


class SpawnError(Exception):
    """The upstream command could not be started (not found, not executable, bad cwd)."""


def _said(line: bytes) -> str:
    """A stderr line as recorded: text, with the secrets a log line can show redacted
    (``Authorization: Bearer …``, ``API_KEY=…``, credentials in URLs, tokens by their format)."""
    return redact_text(line.decode("utf-8", errors="replace"))


class _Stderr:
    """Reads a server's stderr: a bounded tail, bounded events, a bounded echo."""

    def __init__(self, fd: int, echo: bool) -> None:
        self.fd = fd
        self.tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.done = threading.Event()
        self.event: EventSink | None = None
        self._early: list[tuple[str, str | None, object]] = []
        self._lock = threading.Lock()
        self._echo: deque[bytes] | None = deque() if echo else None
        self._echo_bytes = 0
        self._echo_cv = threading.Condition()
        self._echo_dropped = 0
        self._budget = float(STDERR_RATE * 4)
        self._budget_at = time.monotonic()
        self._cut_lines = 0
        self._cut_bytes = 0
        threading.Thread(target=self._run, name="mcptape-stderr", daemon=True).start()
        if echo:
            threading.Thread(target=self._echo_run, name="mcptape-stderr-echo", daemon=True).start()

    def attach(self, event: EventSink) -> None:
        with self._lock:
            self.event = event
            early, self._early = self._early, []
        for item in early:
            event(*item)

    def _emit(self, kind: str, text: str | None, data: object = None) -> None:
        with self._lock:
            if self.event is None:
                self._early.append((kind, text, data))
                return
            sink = self.event
        sink(kind, text, data)

    def _run(self) -> None:
        splitter = LineSplitter()
        # A line longer than HOLD_LINE is passed on in pieces as it arrives (echoed whole,
        # recorded by its head): holding a 300 MB line without a newline held it twice.
        long_head: bytes | None = None
        long_size = 0
        try:
            while True:
                try:
                    chunk = os.read(self.fd, READ_CHUNK)
                except OSError:
                    chunk = b""
                lines = splitter.feed(chunk) if chunk else []
                if not chunk:
                    rest = splitter.finish()
                    if rest is not None:
                        lines.append(rest)
                if long_head is not None and (lines or not chunk):
                    end = lines.pop(0) if lines else b""
                    self._queue_echo([end + b"\n"])
                    self._record([(long_head, long_size + len(end))])
                    long_head = None
                if lines:
                    self._lines(lines)
                if splitter.pending() > HOLD_LINE:
                    piece = splitter.finish() or b""
                    if long_head is None:
                        long_head, long_size = piece[:MAX_STDERR_LINE], 0
                        self.tail.append(_said(piece[:1024]))
                    long_size += len(piece)
                    self._queue_echo([piece])
                    del piece
                if not chunk:
                    return
        finally:
            self._report_cut()
            self.done.set()
            with self._echo_cv:
                self._echo_cv.notify_all()

    def _lines(self, lines: list[bytes]) -> None:
        for line in lines[-STDERR_TAIL:]:
            self.tail.append(_said(line[:1024]))
        if self._echo is not None:
            self._queue_echo([line + b"\n" for line in lines])
        self._record([(line, len(line)) for line in lines])

    def _record(self, lines: list[tuple[bytes, int]]) -> None:
        """Record lines given as (their first bytes, at least MAX_STDERR_LINE of them; their size)."""
        now = time.monotonic()
        self._budget = min(STDERR_RATE * 4.0, self._budget + (now - self._budget_at) * STDERR_RATE)
        self._budget_at = now
        texts: list[str] = []
        for line, length in lines:
            cut = length > MAX_STDERR_LINE
            size = min(length, MAX_STDERR_LINE)
            if self._budget < size:
                self._cut_lines += 1
                self._cut_bytes += length
                continue
            self._budget -= size
            text = _said(line[:MAX_STDERR_LINE])
            if cut:
                text += f" … [{length - MAX_STDERR_LINE} bytes cut]"
                self._cut_bytes += length - MAX_STDERR_LINE
            texts.append(text)
        if self._cut_lines and self._budget > STDERR_RATE:
            self._report_cut()
        if len(texts) <= COALESCE_LINES:
            for text in texts:
                self._emit("stderr", text)
            return
        group: list[str] = []
        size = 0
        for text in texts:
            group.append(text)
            size += len(text) + 1
            if size >= COALESCE_BYTES:
                self._emit("stderr", "\n".join(group), {"lines": len(group)})
                group, size = [], 0
        if group:
            self._emit("stderr", "\n".join(group), {"lines": len(group)})

    def _report_cut(self) -> None:
        if self._cut_lines:
            lines, size = self._cut_lines, self._cut_bytes
            self._cut_lines = self._cut_bytes = 0
            self._emit(
                "stderr_cut",
                f"{lines} stderr line{'s' if lines != 1 else ''} ({size} bytes) not recorded: "
                "the server wrote faster than the recording keeps",
                {"lines": lines, "bytes": size},
            )

    def _queue_echo(self, pieces: list[bytes]) -> None:
        """Queue bytes for our stderr (each piece as it is: lines carry their newline)."""
        if self._echo is None:
            return
        with self._echo_cv:
            for piece in pieces:
                if self._echo_bytes > ECHO_QUEUE:
                    self._echo_dropped += piece.count(b"\n") or 1
                    continue
                self._echo.append(piece)
                self._echo_bytes += len(piece)
            self._echo_cv.notify()

    def _echo_run(self) -> None:
        assert self._echo is not None
        out = sys.stderr.buffer if sys.stderr is not None else None
        while True:
            with self._echo_cv:
                while not self._echo and not self.done.is_set():
                    self._echo_cv.wait()
                if not self._echo and self.done.is_set():
                    return
                batch = list(self._echo)
                self._echo.clear()
                self._echo_bytes = 0
                dropped, self._echo_dropped = self._echo_dropped, 0
            if out is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                for piece in batch:  # a long line's pieces are not joined into one more copy
                    out.write(piece)
                if dropped:
                    out.write(
                        f"mcptape: {dropped} stderr lines of the server not shown (our stderr is slow)\n".encode()
                    )
                out.flush()
            del batch


class ProcessLink(FdLink):
    """A spawned MCP server: frames on its stdin/stdout, log lines on its stderr."""

    def __init__(self, proc: subprocess.Popen[bytes], echo_stderr: bool) -> None:
        assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
        super().__init__(proc.stdout.fileno(), proc.stdin.fileno(), "s2c", "server")
        self.proc = proc
        self.pid = proc.pid
        self._stderr = _Stderr(proc.stderr.fileno(), echo_stderr)
        self._closing: asyncio.Future[LinkEnd] | None = None
        # How long to wait after closing stdin before SIGTERM (None: the grace). A
        # one-shot client (call) has no reason to wait long for a server that ignores EOF.
        self.eof_wait: float | None = None
        self._hurried = False  # see hurry()

    @property
    def stderr_tail(self) -> list[str]:
        return list(self._stderr.tail)

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
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
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            missing = cwd if cwd and not os.path.isdir(cwd) else argv[0]
            raise SpawnError(f"cannot start the server: {missing!r} not found ({exc.strerror})") from exc
        except PermissionError as exc:
            raise SpawnError(f"cannot start the server: {argv[0]!r} is not executable") from exc
        except OSError as exc:
            raise SpawnError(f"cannot start the server {argv[0]!r}: {exc.strerror or exc}") from exc
        return cls(proc, echo_stderr)

    def start(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        once = threading.Lock()
        said: list[str] = []

        def ended_once(why: str) -> None:
            with once:
                if said:
                    return
                said.append(why)
            ended(why)

        self._start_pipes(deliver, ended_once, event)
        self._stderr.attach(event)
        threading.Thread(
            target=self._watch_exit, args=(ended_once,), name="mcptape-server-exit", daemon=True
        ).start()

    def _start_pipes(self, deliver: Deliver, ended: Ended, event: EventSink) -> None:
        """Begin reading the server's stdout (here on a reader thread; see LoopProcessLink)."""
        FdLink.start(self, deliver, ended, event)

    def _reader_stuck(self) -> bool:
        """The reader waits for bytes that a dead server will not write (a grandchild holds the pipe)."""
        since = self.reading_since
        return since is not None and time.monotonic() - since > READER_LINGER_S

    async def _reader_settled(self) -> None:
        """Wait until the reader delivered everything, or waits in vain (bounded by READER_MAX_S)."""
        deadline = time.monotonic() + READER_MAX_S
        pause = FIRST_POLL_S
        while not self.reader_done.is_set():
            if self._reader_stuck() or time.monotonic() >= deadline:
                self.stop_receiving()
                return
            await asyncio.sleep(pause)
            pause = min(POLL_S, pause * 2)

    def _watch_exit(self, ended: Ended) -> None:
        """A server that exits while a child of its keeps its stdout open has still ended."""
        with contextlib.suppress(Exception):
            self.proc.wait()
        deadline = time.monotonic() + READER_MAX_S
        while not self.reader_done.wait(POLL_S * 4):
            if self._reader_stuck() or time.monotonic() >= deadline:
                # Say why first: a loop-served reader ends on the loop as soon as it is
                # told to stop, and its "stopped" would otherwise race this "exited".
                ended("exited")
                self.stop_receiving()
                return

    def _close_write_fd(self) -> None:
        # The Popen object owns the descriptor: closing it there keeps it from being closed twice.
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()

    def _signal(self, sig: int) -> None:
        """Signal the server's process group (it leads it), or the server alone if that fails."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    def hurry(self) -> None:
        """mcptape was told to stop: a shutdown under way (or to come) shortens its waits.

        Whoever signalled us (a client's own shutdown: SIGTERM, then SIGKILL 2 s later)
        may not wait out our grace: the server gets at most :data:`HURRIED_EOF_S` after
        its stdin closed, then :data:`HURRIED_TERM_S` after SIGTERM, so that mcptape is
        done with it before a SIGKILL of its own would leave the server running.
        """
        self._hurried = True

    def kill(self) -> None:
        """A second signal: the server's whole process group gets SIGKILL now."""
        self._hurried = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            with contextlib.suppress(OSError):
                self.proc.kill()

    def _waited(self, timeout: float, hurried: float) -> float:
        return min(timeout, hurried) if self._hurried else timeout

    async def _wait_exit(self, timeout: float, hurried: float | None = None) -> int | None:
        """The exit code within ``timeout`` (``hurried`` at most once hurry() was called), else None."""
        # Polling keeps waiting off the default executor, whose threads asyncio.run joins at exit.
        started = time.monotonic()
        pause = FIRST_POLL_S
        while (code := self.proc.poll()) is None:
            limit = timeout if hurried is None else self._waited(timeout, hurried)
            deadline = started + limit
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(POLL_S, pause * 2)
        return code

    async def _wait_event(self, event: threading.Event, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        pause = FIRST_POLL_S
        while not event.is_set():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(pause)
            pause = min(POLL_S, pause * 2)
        return True

    async def aclose(self, grace: float) -> LinkEnd:
        """Close the server's stdin, then SIGTERM, then SIGKILL a grace apart; how it ended.

        Returns within about ``2 * grace + 1.5`` seconds whatever the server does: a
        server that does not read its stdin, or a grandchild that keeps its stdout
        open, delays it by no more than that.
        """
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shutdown(grace))
        return await asyncio.shield(self._closing)

    async def _shutdown(self, grace: float) -> LinkEnd:
        self.close_send()
        stopped_by_us = False
        eof_wait = grace if self.eof_wait is None else min(grace, self.eof_wait)
        code = await self._wait_exit(eof_wait, HURRIED_EOF_S)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if code is not None:
                break
            stopped_by_us = True
            self._signal(sig)
            if sig == signal.SIGTERM:
                code = await self._wait_exit(grace, HURRIED_TERM_S)
            else:
                code = await self._wait_exit(1.0)
        if code is None:  # not even SIGKILL ended it in time (uninterruptible sleep)
            code = self.proc.poll()
        else:
            # The group may hold children that outlived the server: they go too.
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        # Let the reader deliver what the server wrote last; a grandchild holding the
        # pipe open must not keep us here.
        await self._reader_settled()
        await self._wait_event(self._stderr.done, READER_LINGER_S)
        reason = "exited" if code is not None else "stopped"
        return LinkEnd(reason, code, describe_status(code), tuple(self.stderr_tail), stopped_by_us)

    def exited(self) -> int | None:
        """The server's returncode if it has exited, else None (without waiting)."""
        return self.proc.poll()
