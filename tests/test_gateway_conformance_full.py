"""The whole conformance suite against a Python-SDK fixture server, directly and through the gateway.

tests/servers/conformance_fixture.py implements every `test_*` fixture the server
scenarios of `@modelcontextprotocol/conformance` check, so run with ``--suite all``
(pending scenarios included) the suite passes in full directly, but for the checks in
``SDK_WARNINGS``. Through the gateway, with the fixture behind it as a streamable HTTP,
a legacy SSE and a stdio upstream, every check must give the same status as directly.
No check differs because of the gateway's own DNS-rebinding protection: the SDK's
server answers a foreign Host with 4xx itself, so `dns-rebinding-protection` passes
directly, and through the gateway (whose 403 comes first) on every path.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from mcp import Client, types

from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.http_servers import free_port, served
from tests.helpers.paths import CONFORMANCE_SUITE as SUITE
from tests.helpers.paths import NODE22

# The suite runs for a minute alone; beside another worker's processes it needs more than
# pytest-timeout's default 120 s (a bound on a hang, not a speed check).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FIXTURE = Path(__file__).resolve().parent / "servers" / "conformance_fixture.py"

# The only checks of the suite that do not pass directly, and why. Both are SHOULDs
# of SEP-1699 that the scenario tests with a raw POST declaring protocol 2025-03-26:
# the Python SDK sends the priming event (an `id` with empty data, carrying `retry`)
# only to clients of 2025-11-25 or later, since older clients cannot parse it, so on
# that stream it sends neither. (For the same reason `test_reconnection`'s stream is
# not closed mid-call there: without a priming event the client could not resume.)
SDK_WARNINGS = {
    ("server-sse-polling", "server-sse-priming-event"): "WARNING",
    ("server-sse-polling", "server-sse-retry-field"): "WARNING",
}

Statuses = dict[tuple[str, str], Counter[str]]


def run_all(url: str, out: Path) -> Statuses:
    """Run every server scenario (``--suite all``) against ``url``; each check's statuses.

    A check id can repeat within a scenario (`incoming-sse-event`, once per event), so
    each (scenario, check) maps to the multiset of its statuses.
    """
    proc = subprocess.run(
        [str(NODE22), str(SUITE), "server", "--suite", "all", "--url", url, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Total:" in proc.stdout, proc.stdout + proc.stderr
    checks: Statuses = {}
    for path in out.glob("*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", path.parent.name)
        for check in json.loads(path.read_text()):
            checks.setdefault((scenario, check["id"]), Counter())[check["status"]] += 1
    assert checks, proc.stdout
    return checks


@contextlib.contextmanager
def fixture_server(transport: str) -> Iterator[str]:
    """The fixture as ``http`` or ``sse`` on a free loopback port; yields its URL."""
    port = free_port()
    argv = [sys.executable, str(FIXTURE), transport, "--port", str(port)]
    with served(argv, port, "/mcp" if transport == "http" else "/sse") as url:
        yield url


def not_passing(checks: Statuses) -> dict[tuple[str, str], str]:
    """The checks with a status other than SUCCESS or INFO (INFO reports, it does not judge)."""
    return {
        key: status
        for key, counts in checks.items()
        for status in counts
        if status not in ("SUCCESS", "INFO")
    }


def test_the_fixture_passes_the_whole_suite_directly_and_through_the_gateway_over_every_upstream_transport(
    tmp_path: Path,
) -> None:
    assert NODE22.exists() and SUITE.exists(), "tests/npm is not installed: run `cd tests/npm && npm ci`"
    with fixture_server("http") as http_url, fixture_server("sse") as sse_url:
        config = {
            "fx-http": {"url": http_url, "type": "http"},
            "fx-sse": {"url": sse_url, "type": "sse"},
            "fx-stdio": {"command": sys.executable, "args": [str(FIXTURE), "stdio"]},
        }
        # The suite's client never DELETEs its sessions: a short idle timeout ends each
        # stdio upstream soon after, rather than keeping some thirty Pythons alive.
        gateway = GatewayProcess(tmp_path / "g.db", config, "--no-auth", "--idle-timeout", "5", tmp=tmp_path)
        try:
            # Four independent clients of two servers and one gateway: as safe as the
            # concurrent sessions the gateway is built for, and the stdio run (a Python
            # process started per session) no longer waits for the other three.
            with ThreadPoolExecutor(4) as pool:
                runs = {name: pool.submit(run_all, gateway.url(name), tmp_path / name) for name in config}
                direct = run_all(http_url, tmp_path / "direct")
                through = {name: run.result() for name, run in runs.items()}
        finally:
            gateway.stop()
    scenarios = {scenario for scenario, _ in direct}
    # Every server scenario of the suite ran, pending ones included.
    assert {"json-schema-2020-12", "server-sse-polling", "dns-rebinding-protection"} <= scenarios
    assert len(scenarios) >= 32
    assert sum(counts["SUCCESS"] for counts in direct.values()) >= 44
    assert not_passing(direct) == SDK_WARNINGS
    for name, checks in through.items():
        differing = {key: (direct.get(key), checks.get(key)) for key in direct.keys() | checks.keys()}
        differing = {key: pair for key, pair in differing.items() if pair[0] != pair[1]}
        assert not differing, name


def call_reconnection(url: str) -> tuple[str, list[object]]:
    """`test_reconnection` called by the `mcp` SDK client (protocol 2025-11-25): its answer and logs."""

    async def main() -> tuple[str, list[object]]:
        logs: list[object] = []

        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            logs.append(params.data)

        async with Client(url, mode="legacy", logging_callback=on_log) as client:
            result = await client.call_tool("test_reconnection", {})
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        return block.text, logs

    return anyio.run(main)


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_a_response_stream_the_server_closes_mid_call_is_resumed_through_the_gateway(tmp_path: Path) -> None:
    """The SEP-1699 path the suite does not reach (its raw POST says 2025-03-26): the
    fixture closes the call's SSE stream after its first log message; the stream is
    resumed with a GET carrying Last-Event-ID and the client gets everything, as directly."""
    expected = ("Reconnection test completed", ["Before disconnect", "After reconnect"])
    db = tmp_path / "g.db"
    with fixture_server("http") as http_url:
        assert call_reconnection(http_url) == expected
        config = {
            "fx-http": {"url": http_url, "type": "http"},
            "fx-stdio": {"command": sys.executable, "args": [str(FIXTURE), "stdio"]},
        }
        gateway = GatewayProcess(db, config, "--no-auth", tmp=tmp_path)
        try:
            for name in config:
                assert call_reconnection(gateway.url(name)) == expected, name
        finally:
            gateway.stop()
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "select json_extract(f.meta, '$.stream') from frames f join sessions s on s.id = f.session_id"
            " where s.name = 'fx-http' and f.direction = 's2c' and f.method = 'tools/call'"
        ).fetchall()
    finally:
        con.close()
    # The answer came after the POST stream closed: on the GET that resumed it.
    assert rows == [("get",)]
