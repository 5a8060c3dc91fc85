"""`mcptape call` against the TypeScript SDK's own one-shot client, in the same run.

1. One-shot `tools/list` against server-everything (stdio): `mcptape call` (recording
   on, and with --no-record) vs bench/oneshot_client.mjs, a minimal client written
   with @modelcontextprotocol/sdk (connect, list, close). Median wall time of
   alternating runs; ratio to the SDK client (target: no slower, ratio <= 1).
2. A `--script` of 20 calls on one connection vs 20 one-shot calls (20 x the median
   one-shot time measured in part 1, for each client).

A bare client (Python, raw pipes: spawn, initialize, tools/list, SIGTERM at once, no
mcptape) gives the floor every client pays: the server's own start. Each client's time
above that floor is printed too, since the server's start (about 0.5 s for
server-everything on Node) dominates every one-shot and bounds any ratio.

With ``--inspector DIR`` the reference Inspector's CLI joins both parts (target: a
one-shot `mcptape call` at most 1/5 of it; the script at least 20x faster than 20
Inspector one-shots). It needs Node >= 22.19, which the npm registry ships as a package;
install both into a scratch directory, outside the repository:

    mkdir /tmp/insp && cd /tmp/insp && echo '{"private": true}' > package.json
    npm install node@22 @modelcontextprotocol/inspector

    .venv/bin/python bench/bench_call.py [--runs 7] [--inspector /tmp/insp]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPM = ROOT / "tests" / "npm" / "node_modules" / "@modelcontextprotocol"
SERVER = NPM / "server-everything" / "dist" / "index.js"
SDK = NPM / "sdk"
MCPTAPE = [sys.executable, "-m", "mcptape", "call"]
BARE = """
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def ask(i, method, params=None):
    msg = {"jsonrpc": "2.0", "id": i, "method": method, **({"params": params} if params else {})}
    p.stdin.write(json.dumps(msg).encode() + b"\\n"); p.stdin.flush()
    while json.loads(p.stdout.readline()).get("id") != i:
        pass
info = {"name": "bare", "version": "1"}
ask(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\\n')
ask(2, "tools/list")
p.terminate(); p.wait()
"""


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Wall time of one run, in ms; the run must succeed."""
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return (time.perf_counter() - t0) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--inspector", metavar="DIR", help="a directory with node@22 and the Inspector installed"
    )
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None or not SERVER.exists() or not SDK.exists():
        sys.exit("bench_call: needs node and tests/npm installed (cd tests/npm && npm ci)")
    server = [node, str(SERVER), "stdio"]
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        script = Path(tmp) / "steps.json"
        steps = [{"method": "tools/list"}] + [
            {"method": "tools/call", "toolName": "echo", "toolArgs": {"message": f"m{i}"}} for i in range(19)
        ]
        script.write_text(json.dumps(steps))
        commands = {
            "bare client (floor)": [sys.executable, "-c", BARE, *server],
            "sdk one-shot": [node, str(ROOT / "bench" / "oneshot_client.mjs"), str(SDK), *server],
            "mcptape call": [*MCPTAPE, "-m", "tools/list", "--db", db, "--", *server],
            "mcptape call --no-record": [*MCPTAPE, "-m", "tools/list", "--no-record", "--", *server],
            "mcptape call --script (20)": [*MCPTAPE, "--script", str(script), "--db", db, "--", *server],
        }
        envs: dict[str, dict[str, str] | None] = {name: None for name in commands}
        if args.inspector:
            bin_dir = Path(args.inspector) / "node_modules" / ".bin"
            inspector = [
                str(bin_dir / "mcp-inspector"),
                "--cli",
                "node",
                str(SERVER),
                "stdio",
                "--method",
                "tools/list",
            ]
            commands["inspector --cli one-shot"] = inspector
            # The Inspector needs Node >= 22.19: the registry's node package, first on PATH.
            envs["inspector --cli one-shot"] = {
                **os.environ,
                "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            }
        for name, argv in commands.items():  # warm the page cache and the database
            timed(argv, envs[name])
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                samples[name].append(timed(argv, envs[name]))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    sdk = medians["sdk one-shot"]
    print(f"one-shot tools/list against server-everything, median of {args.runs} alternating runs")
    print(f"  {'sdk one-shot':<28}{sdk:8.1f} ms   (baseline)")
    for name in ("mcptape call", "mcptape call --no-record"):
        print(
            f"  {name:<28}{medians[name]:8.1f} ms   {medians[name] / sdk:.2f}x the SDK client (target <= 1.0x)"
        )
    if "inspector --cli one-shot" in medians:
        inspector_ms = medians["inspector --cli one-shot"]
        print(f"  {'inspector --cli one-shot':<28}{inspector_ms:8.1f} ms")
        print(f"  mcptape call / inspector: {medians['mcptape call'] / inspector_ms:.2f} (target <= 0.20)")
    floor = medians["bare client (floor)"]
    print(f"  {'bare client (floor)':<28}{floor:8.1f} ms   the server's own start and exchange")
    print("time above the floor (what the client itself costs)")
    for name in ("sdk one-shot", "mcptape call", "mcptape call --no-record", "inspector --cli one-shot"):
        if name in medians:
            above = medians[name] - floor
            print(
                f"  {name:<28}{above:8.1f} ms   {above / max(medians['sdk one-shot'] - floor, 1e-9):.2f}x the SDK's"
            )
    if "inspector --cli one-shot" in medians:
        above_inspector = medians["inspector --cli one-shot"] - floor
        print(
            f"  mcptape call / inspector above the floor: {(medians['mcptape call'] - floor) / above_inspector:.2f}"
        )
    script_ms = medians["mcptape call --script (20)"]
    print("20 calls on one connection (--script) vs 20 one-shots (20 x the one-shot median)")
    print(f"  {'mcptape call --script (20)':<28}{script_ms:8.1f} ms")
    for name in ("sdk one-shot", "mcptape call", "inspector --cli one-shot"):
        if name not in medians:
            continue
        twenty = 20 * medians[name]
        print(f"  {'20 x ' + name:<28}{twenty:8.1f} ms   script is {twenty / script_ms:.1f}x faster")


if __name__ == "__main__":
    main()
