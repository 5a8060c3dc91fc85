"""Memory benchmark: peak resident memory of `mcptape record` relaying one large frame.

Compares, in one run, the peak RSS (VmHWM) of the `mcptape record` process alone
(not its server, not this script) with recording on against the bare pass-through
relay (bench/passthrough_relay.py), for frames of several sizes, and prints the
extra memory per byte of frame: (mcptape's peak - the bare relay's peak) / frame size.
That includes what mcptape costs with no large frame at all (its imports, opening the
store: about 50 MiB); the last column leaves it out: (mcptape's peak - mcptape's peak
relaying a small frame) / frame size, what each byte of the frame itself costs.

Each frame is exactly the size given, so none of them is cut at the store's 64 MiB
limit. ``--shape echo`` (the default) sends it to a server that writes it back, so
two frames of that size cross mcptape, one each way; ``request`` sends it and gets a
small answer; ``response`` sends a small request and gets it back as the answer.
mcptape's peak is read once both frames are committed to the database and again
until the process exits (VmHWM only grows), so the store's work is included.

    .venv/bin/python bench/bench_memory.py [--sizes 1,20,64] [--shape echo]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py")]
PASSTHROUGH = [sys.executable, str(ROOT / "bench" / "passthrough_relay.py")]
SHAPES = ("echo", "request", "response")
# A server for the one-way shapes: answers each line with a small line, or with a
# frame of the size the request names.
ONE_WAY = r"""
import sys
for line in sys.stdin.buffer:
    if line.startswith(b'{"jsonrpc":"2.0","id":1,"method":"big"'):
        size = int(line.split(b'"size":')[1].split(b"}")[0])
        head = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"'
        sys.stdout.buffer.write(head + b"y" * (size - len(head) - 3) + b'"}}\n')
    else:
        sys.stdout.buffer.write(b'{"jsonrpc":"2.0","id":1,"result":{}}\n')
    sys.stdout.buffer.flush()
"""


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident memory so far, None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None  # a zombie has no memory lines


def frame_of(size: int) -> bytes:
    """A JSON-RPC response of exactly ``size`` bytes."""
    head = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"'
    return head + b"x" * (size - len(head) - 3) + b'"}}'


def wait_for_frames(db: str, count: int, timeout: float = 120.0) -> None:
    """Wait until ``count`` frames are committed to the recording at ``db``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                if conn.execute("select count(*) from frames").fetchone()[0] >= count:
                    return
        except sqlite3.Error:
            pass  # not created or not migrated yet
        time.sleep(0.02)
    raise RuntimeError(f"{count} frames were not recorded within {timeout:g} s")


def relay_one(argv: list[str], send: bytes, expect: int, db: str | None) -> float:
    """Send one line through ``argv``, read the answer, return the relay's peak RSS in MiB."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(send + b"\n")
    proc.stdin.flush()
    answer = proc.stdout.readline()
    assert len(answer) == expect + 1, (len(answer), expect)
    del answer
    if db is not None:
        wait_for_frames(db, 2)
    peak = peak_rss_mib(proc.pid) or 0.0
    proc.stdin.close()
    while proc.poll() is None:
        peak = max(peak, peak_rss_mib(proc.pid) or 0.0)
        time.sleep(0.005)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} exited with status {proc.returncode}")
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,20,64", help="frame sizes in MiB, comma-separated")
    parser.add_argument("--shape", choices=SHAPES, default="echo", help="which way the large frame goes")
    args = parser.parse_args()
    server = ECHO if args.shape == "echo" else [sys.executable, "-c", ONE_WAY]
    print(f"shape: {args.shape}")
    with tempfile.TemporaryDirectory() as tmp:
        tiny = b'{"jsonrpc":"2.0","id":1,"result":{}}'
        db = os.path.join(tmp, "idle.db")
        idle = relay_one(
            [sys.executable, "-m", "mcptape", "record", "--db", db, "--", *ECHO], tiny, len(tiny), db
        )
        print(f"mcptape relaying a small frame: {idle:.1f} MiB")
        print(
            f"{'frame':>8} {'bare relay':>12} {'mcptape':>10} {'extra':>9} {'extra per frame byte':>21}"
            f" {'frame cost per byte':>20}"
        )
        for mib in (int(s) for s in args.sizes.split(",")):
            size = mib << 20
            small = len(b'{"jsonrpc":"2.0","id":1,"result":{}}')
            if args.shape == "echo":
                send, expect = frame_of(size), size
            elif args.shape == "request":
                send, expect = frame_of(size), small
            else:
                send, expect = b'{"jsonrpc":"2.0","id":1,"method":"big","params":{"size":%d}}' % size, size
            db = os.path.join(tmp, f"mem{mib}.db")
            bare = relay_one([*PASSTHROUGH, *server], send, expect, None)
            ours = relay_one(
                [sys.executable, "-m", "mcptape", "record", "--db", db, "--", *server], send, expect, db
            )
            extra = ours - bare
            print(
                f"{mib:>5} MiB {bare:>8.1f} MiB {ours:>6.1f} MiB {extra:>5.1f} MiB {extra / mib:>19.2f}x"
                f" {(ours - idle) / mib:>19.2f}x"
            )
            del send


if __name__ == "__main__":
    main()
