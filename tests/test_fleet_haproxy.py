"""A fleet with the real engines: PostgreSQL, three replicas and HAProxy, started by deploy/fleet.py.

50 clients at once (streamable HTTP passed through to the reference server-everything,
streamable HTTP and legacy SSE to a stdio server, 2026-07-28 without sessions to the demo
server): none
sees "Session not found", and each one's messages are exactly what its recorded
session or conversation holds. Then a replica is killed (SIGKILL) mid-run: the sessions
whose upstream speaks HTTP go on through the other replicas without the client noticing,
the stdio sessions it ran get 404 (the specification's unknown session) and are marked
interrupted by the others' heartbeat, and every other frame is recorded.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientSession, ClientTimeout, TCPConnector

from mcptape.gateway.sealed import Sealer, read_keys
from tests.helpers.http_servers import everything_http, free_port, port_run
from tests.helpers.postgres import postgres_bin
from tests.helpers.wire_clients import LegacyClient, ModernClient, SessionGone, WireClient

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists(),
        reason="HAProxy is not installed (apt-get install haproxy; .ci/run installs it)",
    ),
    pytest.mark.skipif(
        postgres_bin() is None, reason="PostgreSQL is not installed (apt-get install postgresql)"
    ),
]

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "fleet.py"
# The stdio server of the sessions with one process each: an echo server without the SDK, which
# starts in milliseconds (the demo server's SDK import costs over a second of CPU per session).
ECHO = Path(__file__).resolve().parent / "servers" / "fault_target.py"
MCPTAPE = str(Path(sys.executable).parent / "mcptape")


def load_deploy() -> Any:
    spec = importlib.util.spec_from_file_location("mcptape_deploy_fleet", DEPLOY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fleet() -> Iterator[Any]:
    deploy = load_deploy()
    # Not under pytest's 0700 folder: PostgreSQL runs as the postgres account when we are root.
    home = Path(tempfile.mkdtemp(prefix="mcptape-fleet-"))
    home.chmod(0o755)
    with everything_http("streamableHttp") as url:
        config = home / "servers.json"
        servers = {
            "everything": {"type": "http", "url": url},
            "echo": {"command": sys.executable, "args": [str(ECHO)]},
        }
        config.write_text(json.dumps({"mcpServers": servers}))
        fleet = deploy.Fleet(home, port_run(4), free_port(), 3)
        try:
            deploy.up(fleet, str(config), MCPTAPE)
            yield fleet
        finally:
            deploy.down(fleet)
            shutil.rmtree(home, ignore_errors=True)


def db_rows(fleet: Any, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=fleet.pg_port, user="postgres", dbname="mcptape") as conn:
        return conn.execute(sql, params).fetchall()


def recorded(fleet: Any, client: WireClient, sealer: Sealer) -> tuple[list[bytes], list[bytes]]:
    """The c2s and s2c frames of the client's conversation, in time order."""
    if isinstance(client, ModernClient):
        sql = (
            "select f.direction, f.text from conversations c join frames f on f.session_id = c.session_id "
            "and f.seq in (c.request_seq, c.response_seq) where c.conversation_id = %s order by f.ts, f.seq"
        )
        rows = db_rows(fleet, sql, "trace-" + client.trace_id)
    else:
        facts = sealer.open(
            client.sid.rsplit("=", 1)[-1] if isinstance(client, LegacyClient) else client.sid or ""
        )
        assert facts is not None
        where = "s.conversation_id = %s" if facts.passed_through else "s.client_name = %s"
        key = facts.conversation if facts.passed_through else client.name
        rows = db_rows(
            fleet,
            f"select f.direction, f.text from sessions s join frames f on f.session_id = s.id where {where} "
            "order by f.ts, f.seq",
            key,
        )
    c2s = [text.encode() for direction, text in rows if direction == "c2s"]
    s2c = [text.encode() for direction, text in rows if direction == "s2c"]
    return c2s, s2c


def check(fleet: Any, client: WireClient, sealer: Sealer) -> None:
    c2s, s2c = recorded(fleet, client, sealer)
    assert c2s == client.sent, client.name
    assert set(client.received) <= set(s2c), client.name  # the stdio server may send more (GET stream)
    answers = [m for m in s2c if b'"id"' in m and b'"method"' not in m]
    assert set(answers) <= set(client.received), client.name


async def run_client(client: WireClient, calls: int) -> None:
    await client.initialize()
    for n in range(calls):
        if "everything" in client.url:
            result = await client.call("echo", {"message": f"{client.name}-{n}"})
        else:
            result = await client.call("echo", {"text": f"{client.name}-{n}"})
        assert f"{client.name}-{n}" in json.dumps(result)
    await client.close()


