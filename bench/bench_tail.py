"""`mcptape tail`'s latency: from a frame handed to the recorder to its line on tail's stdout.

A writer in this process (the recorder's ``Store.writer()``) writes a tools/call request
and, a random 0-150 ms later, its reply, into a fresh SQLite file that a running
``mcptape tail --json`` (its default poll) follows. For each reply the clock runs from
``add_frame`` (the moment the relay hands the frame to the recorder: the writer's group
commit, up to 20 ms, is included, as in a recording) to the moment tail's line arrives on
the pipe. The same is measured,
in the same run, for a floor: a dozen-line Python loop polling ``frames`` with the
``sqlite3`` module at the same interval and printing each reply's id, nothing else. Then
the CPU each spends idle for 5 s.

    .venv/bin/python bench/bench_tail.py [--rounds N] [--poll SECONDS]

Target (issue 21): under 250 ms from the frame written to its line, at the default poll.
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from mcptape.store import open_store
from mcptape.wire.frame import Frame

FLOOR = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
last = conn.execute("select coalesce(max(id), 0) from frames").fetchone()[0]
print("following", file=sys.stderr, flush=True)
while True:
    for row_id, kind, rpc_id in conn.execute("select id, kind, rpc_id from frames where id > ? order by id", (last,)):
        last = row_id
        if kind == "response":
            print(rpc_id, flush=True)
    time.sleep(float(sys.argv[2]))
"""


class Follower:
    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        assert self.proc.stderr is not None and self.proc.stdout is not None
        if "following" not in self.proc.stderr.readline():
            raise SystemExit(f"{argv[:3]} did not start")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.perf_counter(), line))

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def measure(argv: list[str], db: Path, rounds: int) -> tuple[list[float], float]:
    store = open_store(str(db))
    writer = store.writer()
    session = writer.create_session(mode="record", name="bench")
    writer.flush()
    follower = Follower(argv)
    from_handed: list[float] = []
    rng = random.Random(7)
    seq = 0
    try:
        for i in range(1, rounds + 1):
            ask = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "t", "arguments": {}},
            }
            seq += 1
            writer.add_frame(session, seq, Frame(orjson.dumps(ask), "c2s"))
            time.sleep(rng.uniform(0.0, 0.15))  # a random phase against the poll
            seq += 1
            handed = time.perf_counter()
            writer.add_frame(
                session, seq, Frame(orjson.dumps({"jsonrpc": "2.0", "id": i, "result": {}}), "s2c")
            )
            arrived, _line = follower.lines.get(timeout=10)
            from_handed.append((arrived - handed) * 1000)
        before = follower.cpu_s()
        time.sleep(5.0)
        idle_cpu = follower.cpu_s() - before
    finally:
        follower.stop()
        writer.close()
        store.close()
    return from_handed, idle_cpu


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--poll", type=float, default=0.1, help="the floor's poll interval (tail's default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for name in ("mcptape tail", "floor"):
            db = Path(tmp) / f"{name.replace(' ', '_')}.db"
            open_store(str(db)).close()
            if name == "floor":
                argv = [sys.executable, "-c", FLOOR, str(db), str(args.poll)]
            else:
                argv = [sys.executable, "-m", "mcptape", "tail", "--json", "--db", str(db)]
            results[name] = measure(argv, db, args.rounds)
    print(f"{args.rounds} replies, poll {args.poll * 1000:.0f} ms; latency to the line on stdout (ms):")
    print(f"{'':14} {'median':>8} {'p95':>8} {'max':>8} {'idle CPU 5s':>12}")
    for name, (handed, idle) in results.items():
        print(
            f"{name:14} {statistics.median(handed):8.1f} {p95(handed):8.1f} {max(handed):8.1f} {idle * 1000:10.0f}ms"
        )
    tail_handed, floor_handed = results["mcptape tail"][0], results["floor"][0]
    print(
        f"ratio tail/floor (median from handed): {statistics.median(tail_handed) / statistics.median(floor_handed):.2f}x"
    )
    worst = max(tail_handed)
    print(
        f"target: every line under 250 ms from the frame handed to the recorder: {'met' if worst < 250 else 'NOT met'} (max {worst:.0f} ms)"
    )


if __name__ == "__main__":
    main()
