"""Gateway benchmark: server-everything over streamable HTTP, reached directly vs through `mcptape proxy`.

One run measures, with the same raw aiohttp client (no SDK on the hot path):

- the median round-trip of sequential `tools/call echo` requests on one session;
- calls/s with one session and with eight concurrent sessions;

directly against the server's /mcp endpoint and through the gateway (recording on,
an HTTP upstream entry), and prints the ratios. These machines are noisy: compare the
ratios, not absolute times. The steadiest figure under load is the last one: the CPU
the gateway process spends per forwarded call (its main loop and its writer thread),
as a ratio to what this benchmark's own client spends per call on the direct path
(one aiohttp request and its answer read back), read from /proc.

With ``--bridges``, also the stdio-to-HTTP job: server-everything over stdio served as
streamable HTTP by mcptape's gateway and, when given, by the npm ``mcp-proxy`` and the
PyPI ``mcp-proxy`` bridges (paths to their executables), as ratios to mcptape.

    .venv/bin/python bench/bench_gateway.py [--calls 300] [--sessions 8] [--rounds 3]
        [--bridges] [--npm-mcp-proxy PATH] [--pypi-mcp-proxy PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
ENTRY = (
    ROOT
    / "tests"
    / "npm"
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
ACCEPT = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    # The gateway never forwards Accept-Encoding (it parses a copy of every stream); ask
    # the direct server for the same identity encoding, or compression skews the baseline.
    "Accept-Encoding": "identity",
}


def process_cpu(pid: int | None = None) -> float:
    """CPU seconds (user + system) of this process, or of process ``pid`` from /proc."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


DRAINS: set[asyncio.Task[None]] = set()


async def read_answer(response: aiohttp.ClientResponse, rid: int) -> None:
    """Return as soon as the answer arrives (as an SDK client does); drain the rest meanwhile,
    so the connection goes back to the pool instead of being cut and reopened."""
    needle = f'"id":{rid}'.encode()
    if not response.headers.get("Content-Type", "").startswith("text/event-stream"):
        body = await response.read()
        if needle not in body:
            raise SystemExit(f"no answer to request {rid}: HTTP {response.status} {body[:200]!r}")
        return
    async for line in response.content:
        if line.startswith(b"data:") and needle in line:
            break
    else:
        raise SystemExit(f"the stream ended without an answer to request {rid}")
    task = asyncio.ensure_future(drain(response))
    DRAINS.add(task)
    task.add_done_callback(DRAINS.discard)


async def drain(response: aiohttp.ClientResponse) -> None:
    with contextlib.suppress(aiohttp.ClientError):
        await response.read()


class Session:
    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http, self.url, self.headers = http, url, dict(ACCEPT)
        self.next_id = 1

    async def open(self) -> None:
        async with self.http.post(self.url, json=INIT, headers=self.headers) as r:
            self.headers["Mcp-Session-Id"] = r.headers["Mcp-Session-Id"]
            self.headers["MCP-Protocol-Version"] = "2025-06-18"
            await read_answer(r, 0)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with self.http.post(self.url, json=note, headers=self.headers) as r:
            await r.read()

    async def call(self) -> None:
        rid, self.next_id = self.next_id, self.next_id + 1
        body = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "x" * 64}},
        }
        r = await self.http.post(self.url, data=json.dumps(body).encode(), headers=self.headers)
        await read_answer(r, rid)

    async def close(self) -> None:
        async with self.http.delete(self.url, headers=self.headers) as r:
            await r.read()


