"""`record --url` benchmark: a stdio client in front of a streamable HTTP server, through mcptape.

The server is a small aiohttp app in this process answering each POST with JSON at once.
Prints, from one run, the median round trip of sequential pings and the pipelined rate
(pings written at once, answers read back) through `mcptape record --url` of this tree,
and of a second source tree (``--vs DIR``, e.g. a worktree of the last release) in the
same rounds, with the ratio of the two. These machines are noisy: read the ratios.

    .venv/bin/python bench/bench_record_url.py [--pings 1000] [--burst 3000] [--vs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def serve_in_thread() -> str:
    """The server, on a free loopback port, on a loop of its own; its URL."""
    ready: list[str] = []
    started = threading.Event()

    async def mcp(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.Response(status=405)
        body = await request.read()
        if b'"id"' not in body:
            return web.Response(status=202)
        rid = body.split(b'"id":', 1)[1].split(b",", 1)[0]
        headers = {"Mcp-Session-Id": "bench"} if b'"initialize"' in body else {}
        answer = b'{"jsonrpc":"2.0","id":' + rid + b',"result":{}}'
        return web.Response(body=answer, content_type="application/json", headers=headers)

    async def main() -> None:
        app = web.Application()
        app.router.add_route("*", "/mcp", mcp)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ready.append(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/mcp")  # type: ignore[union-attr]
        started.set()
        await asyncio.Event().wait()

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    started.wait(10)
    return ready[0]


def run(src: Path, url: str, db: Path, pings: int, burst: int) -> tuple[float, float]:
    """Median round trip (ms) and pipelined pings/s through `record --url` run from ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcptape", "record", "--db", str(db), "--url", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.flush()
    proc.stdout.readline()
    proc.stdin.write(INITIALIZED)
    times = []
    for i in range(1, pings + 1):
        t0 = time.perf_counter()
        proc.stdin.write(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i)
        proc.stdin.flush()
        proc.stdout.readline()
        times.append(time.perf_counter() - t0)
    lines = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (pings + i) for i in range(1, burst + 1)
    )
    t0 = time.perf_counter()
    writer = threading.Thread(target=lambda: (proc.stdin.write(lines), proc.stdin.flush()))  # type: ignore[union-attr]
    writer.start()
    for _ in range(burst):
        proc.stdout.readline()
    rate = burst / (time.perf_counter() - t0)
    writer.join()
    proc.stdin.close()
    proc.wait(30)
    return statistics.median(times) * 1000, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pings", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vs", type=Path, help="another source tree (its mcptape package) to compare")
    args = parser.parse_args()
    url = serve_in_thread()
    trees = {"tree": ROOT} | ({"vs": args.vs.resolve()} if args.vs else {})
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):  # alternated, so both see the same machine
            for name, src in trees.items():
                results[name].append(run(src, url, Path(tmp) / f"{name}{r}.db", args.pings, args.burst))
    rt = {name: statistics.median(x[0] for x in rs) for name, rs in results.items()}
    rate = {name: statistics.median(x[1] for x in rs) for name, rs in results.items()}
    for name in trees:
        print(f"{name:5} round trip {rt[name]:.3f} ms   pipelined {rate[name]:,.0f} pings/s")
    if args.vs:
        print(
            f"tree/vs: round trip {rt['tree'] / rt['vs']:.2f}x   pipelined {rate['tree'] / rate['vs']:.2f}x"
        )


if __name__ == "__main__":
    main()