def make_clients(http: ClientSession, fleet: Any, prefix: str, counts: dict[str, int]) -> list[WireClient]:
    token = fleet.token
    clients: list[WireClient] = []
    kinds = {
        "pass": (WireClient, "/servers/everything/mcp"),
        "stdio": (WireClient, "/servers/echo/mcp"),
        "legacy": (LegacyClient, "/servers/echo/sse"),
        "modern": (ModernClient, "/servers/demo/mcp"),
    }
    for kind, count in counts.items():
        cls, path = kinds[kind]
        clients += [cls(http, fleet.url + path, token, f"{prefix}-{kind}-{n}") for n in range(count)]
    return clients


def test_fifty_clients_through_haproxy_each_recorded_whole(fleet: Any) -> None:
    sealer = Sealer(read_keys(str(fleet.key_file)))

    async def main() -> list[WireClient]:
        connector = TCPConnector(limit=0)
        async with ClientSession(connector=connector, timeout=ClientTimeout(total=120)) as http:
            clients = make_clients(http, fleet, "c", {"pass": 15, "stdio": 12, "legacy": 11, "modern": 12})
            outcomes = await asyncio.gather(*(run_client(c, 4) for c in clients), return_exceptions=True)
        failures = [(c.name, repr(o)) for c, o in zip(clients, outcomes, strict=True) if o is not None]
        assert failures == []
        return clients

    clients = asyncio.run(main())
    assert len(clients) == 50
    time.sleep(0.5)  # the replicas' writers commit within ~0.1 s
    for client in clients:
        check(fleet, client, sealer)
    replicas = {
        r for (r,) in db_rows(fleet, "select distinct replica from sessions where replica is not null")
    }
    assert replicas == {"replica-1", "replica-2", "replica-3"}
    assert not any(b"Session not found" in m for c in clients for m in c.received)


def test_a_replica_killed_mid_run_loses_only_its_stdio_sessions(fleet: Any) -> None:
    sealer = Sealer(read_keys(str(fleet.key_file)))

    async def main() -> tuple[list[WireClient], str, dict[str, str]]:
        async with ClientSession(connector=TCPConnector(limit=0), timeout=ClientTimeout(total=60)) as http:
            clients = make_clients(http, fleet, "k", {"pass": 9, "stdio": 9})
            for client in clients:
                await client.initialize()
                await client.call(
                    "echo", {"message" if "everything" in client.url else "text": f"{client.name}-a"}
                )
            placed = {c.name: (sealer.open(c.sid or "").replica or "") for c in clients if "/echo/" in c.url}
            victim = sorted(set(placed.values()))[0]
            await asyncio.sleep(0.5)  # what the victim forwarded is committed
            pid = int((fleet.home / f"{victim}.pid").read_text())
            os.kill(pid, signal.SIGKILL)
            outcomes: dict[str, str] = {}
            for client in clients:
                key = "message" if "everything" in client.url else "text"
                try:
                    await client.call("echo", {key: f"{client.name}-b"})
                    outcomes[client.name] = "ok"
                except SessionGone as exc:
                    outcomes[client.name] = f"404 {exc}"
            return clients, victim, outcomes

    if True:
        clients, victim, outcomes = asyncio.run(main())
        placed = {c.name: (sealer.open(c.sid or "").replica or "") for c in clients if "/echo/" in c.url}
        for client in clients:
            if "everything" in client.url:
                assert outcomes[client.name] == "ok", client.name  # the client noticed nothing
            elif placed[client.name] == victim:
                assert outcomes[client.name].startswith("404") and "replica" in outcomes[client.name]
            else:
                assert outcomes[client.name] == "ok", client.name
        time.sleep(0.5)
        for client in clients:
            if "everything" in client.url or placed[client.name] != victim:
                check(fleet, client, sealer)
        # The other replicas' heartbeat closes the victim's running sessions.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            running = db_rows(
                fleet, "select count(*) from sessions where replica = %s and status = 'running'", victim
            )
            if running == [(0,)]:
                break
            time.sleep(0.5)
        victims = [c.name for c in clients if "/echo/" in c.url and placed[c.name] == victim]
        statuses = db_rows(
            fleet, "select client_name, status, error from sessions where client_name = any(%s)", victims
        )
        assert victims and {s for _, s, _ in statuses} == {"interrupted"}
        assert all(victim in (e or "") for _, _, e in statuses)


def test_a_replica_that_exits_before_answering_is_said_at_once(tmp_path: Path) -> None:
    # A replica that cannot listen (its port taken by something else) used to leave `up`
    # waiting out its 60 s, then say only that /health did not answer.
    deploy = load_deploy()
    log = tmp_path / "replica-1.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys; print('error: cannot listen on 127.0.0.1:1: taken'); sys.exit(2)",
            ],
            stdout=out,
            stderr=out,
        )
    started = time.monotonic()
    with pytest.raises(deploy.FleetError) as failed:
        deploy.wait_healthy([f"http://127.0.0.1:{port_run(1)}"], timeout=60, processes=[(process, log)])
    assert time.monotonic() - started < 30  # said when it exits, not when the wait runs out
    message = str(failed.value)
    assert "exited with status 2 before it answered" in message
    assert "cannot listen on 127.0.0.1:1: taken" in message and str(log) in message
