"""Time to the first reply through `mcptape record`, and the frames a `kill -9` loses.

First reply: a client starts the server (the demo server, a real MCP server) and sends
`initialize`; the time until the answer arrives, started directly and through
`mcptape record` with a new database and with an existing one, in the same run. Target:
within +150 ms of direct.

Loss window: a client pipelines a burst of requests through `record` to an echo server
and `kill -9`s mcptape after receiving N echoes; the frames the client received but the
database lacks are what a crash loses. Target: at most ~100 ms of traffic, so the loss
is also printed as milliseconds of traffic at the measured rate.

    .venv/bin/python bench/bench_first_reply.py [--runs 7] [--burst 50000]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, "-m", "mcptape.servers.demo"]
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py")]
RECORD = [sys.executable, "-m", "mcptape", "record"]
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
)


def first_reply(argv: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - t0) * 1e3
    assert b'"result"' in line, line
    proc.stdin.close()
    proc.wait(10)
    return elapsed


def loss_window(burst: int, kill_after: int) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "rec.db"
        proc = subprocess.Popen(
            [*RECORD, "--db", str(db), "--", *ECHO],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        lines = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"m"}\n' % i for i in range(burst))

        def feed() -> None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(lines)
                proc.stdin.flush()
            except OSError:
                pass

        threading.Thread(target=feed, daemon=True).start()
        t0 = time.perf_counter()
        received = 0
        while received < kill_after:
            if not proc.stdout.readline():
                break
            received += 1
        rate = received / (time.perf_counter() - t0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        # Children (the echo server) die with their stdin closed.
        con = sqlite3.connect(db)
        stored = con.execute("select count(*) from frames where direction = 's2c'").fetchone()[0]
        con.close()
        return received, stored, rate


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--burst", type=int, default=50_000)
    args = parser.parse_args()
    direct = [first_reply(SERVER) for _ in range(args.runs)]
    with tempfile.TemporaryDirectory() as tmp:
        fresh = []
        for i in range(args.runs):
            fresh.append(first_reply([*RECORD, "--db", str(Path(tmp) / f"new{i}.db"), "--", *SERVER]))
        existing_db = str(Path(tmp) / "existing.db")
        first_reply([*RECORD, "--db", existing_db, "--", *SERVER])
        existing = [first_reply([*RECORD, "--db", existing_db, "--", *SERVER]) for _ in range(args.runs)]
    d, n, e = statistics.median(direct), statistics.median(fresh), statistics.median(existing)
    print("time to the first reply (initialize), median of", args.runs)
    print(f"  direct                    {d:7.1f} ms (baseline)")
    print(f"  record, new database      {n:7.1f} ms   +{n - d:.1f} ms   {n / d:.2f}x   (target +150 ms)")
    print(f"  record, existing database {e:7.1f} ms   +{e - d:.1f} ms   {e / d:.2f}x   (target +150 ms)")
    received, stored, rate = loss_window(args.burst, args.burst // 2)
    lost = max(0, received - stored)
    print(f"kill -9 after {received:,} echoes received ({rate:,.0f}/s through record):")
    print(f"  stored {stored:,}, lost {lost:,} = {lost / rate * 1e3:.0f} ms of traffic   (target ~100 ms)")


if __name__ == "__main__":
    main()
