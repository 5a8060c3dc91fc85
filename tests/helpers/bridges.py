"""Test helper: server-everything behind HTTP front ends on free loopback ports: mcptape's gateway,
the npm ``mcp-proxy`` (tests/npm) and the PyPI ``mcp-proxy``.

The PyPI bridge needs ``mcp<2`` where mcptape needs ``mcp>=2.3``: it lives in a venv of its
own, ``.venv-mcp-proxy`` at the top of the checkout, created from PyPI by scripts/test (or on
first use).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.paths import NPM_DIR, ROOT

EVERYTHING = NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NPM_MCP_PROXY = NPM_DIR / "node_modules" / ".bin" / "mcp-proxy"
PYPI_MCP_PROXY = "mcp-proxy==0.13.0"
PYPI_VENV = ROOT / ".venv-mcp-proxy"


def node() -> str:
    found = shutil.which("node")
    assert found, "node is not installed (scripts/test needs Node.js)"
    return found


def everything_argv() -> list[str]:
    """server-everything on stdio."""
    return [node(), str(EVERYTHING), "stdio"]


def everything_config(directory: Path) -> Path:
    """An mcpServers file whose entry ``everything`` is server-everything on stdio."""
    argv = everything_argv()
    path = directory / "everything.json"
    path.write_text(json.dumps({"mcpServers": {"everything": {"command": argv[0], "args": argv[1:]}}}))
    return path


def pypi_mcp_proxy() -> Path:
    """The PyPI bridge's executable, installed into its own venv the first time."""
    exe = PYPI_VENV / "bin" / "mcp-proxy"
    stamp = PYPI_VENV / f".installed-{PYPI_MCP_PROXY}"
    if not stamp.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(PYPI_VENV)
        subprocess.run(
            [str(PYPI_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", PYPI_MCP_PROXY],
            check=True,
            timeout=600,
        )
        stamp.touch()
    return exe


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(argv: list[str], port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` (a server listening on ``port``) until the block ends; stderr and stdout go to ``log``."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"{argv[0]} did not listen on {port}: {log.read_text(errors='replace')[-2000:]}"
                )
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def gateway_argv(config: Path, port: int, db: Path) -> list[str]:
    """mcptape's gateway (no token, loopback) serving ``config``."""
    return [
        sys.executable,
        "-m",
        "mcptape",
        "proxy",
        "--no-auth",
        "--listen",
        f"127.0.0.1:{port}",
        "--config",
        str(config),
        "--db",
        str(db),
    ]


def npm_bridge_argv(port: int) -> list[str]:
    """The npm mcp-proxy: streamable HTTP on ``port`` in front of server-everything on stdio."""
    return [
        str(NPM_MCP_PROXY),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--server",
        "stream",
        "--",
        *everything_argv(),
    ]


def pypi_bridge_argv(port: int) -> list[str]:
    """The PyPI mcp-proxy: streamable HTTP on ``port`` in front of server-everything on stdio."""
    return [str(pypi_mcp_proxy()), "--host", "127.0.0.1", "--port", str(port), "--", *everything_argv()]
