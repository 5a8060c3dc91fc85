"""`mcptape call --url`: server-everything over streamable HTTP and legacy SSE, and retries while it starts.

Over the HTTP/SSE upstream links (mcptape.proxy.http).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.http_servers import ENTRY, free_port, stop, wait_for_port
from tests.helpers.paths import MCPTAPE, require_everything

pytestmark = pytest.mark.slow


def _start(port: int, transport: str) -> subprocess.Popen[bytes]:
    node = shutil.which("node")
    if node is None or not ENTRY.exists():
        require_everything()  # skips, or fails under CI
        raise AssertionError("node or the server's entry point is missing though server-everything was found")
    env = {**os.environ, "PORT": str(port)}
    return subprocess.Popen(
        [node, str(ENTRY), transport], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


@contextlib.contextmanager
def _server(transport: str, port: int | None = None, delay: float = 0.0) -> Iterator[str]:
    port = port or free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        time.sleep(delay)
        procs.append(_start(port, transport))

    starter = threading.Thread(target=start)
    starter.start()
    if not delay:
        starter.join()
        wait_for_port(port, procs[0])
    try:
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'streamableHttp' else 'sse'}"
    finally:
        starter.join()
        for proc in procs:
            stop(proc)


def _call(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, "call", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("served", "transport"), [("streamableHttp", "http"), ("sse", "sse")])
def test_tools_list_over_a_remote_transport_is_recorded(served: str, transport: str, tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    with _server(served) as url:
        proc = _call(
            "-m", "tools/list", "--url", url, "--transport", transport, "--db", str(db), "--token", "s3cret"
        )
    assert proc.returncode == 0, proc.stderr
    assert "echo" in [tool["name"] for tool in json.loads(proc.stdout)["tools"]]
    with sqlite3.connect(db) as conn:
        mode, session_transport = conn.execute("select mode, transport from sessions").fetchone()
        texts = " ".join(str(row) for row in conn.execute("select * from frames"))
    assert (mode, session_transport) == ("call", f"inproc->{transport}")
    assert "s3cret" not in texts


def test_a_server_still_starting_is_reached_after_retries() -> None:
    port = free_port()
    with _server("streamableHttp", port, delay=1.2) as url:
        proc = _call("-m", "ping", "--url", url, "--no-record")
    assert proc.returncode == 0, proc.stderr
    assert "retry 1 in 1 s" in proc.stderr
