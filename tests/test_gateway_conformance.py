"""The official MCP conformance suite, against server-everything directly and through the gateway.

`@modelcontextprotocol/conformance` (run on the Node 22 that tests/npm installs from
the `node` package) checks a streamable HTTP server. Run against server-everything's
own endpoint and against the gateway serving it as an HTTP, an SSE and a stdio
upstream, every check must give the same status, except the one that passes through
mcptape because of its own protection: `dns-rebinding-protection` (the reference server
accepts any Host; the gateway answers 403).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.http_servers import everything_http
from tests.helpers.paths import CONFORMANCE_SUITE as SUITE
from tests.helpers.paths import NODE22, everything_server_cmd

# The suite runs for a minute alone; beside another worker's processes it needs more than
# pytest-timeout's default 120 s (a bound on a hang, not a speed check).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

OWN_PROTECTION = {("server-dns-rebinding-protection", "localhost-host-rebinding-rejected")}


def run_suite(url: str, out: Path) -> dict[tuple[str, str], str]:
    proc = subprocess.run(
        [str(NODE22), str(SUITE), "server", "--url", url, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Total:" in proc.stdout, proc.stdout + proc.stderr
    checks: dict[tuple[str, str], str] = {}
    for path in out.glob("*/checks.json"):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT.*$", "", path.parent.name)
        for check in json.loads(path.read_text()):
            checks[(scenario, check["id"])] = check["status"]
    assert checks, proc.stdout
    return checks


def test_conformance_checks_match_a_direct_connection_for_every_upstream_transport(tmp_path: Path) -> None:
    assert NODE22.exists() and SUITE.exists(), "tests/npm is not installed: run `cd tests/npm && npm ci`"
    stdio = everything_server_cmd()
    assert stdio is not None
    with everything_http("streamableHttp") as http_url, everything_http("sse") as sse_url:
        direct = run_suite(http_url, tmp_path / "direct")
        config = {
            "ev-http": {"url": http_url, "type": "http"},
            "ev-sse": {"url": sse_url, "type": "sse"},
            "ev-stdio": {"command": stdio[0], "args": stdio[1:]},
        }
        gateway = GatewayProcess(tmp_path / "g.db", config, "--no-auth", tmp=tmp_path)
        try:
            through = {name: run_suite(gateway.url(name), tmp_path / name) for name in config}
        finally:
            gateway.stop()
    assert len(direct) >= 30
    for name, checks in through.items():
        assert checks.keys() == direct.keys(), name
        differing = {key for key in direct if checks[key] != direct[key]}
        assert differing <= OWN_PROTECTION, (name, {k: (direct[k], checks[k]) for k in differing})
        assert all(checks[key] == "SUCCESS" for key in OWN_PROTECTION), name
