"""Start-up benchmark: `mcptape --help` against a bare interpreter start, in the same run.

The target is `mcptape --help` under 150 ms; commands import their heavy libraries
(SQLAlchemy, aiohttp, the mcp SDK) lazily to keep it there.

    .venv/bin/python bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def timed(argv: list[str], runs: int) -> float:
    """Median wall time of ``argv`` over ``runs`` runs, in ms."""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    bare = timed([sys.executable, "-c", "pass"], args.runs)
    helps = {
        "mcptape --help": timed([sys.executable, "-m", "mcptape", "--help"], args.runs),
        "mcptape sql --help": timed([sys.executable, "-m", "mcptape", "sql", "--help"], args.runs),
        "mcptape record --help": timed([sys.executable, "-m", "mcptape", "record", "--help"], args.runs),
    }
    print(f"python -c pass            {bare:7.1f} ms (baseline)")
    for name, ms in helps.items():
        print(f"{name:<25} {ms:7.1f} ms   {ms / bare:.2f}x baseline   (target < 150 ms)")


if __name__ == "__main__":
    main()
