"""Memory benchmark: peak resident memory of `mcptape record` relaying one large frame.

Compares, in one run, the peak RSS (VmHWM) of `mcptape record` with recording on
against the bare pass-through relay (bench/passthrough_relay.py) for frames of
several sizes, and prints the extra memory per byte of frame.

    .venv/bin/python bench/bench_memory.py [--sizes 1,20,64]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "raw_echo.py")]
PASSTHROUGH = [sys.executable, str(ROOT / "bench" / "passthrough_relay.py")]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc: Linux only")


def relay_one(argv: list[str], frame: bytes) -> float:
    """Send one frame through ``argv``, read the echo, return the relay's peak RSS in MiB."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(frame + b"\n")
    proc.stdin.flush()
    echoed = proc.stdout.readline()
    assert len(echoed) == len(frame) + 1
    peak = peak_rss_mib(proc.pid)
    proc.stdin.close()
    proc.wait(60)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,20,64", help="frame sizes in MiB, comma-separated")
    args = parser.parse_args()
    print(f"{'frame':>8} {'bare relay':>12} {'mcptape':>10} {'extra':>9} {'extra per frame byte':>21}")
    with tempfile.TemporaryDirectory() as tmp:
        for mib in (int(s) for s in args.sizes.split(",")):
            frame = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"' + b"x" * (mib << 20) + b'"}}'
            db = os.path.join(tmp, f"mem{mib}.db")
            bare = relay_one([*PASSTHROUGH, *ECHO], frame)
            ours = relay_one([sys.executable, "-m", "mcptape", "record", "--db", db, "--", *ECHO], frame)
            extra = ours - bare
            print(f"{mib:>5} MiB {bare:>8.1f} MiB {ours:>6.1f} MiB {extra:>5.1f} MiB {extra / mib:>19.2f}x")


if __name__ == "__main__":
    main()
