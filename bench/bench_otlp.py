"""OTLP export benchmark: `mcptape record` with and without `--otlp`, in one run.

A server answering every request, reached through `record` (recording on) three ways, interleaved so drift
in machine load hits all alike: without export, with `--otlp` to a receiver that answers
at once, and with `--otlp` to a receiver that never answers (export stuck in its
timeout: the queue fills, frames are dropped from export and counted, forwarding must
not notice). Prints the median round trip and the pipelined rate of each, as ratios to
the run without export, and the frames each run reports as not exported.

    .venv/bin/python bench/bench_otlp.py [--requests 2000] [--burst 30000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_relay import burst, finish, round_trips, start

# A stdio server that answers every request with an empty result (an echo would send the
# request back, which pairs with nothing: no span would be made).
ANSWER = [
    sys.executable,
    "-c",
    "import sys, orjson\n"
    "for line in sys.stdin.buffer:\n"
    '    sys.stdout.buffer.write(b\'{"jsonrpc":"2.0","id":\' + orjson.dumps(orjson.loads(line)[\'id\'])'
    " + b',\"result\":{}}\\n')\n"
    "    sys.stdout.buffer.flush()\n",
]


class _Receiver(BaseHTTPRequestHandler):
    hang = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.hang:
            time.sleep(3600)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def receiver(hang: bool) -> str:
    handler = type("Handler", (_Receiver,), {"hang": hang})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def dropped(db: str) -> int:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("select data from events where kind = 'otlp_dropped'").fetchall()
    finally:
        con.close()
    return sum(json.loads(data)["dropped_frames"] for (data,) in rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=30_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "record": [],
            "record --otlp": ["--otlp", receiver(hang=False)],
            "--otlp, stuck receiver": ["--otlp", receiver(hang=True)],
        }
        dbs = {name: os.path.join(tmp, f"{i}.db") for i, name in enumerate(runs)}
        procs = {
            name: start([sys.executable, "-m", "mcptape", "record", "--db", dbs[name], *extra, "--", *ANSWER])
            for name, extra in runs.items()
        }
        for proc in procs.values():
            round_trips(proc, 200)  # warm-up: imports, database creation, the exporter's thread
        latency: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(5):
            for name, proc in procs.items():
                latency[name] += round_trips(proc, args.requests // 5)
        rate = {name: 2 * args.burst / burst(proc, args.burst) for name, proc in procs.items()}
        for proc in procs.values():
            finish(proc)
        base_rt = statistics.median(latency["record"])
        print(
            f"sequential requests: {len(latency['record'])} each; pipelined burst: {args.burst} requests + echoes"
        )
        for name in runs:
            rt = statistics.median(latency[name])
            print(
                f"  {name:24s} median round trip {rt * 1e3:.3f} ms ({rt / base_rt:.2f}x)   "
                f"{rate[name]:,.0f} frames/s ({rate[name] / rate['record']:.2f}x)   "
                f"not exported: {dropped(dbs[name]):,} frames"
            )
        print(
            "target: --otlp within 1.05x of record on both; a stuck receiver changes nothing but the drop count"
        )


if __name__ == "__main__":
    main()