class Target:
    """The sessions a path is measured on, opened once and kept for every round (steady state)."""

    def __init__(self, http: aiohttp.ClientSession, url: str, sessions: int) -> None:
        self.one = Session(http, url)
        self.many = [Session(http, url) for _ in range(sessions)]

    async def open(self) -> None:
        await self.one.open()
        await asyncio.gather(*(s.open() for s in self.many))
        # Warm up: behind a stdio upstream each session has a server process of its own,
        # whose start-up and JIT warm-up are not what a call costs.
        for _ in range(100):
            await self.one.call()
            await asyncio.gather(*(s.call() for s in self.many))

    async def measure(self, calls: int) -> tuple[float, float, float]:
        """(median round-trip ms on one session, calls/s on one session, calls/s over all sessions)."""
        times = []
        t_all = time.perf_counter()
        for _ in range(calls):
            t0 = time.perf_counter()
            await self.one.call()
            times.append(time.perf_counter() - t0)
        single_rate = calls / (time.perf_counter() - t_all)

        async def run(s: Session) -> None:
            for _ in range(calls):
                await s.call()

        t0 = time.perf_counter()
        await asyncio.gather(*(run(s) for s in self.many))
        multi_rate = len(self.many) * calls / (time.perf_counter() - t0)
        return statistics.median(times) * 1000, single_rate, multi_rate

    async def close(self) -> None:
        await asyncio.gather(self.one.close(), *(s.close() for s in self.many), return_exceptions=True)


Figures = tuple[float, float, float]


