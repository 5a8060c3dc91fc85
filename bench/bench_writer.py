"""Recording throughput: mcptape's Writer against raw sqlite3 executemany on the same rows.

Writes N realistic frames (tools/call requests and their results, progress
notifications, one 4 KiB result in twenty) through ``Store.writer()`` into a fresh
SQLite file, then the same rows with the ``sqlite3`` module's ``executemany`` into
another fresh file with the same schema, indexes and pragmas (WAL,
synchronous=NORMAL, foreign keys on), in transactions of the same batch size.

The producer behaves like the relay's recorder: it queues frames on an asyncio
loop and awaits ``drain()`` whenever the Writer is over its backlog limit (default
limits). The Writer gets Frame objects as the relay hands them to it: already
parsed (the relay routes on kind and id before recording). ``--unparsed`` also
times frames nobody has parsed, where the Writer pays for the JSON parse. The
baseline gets finished row tuples.

    .venv/bin/python bench/bench_writer.py [--frames N] [--batch-size B] [--unparsed] [--db URL]
                                           [--contended N]

``--contended N`` runs both beside N busy threads that do what the relay's reader threads
do in a burst: Python work between short system calls, so the GIL changes hands all the
time. A writer that lets go of the GIL once per row waits to get it back once per row
(see mcptape/store/operations.py).

``--db URL`` runs both on a server database instead (PostgreSQL:
``postgresql+psycopg://user@/dbname?host=/run/postgresql``), each in a session of its
own; the baseline is then psycopg's own ``executemany`` on one connection.

Targets (DESIGN.md): at least 50,000 frames/s, and within 2x of raw (ratio >= 0.5);
they are set for SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

from mcptape.store import open_store
from mcptape.store.rows import FRAME_COLUMNS, frame_row
from mcptape.wire.frame import Frame

BIG_TEXT = "x" * 4096


def make_frames(count: int, t0: float) -> list[Frame]:
    """``count`` frames of a plausible session: request, progress, result, repeated."""
    out: list[Frame] = []
    call = 0
    while len(out) < count:
        call += 1
        request = {
            "jsonrpc": "2.0",
            "id": call,
            "method": "tools/call",
            "params": {
                "name": "echo",
                "arguments": {"message": f"hello {call}"},
                "_meta": {"progressToken": call},
            },
        }
        text = BIG_TEXT if call % 20 == 0 else f"Echo: hello {call}"
        result = {"jsonrpc": "2.0", "id": call, "result": {"content": [{"type": "text", "text": text}]}}
        progress = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": call, "progress": 1, "total": 1},
        }
        ts = t0 + call * 0.001
        out.append(Frame(orjson.dumps(request), "c2s", ts=ts))
        out.append(Frame(orjson.dumps(progress), "s2c", ts=ts + 0.0002))
        out.append(Frame(orjson.dumps(result), "s2c", ts=ts + 0.0004))
    return out[:count]


@contextlib.contextmanager
def busy_threads(count: int) -> Iterator[None]:
    """``count`` threads busy as the relay's readers are in a burst, for the time of the block."""
    stop = threading.Event()

    def busy() -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            while not stop.is_set():
                parts = [str(i).encode() for i in range(40)]  # parsing, routing: Python work
                os.writev(null, parts)  # forwarding: a system call without the GIL
        finally:
            os.close(null)

    threads = [threading.Thread(target=busy, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def classify(frames: list[Frame]) -> list[Frame]:
    """Parse every frame, as the relay does before the recorder queues it (it routes on kind and id)."""
    for frame in frames:
        _ = frame.kind
    return frames


def bench_writer(db: str, frames: list[Frame], batch_size: int) -> tuple[float, str]:
    store = open_store(db)
    session_id = store.create_session(mode="record", name="bench")
    writer = store.writer(batch_size=batch_size)

    async def record() -> None:
        # What the relay's recorder does: queue each frame, await drain() when over the limit.
        for seq, frame in enumerate(frames, 1):
            writer.add_frame(session_id, seq, frame)
            if writer.over_limit:
                await writer.drain()

    start = time.perf_counter()
    asyncio.run(record())
    writer.flush()
    elapsed = time.perf_counter() - start
    writer.close()
    store.close()
    if writer.errors or writer.frames_written != len(frames):
        sys.exit(
            f"writer lost frames: wrote {writer.frames_written} of {len(frames)}; errors: {writer.errors}"
        )
    return elapsed, session_id


def bench_raw(path: Path, rows: list[tuple[object, ...]], session_id: str, batch_size: int) -> float:
    # The same schema and indexes, made by the same migration; then plain sqlite3 from here on.
    open_store(str(path)).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(
        "INSERT INTO sessions (id, mode, started_at, status) VALUES (?, 'record', ?, 'running')",
        (session_id, time.time()),
    )
    sql = f"INSERT INTO frames ({', '.join(FRAME_COLUMNS)}) VALUES ({', '.join('?' * len(FRAME_COLUMNS))})"
    start = time.perf_counter()
    for i in range(0, len(rows), batch_size):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, rows[i : i + batch_size])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def bench_raw_server(url: str, frames: list[Frame], batch_size: int) -> float:
    """The same rows with the driver's own executemany (psycopg for PostgreSQL), one connection."""
    from mcptape.store.rows import insert_sql
    from mcptape.store.schema import frames as frames_table

    store = open_store(url)
    session_id = store.create_session(mode="record", name="bench-raw")
    rows = [frame_row(session_id, seq, frame) for seq, frame in enumerate(frames, 1)]
    sql = insert_sql(frames_table, FRAME_COLUMNS, store.engine.dialect.paramstyle)
    assert sql is not None, f"no driver-level INSERT for {store.engine.dialect.paramstyle}"
    raw = store.engine.raw_connection()
    try:
        cursor = raw.cursor()
        start = time.perf_counter()
        for i in range(0, len(rows), batch_size):
            cursor.executemany(sql, rows[i : i + batch_size])
            raw.commit()
        elapsed = time.perf_counter() - start
        cursor.close()
    finally:
        raw.close()
        store.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200_000, help="frames to write (default 200,000)")
    parser.add_argument(
        "--unparsed", action="store_true", help="also time the Writer on frames nobody has parsed yet"
    )
    parser.add_argument("--batch-size", type=int, default=1000, help="rows per transaction (default 1000)")
    parser.add_argument(
        "--db", metavar="URL", help="a server database URL (postgresql+psycopg://...) instead of SQLite files"
    )
    parser.add_argument(
        "--contended",
        type=int,
        default=0,
        metavar="N",
        help="run beside N busy threads, as the relay's readers are in a burst (default 0)",
    )
    args = parser.parse_args()
    busy = busy_threads(args.contended) if args.contended else contextlib.nullcontext()
    t0 = time.time()
    if args.db:
        frames = classify(make_frames(args.frames, t0))
        with busy:
            writer_s, _ = bench_writer(args.db, frames, args.batch_size)
            raw_s = bench_raw_server(args.db, frames, args.batch_size)
        unparsed_s = None
        if args.unparsed:
            unparsed_s, _ = bench_writer(args.db, make_frames(args.frames, t0), args.batch_size)
        baseline = "raw driver executemany:"
    else:
        baseline = "raw sqlite3 executemany:"
        with tempfile.TemporaryDirectory(prefix="mcptape-bench-") as tmp:
            frames = classify(make_frames(args.frames, t0))
            rows = [frame_row("0" * 32, seq, frame) for seq, frame in enumerate(frames, 1)]
            with busy:
                writer_s, session_id = bench_writer(str(Path(tmp) / "writer.db"), frames, args.batch_size)
                rows = [(session_id, *row[1:]) for row in rows]
                raw_s = bench_raw(Path(tmp) / "raw.db", rows, session_id, args.batch_size)
            unparsed_s = None
            if args.unparsed:
                unparsed_s, _ = bench_writer(
                    str(Path(tmp) / "unparsed.db"), make_frames(args.frames, t0), args.batch_size
                )
    n = args.frames
    mcptape_rate = n / writer_s
    raw_rate = n / raw_s
    ratio = mcptape_rate / raw_rate
    beside = f"  beside {args.contended} busy threads" if args.contended else ""
    print(
        f"frames: {n}  batch size: {args.batch_size}  database: {'SQLite' if not args.db else args.db}{beside}"
    )
    print(f"mcptape Writer:          {mcptape_rate:>10,.0f} frames/s  ({writer_s:.2f} s)")
    print(f"{baseline:<24} {raw_rate:>10,.0f} frames/s  ({raw_s:.2f} s)")
    if unparsed_s is not None:
        print(
            f"mcptape Writer, frames not yet parsed: {n / unparsed_s:>10,.0f} frames/s  ({unparsed_s:.2f} s)"
        )
    if args.db:
        print(f"ratio mcptape/raw: {ratio:.2f}  (the targets are set for SQLite)")
        return
    print(f"ratio mcptape/raw: {ratio:.2f}  (target >= 0.50; and >= 50,000 frames/s)")
    ok = mcptape_rate >= 50_000 and ratio >= 0.5
    print("targets met" if ok else "targets NOT met")


if __name__ == "__main__":
    main()
