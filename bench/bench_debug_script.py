"""debug-script benchmark: a warm one-hit call and the cost per hit, against baselines from the same run.

Baselines: starting ``node count.js 1`` without any debugger (the floor of a one-hit
call), and a bare DevTools Protocol loop (evaluate the expression, resume) over one
WebSocket with no MCP in between (the floor of a hit). Targets: a warm one-hit call
around 0.09 s, about 0.9 ms per hit.

Also measured: how long a ``tools/list`` takes while another call decodes a 9 MB
source map, against an idle ``tools/list`` (decoding must not stall the server).

With ``--compare TREE`` the same measurements run against the debug-script server
of another checkout (e.g. main before a change), so before and after are compared
in one run on one machine.

    .venv/bin/python bench/bench_debug_script.py [--runs 9] [--hits 1000] [--compare /path/to/main]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "debug_script"


def arguments(hits: int, file: str = "count.js", command: str | None = None) -> dict[str, Any]:
    return {
        "command": command or f"node --inspect-brk=0 count.js {hits}",
        "breakpoint": {"file": file, "line": 5},
        "expression": "i",
        "timeout": 60000,
    }


def node_start(runs: int) -> float:
    """Median seconds of a plain `node count.js 1`."""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["node", "count.js", "1"], cwd=DATA, check=True, stdout=subprocess.DEVNULL)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


async def raw_cdp_per_hit(hits: int) -> float:
    """Seconds per hit of a bare CDP loop: evaluate `i` in the paused frame, resume."""
    from mcptape.servers.debug_script.cdp import CdpConnection
    from mcptape.servers.debug_script.launch import NodeProcess
    from mcptape.servers.debug_script.target import url_regex

    async def run(count: int) -> float:
        process = await NodeProcess.start(["node", "--inspect-brk=0", str(DATA / "count.js"), str(count)])
        cdp = await CdpConnection.connect(await process.inspector_url())
        t0 = time.perf_counter()
        await cdp.send("Runtime.enable")
        await cdp.send("Debugger.enable")
        regex = url_regex({str(DATA / "count.js")})
        await cdp.send("Debugger.setBreakpointByUrl", {"urlRegex": regex, "lineNumber": 4, "columnNumber": 0})
        await cdp.send("Runtime.runIfWaitingForDebugger")
        while (event := await cdp.next_event()) is not None:
            if event.method == "Debugger.paused":
                frame = event.params["callFrames"][0]["callFrameId"]
                if event.params.get("hitBreakpoints"):
                    await cdp.send("Debugger.evaluateOnCallFrame", {"callFrameId": frame, "expression": "i"})
                await cdp.send("Debugger.resume")
            elif event.method == "Runtime.executionContextDestroyed":
                break
        elapsed = time.perf_counter() - t0
        await cdp.close()
        await process.close(grace=1.0)
        return elapsed

    samples = []
    for _ in range(3):
        one, many = await run(1), await run(hits)
        samples.append((many - one) / (hits - 1))
    return statistics.median(samples)


def big_map_script(folder: Path) -> Path:
    """A script whose inline source map (about 9 MB) names target.ts."""
    segments = ";".join("AAAA,CAAC,EAAE,GAAG" for _ in range(450_000))
    source_map = {"version": 3, "sources": ["target.ts"], "names": [], "mappings": "AAAA;" + segments}
    (folder / "target.ts").write_text("export const x = 1;\n" * 6)
    encoded = base64.b64encode(json.dumps(source_map).encode()).decode()
    script = folder / "big-map.js"
    script.write_text("console.log(1);\n//# sourceMappingURL=data:application/json;base64," + encoded + "\n")
    return script


async def measure_server(env: dict[str, str], runs: int, hits: int, folder: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcptape.servers.debug_script"], cwd=str(DATA), env=env
    )
    async with Client(params, read_timeout_seconds=120) as client:

        async def timed_call(count: int) -> float:
            t0 = time.perf_counter()
            result = await client.call_tool("debug-script", arguments(count))
            elapsed = time.perf_counter() - t0
            assert not result.is_error and len(result.structured_content["results"]) == count, result
            return elapsed

        await timed_call(1)  # warm: imports, first node start
        one = statistics.median([await timed_call(1) for _ in range(runs)])
        many = statistics.median([await timed_call(hits) for _ in range(max(3, runs // 3))])

        async def list_latency() -> float:
            t0 = time.perf_counter()
            await client.list_tools()
            return time.perf_counter() - t0

        idle = statistics.median([await list_latency() for _ in range(20)])
        script = big_map_script(folder)
        busy_call = asyncio.create_task(
            client.call_tool(
                "debug-script",
                arguments(1, file=str(folder / "target.ts"), command=f"node --inspect-brk=0 {script}")
                | {"timeout": 8000},
            )
        )
        await asyncio.sleep(0.3)  # node has started and sent the script with its map
        busy = []
        while not busy_call.done() and len(busy) < 2000:
            busy.append(await list_latency())
            await asyncio.sleep(0.02)
        busy_result = await busy_call
        busy_text = (busy_result.structured_content or {}).get("error", "")
    return {
        "busy_samples": len(busy),
        "busy_error": busy_text,
        "one_hit_s": one,
        "per_hit_s": (many - one) / (hits - 1),
        "list_idle_s": idle,
        "list_busy_max_s": max(busy) if busy else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--hits", type=int, default=1000)
    parser.add_argument("--compare", type=Path, help="another checkout whose server to measure too")
    args = parser.parse_args()
    node = node_start(args.runs)
    raw_hit = asyncio.run(raw_cdp_per_hit(args.hits))
    print(f"baseline: node count.js 1            {node * 1e3:8.1f} ms")
    print(f"baseline: bare CDP loop, per hit     {raw_hit * 1e3:8.3f} ms")
    trees = {"this tree": ROOT}
    if args.compare:
        trees["compared"] = args.compare.resolve()
    figures: dict[str, dict[str, Any]] = {}
    for name, tree in trees.items():
        env = {**os.environ, "PYTHONPATH": str(tree)}
        with tempfile.TemporaryDirectory() as folder:
            figures[name] = asyncio.run(measure_server(env, args.runs, args.hits, Path(folder)))
    for name, f in figures.items():
        print(
            f"{name:<10} one-hit call {f['one_hit_s'] * 1e3:7.1f} ms ({f['one_hit_s'] / node:.2f}x node start)  "
            f"per hit {f['per_hit_s'] * 1e3:6.3f} ms ({f['per_hit_s'] / raw_hit:.2f}x bare CDP)  "
            f"tools/list while a 9 MB map decodes: max {f['list_busy_max_s'] * 1e3:7.1f} ms "
            f"({f['list_busy_max_s'] / f['list_idle_s']:.0f}x idle {f['list_idle_s'] * 1e3:.1f} ms)"
        )
    if "compared" in figures:
        this, other = figures["this tree"], figures["compared"]
        print(
            f"this tree / compared: one-hit call {this['one_hit_s'] / other['one_hit_s']:.2f}x, "
            f"per hit {this['per_hit_s'] / other['per_hit_s']:.2f}x, "
            f"tools/list while decoding {this['list_busy_max_s'] / other['list_busy_max_s']:.2f}x"
        )


if __name__ == "__main__":
    main()
