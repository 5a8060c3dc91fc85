"""`mcptape call --url` at an HTTP server that is not MCP: one transport error (exit 1) that says
what came back, for each transport, as a CI job reading `--structured` needs it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.http_servers import free_port, served
from tests.helpers.paths import MCPTAPE, ROOT

pytestmark = pytest.mark.slow

SERVER = ROOT / "tests" / "servers" / "not_mcp.py"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    port = free_port()
    with served([sys.executable, str(SERVER), str(port)], port, "") as url:
        yield url


def call(url: str, transport: str, tmp_path: Path) -> tuple[int, dict[str, object], str]:
    proc = subprocess.run(
        [*MCPTAPE, "call", "-m", "tools/list", "--url", url, "--transport", transport, "--structured",
         "--timeout", "20", "--db", str(tmp_path / "rec.db")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize(
    ("path", "transport", "says"),
    [
        (
            "/text",
            "http",
            "answered HTTP 200 (text/plain; charset=utf-8) with no answer to it: hello, not MCP",
        ),
        ("/text", "sse", "answered HTTP 200 OK (text/plain; charset=utf-8), not an SSE stream"),
        ("/json", "sse", "answered HTTP 200 OK (application/json; charset=utf-8), not an SSE stream"),
        ("/404", "http", "answered HTTP 404 Not Found"),
        ("/404", "auto", "answered HTTP 404 Not Found, not an SSE stream"),
        ("/short", "sse", "ended before its endpoint event"),
        ("/loop", "http", "it redirected 10 times without answering (the last time to "),
        ("/loop", "sse", "it redirected 10 times without answering (the last time to "),
    ],
)
def test_a_server_that_is_not_mcp_is_a_transport_error_saying_what_came_back(
    base: str, path: str, transport: str, says: str, tmp_path: Path
) -> None:
    rc, envelope, _ = call(base + path, transport, tmp_path)
    assert rc == 1
    error = envelope["error"]
    assert isinstance(error, dict) and error["category"] == "transport"
    assert says in str(error["message"]), error
