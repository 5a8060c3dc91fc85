"""Test helpers: HTTP servers on a free port (the reference `@modelcontextprotocol/server-everything`, and
a 2026-07-28 server written with the SDK)."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

from tests.helpers.paths import NPM_DIR, ROOT

ENTRY = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_run(count: int) -> int:
    """The first of ``count`` consecutive free ports (HAProxy's, then its replicas' in a fleet).

    Taken below Linux's ephemeral range (32768-60999), where the kernel hands out ports to
    outgoing connections and to every ``free_port()``: a port after a free one there may be
    another test's by the time it is bound (a fleet replica failed to listen on one).
    """
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(20_000, 32_000 - count)
        sockets: list[socket.socket] = []
        try:
            for port in range(first, first + count):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports between 20000 and 32000")


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 60) -> None:
    """Wait until something listens on ``port`` (or ``proc`` exits): the bound is on a hang, not
    a speed check; a Node server took over 20 s to listen on two cores beside four busy workers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@contextlib.contextmanager
def served(argv: list[str], port: int, path: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run ``argv`` (a server that listens on 127.0.0.1:``port``) until the block ends; yields its URL."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 5 s; returns once the process is reaped."""
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def everything_http(transport: str) -> Iterator[str]:
    """Run server-everything as ``streamableHttp`` or ``sse``; yields its URL (…/mcp or …/sse)."""
    node = shutil.which("node")
    assert node and ENTRY.exists(), "tests/npm is not installed: run `cd tests/npm && npm ci`"
    port = free_port()
    path = "/mcp" if transport == "streamableHttp" else "/sse"
    with served([node, str(ENTRY), transport], port, path, {**os.environ, "PORT": str(port)}) as url:
        yield url


MODERN_HTTP = ROOT / "tests" / "servers" / "modern_http.py"


@contextlib.contextmanager
def modern_http(*flags: str) -> Iterator[str]:
    """Run tests/servers/modern_http.py (the SDK's streamable HTTP server, 2026-07-28); yields its URL."""
    port = free_port()
    with served([sys.executable, str(MODERN_HTTP), str(port), *flags], port, "/mcp") as url:
        yield url
