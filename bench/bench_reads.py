"""The read commands on a large database: time and peak memory against raw sqlite3, and growth.

Builds a SQLite recording of S sessions of F frames each plus one session of B frames
(defaults: 25,000 x 40 + 200,000 = 1.2 million frames) through the store's own schema,
then runs each command as a user would (a process, output to /dev/null) and prints:

- its time divided by the time the stdlib ``sqlite3`` module takes to read the same
  rows in this process (the floor: no formatting, no interpreter start);
- its peak resident memory (what `ps` calls RSS) in MB;
- with ``--growth``, the same on a database four times larger and the ratio of the two
  times: about 4 is linear, 16 would be quadratic; a listing of 5 sessions should stay
  near 1 however many sessions there are.

    .venv/bin/python bench/bench_reads.py [--sessions S] [--frames F] [--big B] [--growth]
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcptape.store import open_store

MCPTAPE = [sys.executable, "-m", "mcptape"]


def build(db: Path, sessions: int, per: int, big: int) -> str:
    """Fill ``db`` (migrated by mcptape) and return the big session's id."""
    open_store(str(db)).close()
    ids = [uuid.uuid4().hex for _ in range(sessions + 1)]
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO sessions (id, name, mode, transport, upstream, started_at, ended_at, status, exit_code, pid)"
        " VALUES (?, ?, 'record', 'stdio->stdio', 'npx -y @modelcontextprotocol/server-everything', ?, ?, 'closed', 0, 1)",
        ((sid, f"s{i}", 1.7e9 + i, 1.7e9 + i + 1) for i, sid in enumerate(ids)),
    )

    def frames() -> Iterator[tuple[Any, ...]]:
        for i, sid in enumerate(ids):
            for seq in range(1, (big if i == sessions else per) + 1):
                ts = 1.7e9 + i + seq * 1e-5
                if seq % 2:
                    text = f'{{"jsonrpc":"2.0","id":{seq},"method":"tools/call","params":{{"name":"echo"}}}}'
                    yield (
                        sid,
                        seq,
                        ts,
                        "c2s",
                        "client",
                        "request",
                        "tools/call",
                        str(seq),
                        len(text),
                        text,
                        None,
                    )
                else:
                    text = f'{{"jsonrpc":"2.0","id":{seq - 1},"result":{{"content":[]}}}}'
                    yield (
                        sid,
                        seq,
                        ts,
                        "s2c",
                        "server",
                        "response",
                        "tools/call",
                        str(seq - 1),
                        len(text),
                        text,
                        seq - 1,
                    )

    conn.executemany(
        "INSERT INTO frames (session_id, seq, ts, direction, origin, kind, method, rpc_id, size, text, request_seq)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        frames(),
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()
    return ids[-1]


def floor(db: Path, sql: str, *params: Any) -> float:
    """Seconds the stdlib sqlite3 module takes to read every row of ``sql``."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    started = time.perf_counter()
    for _ in conn.execute(sql, params):
        pass
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


# Runs one command and prints its peak RSS in KiB: ru_maxrss of RUSAGE_CHILDREN is the
# largest of all children so far, so each command gets a parent of its own.
PEAK = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def run(db: Path, *args: str) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of ``mcptape ARGS --db DB`` writing to /dev/null."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *MCPTAPE, *args, "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, int(done.stdout) / 1024


def measure(db: Path, big_id: str) -> dict[str, tuple[float, float, float]]:
    """Each command's (seconds, ratio to its floor, peak MB)."""
    small = "s7"
    frames_of = "SELECT seq, ts, direction, origin, kind, method, rpc_id, size, text, raw, meta FROM frames WHERE session_id = ? ORDER BY seq"
    listing = (
        "SELECT s.*, (SELECT count(*) FROM frames f WHERE f.session_id = s.id) FROM sessions s"
        " ORDER BY started_at DESC, id DESC"
    )
    small_id = sqlite3.connect(db).execute("SELECT id FROM sessions WHERE name = ?", (small,)).fetchone()[0]
    cases: dict[str, tuple[tuple[str, ...], float]] = {
        "sessions -n 5": (("sessions", "-n", "5"), floor(db, listing + " LIMIT 5")),
        "sessions (all, table)": (("sessions",), floor(db, listing)),
        "sessions --nl (all)": (("sessions", "--nl"), floor(db, listing)),
        "show SMALL": (("show", small), floor(db, frames_of, small_id)),
        "show BIG --json": (("show", big_id[:12], "--json"), floor(db, frames_of, big_id)),
        "export BIG": (("export", big_id[:12]), floor(db, frames_of, big_id)),
        "sql exchanges of SMALL": (
            ("sql", f"select count(*) from exchanges where session_id = '{small_id}'"),
            floor(db, "SELECT count(*) FROM exchanges WHERE session_id = ?", small_id),
        ),
    }
    startup = min(run(db, "sessions", "--name", "no such name")[0] for _ in range(3))
    results = {}
    for label, (args, base) in cases.items():
        seconds, peak = run(db, *args)
        # The floor gets the interpreter start-up of the command added: the same for both.
        results[label] = (seconds, seconds / (base + startup), peak)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=25_000)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--big", type=int, default=200_000)
    parser.add_argument("--growth", action="store_true", help="also measure a database four times larger")
    args = parser.parse_args()
    sizes = [1, 4] if args.growth else [1]
    measured = []
    with tempfile.TemporaryDirectory(prefix="mcptape-bench-reads-") as tmp:
        for scale in sizes:
            db = Path(tmp) / f"reads{scale}.db"
            sessions, big = args.sessions * scale, args.big * scale
            started = time.perf_counter()
            big_id = build(db, sessions, args.frames, big)
            total = sessions * args.frames + big
            print(f"{sessions:,} sessions, {total:,} frames, built in {time.perf_counter() - started:.1f} s")
            measured.append(measure(db, big_id))
            db.unlink()
    print(
        f"{'command':<26} {'seconds':>8} {'x floor':>8} {'peak MB':>8}"
        + ("  growth x4" if args.growth else "")
    )
    for label, (seconds, ratio, peak) in measured[0].items():
        line = f"{label:<26} {seconds:8.2f} {ratio:8.2f} {peak:8.0f}"
        if args.growth:
            line += f"  {measured[1][label][0] / seconds:9.2f}"
        print(line)


if __name__ == "__main__":
    main()
