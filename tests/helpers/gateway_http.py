"""Talking to a gateway over plain HTTP: the first request, a raw request with exact headers, a whole answer."""

from __future__ import annotations

import http.client
import json
import sys
from urllib.parse import urlsplit

from tests.helpers.paths import ROOT

# The gateway registry entry of the built-in demo server, as tests pass it to GatewayProcess.
DEMO_SERVERS = {"demo": {"command": sys.executable, "args": ["-m", "mcptape.servers.demo"]}}
# A server answering each `big` call with a large result, to load the gateway's streams.
BIG = ROOT / "tests" / "servers" / "big_answers.py"
INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
).encode()


def request(
    base: str, method: str, path: str, headers: dict[str, str] | None = None, body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly ``headers`` (Host is the base's unless given); an event stream is read once."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        headers = {"Host": parts.netloc, **(headers or {})}
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
            headers["Content-Length"] = str(len(body))
        for key, value in headers.items():
            conn.putheader(key, value)
        conn.endheaders(body)
        response = conn.getresponse()
        data = (
            response.read()
            if response.status != 200 or "event-stream" not in (response.getheader("Content-Type") or "")
            else response.read1(65536)
        )
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        conn.close()


def fetch(
    base: str, method: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, str, bytes]:
    """A whole response (status, session id, body) from ``/servers/big/mcp``."""
    conn = http.client.HTTPConnection(*base.removeprefix("http://").rsplit(":", 1), timeout=60)
    try:
        conn.request(
            method, "/servers/big/mcp", body=body, headers={"Content-Type": "application/json", **headers}
        )
        response = conn.getresponse()
        return response.status, response.getheader("Mcp-Session-Id") or "", response.read()
    finally:
        conn.close()
