"""OTLP export benchmark: `mcptape record` with and without `--otlp`, in one run, and the exporter alone.

A server answering every request, reached through `record` (recording on) three ways,
interleaved so drift in machine load hits all alike: without export, with `--otlp` to a
receiver that answers at once, and with `--otlp` to a receiver that never answers
(export stuck in its timeout: the queue fills, frames are dropped from export and
counted, forwarding must not notice). Prints for each:

- the median and 99th-percentile round trip of sequential requests, as ratios to the
  run without export (the p99 says whether the exporter's thread ever holds the
  interpreter long enough for a frame to wait on it);
- the pipelined burst rate (requests and answers, frames/s), and the CPU the process
  spent on a frame of the burst (until it went idle again: the export of the backlog
  included), as ratios (bursts are repeated, interleaved, and their medians compared);
- the spans the receiver got for the burst's exchanges, and what the recording says was
  not exported (its ``otlp_dropped`` events: frames dropped from the full queue, spans
  the receiver did not accept).

Then the exporter alone, in this process: exchanges handed to a sink as fast as it takes
them, the spans per second it turns into accepted exports (pairing, spans, protobuf,
HTTP), and the CPU time its thread spends on a span.

    .venv/bin/python bench/bench_otlp.py [--requests 2000] [--burst 30000] [--rounds 3] [--alone 20000]
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
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_relay import burst, cpu_seconds, finish, round_trips, start
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

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
    protocol_version = "HTTP/1.1"  # connections kept alive, as a Collector keeps them
    hang = False
    spans: ClassVar[list[int]] = [0]  # spans received (a list: shared by every request of one receiver)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.hang:
            time.sleep(3600)
        if self.path.endswith("/v1/traces"):
            message = ExportTraceServiceRequest.FromString(body)
            self.spans[0] += sum(len(ss.spans) for rs in message.resource_spans for ss in rs.scope_spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def receiver(hang: bool) -> tuple[str, list[int]]:
    """A receiver's URL and its span count (a one-item list that fills as exports arrive)."""
    spans = [0]
    handler = type("Handler", (_Receiver,), {"hang": hang, "spans": spans})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", spans


def not_exported(db: str) -> tuple[int, int, int]:
    """What the recording's ``otlp_dropped`` events say: frames dropped, spans not accepted,
    frames still waiting when the session ended."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("select data from events where kind = 'otlp_dropped'").fetchall()
    finally:
        con.close()
    events = [json.loads(data) for (data,) in rows]
    return (
        sum(e["dropped_frames"] for e in events),
        sum(e.get("unsent_spans") or 0 for e in events),
        sum(e.get("waiting_frames") or 0 for e in events),
    )


def thread_cpu(native_id: int) -> float:
    """CPU seconds one thread of this process has used (Linux /proc)."""
    fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(counts: list[int], expected: int, wait: float) -> int:
    """The receiver's span count once it reached ``expected`` or stopped moving for ``wait`` s."""
    last, since = counts[0], time.monotonic()
    while counts[0] < expected and time.monotonic() - since < wait:
        time.sleep(0.05)
        if counts[0] != last:
            last, since = counts[0], time.monotonic()
    return counts[0]


def exporter_alone(n: int) -> tuple[float, float, int]:
    """Spans per second one sink turns ``n`` exchanges into, the CPU its thread spent per
    span (seconds), and how many spans the receiver got."""
    from mcptape.telemetry.conventions import SessionFacts
    from mcptape.telemetry.pairing import Pairing
    from mcptape.telemetry.sink import Counts, OtlpSink
    from mcptape.wire.frame import Frame

    url, spans = receiver(hang=False)
    frames = []
    for i in range(n):
        request = Frame(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}'
            % i,
            "c2s",
        )
        answer = Frame(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}' % i, "s2c")
        for frame in (request, answer):
            frame.kind  # noqa: B018 (classified, as the relay leaves them)
            frames.append(frame)
    sink = OtlpSink(url, queue_limit=2 * n + 16)
    pairing = Pairing(SessionFacts("record", "stdio->stdio"))
    counts = Counts()
    sink.flush(30)  # the thread is up and OpenTelemetry imported
    tid = sink._thread.native_id
    assert tid is not None
    cpu, t0 = thread_cpu(tid), time.perf_counter()
    for frame in frames:
        sink.offer(counts, pairing, frame, frame.kind, frame.direction, frame.method, frame.rpc_id, "")
    sink.flush(600)
    elapsed, cpu = time.perf_counter() - t0, thread_cpu(tid) - cpu
    return sink.sent / elapsed, cpu / max(sink.sent, 1), settle(spans, n, 2.0)


