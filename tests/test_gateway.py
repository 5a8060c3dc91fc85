"""`mcptape proxy`: every client transport × upstream transport through one real gateway process.

The client is the real `mcp` SDK client over streamable HTTP or legacy SSE; the upstream
is `@modelcontextprotocol/server-everything` over stdio, streamable HTTP or SSE. Each
combination must give the same results as a direct connection, sampling, elicitation
and roots included, and be recorded as one session with every request answered.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters
from mcp.client.sse import sse_client

from tests.helpers.gateway_proc import GatewayProcess
from tests.helpers.http_servers import everything_http
from tests.helpers.paths import everything_server_cmd
from tests.helpers.scenarios import run_everything_scenario

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


@contextlib.contextmanager
def upstream_entry(kind: str) -> Iterator[dict[str, Any]]:
    if kind == "stdio":
        cmd = everything_server_cmd()
        assert cmd is not None
        yield {"command": cmd[0], "args": cmd[1:]}
        return
    with everything_http("streamableHttp" if kind == "http" else "sse") as url:
        yield {"url": url, "type": kind}


def target(gateway: GatewayProcess, client: str) -> Any:
    if client == "http":
        return gateway.url("everything")
    return sse_client(gateway.url("everything", "sse"))


def wait_closed(db: Path, count: int, timeout: float = 15) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + timeout
    while True:
        con = sqlite3.connect(db)
        try:
            rows = con.execute("select status from sessions where ended_at is not null").fetchall()
        except sqlite3.OperationalError:
            rows = []
        finally:
            con.close()
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


@pytest.mark.parametrize("upstream", ["stdio", "http", "sse"])
@pytest.mark.parametrize("client", ["http", "sse"])
def test_every_transport_pair_gives_the_same_results_as_a_direct_connection(
    client: str, upstream: str, tmp_path: Path
) -> None:
    db = tmp_path / "g.db"
    with upstream_entry(upstream) as entry:
        if upstream == "stdio":
            plain = run_everything_scenario(
                StdioServerParameters(command=entry["command"], args=entry["args"])
            )
        else:
            plain = run_everything_scenario(entry["url"] if upstream == "http" else sse_client(entry["url"]))
        gateway = GatewayProcess(db, {"everything": entry}, "--no-auth", tmp=tmp_path)
        try:
            through = run_everything_scenario(target(gateway, client))
            wait_closed(db, 1, timeout=5)
        finally:
            assert gateway.stop() == 0, gateway.stderr
    assert through == plain
    assert "canned hello" in json.dumps(through["sampling"])
    con = sqlite3.connect(db)
    try:
        ((name, mode, transport, status, server_name),) = con.execute(
            "select name, mode, transport, status, server_name from sessions"
        ).fetchall()
        assert (name, mode, transport) == ("everything", "proxy", f"{client}->{upstream}")
        assert status in ("closed", "interrupted") and server_name == "mcp-servers/everything"
        assert (
            con.execute("select method from exchanges where direction='c2s' and response is null").fetchall()
            == []
        )
        # distinct: the server may also ask roots/list on its own when roots change.
        served = con.execute(
            "select distinct method, answered_by from server_requests where method != 'ping' order by 1"
        ).fetchall()
        assert served == [
            ("elicitation/create", "client"),
            ("roots/list", "client"),
            ("sampling/createMessage", "client"),
        ]
        # The client side of each frame says how it came in.
        streams = {
            s
            for (s,) in con.execute(
                "select distinct json_extract(meta, '$.stream') from frames where direction='c2s'"
            )
        }
        assert streams == ({"post"} if client == "http" else {"sse-endpoint"})
        # ...and each server frame the stream it went out on (a stdio upstream's carry nothing else).
        key = "$.stream" if upstream == "stdio" else "$.downstream.stream"
        out = {
            s
            for (s,) in con.execute(
                f"select distinct json_extract(meta, '{key}') from frames where direction='s2c' and origin='server'"
            )
        }
        if (client, upstream) != ("http", "http"):  # passed through: the upstream's own metadata
            assert out <= ({"post", "get"} if client == "http" else {"sse"}) and out
        assert con.execute("select count(*) from frames where kind='malformed'").fetchone() == (0,)
        # Legacy SSE: the endpoint event mcptape served and, behind it, the upstream's own.
        endpoints = [
            t for (t,) in con.execute("select text from events where kind='sse_endpoint' order by id")
        ]
        ours = [t for t in endpoints if t.startswith("/servers/everything/messages?session_id=")]
        theirs = [t for t in endpoints if t.startswith("http://127.0.0.1:")]
        assert (len(ours), len(theirs)) == (int(client == "sse"), int(upstream == "sse"))
    finally:
        con.close()
