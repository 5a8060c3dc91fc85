"""Release benchmark: `mcptape record` of an installed release vs the working tree, stdio, in one run.

Each git ref given (default: the last tag, else 444a287, the last main measured within
the stdio targets) is installed into a virtualenv of its own from ``git archive`` of
that ref, on the same interpreter and the same dependencies as the working tree (its
site-packages are put on the path; only mcptape differs). Then, against the same server
(the reference server-everything over stdio by default; ``--server echo`` for a raw
echo whose own cost is nearly nil), one run measures side by side:

- direct: the server alone;
- bare: bench/passthrough_relay.py (two threads copying bytes): the process hop alone;
- each ref's ``mcptape record`` and the working tree's, recording into SQLite.

Rounds alternate the contenders in a rotating order so that drift in the machine's load
hits all of them alike: each round does ``--requests / --rounds`` sequential requests
and one pipelined burst per contender. Printed: the median round trip and the median
burst rate of each, mcptape's figures as ratios to the bare relay and to direct (the
targets in shared/DESIGN.md: at most 1.3x the bare relay's round trip, at least 0.9x its
pipelined rate, at most +0.1 ms over direct on a quiet machine), the CPU the mcptape
process spent per request (all its threads, from /proc: the steadiest figure on a busy
machine), and each ref against the working tree. The recordings are checked to hold
every frame.

    .venv/bin/python bench/bench_release.py [--ref REF ...] [--server everything|echo]
        [--requests 3000] [--burst 2000] [--rounds 6]

The virtualenvs are kept under ``$XDG_CACHE_HOME/mcptape-bench`` by commit, so a second
run does not install again (``--fresh`` does).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_gateway import ENTRY  # noqa: E402  (the reference server's path, one copy)

SERVERS = {
    "everything": ["node", str(ENTRY), "stdio"],
    "echo": [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py")],
}
PASSTHROUGH = [sys.executable, str(ROOT / "bench" / "passthrough_relay.py")]
WITHIN_TARGET = "444a287"  # the last main measured within the stdio targets (shared/DESIGN.md)
INIT = (
    b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


def call(i: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"m%d"}}}\n'
        % (i, i)
    )


# -- installing a ref ------------------------------------------------------------------


def default_ref() -> str:
    tag = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--tags", "--abbrev=0"], capture_output=True, text=True
    )
    return tag.stdout.strip() if tag.returncode == 0 and tag.stdout.strip() else WITHIN_TARGET


def install(ref: str, fresh: bool) -> tuple[str, str]:
    """A virtualenv holding ``ref``'s mcptape on this interpreter's dependencies: (python, commit)."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcptape-bench" / commit
    python = cache / "bin" / "python"
    if fresh and cache.exists():
        shutil.rmtree(cache)
    purelib = Path(sysconfig.get_paths(vars={"base": str(cache), "platbase": str(cache)})["purelib"])
    if not (cache / "installed").exists():
        shutil.rmtree(cache, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(cache)], check=True)
    # The running interpreter's dependencies, same versions: only mcptape differs between
    # contenders. Written on every run: a cached virtualenv made from a checkout since
    # removed would otherwise name site-packages that are gone.
    (purelib / "mcptape-bench-deps.pth").write_text(
        "\n".join(dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]))) + "\n"
    )
    if (cache / "installed").exists():
        return str(python), commit
    with tempfile.TemporaryDirectory() as src:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        print(f"installing {ref} ({commit[:9]}) into {cache} ...", file=sys.stderr)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", src],
            check=True,
            cwd=src,
        )
    (cache / "installed").write_text(ref + "\n")
    return str(python), commit


def where_mcptape(python: str, cwd: str) -> str:
    out = subprocess.run(
        [python, "-c", "import mcptape; print(mcptape.__file__)"], capture_output=True, text=True, cwd=cwd
    )
    return out.stdout.strip() or out.stderr.strip()


def cpu_seconds(pid: int) -> float:
    """CPU time all threads of a process have used so far, in nanoseconds' precision (Linux schedstat).

    /proc/PID/stat counts in clock ticks (10 ms): too coarse for a burst of a tenth of a second.
    """
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
    return total / 1e9


