"""Slow-client benchmark: what a client that reads slower than its server writes gets through the gateway.

The scenario of issue 19: a tool streams COUNT notifications of about SIZE bytes with a
sampling request in the middle (the call completes only once the client answers it),
and the client reads its POST stream at RATE bytes/s; over legacy SSE the same flood
with 20 quick echo calls beside it. Printed: events delivered of those sent, event-number
gaps, whether the sampling request and every answer arrived, the wall time against the
time the bytes take at RATE (the baseline: a client reading that slowly cannot be
faster), and the gateway's peak RSS (VmHWM) against its peak before the floods.

    .venv/bin/python bench/bench_slow_client.py [--count 8000] [--size 3000] [--rate 4e6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.slow_reader import legacy_flood, streamable_flood  # noqa: E402

FLOOD = [sys.executable, str(ROOT / "tests" / "servers" / "flood.py")]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_gateway(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    config = tmp / "config.json"
    config.write_text(json.dumps({"mcpServers": {"flood": {"command": FLOOD[0], "args": FLOOD[1:]}}}))
    argv = [sys.executable, "-m", "mcptape", "proxy", "--no-auth", "--listen", "127.0.0.1:0"]
    argv += ["--config", str(config), "--db", str(tmp / "bench.db")]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert proc.stderr is not None
    text = ""
    while "ready" not in text:
        line = proc.stderr.readline().decode()
        if not line:
            raise SystemExit(f"the gateway did not start: {text}")
        text += line
    found = re.search(r"listening on (http://\S+)", text)
    assert found is not None
    os.set_blocking(proc.stderr.fileno(), False)
    return proc, found.group(1)


async def scenario(
    label: str, client: Any, wanted: set[int], count: int, floor: float, timeout: float
) -> None:
    """Run one slow client and print what it got."""
    started = time.monotonic()
    try:
        seen = await asyncio.wait_for(client, timeout)
    except TimeoutError:
        print(f"{label:<18} not every answer within {timeout:g} s")
        return
    took = time.monotonic() - started
    print(
        f"{label:<18} delivered {seen.notifications:>5}/{count}  gaps {seen.gaps():>5}  "
        f"sampling {seen.sampling}  answers {len(seen.answers):>2}  errors {len(seen.errors)}  "
        f"{'complete' if wanted <= set(seen.answers) else 'INCOMPLETE'}  "
        f"{took:6.1f} s = {took / floor:4.2f}x the reading time"
    )


async def scenarios(base: str, count: int, size: int, rate: float, timeout: float) -> None:
    floor = count * (size + 150) / rate  # the baseline: the bytes at the client's rate
    flood = streamable_flood(f"{base}/servers/flood/mcp", count, size, rate)
    await scenario("streamable HTTP", flood, {1}, count, floor, timeout)
    legacy = legacy_flood(base, "flood", count, size, rate, 20)
    await scenario("legacy SSE", legacy, {1, *range(100, 120)}, count, floor, timeout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=8000)
    parser.add_argument("--size", type=int, default=3000)
    parser.add_argument("--rate", type=float, default=4e6, help="bytes/s the client reads")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gateway, base = start_gateway(Path(tmp))
        try:
            # A small flood first, read at full speed: the store is open and every module loaded.
            asyncio.run(streamable_flood(f"{base}/servers/flood/mcp", 20, args.size, 1e9))
            idle = peak_rss_mib(gateway.pid)
            asyncio.run(scenarios(base, args.count, args.size, args.rate, args.timeout))
            peak = peak_rss_mib(gateway.pid)
        finally:
            gateway.terminate()
            gateway.wait(30)
    flood_mib = args.count * args.size / (1 << 20)
    print(
        f"gateway peak RSS {peak:.0f} MiB, {peak - idle:+.0f} MiB over its {idle:.0f} MiB after a small call "
        f"(each flood is {flood_mib:.0f} MiB of notifications)"
    )


if __name__ == "__main__":
    main()