def alternate(
    urls: dict[str, str], calls: int, sessions: int, rounds: int, pids: dict[str, int | None]
) -> tuple[dict[str, Figures], dict[str, float]]:
    """Measure every path in turn, ``rounds`` times, on sessions kept open throughout.

    Returns each path's median figures and, for the paths named in ``pids``, the median
    CPU seconds per call of that process (None: this benchmark's own process).
    """

    async def go() -> tuple[dict[str, list[Figures]], dict[str, list[float]]]:
        runs: dict[str, list[Figures]] = {name: [] for name in urls}
        cpu: dict[str, list[float]] = {name: [] for name in pids}
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            targets = {name: Target(http, url, sessions) for name, url in urls.items()}
            for target in targets.values():
                await target.open()
            try:
                for _ in range(rounds):
                    for name, target in targets.items():
                        before = process_cpu(pids[name]) if name in pids else 0.0
                        runs[name].append(await target.measure(calls))
                        if name in pids:
                            cpu[name].append((process_cpu(pids[name]) - before) / (calls * (1 + sessions)))
            finally:
                for target in targets.values():
                    await target.close()
        return runs, cpu

    runs, cpu = asyncio.run(go())
    figures = {
        name: tuple(statistics.median(r[i] for r in rs) for i in range(3)) for name, rs in runs.items()
    }
    return figures, {name: statistics.median(v) for name, v in cpu.items()}  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bridges", action="store_true", help="also the stdio-to-HTTP comparison")
    parser.add_argument("--npm-mcp-proxy", metavar="PATH", help="the npm mcp-proxy executable")
    parser.add_argument("--pypi-mcp-proxy", metavar="PATH", help="the PyPI mcp-proxy executable")
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None or not ENTRY.exists():
        raise SystemExit("needs node and tests/npm installed (cd tests/npm && npm ci)")
    port = free_port()
    server = subprocess.Popen(
        [node, str(ENTRY), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tmp = Path(tempfile.mkdtemp())
    gateway = None
    floors: list[subprocess.Popen[bytes]] = []
    try:
        wait_port(port)
        direct_url = f"http://127.0.0.1:{port}/mcp"
        config = tmp / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"everything": {"url": direct_url, "type": "http"}}}))
        gw_port = free_port()
        gateway = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcptape",
                "proxy",
                "--no-auth",
                "--config",
                str(config),
                "--listen",
                f"127.0.0.1:{gw_port}",
                "--db",
                str(tmp / "bench.db"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_port(gw_port)
        through_url = f"http://127.0.0.1:{gw_port}/servers/everything/mcp"
        urls = {"direct": direct_url, "gateway": through_url}
        for mode in ("splice", "aiohttp"):
            floor_port = free_port()
            floors.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(ROOT / "bench" / "floor_proxies.py"),
                        mode,
                        str(floor_port),
                        str(port),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            wait_port(floor_port)
            urls[mode] = f"http://127.0.0.1:{floor_port}/mcp"
        # Node's JIT warms up over the first thousands of calls, and neighbours load the
        # machine: warm up on every path, then alternate and keep each figure's median.
        figures, cpu = alternate(
            urls, args.calls, args.sessions, args.rounds, {"direct": None, "gateway": gateway.pid}
        )
    finally:
        if gateway is not None:
            gateway.send_signal(signal.SIGTERM)
            gateway.wait(30)
        for floor in floors:
            floor.terminate()
            floor.wait(10)
        server.terminate()
        server.wait(10)
    direct = figures["direct"]
    sides = ("gateway", "aiohttp", "splice")
    print("ratios to direct; 'aiohttp' and 'splice' are the floors of bench/floor_proxies.py")
    print(f"{'':26}{'direct':>9}" + "".join(f"{s:>9}{'ratio':>7}" for s in sides))
    rows = (("round-trip median (ms)", 0, "{:9.3f}"), ("calls/s, 1 session", 1, "{:9.0f}"))
    rows += ((f"calls/s, {args.sessions} sessions", 2, "{:9.0f}"),)
    for label, i, fmt in rows:
        line = f"{label:26}" + fmt.format(direct[i])
        for side in sides:
            line += fmt.format(figures[side][i]) + f"{figures[side][i] / direct[i]:6.2f}x"
        print(line)
    client_cpu, gateway_cpu = cpu["direct"], cpu["gateway"]
    print(
        f"CPU per call: this client's on the direct path {client_cpu * 1e6:.0f} us,"
        f" the gateway process's {gateway_cpu * 1e6:.0f} us ({gateway_cpu / client_cpu:.2f}x)"
    )
    for i, what in ((0, "round-trip"), (2, f"{args.sessions}-session calls/s")):
        print(f"gateway over the aiohttp floor, {what}: {figures['gateway'][i] / figures['aiohttp'][i]:.2f}x")
    print("targets: round-trip <= 1.2x direct; calls/s with eight sessions >= 0.8x direct")
    if args.bridges:
        bridges(node, args)


def bridges(node: str, args: argparse.Namespace) -> None:
    """stdio-to-HTTP: the same stdio server behind mcptape and the bridges, measured in alternation."""
    stdio = [node, str(ENTRY), "stdio"]
    tmp = Path(tempfile.mkdtemp())
    config = tmp / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {"command": stdio[0], "args": stdio[1:]}}}))
    ports = {name: free_port() for name in ("mcptape proxy", "npm mcp-proxy", "PyPI mcp-proxy")}
    argvs: dict[str, list[str]] = {
        "mcptape proxy": [
            sys.executable,
            "-m",
            "mcptape",
            "proxy",
            "--no-auth",
            "--config",
            str(config),
            "--listen",
            f"127.0.0.1:{ports['mcptape proxy']}",
            "--db",
            str(tmp / "bench.db"),
        ]
    }
    urls = {"mcptape proxy": f"http://127.0.0.1:{ports['mcptape proxy']}/servers/everything/mcp"}
    if args.npm_mcp_proxy:
        port = ports["npm mcp-proxy"]
        argvs["npm mcp-proxy"] = [
            args.npm_mcp_proxy,
            *("--host", "127.0.0.1", "--port", str(port), "--server", "stream", "--"),
            *stdio,
        ]
        urls["npm mcp-proxy"] = f"http://127.0.0.1:{port}/mcp"
    if args.pypi_mcp_proxy:
        port = ports["PyPI mcp-proxy"]
        argvs["PyPI mcp-proxy"] = [
            args.pypi_mcp_proxy,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--",
            *stdio,
        ]
        urls["PyPI mcp-proxy"] = f"http://127.0.0.1:{port}/mcp"
    procs = [
        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for argv in argvs.values()
    ]
    try:
        for name in urls:
            wait_port(ports[name])
        results, _ = alternate(urls, args.calls, args.sessions, args.rounds, {})
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    ours = results["mcptape proxy"]
    print()
    print(
        f"stdio -> HTTP{'':15}{'round-trip ms':>14}{'calls/s 1':>11}{f'calls/s {args.sessions}':>11}   ratio to mcptape"
    )
    for name, (rt, one, many) in results.items():
        print(
            f"{name:28}{rt:14.3f}{one:11.0f}{many:11.0f}   {rt / ours[0]:.2f}x rt, {many / ours[2]:.2f}x calls/s"
        )
    print(
        "mcptape starts one server process per session (opened before the clock starts); the npm bridge serves"
    )
    print("every session from one")
    print("target: mcptape ahead of both bridges on round-trip and on calls/s")


if __name__ == "__main__":
    main()
