"""`record --url` to a server nobody can reach stops as `record` does when its server cannot start.

It says why in one line (the connection was refused, the host name does not resolve; not
aiohttp's "ssl:default"), answers the client's request with that error when it came in time,
and exits 2.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def record(tmp_path: Path, url: str, transport: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPTAPE, "record", "--db", str(tmp_path / "rec.db"), "--transport", transport, "--url", url],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("transport", ["http", "sse", "auto"])
def test_a_refused_connection_is_said_and_exits_2(tmp_path: Path, transport: str) -> None:
    port = closed_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = record(tmp_path, url, transport)
    assert proc.returncode == 2, proc.stderr
    why = f"cannot reach the MCP server at {url}: the connection to 127.0.0.1:{port} was refused"
    assert proc.stderr.startswith(f"mcptape: error: {why}"), proc.stderr
    assert "ssl:default" not in proc.stderr + proc.stdout
    if proc.stdout:
        # The request came before the link gave up: answered by the link with the same words,
        # or (when it was pending as the link ended) by the relay, naming the same facts.
        message = json.loads(proc.stdout)["error"]["message"]
        assert url in message and f"the connection to 127.0.0.1:{port} was refused" in message, message


def test_a_host_name_that_does_not_resolve_is_said(tmp_path: Path) -> None:
    proc = record(tmp_path, "http://no-such-host.invalid/mcp", "http")
    assert proc.returncode == 2
    assert "the host name no-such-host.invalid cannot be resolved" in proc.stderr
