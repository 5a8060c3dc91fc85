"""`mcptape wrap`/`unwrap` on large config files: time against parsing and re-rendering
the same file with the standard library, in the same run.

Wrapping splices the recorder's arguments into the file's own text (it never
re-renders it), so its cost should grow with the file like a parse does. Splicing edit
by edit once made it quadratic: a 14 MB config of 100,000 entries took most of an hour.
For N and 4N entries this prints the median time of wrap (document edit + text splice),
of unwrap, and of the baseline ``json.loads`` + ``json.dumps(indent=2)``, the ratio of
each to the baseline, and how each grew from N to 4N (4 is linear).

    .venv/bin/python bench/bench_wrap.py [--entries 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from mcptape.config.wrap import rewrite_text, unwrap_servers, wrap_servers

LAUNCHER = ["/opt/mcptape/bin/mcptape"]


def config_text(entries: int) -> str:
    servers = {
        f"server-{i}": {"command": "npx", "args": ["-y", f"@scope/server-{i}", "/tmp/x" * 10]}
        for i in range(entries)
    }
    return json.dumps({"mcpServers": servers}, indent=2)


def median_time(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(entries: int, runs: int) -> dict[str, float]:
    text = config_text(entries)
    document = json.loads(text)
    wrapped_doc, _ = wrap_servers(document, LAUNCHER, "/tmp/x.db")
    wrapped = rewrite_text(text, document, wrapped_doc)

    def wrap() -> object:
        doc = json.loads(text)
        return rewrite_text(text, doc, wrap_servers(doc, LAUNCHER, "/tmp/x.db")[0])

    def unwrap() -> object:
        doc = json.loads(wrapped)
        return rewrite_text(wrapped, doc, unwrap_servers(doc)[0])

    assert unwrap() == text  # the bench measures a round trip that works

    return {
        "baseline": median_time(lambda: json.dumps(json.loads(text), indent=2), runs),
        "wrap": median_time(wrap, runs),
        "unwrap": median_time(unwrap, runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    small = measure(args.entries, args.runs)
    large = measure(4 * args.entries, args.runs)
    for name in ("wrap", "unwrap"):
        print(
            f"{name:<7} {args.entries} entries: {small[name] / small['baseline']:5.1f}x the baseline; "
            f"{4 * args.entries}: {large[name] / large['baseline']:5.1f}x; "
            f"grew {large[name] / small[name]:.1f}x for 4x the entries (baseline grew "
            f"{large['baseline'] / small['baseline']:.1f}x)"
        )


if __name__ == "__main__":
    main()
