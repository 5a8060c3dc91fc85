"""Locked-store benchmark: the gateway's memory while another process holds the database's write lock.

The scenario of issue 19: SESSIONS streamable HTTP sessions each send `tools/call echo`
with a SIZE-byte argument (the answer carries it back: two frames of SIZE per call) as
fast as they are answered, while another connection holds the SQLite write lock
(``BEGIN IMMEDIATE``) for HOLD seconds. Printed: calls answered while the lock was held
and after, the gateway's peak RSS (VmHWM) against its peak before the lock (the
baseline of the same run), and whether every frame was recorded once the lock went.

    .venv/bin/python bench/bench_locked_store.py [--sessions 20] [--size 900000] [--hold 20]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_slow_client import peak_rss_mib, start_gateway  # noqa: E402

from tests.helpers.slow_reader import ACCEPT, INIT, echo_call  # noqa: E402


async def session(url: str, size: int, stop: asyncio.Event, answered: list[int], index: int) -> None:
    headers = dict(ACCEPT)
    text = "x" * size
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json=INIT, headers=headers) as response:
            await response.read()
            headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
        rid = 1
        while not stop.is_set():
            call = echo_call(rid)
            call["params"]["arguments"]["text"] = text
            async with http.post(url, json=call, headers=headers) as response:
                await response.read()
            answered[index] += 1
            rid += 1
        async with http.delete(url, headers=headers) as response:
            await response.read()


async def run(base: str, db: Path | None, sessions: int, size: int, hold: float) -> tuple[int, int]:
    """Sessions calling while ``db`` is locked for ``hold`` s (None: not locked), then 2 s more."""
    url = f"{base}/servers/flood/mcp"
    stop = asyncio.Event()
    answered = [0] * sessions
    lock = sqlite3.connect(db, timeout=30, isolation_level=None) if db is not None else None
    if lock is not None:
        lock.execute("BEGIN IMMEDIATE")
    tasks = [asyncio.ensure_future(session(url, size, stop, answered, i)) for i in range(sessions)]
    await asyncio.sleep(hold)
    during = sum(answered)
    if lock is not None:
        lock.execute("COMMIT")
        lock.close()
    await asyncio.sleep(2)
    stop.set()
    await asyncio.gather(*tasks)
    return during, sum(answered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--size", type=int, default=900_000)
    parser.add_argument("--hold", type=float, default=20.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        gateway, base = start_gateway(Path(tmp))
        try:
            # One small call first: the store is open and every module loaded.
            asyncio.run(run(base, None, 1, 1000, 0.5))
            idle = peak_rss_mib(gateway.pid)
            started = time.monotonic()
            during, total = asyncio.run(run(base, db, args.sessions, args.size, args.hold))
            took = time.monotonic() - started
            peak = peak_rss_mib(gateway.pid)
        finally:
            gateway.terminate()
            gateway.wait(60)
        con = sqlite3.connect(db)
        calls = con.execute(
            "select count(*) from frames where direction = 'c2s' and method = 'tools/call' and size > ?",
            (args.size,),
        ).fetchone()[0]
        open_rows = con.execute("select count(*) from sessions where status = 'running'").fetchone()[0]
        con.close()
    print(
        f"{args.sessions} sessions, {args.size / 1e6:.1f} MB frames, write lock held {args.hold:g} s: "
        f"{during} calls answered while it was held, {total} in {took:.0f} s"
    )
    print(f"recorded {calls} of {total} calls after the lock went; {open_rows} session rows left running")
    print(f"gateway peak RSS {peak:.0f} MiB = {peak / idle:.1f}x its {idle:.0f} MiB before the lock")


if __name__ == "__main__":
    main()
