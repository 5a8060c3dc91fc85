"""Injection benchmark: `mcptape record` with injection rules vs without, in front of an echo server.

The echo server sends every request back as a request, so with rules on, every frame the
server sends is a server request the rules are asked about (none matches): the worst
case for the injector, which is not installed at all without rules. Prints, from one
run, the median round trip of sequential requests, the pipelined throughput and
mcptape's CPU time per request and per frame (the steadiest figure on a busy machine),
with the ratio rules/no rules. Compare the ratios, not absolute times.

    .venv/bin/python bench/bench_inject.py [--requests 2000] [--burst 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_relay import ECHO, burst, cpu_seconds, finish, round_trips, start

RULES = ["--handle-sampling", "auto", "--handle-elicitation", "decline", "--roots", "file:///tmp"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain_cmd = [
            sys.executable,
            "-m",
            "mcptape",
            "record",
            "--db",
            os.path.join(tmp, "a.db"),
            "--",
            *ECHO,
        ]
        rules_cmd = [
            sys.executable,
            "-m",
            "mcptape",
            "record",
            "--db",
            os.path.join(tmp, "b.db"),
            *RULES,
            "--",
            *ECHO,
        ]
        plain, ruled = start(plain_cmd), start(rules_cmd)
        round_trips(plain, 200)
        round_trips(ruled, 200)  # warm-up
        plain_lat: list[float] = []
        rules_lat: list[float] = []
        cpu = {"plain": 0.0, "rules": 0.0}
        for _ in range(5):  # interleaved, so drift in machine load hits both alike
            before = cpu_seconds(plain.pid)
            plain_lat += round_trips(plain, args.requests // 5)
            cpu["plain"] += cpu_seconds(plain.pid) - before
            before = cpu_seconds(ruled.pid)
            rules_lat += round_trips(ruled, args.requests // 5)
            cpu["rules"] += cpu_seconds(ruled.pid) - before
        before = cpu_seconds(plain.pid)
        plain_burst = burst(plain, args.burst)
        cpu_plain_burst = cpu_seconds(plain.pid) - before
        before = cpu_seconds(ruled.pid)
        rules_burst = burst(ruled, args.burst)
        cpu_rules_burst = cpu_seconds(ruled.pid) - before
        finish(plain)
        finish(ruled)
    mp = statistics.median(plain_lat) * 1e3
    mr = statistics.median(rules_lat) * 1e3
    print(f"sequential requests: {len(plain_lat)} each")
    print(f"  record           median round trip  {mp:.3f} ms")
    print(f"  record + rules   median round trip  {mr:.3f} ms")
    print(f"  ratio rules/none {mr / mp:.2f}x")
    cp, cr = cpu["plain"] / len(plain_lat) * 1e6, cpu["rules"] / len(rules_lat) * 1e6
    print(f"  mcptape CPU per request  {cp:.0f} us without rules, {cr:.0f} us with: {cr / cp:.2f}x")
    fp = 2 * args.burst / plain_burst
    fr = 2 * args.burst / rules_burst
    print(f"pipelined burst: {args.burst} requests + {args.burst} echoes")
    print(f"  record           {fp:,.0f} frames/s")
    print(f"  record + rules   {fr:,.0f} frames/s")
    print(f"  ratio rules/none {fr / fp:.2f}x")
    bp, br = cpu_plain_burst / (2 * args.burst) * 1e6, cpu_rules_burst / (2 * args.burst) * 1e6
    print(f"  mcptape CPU per frame    {bp:.1f} us without rules, {br:.1f} us with: {br / bp:.2f}x")


if __name__ == "__main__":
    main()