# -- driving a contender ------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    argv: list[str]
    db: str | None = None  # recorded here (mcptape) or nothing (direct, bare)
    echo: bool = False  # the server sends each line back: the echo is the answer
    proc: subprocess.Popen[bytes] | None = None
    next_id: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    latencies: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    cpu_rt: float = 0.0  # mcptape process CPU seconds during the round trips
    cpu_burst: float = 0.0
    own_cpu_burst: float = 0.0  # the process's CPU during bursts, whatever it is (direct: the server)
    requests: int = 0
    burst_frames: int = 0

    def start(self, cwd: str) -> None:
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(INIT)
        self.proc.stdin.flush()
        self.read_answer("init")

    def read_answer(self, rid: object) -> None:
        """Read lines until the answer with id ``rid`` (the server's notifications are skipped)."""
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.name}: the output closed")
            message = orjson.loads(line)
            if message.get("id") == rid and (self.echo or "method" not in message):
                return

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid) if self.db and self.proc else 0.0

    def round_trips(self, n: int) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        before = self.cpu()
        for _ in range(n):
            i = next(self.next_id)
            t0 = time.perf_counter()
            self.proc.stdin.write(call(i))
            self.proc.stdin.flush()
            self.read_answer(i)
            self.latencies.append(time.perf_counter() - t0)
        self.cpu_rt += self.cpu() - before
        self.requests += n

    def burst(self, n: int) -> None:
        """n requests written at once by a thread while the answers are read back."""
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        ids = [next(self.next_id) for _ in range(n)]
        payload = b"".join(call(i) for i in ids)
        stdin, stdout = self.proc.stdin, self.proc.stdout
        before = self.cpu()
        own_before = cpu_seconds(self.proc.pid)
        t0 = time.perf_counter()

        def feed() -> None:
            stdin.write(payload)
            stdin.flush()

        writer = threading.Thread(target=feed)
        writer.start()
        answers = 0
        while answers < n:
            line = stdout.readline()
            if not line:
                raise RuntimeError(f"{self.name}: the output closed")
            if self.echo or b'"result"' in line or b'"error"' in line:
                answers += 1
        elapsed = time.perf_counter() - t0
        writer.join()
        self.cpu_burst += self.cpu() - before
        self.own_cpu_burst += cpu_seconds(self.proc.pid) - own_before
        self.rates.append(2 * n / elapsed)
        self.burst_frames += 2 * n

    def finish(self) -> int:
        """Close the session; the frames recorded (0 for direct and bare)."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)
        if not self.db:
            return 0
        con = sqlite3.connect(self.db)
        try:
            return int(con.execute("select count(*) from frames").fetchone()[0])
        finally:
            con.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--ref", action="append", help="git ref to compare (repeatable); default the last tag"
    )
    parser.add_argument("--server", choices=sorted(SERVERS), default="everything")
    parser.add_argument("--requests", type=int, default=3000, help="sequential requests per contender")
    parser.add_argument("--burst", type=int, default=2000, help="requests per pipelined burst")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--fresh", action="store_true", help="install the refs again")
    args = parser.parse_args()
    server = SERVERS[args.server]
    refs = args.ref or [default_ref()]
    with tempfile.TemporaryDirectory() as tmp:
        contenders = [Contender("direct", server), Contender("bare", [*PASSTHROUGH, *server])]
        for ref in refs:
            python, commit = install(ref, args.fresh)
            print(f"{ref}: {where_mcptape(python, tmp)}")
            db = os.path.join(tmp, f"{commit}.db")
            contenders.append(
                Contender(ref, [python, "-m", "mcptape", "record", "--db", db, "--", *server], db)
            )
        db = os.path.join(tmp, "tree.db")
        tree = Contender("tree", [sys.executable, "-m", "mcptape", "record", "--db", db, "--", *server], db)
        contenders.append(tree)
        print(f"tree: {where_mcptape(sys.executable, tmp)}")
        for c in contenders:
            c.echo = args.server == "echo"
        for c in contenders:  # cwd: the temporary directory, so `-m mcptape` never finds the checkout
            c.start(tmp)
        for c in contenders:  # warm-up: imports, the database's creation, the JIT of node
            c.round_trips(200)
            c.burst(min(args.burst, 500))
            c.latencies.clear()
            c.rates.clear()
            c.cpu_rt = c.cpu_burst = c.own_cpu_burst = 0.0
            c.requests = c.burst_frames = 0
        per_round = max(1, args.requests // args.rounds)
        for r in range(args.rounds):
            order = contenders[r % len(contenders) :] + contenders[: r % len(contenders)]
            for c in order:
                c.round_trips(per_round)
            for c in order:
                c.burst(args.burst)
        recorded = {c.name: c.finish() for c in contenders}
        row_cpu = sqlite_row_cpu(db, tmp)
    report(contenders, recorded, args)
    ceiling(contenders, row_cpu)


def report(contenders: list[Contender], recorded: dict[str, int], args: argparse.Namespace) -> None:
    rt = {c.name: statistics.median(c.latencies) * 1e3 for c in contenders}
    p90 = {c.name: sorted(c.latencies)[int(len(c.latencies) * 0.9)] * 1e3 for c in contenders}
    rate = {c.name: statistics.median(c.rates) for c in contenders}
    d, b = rt["direct"], rt["bare"]
    print(
        f"server {args.server}; {contenders[0].requests} sequential requests and "
        f"{args.rounds} bursts of {args.burst} per contender, alternated"
    )
    print(
        f"{'':12}{'round trip':>11}{'p90':>8}{'over direct':>13}{'/bare':>7}{'frames/s':>10}{'/direct':>9}"
        f"{'/bare':>7}{'CPU/req':>9}{'CPU/frame':>11}"
    )
    for c in contenders:
        name = c.name
        line = f"{name[:12]:12}{rt[name]:9.3f}ms{p90[name]:8.3f}{rt[name] - d:+11.3f}ms{rt[name] / b:6.2f}x"
        line += f"{rate[name]:10,.0f}{rate[name] / rate['direct']:8.2f}x{rate[name] / rate['bare']:6.2f}x"
        if c.db:
            line += f"{c.cpu_rt / c.requests * 1e6:7.0f}us{c.cpu_burst / c.burst_frames * 1e6:9.1f}us"
        print(line)
    print("targets: round trip <= 1.3x bare, +0.1 ms over direct (quiet machine); frames/s >= 0.9x bare")
    tree = next(c for c in contenders if c.name == "tree")
    for c in contenders:
        if c.db and c is not tree:
            print(
                f"tree vs {c.name}: round trip {rt['tree'] / rt[c.name]:.2f}x, frames/s "
                f"{rate['tree'] / rate[c.name]:.2f}x, CPU per request "
                f"{(tree.cpu_rt / tree.requests) / max(c.cpu_rt / c.requests, 1e-9):.2f}x"
            )
    for c in contenders:
        if c.db:
            # initialize + initialized, then two frames a request (warm-up included)
            expected = 2 + 2 * (200 + min(args.burst, 500)) + 2 * c.requests + c.burst_frames
            # (the server may add notifications of its own: at least this many)
            flag = "" if recorded[c.name] >= expected else "   <- MISSING FRAMES"
            print(f"frames recorded by {c.name}: {recorded[c.name]:,} of {expected:,}{flag}")


def sqlite_row_cpu(recorded: str, tmp: str, n: int = 20_000) -> float:
    """CPU seconds SQLite itself spends on one frame row: the writer's floor.

    The tree's recorded frames are inserted again, as they are, into a fresh database of
    the same schema, with the statements the writer uses (64 rows an INSERT), in batches of 1,000,
    by sqlite3 directly: no mcptape code runs.
    """
    sys.path.insert(0, str(ROOT))
    from mcptape.store import open_store
    from mcptape.store.rows import FRAME_COLUMNS

    path = os.path.join(tmp, "floor.db")
    store = open_store(path)
    writer = store.writer()
    session = writer.create_session(mode="record")
    writer.close()
    source = sqlite3.connect(recorded)
    columns = ", ".join(c if c != "session_id" else "?" for c in FRAME_COLUMNS)
    rows = source.execute(f"select {columns} from frames order by id limit ?", (session, n)).fetchall()
    source.close()
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA synchronous = NORMAL")
    from mcptape.store.operations import ROWS_PER_INSERT

    one = f"({', '.join('?' for _ in FRAME_COLUMNS)})"
    sql = f"INSERT INTO frames ({', '.join(FRAME_COLUMNS)}) VALUES {one}"
    many = sql + f", {one}" * (ROWS_PER_INSERT - 1)  # as the writer does (store/operations.py)
    before = time.thread_time()
    for start in range(0, len(rows), 1000):
        con.execute("BEGIN IMMEDIATE")
        batch = rows[start : start + 1000]
        whole = len(batch) - len(batch) % ROWS_PER_INSERT
        for first in range(0, whole, ROWS_PER_INSERT):
            con.execute(many, [v for row in batch[first : first + ROWS_PER_INSERT] for v in row])
        con.executemany(sql, batch[whole:])
        con.execute("COMMIT")
    spent = time.thread_time() - before
    con.close()
    return spent / max(1, len(rows))


def ceiling(contenders: list[Contender], row_cpu: float) -> None:
    """The pipelined rate no recorder that indexes each frame as it arrives can pass on this machine.

    In a burst the server is CPU-bound (direct: its CPU per frame), and every frame also
    costs at least SQLite's own work on its row; the machine has so many cores for both.
    """
    direct = next(c for c in contenders if c.name == "direct")
    bare = next(c for c in contenders if c.name == "bare")
    server_cpu = direct.own_cpu_burst / max(1, direct.burst_frames)
    cores = os.cpu_count() or 1
    best = cores / (server_cpu + row_cpu)
    bare_rate = statistics.median(bare.rates)
    print(
        f"ceiling: the server {server_cpu * 1e6:.1f}us CPU/frame, SQLite's own row "
        f"{row_cpu * 1e6:.1f}us, {cores} cores: at most {best:,.0f} frames/s "
        f"= {best / bare_rate:.2f}x bare for any recorder indexing each frame, before its own code"
    )


if __name__ == "__main__":
    main()
