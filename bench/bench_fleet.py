"""A fleet's throughput: calls/s through 1, 2 and 3 replicas behind HAProxy, and writers into one PostgreSQL.

    .venv/bin/python bench/bench_fleet.py [--seconds 8] [--clients 16]

Starts what deploy/fleet.py starts (PostgreSQL, three ``mcptape proxy`` replicas) and the
reference server-everything over streamable HTTP as the one upstream, then measures, in
the same run: the upstream directly (the baseline), one replica directly, and HAProxy
in front of one, two and three replicas (deploy/haproxy.cfg), each with ``--clients``
sessions calling ``echo`` back to back. Figures are per core too: on a 2-core machine
the replicas, HAProxy, PostgreSQL, the upstream and the clients share two cores, so
more replicas cannot add throughput there; the ratios say what each hop costs.

Then the writer: ``mcptape``'s batched writer putting 60,000 frames into one PostgreSQL
from one process, and from three processes at once (as three replicas do), against
psycopg's own COPY of the same rows from one process.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from aiohttp import ClientSession, TCPConnector

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EVERYTHING = ROOT / "tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
MCPTAPE = str(Path(sys.executable).parent / "mcptape")
CORES = os.cpu_count() or 1


def load_deploy() -> Any:
    spec = importlib.util.spec_from_file_location("mcptape_deploy_fleet", ROOT / "deploy" / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


async def one_client(http: ClientSession, url: str, token: str | None, until: float) -> int:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    async with http.post(url, data=body, headers=headers) as r:
        await r.read()
        headers["Mcp-Session-Id"] = r.headers["Mcp-Session-Id"]
    calls = 0
    while time.monotonic() < until:
        calls += 1
        params = {"name": "echo", "arguments": {"message": f"m{calls}"}}
        body = orjson.dumps({"jsonrpc": "2.0", "id": calls, "method": "tools/call", "params": params})
        async with http.post(url, data=body, headers=headers) as r:
            assert r.status == 200, r.status
            await r.read()
    async with http.delete(url, headers=headers):
        pass
    return calls


async def rate(url: str, token: str | None, clients: int, seconds: float) -> float:
    async with ClientSession(connector=TCPConnector(limit=0)) as http:
        await one_client(http, url, token, time.monotonic() + 0.5)  # warm up
        start = time.monotonic()
        counts = await asyncio.gather(
            *(one_client(http, url, token, start + seconds) for _ in range(clients))
        )
        return sum(counts) / (time.monotonic() - start)


def haproxy_for(deploy: Any, fleet: Any, ports: list[int], home: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = fleet.port  # the replicas allow this Host (--allow-host), as deploy/fleet.py starts them
    servers = "\n".join(f"    server replica-{n} 127.0.0.1:{p}" for n, p in enumerate(ports, 1))
    text = (
        (ROOT / "deploy/haproxy.cfg").read_text().replace("{port}", str(port)).replace("{servers}", servers)
    )
    cfg = home / f"haproxy-{len(ports)}.cfg"
    cfg.write_text(text)
    process = subprocess.Popen(
        [shutil.which("haproxy") or "/usr/sbin/haproxy", "-db", "-f", str(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deploy.wait_healthy([f"http://127.0.0.1:{port}"])
    return process, port


# -- the writer ------------------------------------------------------------------------------

FRAMES = 60_000


def write_frames(db: str, n: int, queue: Any) -> None:
    from mcptape.store import open_store
    from mcptape.wire.frame import Frame

    with open_store(db) as store:
        sid = store.create_session(mode="proxy", name="bench")
        writer = store.writer()
        start = time.perf_counter()
        for seq in range(1, n + 1):
            text = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}' % seq
            writer.add_frame(sid, seq, Frame(text, "c2s"))
            if seq % 2000 == 0 and writer.over_limit:
                writer.wait_below_limit()
        writer.close()
        queue.put((start, time.perf_counter()))


def copy_frames(fleet: Any, n: int) -> float:
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=fleet.pg_port, user="postgres", dbname="mcptape") as conn:
        conn.execute(
            "INSERT INTO sessions (id, mode, started_at, status) VALUES ('copybench', 'proxy', 0, 'ok')"
        )
        now = time.time()
        start = time.perf_counter()
        with conn.cursor().copy(
            "COPY frames (session_id, seq, ts, direction, origin, kind, method, rpc_id, size, text) FROM STDIN"
        ) as copy:
            for seq in range(1, n + 1):
                text = (
                    '{"jsonrpc":"2.0","id":' + str(seq) + ',"method":"tools/call","params":{"name":"echo"}}'
                )
                copy.write_row(
                    (
                        "copybench",
                        seq,
                        now,
                        "c2s",
                        "client",
                        "request",
                        "tools/call",
                        str(seq),
                        len(text),
                        text,
                    )
                )
        conn.commit()
        return n / (time.perf_counter() - start)


def writers(db: str, processes: int) -> float:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [
        context.Process(target=write_frames, args=(db, FRAMES // processes, queue)) for _ in range(processes)
    ]
    for w in workers:
        w.start()
    spans = [queue.get(timeout=300) for _ in workers]
    for w in workers:
        w.join()
    return (FRAMES // processes * processes) / (max(e for _, e in spans) - min(s for s, _ in spans))


def fake_upstream(port: int) -> None:
    """tests/helpers' small streamable HTTP server (JSON answers, session ids), serving until killed."""
    from tests.helpers.inproc_gateway import FakeUpstream

    async def serve() -> None:
        upstream = FakeUpstream()
        await upstream.start(port)
        await asyncio.Event().wait()

    asyncio.run(serve())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--upstream",
        choices=["fake", "everything"],
        default="fake",
        help="fake: a small aiohttp server answering JSON (so the gateway, not the upstream, is measured); "
        "everything: the reference server-everything (Node), ~100 calls/s here",
    )
    args = parser.parse_args()
    deploy = load_deploy()
    home = Path(tempfile.mkdtemp(prefix="mcptape-bench-fleet-"))
    home.chmod(0o755)
    upstream_port = free_port()
    upstream: Any
    if args.upstream == "everything":
        upstream = subprocess.Popen(
            [shutil.which("node") or "node", str(EVERYTHING), "streamableHttp"],
            env={**os.environ, "PORT": str(upstream_port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    else:
        upstream = multiprocessing.get_context("spawn").Process(target=fake_upstream, args=(upstream_port,))
        upstream.start()
    config = home / "servers.json"
    upstream_url = f"http://127.0.0.1:{upstream_port}/mcp"
    config.write_text(json.dumps({"mcpServers": {"everything": {"type": "http", "url": upstream_url}}}))
    fleet = deploy.Fleet(home, free_port(), free_port(), 3)
    balancers: list[subprocess.Popen[bytes]] = []
    try:
        deploy.up(fleet, str(config), MCPTAPE)
        token = fleet.token
        results: dict[str, float] = {}
        results["direct"] = asyncio.run(rate(upstream_url, None, args.clients, args.seconds))
        one = f"http://127.0.0.1:{fleet.replica_port(1)}/servers/everything/mcp"
        results["1 replica, no balancer"] = asyncio.run(rate(one, token, args.clients, args.seconds))
        ports = [fleet.replica_port(n) for n in range(1, 4)]
        deploy._kill_pidfile(home / "haproxy.pid")  # the bench's own balancers take its port in turn
        for count in (1, 2, 3):
            process, port = haproxy_for(deploy, fleet, ports[:count], home)
            balancers.append(process)
            url = f"http://127.0.0.1:{port}/servers/everything/mcp"
            results[f"HAProxy + {count} replica(s)"] = asyncio.run(
                rate(url, token, args.clients, args.seconds)
            )
            process.terminate()
            process.wait()
        print(
            f"calls/s, {args.clients} sessions calling echo back to back, {CORES} cores, upstream: {args.upstream}"
        )
        base = results["direct"]
        for name, value in results.items():
            print(
                f"  {name:28s} {value:8.0f} calls/s  {value / CORES:7.0f} per core  {value / base:5.2f}x direct"
            )
        print(
            f"  3 replicas vs 1 behind HAProxy: {results['HAProxy + 3 replica(s)'] / results['HAProxy + 1 replica(s)']:.2f}x"
        )
        copy = copy_frames(fleet, FRAMES)
        alone = writers(fleet.db, 1)
        three = writers(fleet.db, 3)
        print(f"writer into one PostgreSQL ({FRAMES} frames, partitioned frames table)")
        print(f"  psycopg COPY, one process   {copy:8.0f} frames/s (baseline)")
        print(f"  mcptape writer, 1 process   {alone:8.0f} frames/s  {alone / copy:5.2f}x COPY")
        print(
            f"  mcptape writer, 3 processes {three:8.0f} frames/s  {three / copy:5.2f}x COPY (all three together)"
        )
    finally:
        for process in balancers:
            if process.poll() is None:
                process.terminate()
        deploy.down(fleet)
        upstream.terminate()
        upstream.join() if hasattr(upstream, "join") else upstream.wait()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