def quiet(pid: int, limit: float = 60.0) -> float:
    """The process's CPU seconds once it stopped using any (its threads are done with a burst)."""
    last, since = cpu_seconds(pid), time.monotonic()
    while time.monotonic() - since < limit:
        time.sleep(0.3)
        now = cpu_seconds(pid)
        if now == last:
            return now
        last = now
    return last


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=30_000, help="requests a burst sends (and answers)")
    parser.add_argument("--rounds", type=int, default=3, help="bursts each, interleaved")
    parser.add_argument("--alone", type=int, default=20_000, help="exchanges for the exporter alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        good_url, good_spans = receiver(hang=False)
        stuck_url, stuck_spans = receiver(hang=True)
        runs = {
            "record": ([], [0]),
            "record --otlp": (["--otlp", good_url], good_spans),
            "--otlp, stuck receiver": (["--otlp", stuck_url], stuck_spans),
        }
        dbs = {name: os.path.join(tmp, f"{i}.db") for i, name in enumerate(runs)}
        procs = {
            name: start([sys.executable, "-m", "mcptape", "record", "--db", dbs[name], *extra, "--", *ANSWER])
            for name, (extra, _) in runs.items()
        }
        for proc in procs.values():
            round_trips(proc, 200)  # warm-up: imports, database creation, the exporter's thread
        latency: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(5):
            for name, proc in procs.items():
                latency[name] += round_trips(proc, args.requests // 5)
        expected = {name: 200 + args.requests for name in runs}
        received = {name: 0 for name in runs}
        rates: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, proc in procs.items():
                counts = runs[name][1]
                before = settle(counts, expected[name], 3.0)
                used = quiet(proc.pid)
                rates[name].append(2 * args.burst / burst(proc, args.burst))
                cpu[name].append((quiet(proc.pid) - used) / (2 * args.burst))
                expected[name] = before + args.burst
                received[name] += settle(counts, expected[name], 3.0) - before
        for proc in procs.values():
            finish(proc)
        base_rt = statistics.median(latency["record"])
        base_p99 = statistics.quantiles(latency["record"], n=100)[98]
        base_rate = statistics.median(rates["record"])
        base_cpu = statistics.median(cpu["record"])
        print(
            f"sequential requests: {len(latency['record'])} each; {args.rounds} pipelined bursts each of "
            f"{args.burst} requests + {args.burst} answers = {2 * args.burst} frames (medians)"
        )
        for name, (extra, _) in runs.items():
            rt = statistics.median(latency[name])
            p99 = statistics.quantiles(latency[name], n=100)[98]
            rate, used = statistics.median(rates[name]), statistics.median(cpu[name])
            exported = f"{received[name]:,} of {args.rounds * args.burst:,}" if extra else "-"
            frames_dropped, spans_unsent, waiting = not_exported(dbs[name])
            print(
                f"  {name:24s} round trip median {rt * 1e3:.3f} ms ({rt / base_rt:.2f}x) "
                f"p99 {p99 * 1e3:.3f} ms ({p99 / base_p99:.2f}x)   "
                f"burst {rate:,.0f} frames/s ({rate / base_rate:.2f}x), "
                f"CPU {used * 1e6:.0f} us a frame ({used / base_cpu:.2f}x)\n"
                f"  {'':24s} burst spans received: {exported}   the recording says: "
                f"{frames_dropped:,} frames dropped, {spans_unsent:,} spans not accepted, "
                f"{waiting:,} frames still waiting at the end"
            )
        print(
            "target: --otlp within 1.05x of record on round trips and burst rate; every burst span "
            "exported; a stuck receiver changes nothing but the drop count"
        )
    per_s, thread_used, got = exporter_alone(args.alone)
    print(
        f"exporter alone: {args.alone:,} exchanges -> {got:,} spans received, {per_s:,.0f} spans/s; "
        f"its thread's CPU: {thread_used * 1e6:.0f} us a span ({1 / max(thread_used, 1e-9):,.0f} spans "
        "per CPU second)"
    )


if __name__ == "__main__":
    main()
