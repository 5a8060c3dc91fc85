"""Relay benchmark: an echo server reached directly vs through `mcptape record` (recording on).

Prints, from one run, the median round-trip of sequential requests each way and the
added latency, and the pipelined throughput in frames/s with the ratio to the
direct connection. These machines are noisy: compare the ratios, not absolute times.

    .venv/bin/python bench/bench_relay.py [--requests 3000] [--burst 50000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py")]
PASSTHROUGH = [sys.executable, str(ROOT / "bench" / "passthrough_relay.py")]


def start(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def round_trips(proc: subprocess.Popen[bytes], n: int) -> list[float]:
    assert proc.stdin is not None and proc.stdout is not None
    times = []
    for i in range(n):
        line = (
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}\n'
            % i
        )
        t0 = time.perf_counter()
        proc.stdin.write(line)
        proc.stdin.flush()
        proc.stdout.readline()
        times.append(time.perf_counter() - t0)
    return times


def burst(proc: subprocess.Popen[bytes], n: int) -> float:
    """Seconds to push n frames through and read all n echoes back."""
    assert proc.stdin is not None and proc.stdout is not None
    payload = b"".join(
        b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{"i":%d}}\n' % (i, i) for i in range(n)
    )
    t0 = time.perf_counter()

    def feed() -> None:
        assert proc.stdin is not None
        proc.stdin.write(payload)
        proc.stdin.flush()

    writer = threading.Thread(target=feed)
    writer.start()
    for _ in range(n):
        proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    writer.join()
    return elapsed


def cpu_seconds(pid: int) -> float:
    """User+system CPU time a process has used so far (Linux /proc), robust to machine noise."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def finish(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--burst", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "bench.db")
        recorded = [sys.executable, "-m", "mcptape", "record", "--db", db, "--", *ECHO]

        # Interleave the two so drift in machine load hits both alike.
        direct_lat: list[float] = []
        bare_lat: list[float] = []
        relay_lat: list[float] = []
        d, b, r = start(ECHO), start([*PASSTHROUGH, *ECHO]), start(recorded)
        round_trips(d, 200)
        round_trips(b, 200)
        round_trips(r, 200)  # warm-up: imports, database creation
        cpu_relay = 0.0
        for _ in range(5):
            direct_lat += round_trips(d, args.requests // 5)
            bare_lat += round_trips(b, args.requests // 5)
            before = cpu_seconds(r.pid)
            relay_lat += round_trips(r, args.requests // 5)
            cpu_relay += cpu_seconds(r.pid) - before
        direct_burst = burst(d, args.burst)
        bare_burst = burst(b, args.burst)
        before = cpu_seconds(r.pid)
        relay_burst = burst(r, args.burst)
        cpu_burst = cpu_seconds(r.pid) - before
        finish(d)
        finish(b)
        finish(r)

        med_d = statistics.median(direct_lat) * 1e3
        med_b = statistics.median(bare_lat) * 1e3
        med_r = statistics.median(relay_lat) * 1e3
        print(f"sequential requests: {len(direct_lat)} each way")
        print(f"  direct  median round trip  {med_d:.3f} ms")
        print(f"  bare    median round trip  {med_b:.3f} ms   (a pass-through relay process: the hop alone)")
        print(f"  record  median round trip  {med_r:.3f} ms")
        print(f"  added median latency       {med_r - med_d:.3f} ms   (target < 0.1 ms per request)")
        print(f"  added over the bare hop    {med_r - med_b:.3f} ms   (mcptape's own work and recording)")
        print(f"  ratio record/direct        {med_r / med_d:.2f}x   record/bare {med_r / med_b:.2f}x")
        print(
            f"  mcptape CPU per request    {cpu_relay / len(relay_lat) * 1e6:.0f} us (2 frames, all threads)"
        )
        fd = 2 * args.burst / direct_burst
        fb = 2 * args.burst / bare_burst
        fr = 2 * args.burst / relay_burst
        print(f"pipelined burst: {args.burst} requests + {args.burst} echoes")
        print(f"  direct  {fd:,.0f} frames/s")
        print(f"  bare    {fb:,.0f} frames/s")
        print(f"  record  {fr:,.0f} frames/s   (target >= 20,000 frames/s)")
        print(f"  ratio record/direct        {fr / fd:.2f}x   record/bare {fr / fb:.2f}x")
        print(f"  mcptape CPU per frame      {cpu_burst / (2 * args.burst) * 1e6:.1f} us")
        import sqlite3

        con = sqlite3.connect(db)
        count = con.execute("select count(*) from frames").fetchone()[0]
        con.close()
        expected = 2 * (200 + args.requests // 5 * 5 + args.burst)
        print(f"frames recorded: {count:,} of {expected:,}")


if __name__ == "__main__":
    main()
